// Approvals find the person (issue 25; docs/operating.md "When a request
// waits"): a request that waits for a person runs the desktop notifier with
// the command (argv, no shell, markup escaped), and `termbridge watch` prints
// it with the terminal's bell; --notify off and --bell=false switch them off.
// The notifier here is a program with notify-send's arguments that writes
// them to a file: the test machine has no notification server to show them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { Broker, CLI_BIN, connectAgent, startWatch, tempDir, removeDir, terminal, withDeadline } from '../lib/harness.mjs';
import { cleanupList, recordApprovals } from '../security/lib.mjs';

const cleanups = cleanupList();

// A notify-send stand-in: each call appends its arguments (NUL-separated, one
// call per line) to `log`.
function fakeNotifier(dir) {
  const program = path.join(dir, 'notify');
  const log = path.join(dir, 'notified.log');
  fs.writeFileSync(program, `#!/bin/sh\nprintf '%s\\0' "$@" >> '${log}'\nprintf '\\n' >> '${log}'\n`, { mode: 0o700 });
  return { program, log };
}

async function waitForFile(file, pattern, timeoutMs = 15000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
    if (pattern.test(text)) return text;
    if (Date.now() > deadline) throw new Error(`no ${pattern} in ${file}: ${JSON.stringify(text)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function waitForOutput(watch, pattern, timeoutMs = 15000) {
  return withDeadline(new Promise((resolve) => {
    const check = () => {
      if (pattern.test(watch.stdout)) {
        watch.child.stdout.off('data', check);
        resolve(watch.stdout);
      }
    };
    watch.child.stdout.on('data', check);
    check();
  }), timeoutMs, () => `watch printed no ${pattern}:\n${watch.stdout}`);
}

test('a waiting request notifies the desktop and rings the bell in watch', async () => {
  const dir = tempDir('tb-notify-');
  cleanups.push(async () => removeDir(dir));
  const notifier = fakeNotifier(dir);
  // The default policy asks for printf; the watch of the harness keeps terminals visible.
  const broker = await Broker.start({ policy: null, extraArgs: ['--notify', notifier.program] });
  cleanups.push(() => broker.stop());
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => agent.client.close());
  const approvals = recordApprovals(broker);
  cleanups.push(() => approvals.stop());

  const marker = `<b>bold</b>-${process.pid}`;
  const call = terminal(agent.client, {
    action: 'execute', execution: { command: `printf '%s\\n' '${marker}'` }, timeout_ms: 60000,
  });
  const logged = await waitForFile(notifier.log, /approval needed/);
  const args = logged.trim().split('\n')[0].split('\0').filter((a) => a !== '');
  assert.deepEqual(args.slice(0, 4), ['--app-name=termbridge', '--urgency=critical', '--icon=utilities-terminal', '--']);
  assert.equal(args[4], 'termbridge: approval needed');
  assert.match(args[5], new RegExp(`&lt;b&gt;bold&lt;/b&gt;-${process.pid}`), 'markup is escaped');
  assert.match(args[5], /termbridge approvals approve a_/);

  // The harness's watch (bell on by default) printed it with a bell.
  const shown = await waitForOutput(broker.watch, /approval needed \(a_[^)]+\): printf[^\n]*\n\x07/);
  assert.match(shown, /termbridge approvals approve a_/);

  const request = await approvals.after(0);
  const denied = await new Promise((resolve) => {
    spawn(CLI_BIN, ['--state-dir', broker.stateDir, 'approvals', 'deny', request.approval_id]).on('exit', resolve);
  });
  assert.equal(denied, 0);
  assert.equal((await call).error?.code, 'PM_TERM_DECLINED');
});

test('--notify off and watch --bell=false keep quiet', async () => {
  const dir = tempDir('tb-notify-');
  cleanups.push(async () => removeDir(dir));
  const broker = await Broker.start({ policy: null, extraArgs: ['--notify', 'off'] });
  cleanups.push(() => broker.stop());
  assert.match(broker.log, /event=desktop_notify_off reason="desktop notifications are off"/);
  const quiet = spawn(CLI_BIN, ['--state-dir', broker.stateDir, '--bell=false', 'watch'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const watch = { child: quiet, stdout: '' };
  quiet.stdout.on('data', (d) => { watch.stdout += d; });
  cleanups.push(async () => { quiet.kill('SIGTERM'); });
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => agent.client.close());
  const approvals = recordApprovals(broker);
  cleanups.push(() => approvals.stop());
  const call = terminal(agent.client, {
    action: 'execute', execution: { command: "printf 'quiet-%s\\n' 1" }, timeout_ms: 60000,
  });
  const request = await approvals.after(0);
  const shown = await waitForOutput(watch, /approval needed/);
  assert.doesNotMatch(shown, /\x07/, 'no bell with --bell=false');
  await new Promise((resolve) => {
    spawn(CLI_BIN, ['--state-dir', broker.stateDir, 'approvals', 'deny', request.approval_id]).on('exit', resolve);
  });
  assert.equal((await call).error?.code, 'PM_TERM_DECLINED');
});
