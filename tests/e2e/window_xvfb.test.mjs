// A native window under a real X server (Xvfb): when an agent's command
// opens a terminal, the broker launches a terminal emulator (xterm, found by
// its "auto" template) running `termbridge attach`; that window is the
// viewer that lets the command run, and it shows the command's output. A
// screenshot of the screen is kept as an artifact. Every process (Xvfb, the
// window, its attach) is gone afterwards.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
// pidsMentioning: the broker's private state dir names every window it
// opened and every attach in it.
import {
  Broker, connectAgent, pidsMentioning, tempDir, terminal, waitPidGone,
} from '../lib/harness.mjs';

const run = promisify(execFile);
const CLI = process.env.TERMBRIDGE_CLI_BIN;
if (!CLI) throw new Error('set TERMBRIDGE_CLI_BIN (ctest does)');
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ARTIFACTS = path.resolve(ROOT, process.env.TB_ARTIFACT_DIR || 'build/artifacts');

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

function have(program) {
  try {
    execFileSync('sh', ['-c', `command -v ${program}`]);
    return true;
  } catch {
    return false;
  }
}
const missing = ['Xvfb', 'xterm', 'import', 'xwininfo'].filter((p) => !have(p));

// Starts Xvfb on a display number it picks itself (-displayfd) and resolves
// with that display once the server is ready to accept clients.
async function startXvfb() {
  const child = spawn('Xvfb', ['-displayfd', '3', '-screen', '0', '1024x768x24', '-nolisten', 'tcp'], {
    stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stderr.on('data', (d) => { log += d; });
  const exited = once(child, 'exit');
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  });
  let number = '';
  const display = await new Promise((resolve, reject) => {
    child.stdio[3].on('data', (d) => {
      number += d;
      if (number.includes('\n')) resolve(`:${number.trim()}`);
    });
    child.on('exit', (code) => reject(new Error(`Xvfb exited (${code}) before it was ready:\n${log}`)));
  });
  return { child, display, exited };
}

// Looks every 100 ms (an X window has no event we can wait on from here)
// until `probe` returns a value, up to `timeoutMs`.
async function poll(what, probe, timeoutMs = 20000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// The id and title of the top-level window whose title matches `pattern`,
// or null.
function findWindow(display, pattern) {
  const tree = execFileSync('xwininfo', ['-display', display, '-root', '-tree'], { encoding: 'utf8' });
  for (const line of tree.split('\n')) {
    const title = /^\s*(0x[0-9a-f]+) "(.*)":/.exec(line);
    if (title && pattern.test(title[2])) return { id: title[1], title: title[2] };
  }
  return null;
}

// Mean brightness (0 black .. 1 white) of a window's pixels.
function windowMean(display, windowId, file) {
  execFileSync('import', ['-display', display, '-window', windowId, file]);
  return Number(execFileSync('convert', [file, '-format', '%[fx:mean]', 'info:'], { encoding: 'utf8' }));
}

test('the broker opens an xterm running termbridge attach that shows the command\'s output', {
  skip: missing.length > 0 && `not installed: ${missing.join(', ')} (deploy/setup.sh installs them)`,
}, async () => {
  const xvfb = await startXvfb();
  const dir = tempDir('tb-window-');
  const policy = path.join(dir, 'policy.toml');
  fs.writeFileSync(policy, 'version = 1\ndefault = "allow"\n');
  const broker = await Broker.start({
    viewer: 'required',
    env: { DISPLAY: xvfb.display },
    extraArgs: ['--require-viewer', 'true', '--policy', policy, '--window-command', 'auto',
      '--spawn-timeout-ms', '20000'],
  });
  cleanups.push(() => broker.stop());
  // However the test ends, no window or attach of this broker survives it.
  cleanups.push(async () => {
    for (const { pid } of pidsMentioning(broker.stateDir)) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    }
  });
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => agent.client.close());

  const r = await terminal(agent.client, {
    action: 'execute',
    execution: { command: "printf 'window line %s\\n' $(seq 1 15); printf 'window-%s\\n' 42" },
  });
  assert.equal(r.success, true, JSON.stringify(r.error));
  assert.match(r.result.stdout, /window line 15\nwindow-42\n/);
  const t = r.identity.terminal_id;

  // The viewer that let it run is the window's attach.
  const windows = pidsMentioning(broker.stateDir).filter((p) => p.pid !== broker.child.pid);
  assert.ok(windows.some((p) => /xterm/.test(p.cmdline)), JSON.stringify(windows));
  assert.ok(windows.some((p) => /termbridge attach/.test(p.cmdline) || / attach .*t_/.test(p.cmdline)),
    JSON.stringify(windows));
  const listed = JSON.parse((await run(CLI, ['--state-dir', broker.stateDir, '--json', 'sessions'])).stdout);
  assert.ok(listed.sessions.some((s) => s.terminal_id === t && s.viewers >= 1));

  // The window shows text: its pixels darken as the output is drawn (an
  // empty xterm is white but for the cursor, > 0.995; 17 lines, ~0.978).
  // Its title says which terminal it shows (name, holder, state, lock, last
  // exit, cwd), the id last.
  const window = await poll('the xterm window titled with its terminal', () => findWindow(xvfb.display,
    new RegExp(`^termbridge: \\S.* \\| for \\S+ \\| running \\| lock shared \\| last exit 0 \\| /.* \\| ${t}$`)));
  const windowId = window.id;
  const probe = path.join(dir, 'window.png');
  // Before xterm draws, the window is black (mean 0).
  await poll('the output in the window', () => {
    const mean = windowMean(xvfb.display, windowId, probe);
    return mean > 0.5 && mean < 0.99;
  });

  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const shot = path.join(ARTIFACTS, 'window.png');
  execFileSync('import', ['-display', xvfb.display, '-window', windowId, shot]);
  const png = fs.readFileSync(shot);
  assert.deepEqual([...png.subarray(1, 4)], [...Buffer.from('PNG')]);
  assert.ok(png.length > 500, `a screenshot with content (${png.length} bytes)`);
  const colors = Number(execFileSync('identify', ['-format', '%k', shot], { encoding: 'utf8' }));
  assert.ok(colors >= 2, `more than one colour on the screen (${colors})`);

  // Closing the terminal ends the attach, and with it the window.
  await run(CLI, ['--state-dir', broker.stateDir, 'close', t]);
  for (const { pid, cmdline } of windows) {
    assert.ok(await waitPidGone(pid, 10000), `still running: ${pid} ${cmdline}`);
  }

  await broker.stop();
  xvfb.child.kill('SIGTERM');
  await xvfb.exited;
});
