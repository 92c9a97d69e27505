// The broker killed while a call is in flight: the agent's MCP call ends with
// PM_TERM_DISCONNECTED (never a hang, never a false success), and the agent
// keeps serving: the next call says the broker is unreachable.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Broker, connectAgent, terminal } from '../lib/harness.mjs';

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
  const started = Date.now();
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
  broker.child.kill('SIGKILL');
  const lost = await reading;
  assert.equal(lost.success, false, JSON.stringify(lost));
  assert.equal(lost.error.code, 'PM_TERM_DISCONNECTED', JSON.stringify(lost.error));
  assert.equal(lost.error.retriable, true);
  assert.ok(lost.fallback?.strategy, 'the fallback says what to do next');
  assert.ok(Date.now() - started < 15000, `the loss is noticed long before the read deadline (${Date.now() - started} ms)`);

  const next = await terminal(agent.client, { action: 'list', invocation: { mode: 'interactive' } });
  assert.equal(next.success, false);
  assert.equal(next.error.code, 'PM_TERM_GUI_UNAVAILABLE', JSON.stringify(next.error));
  assert.equal(next.error.details.reason, 'broker_unreachable', JSON.stringify(next.error));
});
