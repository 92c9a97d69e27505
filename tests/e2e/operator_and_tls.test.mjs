// The operator surface and the transport security a person relies on: the
// operator socket is 0600 and the only way to see or close every agent's
// terminals (the `termbridge` CLI), agent credentials never act as operator,
// and a broker on a non-loopback address insists on TLS, which the agent uses.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import grpc from '@grpc/grpc-js';
import {
  BROKER_BIN, Broker, brokerProto, connectAgent, expectExit, runCli, tempDir, terminal,
} from '../lib/harness.mjs';

const run = promisify(execFile);
const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const proto = brokerProto({ longs: String });
const cli = (broker, ...args) => runCli(broker.stateDir, ...args);

const unary = (client, method, request, metadata = new grpc.Metadata()) =>
  new Promise((resolve, reject) => {
    client[method](request, metadata, (err, res) => (err ? reject(err) : resolve(res)));
  });

test('the operator socket is 0600 and the CLI sees and closes every agent\'s terminals', async () => {
  const broker = await Broker.start();
  cleanups.push(() => broker.stop());
  const socket = broker.ready.operator_socket;
  assert.equal(fs.statSync(socket).mode & 0o777, 0o600);

  // Each agent has its own token (docs/security.md "Agent identity").
  const tokens = tempDir('tb-tokens-');
  cleanups.push(() => fs.rmSync(tokens, { recursive: true, force: true }));
  for (const name of ['alice', 'bob']) {
    const added = await cli(broker, 'agents', 'add', name, '--token-file', path.join(tokens, name));
    assert.equal(added.code, 0, added.stderr);
  }
  const alice = await connectAgent({ port: broker.port, tokenFile: path.join(tokens, 'alice') });
  const bob = await connectAgent({ port: broker.port, tokenFile: path.join(tokens, 'bob') });
  cleanups.push(() => alice.client.close(), () => bob.client.close());
  const a = await terminal(alice.client, { action: 'execute', execution: { command: 'sleep 60' }, runtime: { timeout_ms: 100 } });
  const b = await terminal(bob.client, { action: 'execute', execution: { command: 'sleep 61' }, runtime: { timeout_ms: 100 } });
  assert.equal(a.status, 'accepted', JSON.stringify(a));
  assert.equal(b.status, 'accepted', JSON.stringify(b));

  // Agents see only their own; the operator sees both.
  const aliceList = await terminal(alice.client, { action: 'list' });
  assert.deepEqual(aliceList.result.items.map((i) => i.terminal_id), [a.identity.terminal_id]);
  const listed = await cli(broker, '--json', 'sessions');
  assert.equal(listed.code, 0, listed.stderr);
  const sessions = JSON.parse(listed.stdout).sessions;
  const byTerminal = Object.fromEntries(sessions.map((s) => [s.terminal_id, s]));
  assert.equal(byTerminal[a.identity.terminal_id].agent_id, 'alice');
  assert.equal(byTerminal[b.identity.terminal_id].agent_id, 'bob');
  assert.equal(byTerminal[b.identity.terminal_id].exit.running, true);

  // Both say what every agent terminal's environment keeps out of the way.
  assert.ok(JSON.parse(listed.stdout).terminal_env.includes('PAGER=cat'), listed.stdout);
  const human = await cli(broker, 'sessions');
  assert.match(human.stdout, /agent terminals start with: .*PAGER=cat.*LESSSECURE=1/);
  assert.match(human.stdout, /TERMINAL\s+SESSION\s+AGENT\s+STATE\s+COMMAND/);
  assert.match(human.stdout, /sleep 61/);

  // Closing bob's terminal from the CLI kills it; bob sees it ended.
  const closed = await cli(broker, 'close', b.identity.terminal_id);
  assert.equal(closed.code, 0, closed.stderr);
  assert.match(closed.stdout, /closed t_\S+: killed\(1\)/);
  const after = await terminal(bob.client, { action: 'read_output', target: { session_id: b.identity.session_id } });
  assert.equal(after.result.running, false);

  const unknown = await cli(broker, 'close', 't_nope');
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /unknown terminal_id/);
});

