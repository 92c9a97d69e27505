// Agents are who their credentials say (docs/security.md "Agent identity"):
// each agent gets its own token from `termbridge agents add`, the broker
// keeps only its hash, one agent cannot see or touch another's terminals, a
// claimed agent_id that differs from the credentials is refused and audited,
// and `agents revoke` ends the agent's open calls and streams at once and
// keeps refusing it after a restart. The shared agent token still works, as
// one agent named "agent".
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';
import {
  Broker, PERMISSIVE_POLICY, brokerProto, connectAgent, runCli, tempDir, removeDir, terminal,
  withDeadline,
} from '../lib/harness.mjs';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const proto = brokerProto({ longs: String });
const cli = runCli;

// Issues `name` a token into a new 0600 file and returns its path.
async function addAgent(stateDir, name) {
  const file = path.join(tempDir('tb-token-'), `${name}.token`);
  const r = await cli(stateDir, 'agents', 'add', name, '--token-file', file);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(fs.statSync(file).mode & 0o777, 0o600);
  return file;
}

const auditRecords = (stateDir) => fs.readFileSync(path.join(stateDir, 'audit.jsonl'), 'utf8')
  .split('\n').filter(Boolean).map((l) => JSON.parse(l));

function grpcClient(broker, tokenFile) {
  const client = new proto.TerminalBroker(`127.0.0.1:${broker.port}`, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${fs.readFileSync(tokenFile, 'utf8').trim()}`);
  return { client, metadata };
}

test('each agent sees and touches only its own terminals; the token is stored hashed', async () => {
  const broker = await Broker.start();
  cleanups.push(() => broker.stop());
  const aliceFile = await addAgent(broker.stateDir, 'alice');
  const bobFile = await addAgent(broker.stateDir, 'bob');
  const aliceToken = fs.readFileSync(aliceFile, 'utf8').trim();
  const store = fs.readFileSync(path.join(broker.stateDir, 'agents.json'), 'utf8');
  assert.ok(!store.includes(aliceToken), 'the store must not hold the token itself');
  assert.equal(fs.statSync(path.join(broker.stateDir, 'agents.json')).mode & 0o777, 0o600);
  const again = await cli(broker.stateDir, 'agents', 'add', 'alice');
  assert.equal(again.code, 1);
  assert.match(again.stderr, /already has credentials/);

  const alice = await connectAgent({ port: broker.port, tokenFile: aliceFile });
  const bob = await connectAgent({ port: broker.port, tokenFile: bobFile });
  const shared = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => alice.client.close(), () => bob.client.close(), () => shared.client.close());
  const a = await terminal(alice.client, { action: 'execute', execution: { command: 'sleep 60' }, runtime: { timeout_ms: 100 } });
  const b = await terminal(bob.client, { action: 'execute', execution: { command: 'echo bob-secret; sleep 60' }, runtime: { timeout_ms: 2000 } });
  const s = await terminal(shared.client, { action: 'execute', execution: { command: 'echo shared' } });
  assert.equal(a.status, 'accepted', JSON.stringify(a));
  assert.equal(b.status, 'accepted', JSON.stringify(b));
  assert.equal(s.result.stdout, 'shared\n', JSON.stringify(s));

  // Who owns what comes from the credentials.
  const listed = JSON.parse((await cli(broker.stateDir, '--json', 'sessions')).stdout).sessions;
  const owner = Object.fromEntries(listed.map((x) => [x.terminal_id, x.agent_id]));
  assert.equal(owner[a.identity.terminal_id], 'alice');
  assert.equal(owner[b.identity.terminal_id], 'bob');
  assert.equal(owner[s.identity.terminal_id], 'agent');

  // Alice lists only hers; bob's ids are unknown to her, whatever she tries.
  const mine = await terminal(alice.client, { action: 'list' });
  assert.deepEqual(mine.result.items.map((i) => i.terminal_id), [a.identity.terminal_id]);
  for (const target of [{ session_id: b.identity.session_id }, { terminal_id: b.identity.terminal_id }]) {
    const read = await terminal(alice.client, { action: 'read_output', target });
    assert.equal(read.error?.code, 'PM_TERM_NOT_FOUND', JSON.stringify(read));
    assert.ok(!JSON.stringify(read).includes('bob-secret'));
    const kill = await terminal(alice.client, { action: 'terminate', target });
    assert.equal(kill.error?.code, 'PM_TERM_NOT_FOUND', JSON.stringify(kill));
  }
  const type = await terminal(alice.client, { action: 'execute', target: { terminal_id: b.identity.terminal_id }, execution: { command: 'echo pwned' } });
  assert.equal(type.error?.code, 'PM_TERM_NOT_FOUND', JSON.stringify(type));
  const stillBob = await terminal(bob.client, { action: 'read_output', target: { session_id: b.identity.session_id } });
  assert.equal(stillBob.result.running, true, JSON.stringify(stillBob));

  // Attach (live output and input) with alice's token to bob's terminal: not found.
  const { client, metadata } = grpcClient(broker, aliceFile);
  const stream = client.Attach(metadata);
  const ended = new Promise((resolve) => {
    stream.on('data', (frame) => { if (frame.output) resolve({ leaked: frame.output.data.toString() }); });
    stream.on('error', (e) => resolve({ error: e }));
    stream.on('end', () => resolve({}));
  });
  stream.write({ resume: { terminal_id: b.identity.terminal_id, from_start: true } });
  const result = await withDeadline(ended, 10000, 'the Attach to another agent\'s terminal to end');
  assert.equal(result.leaked, undefined, 'alice read bob\'s output over Attach');
  assert.equal(result.error?.code, grpc.status.NOT_FOUND, String(result.error));
  client.close();

  // Agent tokens are no operator credentials.
  const op = new proto.TerminalOperator(`unix:${broker.ready.operator_socket}`, grpc.credentials.createInsecure());
  await assert.rejects(new Promise((res, rej) => op.ListAgents({}, metadata, (e, r) => (e ? rej(e) : res(r)))),
    (e) => e.code === grpc.status.PERMISSION_DENIED);
  op.close();
});

test('an agent_id that differs from the credentials is refused and audited', async () => {
  const broker = await Broker.start();
  cleanups.push(() => broker.stop());
  const aliceFile = await addAgent(broker.stateDir, 'alice');
  await addAgent(broker.stateDir, 'bob');
  for (const tokenFile of [aliceFile, broker.tokenFile]) {
    const agent = await connectAgent({ port: broker.port, tokenFile, env: { TERMBRIDGE_AGENT_ID: 'bob' } });
    cleanups.push(() => agent.client.close());
    const r = await terminal(agent.client, { action: 'execute', execution: { command: 'echo as-bob' } });
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.equal(r.error.code, 'PM_TERM_INVALID_PAYLOAD', JSON.stringify(r.error));
    assert.match(r.error.message, /agent_id 'bob' is not this agent/);
  }
  const records = auditRecords(broker.stateDir).filter((x) => x.event === 'identity_mismatch');
  assert.ok(records.some((x) => x.agent_id === 'alice' && x.claimed_agent_id === 'bob'), JSON.stringify(records));
  assert.ok(records.some((x) => x.agent_id === 'agent' && x.claimed_agent_id === 'bob'), JSON.stringify(records));
  const listed = JSON.parse((await cli(broker.stateDir, '--json', 'sessions')).stdout).sessions;
  assert.deepEqual(listed, [], 'nothing ran under the claimed name');
  // The same claim as the credentials is fine.
  const honest = await connectAgent({ port: broker.port, tokenFile: aliceFile, env: { TERMBRIDGE_AGENT_ID: 'alice' } });
  cleanups.push(() => honest.client.close());
  const ok = await terminal(honest.client, { action: 'execute', execution: { command: 'echo honest' } });
  assert.equal(ok.result?.stdout, 'honest\n', JSON.stringify(ok));
});

test('revoking an agent ends its open calls and streams at once and survives a restart', async () => {
  const stateDir = tempDir('tb-revoke-');
  cleanups.push(() => removeDir(stateDir));
  const policy = path.join(stateDir, 'policy.toml');
  fs.writeFileSync(policy, PERMISSIVE_POLICY);
  const args = ['--state-dir', stateDir, '--policy', policy];
  const broker = await Broker.start({ extraArgs: args, viewer: 'none' });
  cleanups.push(() => broker.stop());
  const aliceFile = await addAgent(stateDir, 'alice');
  const bobFile = await addAgent(stateDir, 'bob');
  const alice = await connectAgent({ port: broker.port, tokenFile: aliceFile });
  const bob = await connectAgent({ port: broker.port, tokenFile: bobFile });
  cleanups.push(() => alice.client.close(), () => bob.client.close());
  const started = await terminal(alice.client, { action: 'execute', execution: { command: 'echo ready' } });
  assert.equal(started.result?.stdout, 'ready\n', JSON.stringify(started));

  // An open Attach stream and a call waiting 50 s.
  const { client, metadata } = grpcClient(broker, aliceFile);
  const stream = client.Attach(metadata);
  const streamEnded = new Promise((resolve) => {
    stream.on('error', (e) => resolve(e));
    stream.on('end', () => resolve(null));
    stream.on('data', () => {});
  });
  stream.write({ resume: { terminal_id: started.identity.terminal_id, from_start: true } });
  const waiting = terminal(alice.client, { action: 'execute', execution: { command: 'sleep 50' }, runtime: { timeout_ms: 50000 } });
  // Revoke once both are in flight at the broker.
  const deadline = Date.now() + 10000;
  for (;;) {
    const listed = JSON.parse((await cli(stateDir, '--json', 'agents', 'list')).stdout).agents;
    const a = listed.find((x) => x.name === 'alice');
    if (a.open_calls >= 2) break;
    if (Date.now() > deadline) throw new Error(`alice's calls never showed as open: ${JSON.stringify(listed)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const t0 = Date.now();
  const revoked = await cli(stateDir, '--json', 'agents', 'revoke', 'alice');
  assert.equal(revoked.code, 0, revoked.stderr);
  assert.ok(JSON.parse(revoked.stdout).ended_calls >= 2, revoked.stdout);
  const cut = await withDeadline(waiting, 10000, 'the waiting execute to end after the revocation');
  assert.ok(Date.now() - t0 < 10000);
  assert.equal(cut.isError, true, JSON.stringify(cut));
  assert.ok(['PM_TERM_DISCONNECTED', 'PM_TERM_GUI_UNAVAILABLE'].includes(cut.error.code), JSON.stringify(cut.error));
  const streamError = await withDeadline(streamEnded, 10000, 'the Attach stream to end after the revocation');
  assert.ok(streamError, 'the stream ended with an error status');
  client.close();

  // New calls are refused; bob is untouched.
  const refused = await terminal(alice.client, { action: 'execute', execution: { command: 'echo again' } });
  assert.equal(refused.isError, true, JSON.stringify(refused));
  assert.match(JSON.stringify(refused.error), /revoked/);
  const fine = await terminal(bob.client, { action: 'execute', execution: { command: 'echo bob-ok' } });
  assert.equal(fine.result?.stdout, 'bob-ok\n', JSON.stringify(fine));
  const list = JSON.parse((await cli(stateDir, '--json', 'agents', 'list')).stdout).agents;
  assert.equal(list.find((x) => x.name === 'alice').revoked, true);
  assert.equal(list.find((x) => x.name === 'bob').revoked, false);
  assert.ok(auditRecords(stateDir).some((x) => x.event === 'agent_revoked' && x.agent_id === 'alice'));

  // A restarted broker on the same state keeps refusing alice.
  await broker.stop();
  const second = await Broker.start({ extraArgs: args, viewer: 'none' });
  cleanups.push(() => second.stop());
  const late = await connectAgent({ port: second.port, tokenFile: aliceFile });
  cleanups.push(() => late.client.close());
  const still = await terminal(late.client, { action: 'execute', execution: { command: 'echo late' } });
  assert.equal(still.isError, true, JSON.stringify(still));
  assert.match(JSON.stringify(still.error), /revoked/);
});

