// An agent's Attach stream can send signals to the terminal's foreground
// (SIGINT, SIGTSTP, SIGKILL...). Expected: like its input, only into a
// terminal it may type into: under user_only, a signal is refused
// (PM_TERM_DECLINED, reason lock user_only) and the program keeps running;
// in a shared terminal the agent's own command is interrupted as before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { terminal } from '../lib/harness.mjs';
import { agentAttachInput, cleanupList, cli, setup } from './lib.mjs';

const cleanups = cleanupList();

test('an agent\'s signal does not reach a user_only terminal; in a shared one it does', async () => {
  const ctx = await setup(cleanups);
  const started = await terminal(ctx.client, {
    action: 'execute', execution: { command: 'sleep 60' }, runtime: { timeout_ms: 200 },
  });
  assert.equal(started.success, true, JSON.stringify(started));
  const t = started.identity.terminal_id;
  const session = started.identity.session_id;
  const locked = await cli(ctx.broker, 'lock', t, 'user_only');
  assert.equal(locked.code, 0, locked.stderr);
  const refused = await agentAttachInput(ctx.broker, t, [{ signal: 9 }, { signal: 2 }]);
  assert.equal(refused.error, 'PM_TERM_DECLINED', JSON.stringify(refused));
  assert.match(refused.details, /user_only/);
  const still = await terminal(ctx.client, {
    action: 'read_output', target: { session_id: session }, wait_ms: 500,
  });
  assert.equal(still.result.running, true, 'the program a person holds still runs');
  assert.equal((await cli(ctx.broker, 'lock', t, 'shared')).code, 0);
  await agentAttachInput(ctx.broker, t, [{ signal: 2 }]);
  const ended = await terminal(ctx.client, {
    action: 'read_output', target: { session_id: session }, until: 'exit', wait_ms: 10000,
  });
  assert.equal(ended.result.running, false, JSON.stringify(ended.result));
});
