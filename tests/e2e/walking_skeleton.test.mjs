// The thinnest complete path: a real MCP client (official TypeScript SDK)
// drives a real termbridge-agent over stdio, which runs commands in real PTYs
// owned by a real termbridge-broker over gRPC on loopback.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Broker, connectAgent, terminal, readAll } from '../lib/harness.mjs';

const cleanups = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

async function setup(env = {}) {
  const broker = await Broker.start();
  cleanups.push(() => broker.stop());
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile, env });
  cleanups.push(() => agent.client.close());
  return { broker, agent };
}

test('the agent lists the canonical terminal tool with schemas', async () => {
  const { agent } = await setup();
  const { tools } = await agent.client.listTools();
  const tool = tools.find((t) => t.name === 'memory_terminal_interactive');
  assert.ok(tool, 'memory_terminal_interactive is listed');
  assert.deepEqual(tool.inputSchema.required, ['action']);
  assert.ok(tool.inputSchema.properties.action.enum.includes('execute'));
  assert.equal(tool.outputSchema.type, 'object');
});

test('echo hello runs in a PTY on the broker and reads back', async () => {
  const { agent } = await setup();
  const r = await terminal(agent.client, {
    action: 'execute',
    invocation: { mode: 'interactive', intent: 'execute_command' },
    execution: { command: 'echo hello' },
  });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.equal(r.success, true);
  assert.equal(r.status, 'completed');
  assert.equal(r.result.stdout, 'hello\n');
  assert.equal(r.result.exit_code, 0);
  assert.equal(r.result.running, false);
  assert.match(r.identity.session_id, /^s_/);
  assert.match(r.identity.terminal_id, /^t_/);
  // The text content is for a model: the output and one status line, not the JSON again.
  assert.ok(r.textMatches, r.text);
  assert.match(r.text, /^hello\n\[exit 0 · 6 bytes · session s_\S+ · terminal t_\S+ · cursor \d+\]$/);

  // The session stays readable after it ended, by session and by terminal.
  const again = await terminal(agent.client, {
    action: 'read_output', target: { session_id: r.identity.session_id },
  });
  assert.equal(again.result.stdout, 'hello\n');
  const listed = await terminal(agent.client, { action: 'list' });
  assert.ok(listed.result.items.some((i) => i.session_id === r.identity.session_id && i.exit_code === 0));
});

test('seq 1 20000 comes back complete and in order through cursors', async () => {
  const { agent } = await setup();
  const r = await terminal(agent.client, {
    action: 'execute', execution: { command: 'seq 1 20000' }, max_bytes: 4096,
  });
  assert.equal(r.success, true, JSON.stringify(r.error));
  const { text, result } = await readAll(agent.client, r.identity.session_id, r.result.cursor, r.result.stdout);
  assert.equal(result.exit_code, 0);
  const lines = text.trimEnd().split('\n');
  assert.equal(lines.length, 20000);
  lines.forEach((line, i) => assert.equal(line, String(i + 1)));
});

test('legacy alias run is normalized and reported', async () => {
  const { agent } = await setup();
  const r = await terminal(agent.client, { action: 'run', command: 'printf', args: ['%s-%s', 'a b', "c'd"] });
  assert.equal(r.success, true, JSON.stringify(r.error));
  assert.equal(r.resolved.alias_applied, true);
  assert.equal(r.resolved.legacy_action, 'run');
  assert.equal(r.result.stdout, "a b-c'd");
});

test('a failing command reports its exit code; invalid arguments name the field', async () => {
  const { agent } = await setup();
  const failed = await terminal(agent.client, { action: 'execute', execution: { command: 'exit 7' } });
  assert.equal(failed.success, true);
  assert.equal(failed.result.exit_code, 7);

  const bad = await terminal(agent.client, { action: 'execute', execution: { command: 42 } });
  assert.equal(bad.isError, true);
  assert.equal(bad.error.code, 'PM_TERM_INVALID_PAYLOAD');
  assert.match(JSON.stringify(bad.error.details), /execution\.command/);
  assert.equal(bad.fallback.strategy, 'reject_no_retry');

  const unknown = await terminal(agent.client, { action: 'explode' });
  assert.equal(unknown.error.code, 'PM_TERM_INVALID_ACTION');

  const missing = await terminal(agent.client, { action: 'read_output', target: { session_id: 's_nope' } });
  assert.equal(missing.error.code, 'PM_TERM_NOT_FOUND');
  assert.equal(missing.fallback.strategy, 'refresh_list_then_retry');
});