test('make-credentials.sh --agent gives each agent service its own token', async () => {
  const creds = tempDir('tb-agent-creds-');
  cleanups.push(() => removeDir(creds));
  await run(path.join(ROOT, 'deploy/make-credentials.sh'),
    ['--dir', path.join(creds, 'c'), '--agent', 'http-agent', '--agent', 'stdio-agent']);
  const dir = path.join(creds, 'c', 'agents');
  const broker = await Broker.start({ extraArgs: ['--agent-tokens-dir', dir] });
  cleanups.push(() => broker.stop());
  const http = await connectAgent({ port: broker.port, tokenFile: path.join(dir, 'http-agent.token') });
  cleanups.push(() => http.client.close());
  const r = await terminal(http.client, { action: 'execute', execution: { command: 'echo hi' } });
  assert.equal(r.result?.stdout, 'hi\n', JSON.stringify(r));
  const listed = JSON.parse((await cli(broker.stateDir, '--json', 'sessions')).stdout).sessions;
  assert.equal(listed[0].agent_id, 'http-agent');
  const agents = JSON.parse((await cli(broker.stateDir, '--json', 'agents', 'list')).stdout).agents;
  assert.deepEqual(agents.map((a) => [a.name, a.source]).sort(),
    [['agent', 'shared'], ['http-agent', 'token_file'], ['stdio-agent', 'token_file']]);
});

