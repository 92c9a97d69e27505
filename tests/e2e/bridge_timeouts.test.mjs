// The agent's deadlines (docs/troubleshooting.md "When the broker stops
// answering"), the rows where the broker is slow or hung; the rows where it is
// gone are in broker_killed.test.mjs:
// - a host that accepts TCP but never speaks gRPC (a wrong service on the
//   port, a wedged broker) ends the call as PM_TERM_TIMEOUT in phase connect
//   after PM_INTERACTIVE_TERMINAL_CONNECT_TIMEOUT_MS, naming the value;
// - a hung broker (SIGSTOP) gives PM_TERM_TIMEOUT at the request deadline,
//   not a disconnect when its keepalive pings go unanswered;
// - hung during a long wait, it gives PM_TERM_TIMEOUT once it has not
//   answered a ping for the request timeout, before the wait is over;
// - an execute that waits longer than the request timeout is bounded by its
//   own timeout and succeeds.
// Each prints what it measured (`measured: ...`).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Broker, connectAgent, tempDir, terminal } from '../lib/harness.mjs';

// Slack on every measured bound: a loaded 2-CPU machine delays a process by
// this much now and then.
const SLACK_MS = 1500;

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

test('a listener that never answers gRPC gives PM_TERM_TIMEOUT after the configured connect timeout', async () => {
  const sockets = new Set();
  const silent = net.createServer((socket) => { sockets.add(socket); socket.on('error', () => {}); });
  await new Promise((resolve) => silent.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => {
    for (const s of sockets) s.destroy();
    silent.close(resolve);
  }));
  const tokenFile = path.join(tempDir('tb-silent-'), 'token');
  fs.writeFileSync(tokenFile, 'x'.repeat(64));
  const agent = await connectAgent({
    port: silent.address().port, tokenFile,
    env: { PM_INTERACTIVE_TERMINAL_CONNECT_TIMEOUT_MS: '1200' },
  });
  cleanups.push(() => agent.client.close());
  const started = Date.now();
  const r = await terminal(agent.client, { action: 'list', invocation: { mode: 'interactive' } });
  const elapsed = Date.now() - started;
  assert.equal(r.success, false);
  assert.equal(r.error.code, 'PM_TERM_TIMEOUT', JSON.stringify(r.error));
  assert.equal(r.error.details.phase, 'connect');
  assert.equal(r.error.details.timeout_ms, 1200);
  assert.ok(elapsed >= 1100 && elapsed < 6000, `took ${elapsed} ms`);
});

async function brokerAndAgent(env) {
  const broker = await Broker.start();
  cleanups.push(() => broker.stop());
  const agent = await connectAgent({
    port: broker.port, tokenFile: broker.tokenFile,
    env: { PM_INTERACTIVE_TERMINAL_TRACE_BRIDGE: '1', ...env },
  });
  cleanups.push(() => agent.client.close());
  return { broker, agent };
}

// Resolves once the agent's trace shows a bridge call matching `pattern`.
async function traced(agent, pattern) {
  const deadline = Date.now() + 10000;
  while (!pattern.test(agent.log())) {
    if (Date.now() > deadline) throw new Error(`${pattern} never traced:\n${agent.log()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

test('a hung broker (SIGSTOP) gives PM_TERM_TIMEOUT at the request deadline', async () => {
  // Six keepalive intervals: a ping left unanswered must not end the call early.
  const timeoutMs = 6000;
  const { broker, agent } = await brokerAndAgent({ PM_INTERACTIVE_TERMINAL_REQUEST_TIMEOUT_MS: String(timeoutMs) });
  const ok = await terminal(agent.client, { action: 'list', invocation: { mode: 'interactive' } });
  assert.equal(ok.success, true, JSON.stringify(ok.error));
  await broker.freeze();
  let r;
  let elapsed;
  try {
    const started = Date.now();
    r = await terminal(agent.client, { action: 'list', invocation: { mode: 'interactive' } });
    elapsed = Date.now() - started;
  } finally {
    broker.thaw();
  }
  console.log(`measured: SIGSTOP, request timeout ${timeoutMs} ms: ${r.error?.code} after ${elapsed} ms`);
  assert.equal(r.success, false);
  assert.equal(r.error.code, 'PM_TERM_TIMEOUT', JSON.stringify(r.error));
  assert.equal(r.error.details.timeout_ms, timeoutMs);
  assert.equal(r.error.details.phase, 'list');
  assert.ok(elapsed >= timeoutMs - 100 && elapsed < timeoutMs + SLACK_MS, `took ${elapsed} ms`);
  const back = await terminal(agent.client, { action: 'list', invocation: { mode: 'interactive' } });
  assert.equal(back.success, true, JSON.stringify(back.error));
});

test('a broker that hangs during a long wait gives PM_TERM_TIMEOUT once it has not answered for the request timeout', async () => {
  const timeoutMs = 3000;
  const { broker, agent } = await brokerAndAgent({ PM_INTERACTIVE_TERMINAL_REQUEST_TIMEOUT_MS: String(timeoutMs) });
  const r = await terminal(agent.client, {
    action: 'execute', execution: { command: "printf 'begun-%s\\n' now; sleep 60" }, runtime: { timeout_ms: 500 },
  });
  assert.equal(r.success, true, JSON.stringify(r.error));
  assert.equal(r.status, 'accepted');
  const reading = terminal(agent.client, {
    action: 'read_output', target: { session_id: r.identity.session_id },
    cursor: r.result.cursor, wait_ms: 30000,
  });
  await traced(agent, /event=bridge_call phase=read wait_ms=30000 /);
  await broker.freeze();
  const started = Date.now();
  let lost;
  try {
    lost = await reading;
  } finally {
    broker.thaw();
  }
  const elapsed = Date.now() - started;
  console.log(`measured: SIGSTOP during a 30000 ms wait, request timeout ${timeoutMs} ms: ${lost.error?.code} after ${elapsed} ms`);
  assert.equal(lost.success, false, JSON.stringify(lost));
  assert.equal(lost.error.code, 'PM_TERM_TIMEOUT', JSON.stringify(lost.error));
  assert.equal(lost.error.details.unanswered, 'keepalive', JSON.stringify(lost.error));
  assert.equal(lost.error.details.phase, 'read');
  // Unanswered for the request timeout plus two ping intervals (1 s each),
  // counted from the first ping after the stop (within an interval).
  assert.ok(elapsed >= timeoutMs && elapsed < timeoutMs + 3000 + SLACK_MS, `took ${elapsed} ms`);
});

test('an execute that waits longer than the request timeout is bounded by its own timeout', async () => {
  const timeoutMs = 1500;
  const { agent } = await brokerAndAgent({ PM_INTERACTIVE_TERMINAL_REQUEST_TIMEOUT_MS: String(timeoutMs) });
  const started = Date.now();
  const r = await terminal(agent.client, {
    action: 'execute', execution: { command: 'sleep 4; echo finished-late' }, runtime: { timeout_ms: 10000 },
  });
  const elapsed = Date.now() - started;
  console.log(`measured: execute of a 4 s command, timeout_ms 10000, request timeout ${timeoutMs} ms: ${r.status} after ${elapsed} ms`);
  assert.equal(r.success, true, JSON.stringify(r.error));
  assert.equal(r.status, 'completed', 'the wait was not cut short at the request timeout');
  assert.equal(r.result.running, false);
  assert.match(r.result.stdout, /finished-late/);
  assert.ok(elapsed >= 4000 && elapsed < 10000, `took ${elapsed} ms`);
});
