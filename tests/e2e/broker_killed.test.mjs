// The broker gone while a call is in flight (docs/troubleshooting.md "When the
// broker stops answering", the rows where the connection is closed; the hung
// rows are in bridge_timeouts.test.mjs): the agent's MCP call ends with
// PM_TERM_DISCONNECTED within two seconds (never a hang, never a false
// success), and the agent keeps serving.
// - SIGKILL: the next call says the broker is unreachable;
// - a network drop (a proxy between agent and broker resets both sides): the
//   next call connects anew through the proxy;
// - a proxy that holds the connection but forwards nothing is silence, which
//   the agent cannot tell from a hung broker: PM_TERM_TIMEOUT at the deadline.
// Each prints what it measured (`measured: ...`).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { Broker, connectAgent, terminal } from '../lib/harness.mjs';

// Two seconds, as promised, plus slack for a loaded 2-CPU machine.
const LOST_WITHIN_MS = 2000 + 1500;

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

test('a broker killed mid-call gives PM_TERM_DISCONNECTED, then GUI_UNAVAILABLE', async () => {
  const broker = await Broker.start();
  cleanups.push(() => broker.stop());
  const agent = await connectAgent({
    port: broker.port, tokenFile: broker.tokenFile, env: { PM_INTERACTIVE_TERMINAL_TRACE_BRIDGE: '1' },
  });
  cleanups.push(() => agent.client.close());

  const r = await terminal(agent.client, {
    action: 'execute', execution: { command: "printf 'begun-%s\\n' now; sleep 60" }, runtime: { timeout_ms: 500 },
  });
  assert.equal(r.success, true, JSON.stringify(r.error));
  assert.equal(r.status, 'accepted');
  // A long read_output is waiting on the broker when it dies.
  const reading = terminal(agent.client, {
    action: 'read_output', target: { session_id: r.identity.session_id },
    cursor: r.result.cursor, wait_ms: 20000,
  });
  // The agent traces each bridge call (PM_INTERACTIVE_TERMINAL_TRACE_BRIDGE):
  // kill the broker once the read is on its way.
  await new Promise((resolve, reject) => {
    const deadline = Date.now() + 10000;
    const check = () => {
      if (/event=bridge_call phase=read /.test(agent.log())) resolve();
      else if (Date.now() > deadline) reject(new Error(`no read traced:\n${agent.log()}`));
      else setTimeout(check, 10);
    };
    check();
  });
  const started = Date.now();
  broker.child.kill('SIGKILL');
  const lost = await reading;
  const elapsed = Date.now() - started;
  console.log(`measured: SIGKILL during a 20000 ms wait: ${lost.error?.code} after ${elapsed} ms`);
  assert.equal(lost.success, false, JSON.stringify(lost));
  assert.equal(lost.error.code, 'PM_TERM_DISCONNECTED', JSON.stringify(lost.error));
  assert.equal(lost.error.retriable, true);
  assert.ok(lost.fallback?.strategy, 'the fallback says what to do next');
  assert.ok(elapsed < LOST_WITHIN_MS, `the loss is noticed within two seconds (${elapsed} ms)`);

  const next = await terminal(agent.client, { action: 'list', invocation: { mode: 'interactive' } });
  assert.equal(next.success, false);
  if (next.error.code === 'PM_TERM_TIMEOUT' && next.error.details.phase === 'connect' &&
      await portAccepts(broker.port)) {
    // The kernel gave the dead broker's port to another test's process, which
    // accepts TCP but speaks no gRPC: the agent says exactly that.
    console.log(`port ${broker.port} was taken by another process after the kill: ${next.error.message}`);
    return;
  }
  assert.equal(next.error.code, 'PM_TERM_GUI_UNAVAILABLE', JSON.stringify(next.error));
  assert.equal(next.error.details.reason, 'broker_unreachable', JSON.stringify(next.error));
});

// Whether something accepts TCP connections on 127.0.0.1:port now.
function portAccepts(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}

// A TCP proxy between the agent and the broker: cut() resets every connection
// it carries (a network drop); mute() stops forwarding but holds them open.
class Proxy {
  static async start(targetPort) {
    const proxy = new Proxy(targetPort);
    proxy.server = net.createServer((agentSide) => proxy.relay(agentSide));
    proxy.server.listen(0, '127.0.0.1');
    await once(proxy.server, 'listening');
    cleanups.push(() => proxy.close());
    return proxy;
  }