test('a verified client certificate names the agent when no token does (mTLS)', async () => {
  const dir = tempDir('tb-mtls-');
  cleanups.push(() => removeDir(dir));
  const o = (...args) => run('openssl', args, { cwd: dir });
  await o('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=tb-test-ca',
    '-keyout', 'ca.key', '-out', 'ca.pem');
  const sign = async (name, ext) => {
    await o('req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.csr`);
    fs.writeFileSync(path.join(dir, `${name}.ext`), ext);
    await o('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
      '-days', '1', '-extfile', `${name}.ext`, '-out', `${name}.pem`);
  };
  await sign('broker', 'subjectAltName=IP:127.0.0.1\n');
  await sign('carol', 'extendedKeyUsage=clientAuth\n');
  const broker = await Broker.start({ viewer: 'none', env: {
    TERMBRIDGE_TLS_CERT: path.join(dir, 'broker.pem'), TERMBRIDGE_TLS_KEY: path.join(dir, 'broker.key'),
    TERMBRIDGE_TLS_CLIENT_CA: path.join(dir, 'ca.pem') } });
  cleanups.push(() => broker.stop());
  const read = (f) => fs.readFileSync(path.join(dir, f));
  const credentials = grpc.credentials.createSsl(read('ca.pem'), read('carol.key'), read('carol.pem'));
  const client = new proto.TerminalBroker(`127.0.0.1:${broker.port}`, credentials);
  const handshake = (metadata = new grpc.Metadata()) => new Promise((res, rej) =>
    client.Handshake({ protocol_version: 1 }, metadata, (e, r) => (e ? rej(e) : res(r))));
  assert.equal((await handshake()).agent_id, 'carol');
  // A token, when there is one, names the agent instead.
  const token = new grpc.Metadata();
  token.set('authorization', `Bearer ${fs.readFileSync(broker.tokenFile, 'utf8').trim()}`);
  assert.equal((await handshake(token)).agent_id, 'agent');
  // Revoking the name refuses the certificate from then on.
  const revoked = await cli(broker.stateDir, 'agents', 'revoke', 'carol');
  assert.equal(revoked.code, 0, revoked.stderr);
  await assert.rejects(handshake(), (e) => e.code === grpc.status.UNAUTHENTICATED && /revoked/.test(e.details));
  client.close();
});