test('a long command returns accepted within the wait and can be terminated', async () => {
  const { agent } = await setup();
  const r = await terminal(agent.client, {
    action: 'execute', execution: { command: 'echo started; sleep 60' }, runtime: { timeout_ms: 300 },
  });
  assert.equal(r.status, 'accepted');
  assert.equal(r.result.running, true);
  // Under load the 300 ms may pass before the viewer attaches and the command
  // is written: wait until it has printed before terminating it.
  const started = await terminal(agent.client, {
    action: 'read_output', target: { session_id: r.identity.session_id },
    until: 'match', match: 'started\\r?\\n', wait_ms: 20000,
  });
  assert.equal(started.result.wait_result, 'matched', JSON.stringify(started));
  const t = await terminal(agent.client, { action: 'terminate', target: { session_id: r.identity.session_id } });
  assert.equal(t.success, true, JSON.stringify(t.error));
  assert.equal(t.result.running, false);
  const out = await terminal(agent.client, { action: 'read_output', target: { session_id: r.identity.session_id } });
  assert.match(out.result.stdout, /started/);
});

test('a stopped broker gives PM_TERM_GUI_UNAVAILABLE with the fallback', async () => {
  const { broker, agent } = await setup();
  const ok = await terminal(agent.client, { action: 'list' });
  assert.equal(ok.success, true);
  await broker.stop();
  // The first call may still go out on the connection the stop just closed
  // (the agent has not read the broker's goodbye yet): then it is a dropped
  // connection. Either way it fails closed and retriable, and the next call
  // finds no broker.
  const first = await terminal(agent.client, { action: 'execute', execution: { command: 'echo hi' } });
  assert.equal(first.success, false);
  assert.ok(['PM_TERM_GUI_UNAVAILABLE', 'PM_TERM_DISCONNECTED'].includes(first.error.code), first.error.code);
  assert.equal(first.error.retriable, true);
  const r = first.error.code === 'PM_TERM_GUI_UNAVAILABLE'
    ? first
    : await terminal(agent.client, { action: 'execute', execution: { command: 'echo hi' } });
  assert.equal(r.isError, true);
  assert.equal(r.success, false);
  assert.equal(r.status, 'failed');
  assert.equal(r.error.code, 'PM_TERM_GUI_UNAVAILABLE');
  assert.equal(r.error.retriable, true);
  assert.equal(r.fallback.strategy, 'fallback_to_headless_if_allowed');
  assert.equal(r.error.details.reason, 'broker_unreachable');
  assert.deepEqual(r.error.details.aliases_tried, ['127.0.0.1']);
  assert.equal(r.error.details.port, broker.port);
  // A list across both lanes still answers, and says which lane is down.
  const both = await terminal(agent.client, { action: 'list' });
  assert.equal(both.success, true, JSON.stringify(both.error));
  assert.equal(both.result.lanes.interactive.available, false);
  assert.equal(both.result.lanes.interactive.error, 'PM_TERM_GUI_UNAVAILABLE');
  assert.equal(both.result.lanes.headless.available, true);
});

test('a passed deadline gives PM_TERM_TIMEOUT', async () => {
  const { broker, agent } = await setup({ PM_INTERACTIVE_TERMINAL_REQUEST_TIMEOUT_MS: '1000' });
  const ok = await terminal(agent.client, { action: 'list' });
  assert.equal(ok.success, true);
  await broker.freeze();  // the broker stays connected but never answers
  try {
    const r = await terminal(agent.client, { action: 'list', invocation: { mode: 'interactive' } });
    assert.equal(r.error.code, 'PM_TERM_TIMEOUT');
    assert.equal(r.error.details.timeout_ms, 1000);
    assert.equal(r.error.details.phase, 'list');
    assert.equal(r.fallback.strategy, 'suggest_retry_headless_or_interactive');
  } finally {
    broker.thaw();
  }
  // Once the broker answers again, the agent reconnects on the next call.
  const back = await terminal(agent.client, { action: 'list' });
  assert.equal(back.success, true, JSON.stringify(back.error));
});

test('a wrong agent token is refused', async () => {
  const broker = await Broker.start();
  cleanups.push(() => broker.stop());
  const fs = await import('node:fs');
  const wrong = `${broker.stateDir}/wrong-token`;
  fs.writeFileSync(wrong, 'x'.repeat(64));
  const agent = await connectAgent({ port: broker.port, tokenFile: wrong });
  cleanups.push(() => agent.client.close());
  const r = await terminal(agent.client, { action: 'list', invocation: { mode: 'interactive' } });
  assert.equal(r.error.code, 'PM_TERM_GUI_UNAVAILABLE');
  assert.equal(r.error.details.reason, 'credentials_refused');
});