  constructor(targetPort) {
    this.targetPort = targetPort;
    this.sockets = new Set();
    this.muted = false;
  }

  get port() { return this.server.address().port; }

  relay(agentSide) {
    const brokerSide = net.connect(this.targetPort, '127.0.0.1');
    for (const [from, to] of [[agentSide, brokerSide], [brokerSide, agentSide]]) {
      this.sockets.add(from);
      from.on('error', () => to.destroy());
      from.on('close', () => { this.sockets.delete(from); to.destroy(); });
      from.on('data', (chunk) => { if (!this.muted) to.write(chunk); });
    }
  }

  cut() {
    for (const socket of this.sockets) socket.resetAndDestroy();
    this.sockets.clear();
  }

  mute() { this.muted = true; }

  async close() {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

// An agent that reaches `broker` through a new proxy, with a read_output
// waiting `waitMs` on the broker (traced by the agent) when it returns.
async function readingThroughProxy(broker, env = {}, waitMs = 20000) {
  const proxy = await Proxy.start(broker.port);
  const agent = await connectAgent({
    port: proxy.port, tokenFile: broker.tokenFile, env: { PM_INTERACTIVE_TERMINAL_TRACE_BRIDGE: '1', ...env },
  });
  cleanups.push(() => agent.client.close());
  const r = await terminal(agent.client, {
    action: 'execute', execution: { command: "printf 'begun-%s\\n' now; sleep 60" }, runtime: { timeout_ms: 500 },
  });
  assert.equal(r.success, true, JSON.stringify(r.error));
  const reading = terminal(agent.client, {
    action: 'read_output', target: { session_id: r.identity.session_id },
    cursor: r.result.cursor, wait_ms: waitMs,
  });
  const deadline = Date.now() + 10000;
  while (!/event=bridge_call phase=read /.test(agent.log())) {
    if (Date.now() > deadline) throw new Error(`no read traced:\n${agent.log()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return { proxy, agent, reading };
}

test('a network drop mid-call gives PM_TERM_DISCONNECTED within two seconds, then the agent connects anew', async () => {
  const broker = await Broker.start();
  cleanups.push(() => broker.stop());
  const { proxy, agent, reading } = await readingThroughProxy(broker);
  const started = Date.now();
  proxy.cut();
  const lost = await reading;
  const elapsed = Date.now() - started;
  console.log(`measured: network drop (proxy reset) during a 20000 ms wait: ${lost.error?.code} after ${elapsed} ms`);
  assert.equal(lost.success, false, JSON.stringify(lost));
  assert.equal(lost.error.code, 'PM_TERM_DISCONNECTED', JSON.stringify(lost.error));
  assert.equal(lost.error.retriable, true);
  assert.ok(elapsed < LOST_WITHIN_MS, `the drop is noticed within two seconds (${elapsed} ms)`);
  const next = await terminal(agent.client, { action: 'list', invocation: { mode: 'interactive' } });
  assert.equal(next.success, true, JSON.stringify(next.error));
});

test('a proxy that holds the connection but forwards nothing gives PM_TERM_TIMEOUT, as a hung broker does', async () => {
  const timeoutMs = 2000;
  const broker = await Broker.start();
  cleanups.push(() => broker.stop());
  const { proxy, reading } = await readingThroughProxy(
    broker, { PM_INTERACTIVE_TERMINAL_REQUEST_TIMEOUT_MS: String(timeoutMs) }, 20000);
  const started = Date.now();
  proxy.mute();
  const lost = await reading;
  const elapsed = Date.now() - started;
  console.log(`measured: muted proxy during a 20000 ms wait, request timeout ${timeoutMs} ms: ${lost.error?.code} after ${elapsed} ms`);
  assert.equal(lost.success, false, JSON.stringify(lost));
  assert.equal(lost.error.code, 'PM_TERM_TIMEOUT', JSON.stringify(lost.error));
  assert.ok(elapsed >= timeoutMs && elapsed < timeoutMs + 3000 + 1500, `took ${elapsed} ms`);
});
