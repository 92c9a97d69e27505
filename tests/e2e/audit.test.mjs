// The audit log an SRE reads after the fact: one JSONL record per event with a
// gap-free index, written before the event is acknowledged, recording sizes
// and never the bytes typed into a terminal.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  BROKER_BIN, Broker, PERMISSIVE_POLICY, grpcOutputMatches, removeDir, tempDir, waitForJsonFile,
  withDeadline,
} from '../lib/harness.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const proto = grpc.loadPackageDefinition(protoLoader.loadSync(
  path.join(ROOT, 'proto/termbridge/v1/broker.proto'),
  { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true },
)).termbridge.v1;

const broker = await Broker.start();
after(() => broker.stop());
const client = new proto.TerminalBroker(`127.0.0.1:${broker.port}`, grpc.credentials.createInsecure());
const auth = new grpc.Metadata();
auth.set('authorization', `Bearer ${fs.readFileSync(broker.tokenFile, 'utf8').trim()}`);
const call = (method, request, metadata = auth) => new Promise((resolve, reject) => {
  client[method](request, metadata, (err, res) => (err ? reject(err) : resolve(res)));
});
const records = () => fs.readFileSync(broker.ready.audit_log, 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l));

test('commands, input, exits and failed logins are audited once each, in order', async () => {
  assert.equal(fs.statSync(broker.ready.audit_log).mode & 0o777, 0o600);
  const bad = new grpc.Metadata();
  bad.set('authorization', 'Bearer wrong-token-wrong-token');
  await assert.rejects(call('List', {}, bad), (e) => e.code === grpc.status.UNAUTHENTICATED);

  const started = await call('Execute', {
    command: 'echo armed ready; read secret; echo got-${#secret}', wait_ms: 0,
    correlation: { trace_id: 'trace_audit_1', request_id: 'req_1' },
  });
  await grpcOutputMatches(call, started.terminal_id, /\narmed ready\n/);
  // Type a secret through Attach; the log must hold its size, not its bytes.
  const stream = client.Attach(auth);
  const ended = new Promise((resolve, reject) => {
    stream.on('data', () => {});
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  stream.write({ resume: { terminal_id: started.terminal_id, offset: 0 } });
  stream.write({ input: Buffer.from('hunter2\n') });
  // Each read waits for the exit (until "exit", bounded by its wait_ms); the
  // whole wait is bounded by a deadline.
  const deadline = Date.now() + 30000;
  let done;
  do {
    done = await call('ReadOutput', { session_id: started.session_id, until: 'exit', wait_ms: 10000 });
  } while (done.exit.running && Date.now() < deadline);
  assert.equal(done.exit.running, false, `still running after 30 s: ${JSON.stringify({ exit: done.exit, wait_result: done.wait_result })}`);
  assert.equal(done.exit.exit_code, 0);
  assert.equal(done.exit.completion, 'osc133');
  // The terminal outlives the command; closing it ends the attachment.
  await call('Terminate', { terminal_id: started.terminal_id });
  await withDeadline(ended, 30000, () => `the Attach stream did not end within 30 s of Terminate; audit so far:\n${
    fs.readFileSync(broker.ready.audit_log, 'utf8')}`);

  // The exit records are written by the broker as the command and the
  // terminal end; the stream above ended after both, so they are durable.
  const log = records();
  log.forEach((r, i) => assert.equal(r.index, i + 1, 'gap-free, monotonic index'));
  const events = log.map((r) => r.event);
  for (const e of ['auth_failed', 'command_requested', 'terminal_opened', 'command_started',
    'input_accepted', 'command_exited', 'terminal_closed']) {
    assert.equal(events.filter((x) => x === e).length, 1, `${e} exactly once in ${events}`);
  }
  assert.ok(events.indexOf('command_requested') < events.indexOf('command_started'));
  const requested = log.find((r) => r.event === 'command_requested');
  assert.equal(requested.trace_id, 'trace_audit_1');
  assert.equal(requested.command, 'echo armed ready; read secret; echo got-${#secret}');
  const input = log.find((r) => r.event === 'input_accepted');
  assert.equal(input.bytes, 8);
  assert.ok(!fs.readFileSync(broker.ready.audit_log, 'utf8').includes('hunter2'), 'input bytes never logged');
  const exited = log.find((r) => r.event === 'command_exited');
  assert.equal(exited.exit_code, 0);
  assert.equal(exited.session_id, started.session_id);
  assert.equal(log.find((r) => r.event === 'auth_failed').method, 'List');
});

test('when the audit log cannot grow, commands are refused, not run unaudited, and the broker lives', async () => {
  const stateDir = tempDir('tb-audit-full-');
  const readyFile = path.join(stateDir, 'ready.json');
  const marker = path.join(stateDir, 'ran');
  // ulimit -f 64 (32 KiB in dash's blocks, 64 KiB in bash's): writes past it fail with EFBIG (SIGXFSZ would kill a broker that did not ignore it).
  const child = spawn('sh', ['-c', 'ulimit -f 64; exec "$0" "$@"', BROKER_BIN, '--listen', '127.0.0.1:0',
    '--state-dir', stateDir, '--ready-file', readyFile, '--window-command', 'none', '--require-viewer', 'false'],
  { env: { ...process.env, TERMBRIDGE_ALLOW_IN_CONTAINER: 'true' }, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr.on('data', (d) => { log += d; });
  const exited = once(child, 'exit');
  after(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
    removeDir(stateDir);
  });
  fs.writeFileSync(path.join(stateDir, 'policy.toml'), PERMISSIVE_POLICY);
  const ready = await waitForJsonFile(readyFile, 15000, child);
  const full = new proto.TerminalBroker(`127.0.0.1:${ready.grpc_port}`, grpc.credentials.createInsecure());
  const token = new grpc.Metadata();
  token.set('authorization', `Bearer ${fs.readFileSync(ready.agent_token_file, 'utf8').trim()}`);
  const execute = (command) => new Promise((resolve) => {
    full.Execute({ command, wait_ms: 5000 }, token, (err, res) => resolve({ err, res }));
  });
  // A command line longer than what the log may still take.
  const refused = await execute(`touch ${marker} # ${'x'.repeat(70000 - 100)}`.slice(0, 65000));
  assert.ok(refused.err, 'the command was refused');
  assert.match(refused.err.details, /PM_TERM_INTERNAL: the audit log cannot be written; the broker refuses to act unaudited/);
  assert.equal(fs.existsSync(marker), false, 'nothing ran');
  // The next write starts at the limit: the kernel sends SIGXFSZ.
  const again = await execute(`touch ${marker}`);
  assert.match(again.err?.details ?? '', /refuses to act unaudited/, JSON.stringify(again.res));
  assert.equal(fs.existsSync(marker), false, 'nothing ran');
  assert.equal(child.exitCode, null, `the broker died:\n${log}`);
  // It still answers.
  const listed = await new Promise((resolve, reject) =>
    full.List({}, token, (err, res) => (err ? reject(err) : resolve(res))));
  assert.ok(Array.isArray(listed.sessions));
  full.close();
});

test('after logrotate moves the log, SIGHUP continues it in a new file with the next index', async () => {
  const before = records();
  const last = before.at(-1).index;
  const rotated = `${broker.ready.audit_log}.1`;
  fs.renameSync(broker.ready.audit_log, rotated);
  broker.child.kill('SIGHUP');
  await withDeadline((async () => {
    while (!fs.existsSync(broker.ready.audit_log)) await new Promise((r) => setTimeout(r, 20));
  })(), 10000, () => 'the broker did not reopen its audit log after SIGHUP');
  const ran = await call('Execute', { command: 'echo after-rotation; exit', wait_ms: 10000 });
  assert.equal(ran.exit.running, false);
  const now = records();
  assert.equal(now[0].event, 'audit_log_reopened');
  assert.equal(now[0].index, last + 1);
  assert.equal(now[0].previous_last_index, last);
  for (let i = 1; i < now.length; i++) assert.equal(now[i].index, now[i - 1].index + 1);
  assert.ok(now.some((r) => r.event === 'command_requested' && /after-rotation/.test(r.command)));
  const mode = fs.statSync(broker.ready.audit_log).mode & 0o777;
  assert.equal(mode, 0o600);
  // The moved file got nothing more.
  assert.equal(fs.readFileSync(rotated, 'utf8').trimEnd().split('\n').length, before.length);
});