test('operator RPCs are not served over TCP and refuse agent credentials on the socket', async () => {
  const broker = await Broker.start();
  cleanups.push(() => broker.stop());
  const token = fs.readFileSync(broker.tokenFile, 'utf8').trim();
  const agentAuth = new grpc.Metadata();
  agentAuth.set('authorization', `Bearer ${token}`);

  const overTcp = new proto.TerminalOperator(`127.0.0.1:${broker.port}`, grpc.credentials.createInsecure());
  await assert.rejects(unary(overTcp, 'ListAll', {}, agentAuth), (e) => e.code === grpc.status.UNIMPLEMENTED);
  overTcp.close();

  const overSocket = new proto.TerminalOperator(`unix:${broker.ready.operator_socket}`, grpc.credentials.createInsecure());
  await assert.rejects(unary(overSocket, 'ListAll', {}, agentAuth), (e) => e.code === grpc.status.PERMISSION_DENIED);
  const ok = await unary(overSocket, 'ListAll', {});
  assert.deepEqual(ok.sessions, []);
  overSocket.close();
});

test('the CLI says clearly when no broker is listening', async () => {
  const dir = tempDir('tb-nobroker-');
  const r = await cli({ stateDir: dir }, 'sessions');
  assert.equal(r.code, 1);
  assert.match(r.stderr, /no broker on .*operator\.sock/);
});

// Certificates for a TLS broker on 127.0.0.1, made with the openssl CLI.
async function makeCertificates(dir) {
  const o = (...args) => run('openssl', args, { cwd: dir });
  await o('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=termbridge-test-ca',
    '-keyout', 'ca.key', '-out', 'ca.pem');
  await o('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=termbridge-broker',
    '-keyout', 'broker.key', '-out', 'broker.csr');
  fs.writeFileSync(path.join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  await o('x509', '-req', '-in', 'broker.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
    '-days', '1', '-extfile', 'ext.cnf', '-out', 'broker.pem');
  return { ca: path.join(dir, 'ca.pem'), cert: path.join(dir, 'broker.pem'), key: path.join(dir, 'broker.key') };
}

test('a non-loopback listen without TLS is refused; with TLS the agent connects', async () => {
  const stateDir = tempDir('tb-tls-');
  const { code, log } = await expectExit(BROKER_BIN, ['--listen', '0.0.0.0:0', '--state-dir', stateDir],
    { cleanups, dir: stateDir, what: 'the broker on 0.0.0.0:0 without TLS' });
  assert.equal(code, 2, log);
  assert.match(log, /refusing to listen on non-loopback address 0\.0\.0\.0:0 without TLS/);

  const certs = await makeCertificates(tempDir('tb-certs-'));
  const broker = await Broker.start({ extraArgs: [], listen: '0.0.0.0:0', env: {
    TERMBRIDGE_TLS_CERT: certs.cert, TERMBRIDGE_TLS_KEY: certs.key } });
  cleanups.push(() => broker.stop());
  assert.equal(broker.ready.tls, true);

  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile, env: {
    TERMBRIDGE_BRIDGE_TLS_CA_FILE: certs.ca } });
  cleanups.push(() => agent.client.close());
  const r = await terminal(agent.client, { action: 'execute', execution: { command: 'echo over-tls' } });
  assert.equal(r.success, true, JSON.stringify(r.error));
  assert.equal(r.result.stdout, 'over-tls\n');

  // A plaintext agent gets a typed error, never a hang or a success.
  const plain = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile, env: {
    PM_INTERACTIVE_TERMINAL_CONNECT_TIMEOUT_MS: '1500' } });
  cleanups.push(() => plain.client.close());
  const bad = await terminal(plain.client, { action: 'list', invocation: { mode: 'interactive' } });
  assert.equal(bad.isError, true);
  assert.ok(['PM_TERM_GUI_UNAVAILABLE', 'PM_TERM_TIMEOUT', 'PM_TERM_DISCONNECTED'].includes(bad.error.code), bad.error.code);
});
