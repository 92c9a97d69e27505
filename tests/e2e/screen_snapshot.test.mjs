// format "screen": a full-screen program's current screen (libvterm), as a
// person would see it, instead of the escape sequences that drew it.
import { test, after } from 'node:test';
import fs from 'node:fs';
import assert from 'node:assert/strict';
import { Broker, connectAgent, terminal } from '../lib/harness.mjs';

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

test('read_output with format screen returns the rendered screen of a full-screen program', async () => {
  const broker = await Broker.start();
  cleanups.push(() => broker.stop());
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => agent.client.close());
  // The alternate screen, cleared, text placed at row 5 column 10, then
  // overwritten in place: only the final state is on the screen.
  const draw = "printf '\\033[?1049h\\033[2J\\033[5;10Hdraft-text\\033[5;10Hfinal-text\\033[8;1Hrow-eight'; sleep 30";
  const r = await terminal(agent.client, {
    action: 'execute', execution: { command: draw }, runtime: { timeout_ms: 500 },
  });
  assert.equal(r.success, true, JSON.stringify(r.error));
  const t = r.identity.terminal_id;
  // The program has written its screen once its last text is in the output.
  const drawn = await terminal(agent.client, {
    action: 'read_output', target: { terminal_id: t }, until: 'match', match: 'row-eight', wait_ms: 20000,
  });
  assert.equal(drawn.result?.wait_result, 'matched', JSON.stringify(drawn));
  let screen;
  for (const deadline = Date.now() + 20000; ;) {
    screen = await terminal(agent.client, {
      action: 'read_output', target: { terminal_id: t }, format: 'screen', wait_ms: 200,
    });
    assert.equal(screen.success, true, JSON.stringify(screen.error));
    if (/final-text/.test(screen.result.stdout) || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const rows = screen.result.stdout.split('\n');
  assert.equal(rows[4], `${' '.repeat(9)}final-text`, screen.result.stdout);
  assert.equal(rows[7], 'row-eight');
  assert.doesNotMatch(screen.result.stdout, /draft-text|\u001b/);
  assert.equal(screen.result.screen.alternate_screen, true);
  assert.ok(screen.result.screen.rows >= 8 && screen.result.screen.cols >= 20, JSON.stringify(screen.result.screen));

  // The clean-text view of the same bytes still has both words, in order.
  const clean = await terminal(agent.client, { action: 'read_output', target: { terminal_id: t }, wait_ms: 0 });
  assert.match(clean.result.stdout, /draft-text[\s\S]*final-text/);
  await terminal(agent.client, { action: 'terminate', target: { terminal_id: t } });
});

// Output that does not end in a newline stays where a person sees it: the
// shell starts its prompt on the next line, so the prompt redraw that comes
// with every command the agent sends (it erases the prompt's line) does not
// erase that text.
for (const shell of ['/bin/bash', '/usr/bin/zsh']) {
  test(`output without a final newline stays on the screen when the next command runs (${shell})`, {
    skip: !fs.existsSync(shell) && `${shell} is not installed`,
  }, () => tailStaysOnScreen(shell));
}

async function tailStaysOnScreen(shell) {
  const broker = await Broker.start({ extraArgs: ['--shell', shell] });
  cleanups.push(() => broker.stop());
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => agent.client.close());
  const first = await terminal(agent.client, { action: 'execute', execution: { command: "printf 'tail-%s' kept" } });
  assert.equal(first.success, true, JSON.stringify(first.error));
  assert.equal(first.result.stdout, 'tail-kept');
  const t = first.identity.terminal_id;
  // Ended by a newline, cleared to the first column, or with no output:
  // no blank line is added.
  for (const command of ["printf 'line-%s\\n' one", "printf 'x\\r'", 'true', "printf 'last-%s\\n' two"]) {
    const r = await terminal(agent.client, { action: 'execute', execution: { command }, target: { terminal_id: t } });
    assert.equal(r.success, true, JSON.stringify(r.error));
  }
  // The last command's result can come back before bash has drawn its next
  // prompt: wait for the screen to show it (or give up after 10 s).
  let screen;
  for (const deadline = Date.now() + 10000; ;) {
    screen = await terminal(agent.client, {
      action: 'read_output', target: { terminal_id: t }, format: 'screen', wait_ms: 0,
    });
    assert.equal(screen.success, true, JSON.stringify(screen.error));
    const shown = screen.result.stdout.trimEnd().split('\n');
    if (shown.at(-1) === '$' || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const rows = screen.result.stdout.split('\n');
  const at = rows.indexOf('tail-kept');
  assert.ok(at > 0, screen.result.stdout);
  assert.deepEqual(rows.slice(at, at + 8), [
    'tail-kept',
    "$ printf 'line-%s\\n' one",
    'line-one',
    "$ printf 'x\\r'",
    "$ true",
    "$ printf 'last-%s\\n' two",
    'last-two',
    '$',
  ], screen.result.stdout);
  await terminal(agent.client, { action: 'terminate', target: { terminal_id: t } });
}
