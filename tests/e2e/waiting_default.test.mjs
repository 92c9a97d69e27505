// Waiting is not declining: while the agent's default terminal has a command
// waiting for a person, or a person holds it (lock user_only), a new execute
// without a target gets a terminal of its own, as it does when the default
// is busy; a command aimed at that terminal is refused with a message that
// says what happened, never "the person declined".
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import { Broker, connectAgent, tempDir, removeDir, terminal, watchApprovals } from '../lib/harness.mjs';

const run = promisify(execFile);
const CLI = process.env.TERMBRIDGE_CLI_BIN;
const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

test('a pending approval or a user_only lock on the default terminal is not a decline', async () => {
  const broker = await Broker.start({ policy: null });
  cleanups.push(() => broker.stop());
  const approvals = watchApprovals(broker);
  cleanups.push(() => approvals.stop());
  await approvals.live();
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => agent.client.close());
  const work = tempDir('tb-waiting-');
  cleanups.push(() => removeDir(work));
  const canary = path.join(work, 'canary');

  const first = await terminal(agent.client, { action: 'execute', execution: { command: 'echo first' } });
  assert.equal(first.result?.stdout, 'first\n', JSON.stringify(first));
  const home = first.identity.terminal_id;

  // A command that asks: it waits on the default terminal.
  const asking = await terminal(agent.client, { action: 'execute', execution: { command: `touch ${canary}` }, runtime: { timeout_ms: 200 } });
  assert.equal(asking.result?.approval?.state, 'pending', JSON.stringify(asking));
  assert.equal(asking.identity.terminal_id, home);
  const request = await approvals.next();

  // Untargeted: a terminal of its own, and it runs.
  const second = await terminal(agent.client, { action: 'execute', execution: { command: 'echo second' } });
  assert.equal(second.success, true, JSON.stringify(second));
  assert.equal(second.result.stdout, 'second\n');
  assert.notEqual(second.identity.terminal_id, home);

  // Aimed at the waiting terminal: refused, and the message says why.
  const aimed = await terminal(agent.client, { action: 'execute', target: { terminal_id: home }, execution: { command: 'echo third' } });
  assert.equal(aimed.error?.code, 'PM_TERM_DECLINED', JSON.stringify(aimed));
  assert.equal(aimed.error.details.reason, 'pending_approval');
  assert.match(aimed.error.message, /waiting for a person's approval \(nobody declined/);
  assert.match(aimed.fallback.user_message, /nobody declined anything/);
  assert.doesNotMatch(JSON.stringify(aimed), /The person at the terminal declined/);

  // A person holds the (new) default terminal: untargeted work goes elsewhere.
  const locked = await run(CLI, ['--state-dir', broker.stateDir, 'lock', second.identity.terminal_id, 'user_only']);
  assert.equal(locked.stderr, '');
  const fourth = await terminal(agent.client, { action: 'execute', execution: { command: 'echo fourth' } });
  assert.equal(fourth.result?.stdout, 'fourth\n', JSON.stringify(fourth));
  assert.ok(![home, second.identity.terminal_id].includes(fourth.identity.terminal_id));
  const held = await terminal(agent.client, { action: 'execute', target: { terminal_id: second.identity.terminal_id }, execution: { command: 'echo fifth' } });
  assert.equal(held.error?.code, 'PM_TERM_DECLINED', JSON.stringify(held));
  assert.match(held.fallback.user_message, /A person holds this terminal's input/);

  // The waiting command is still the person's to decide, and never ran.
  const denied = await run(CLI, ['--state-dir', broker.stateDir, 'approvals', 'deny', request.approval_id]);
  assert.match(denied.stdout, /denied/);
  assert.equal(fs.existsSync(canary), false);
});
