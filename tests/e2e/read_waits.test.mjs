// read_output waits, bounded by wait_ms, for what the agent needs: new
// output, a regex match, the output going idle, or the exit; and says how
// the wait ended.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Broker, connectAgent, terminal } from '../lib/harness.mjs';

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function setup() {
  const broker = await Broker.start();
  cleanups.push(() => broker.stop());
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => agent.client.close());
  return agent.client;
}

test('read_output until match, idle and exit, each bounded by wait_ms', async () => {
  const client = await setup();
  // Prints a line, waits, prints the ready marker, goes quiet, then exits.
  const r = await terminal(client, {
    action: 'execute',
    execution: { command: "printf 'booting\\n'; sleep 1; printf 'server ready on port %s\\n' 8080; sleep 2; printf 'bye\\n'" },
    runtime: { timeout_ms: 100 },
  });
  assert.equal(r.status, 'accepted', JSON.stringify(r));
  const session = r.identity.session_id;

  const matched = await terminal(client, {
    action: 'read_output', target: { session_id: session }, cursor: r.result.cursor,
    until: 'match', match: 'ready on port [0-9]+', wait_ms: 20000,
  });
  assert.equal(matched.success, true, JSON.stringify(matched.error));
  assert.equal(matched.result.wait_result, 'matched');
  assert.match(matched.result.stdout, /server ready on port 8080/);
  assert.equal(matched.result.running, true);

  const idle = await terminal(client, {
    action: 'read_output', target: { session_id: session }, cursor: matched.result.cursor,
    until: 'idle', idle_ms: 500, wait_ms: 20000,
  });
  assert.equal(idle.result.wait_result, 'idle', JSON.stringify(idle.result));
  assert.equal(idle.result.running, true);

  const exited = await terminal(client, {
    action: 'read_output', target: { session_id: session }, cursor: idle.result.cursor,
    until: 'exit', wait_ms: 20000,
  });
  assert.equal(exited.result.wait_result, 'exited');
  assert.equal(exited.result.running, false);
  assert.equal(exited.result.exit_code, 0);
  assert.match(exited.result.stdout, /bye/);
});

test('until output answers at once when the cursor is behind output already there', async () => {
  const client = await setup();
  const r = await terminal(client, {
    action: 'execute',
    execution: { command: "printf 'first\\n'; sleep 30" },
    runtime: { timeout_ms: 1500 },
  });
  assert.equal(r.status, 'accepted', JSON.stringify(r));
  assert.equal(r.result.stdout, 'first\n', JSON.stringify(r.result));
  // Read again from where the output began: the bytes are there, so the wait
  // must not sit out wait_ms for more (the command sleeps for 30 s).
  const t0 = Date.now();
  const again = await terminal(client, {
    action: 'read_output', target: { session_id: r.identity.session_id }, cursor: r.result.output_start,
    until: 'output', wait_ms: 20000,
  });
  assert.ok(Date.now() - t0 < 10000, `took ${Date.now() - t0} ms`);
  assert.equal(again.result.wait_result, 'output', JSON.stringify(again.result));
  assert.equal(again.result.stdout, 'first\n');
  assert.equal(again.result.running, true);
  await terminal(client, { action: 'terminate', target: { session_id: r.identity.session_id } });
});

test('a wait that does not come true ends at wait_ms with wait_result timeout', async () => {
  const client = await setup();
  const r = await terminal(client, {
    action: 'execute', execution: { command: 'sleep 30' }, runtime: { timeout_ms: 100 },
  });
  const started = Date.now();
  const waited = await terminal(client, {
    action: 'read_output', target: { session_id: r.identity.session_id },
    until: 'match', match: 'never-printed', wait_ms: 700,
  });
  assert.equal(waited.success, true, JSON.stringify(waited.error));
  assert.equal(waited.result.wait_result, 'timeout');
  assert.ok(Date.now() - started >= 650, 'it waited');
  const bad = await terminal(client, {
    action: 'read_output', target: { session_id: r.identity.session_id },
    until: 'match', match: '(unclosed', wait_ms: 100,
  });
  assert.equal(bad.error.code, 'PM_TERM_INVALID_PAYLOAD');
  assert.equal(bad.error.details.field, 'match');
  const missing = await terminal(client, {
    action: 'read_output', target: { session_id: r.identity.session_id }, until: 'match',
  });
  assert.equal(missing.error.code, 'PM_TERM_INVALID_PAYLOAD');
  assert.equal(missing.error.details.field, 'match');
  await terminal(client, { action: 'terminate', target: { session_id: r.identity.session_id } });
});

test('until match finds a marker printed after more than a MiB of output', async () => {
  const client = await setup();
  // 1.5 MB before the marker: the wait must scan on past its first slice
  // (it once re-read the first MiB forever and timed out, burning a CPU).
  const r = await terminal(client, {
    action: 'execute',
    execution: { command: "head -c 1500000 /dev/zero | tr '\\0' a; echo; echo DONE_\"MARK\"; sleep 30" },
    runtime: { timeout_ms: 100 },
  });
  assert.equal(r.status, 'accepted', JSON.stringify(r));
  const matched = await terminal(client, {
    action: 'read_output', target: { session_id: r.identity.session_id }, cursor: r.result.cursor,
    until: 'match', match: 'DONE_MARK', wait_ms: 20000,
  });
  assert.equal(matched.success, true, JSON.stringify(matched.error));
  assert.equal(matched.result.wait_result, 'matched');
  assert.equal(matched.result.running, true);
  await terminal(client, { action: 'terminate', target: { session_id: r.identity.session_id } });
});
