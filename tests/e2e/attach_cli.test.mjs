// The visibility guarantee from a person's side, with the real `termbridge`
// CLI: `termbridge watch` running in the background is a viewer, so an
// agent's command runs and its output appears in watch; with no viewer at
// all the command fails with PM_TERM_GUI_UNAVAILABLE and never reaches the
// PTY; `termbridge attach` inside a real terminal (tmux) replays the
// terminal, follows the window size, lets the person type, detaches on
// Ctrl-] and closes the terminal on Ctrl-\ k; without a TTY it forwards
// stdin and prints JSON frames.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { Broker, connectAgent, removeDir, tempDir, terminal } from '../lib/harness.mjs';

const run = promisify(execFile);
const CLI = process.env.TERMBRIDGE_CLI_BIN;
if (!CLI) throw new Error('set TERMBRIDGE_CLI_BIN (ctest does)');

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

// A broker that writes commands only while a person watches.
async function startBroker(extraArgs = []) {
  const dir = tempDir('tb-attach-');
  cleanups.push(() => removeDir(dir));  // runs after the broker has stopped
  const policy = path.join(dir, 'policy.toml');
  fs.writeFileSync(policy, 'version = 1\ndefault = "allow"\n');
  const broker = await Broker.start({
    viewer: 'required',
    extraArgs: ['--require-viewer', 'true', '--policy', policy, '--window-command', 'none',
      ...extraArgs],
  });
  cleanups.push(() => broker.stop());
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => agent.client.close());
  return { broker, agent, dir };
}

// A running CLI process whose output is collected; `until` resolves once
// the collected text matches (an event: every chunk is checked on arrival).
function startCli(broker, args, { stdin = 'ignore' } = {}) {
  const child = spawn(CLI, ['--state-dir', broker.stateDir, ...args], {
    stdio: [stdin, 'pipe', 'pipe'],
  });
  // `data`: what the output frames of --json carry, joined.
  const proc = { child, stdout: '', stderr: '', data: '', exited: once(child, 'exit') };
  let partial = '';
  const waiters = [];
  const check = () => {
    for (const w of [...waiters]) {
      if (w.pattern.test(proc[w.stream])) {
        waiters.splice(waiters.indexOf(w), 1);
        clearTimeout(w.timer);
        w.resolve(proc[w.stream]);
      }
    }
  };
  child.stdout.on('data', (d) => {
    proc.stdout += d;
    const lines = (partial + d).split('\n');
    partial = lines.pop();
    for (const line of lines) {
      if (!line.startsWith('{')) continue;
      const frame = JSON.parse(line);
      if (frame.type === 'output') proc.data += frame.data;
    }
    check();
  });
  child.stderr.on('data', (d) => { proc.stderr += d; check(); });
  proc.until = (pattern, stream = 'stdout', timeoutMs = 15000) => new Promise((resolve, reject) => {
    const w = { pattern, stream, resolve };
    w.timer = setTimeout(() => {
      waiters.splice(waiters.indexOf(w), 1);
      reject(new Error(`no ${pattern} on ${stream} after ${timeoutMs} ms:\n${proc[stream]}\n` +
        `stderr:\n${proc.stderr}`));
    }, timeoutMs);
    waiters.push(w);
    check();
  });
  proc.stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await proc.exited;
  };
  cleanups.push(proc.stop);
  return proc;
}

test('with termbridge watch running, an agent\'s command runs and watch shows its output', async () => {
  const { broker, agent } = await startBroker();
  const watch = startCli(broker, ['watch']);
  const watchJson = startCli(broker, ['--json', 'watch']);
  await watch.until(/watching every terminal/, 'stderr');
  await watchJson.until(/watching every terminal/, 'stderr');

  const r = await terminal(agent.client, {
    action: 'execute', execution: { command: "printf 'watch-%s\\n' 42" },
  });
  assert.equal(r.success, true, JSON.stringify(r.error));
  assert.equal(r.result.stdout, 'watch-42\n', JSON.stringify(r));
  const t = r.identity.terminal_id;

  // Every line of watch's output names its terminal.
  await watch.until(new RegExp(`^${t} \\| watch-42$`, 'm'));
  await watchJson.until(/watch-42/, 'data');
  const lines = watchJson.stdout.trim().split('\n').map((l) => JSON.parse(l));
  assert.ok(lines.some((l) => l.type === 'opened' && l.terminal_id === t));
  const out = lines.filter((l) => l.type === 'output' && l.terminal_id === t);
  assert.match(out.map((l) => l.data).join(''), /watch-42\r\n/);
  assert.ok(out.every((l) => Number.isInteger(l.offset)));

  // Closing the terminal ends its attachment with an exit line; watch goes on.
  const closed = await run(CLI, ['--state-dir', broker.stateDir, 'close', t]);
  assert.match(closed.stdout, /closed/);
  await watch.until(new RegExp(`^${t} \\| termbridge > terminal ${t} (exited|was killed)`, 'm'));
  assert.equal(watch.child.exitCode, null, 'watch keeps following after a terminal ends');

  // SIGINT stops watch cleanly.
  watch.child.kill('SIGINT');
  const [code] = await watch.exited;
  assert.equal(code, 0, watch.stderr);
});

test('with no viewer the command fails with PM_TERM_GUI_UNAVAILABLE and never reaches the PTY', async () => {
  const { broker, agent, dir } = await startBroker(['--spawn-timeout-ms', '1000']);
  const marker = path.join(dir, 'ran-unseen');
  const started = Date.now();
  const r = await terminal(agent.client, {
    action: 'execute', execution: { command: `touch ${marker}; echo touched` },
  });
  assert.equal(r.success, false, JSON.stringify(r));
  assert.equal(r.error.code, 'PM_TERM_GUI_UNAVAILABLE', JSON.stringify(r.error));
  assert.equal(r.error.details.reason, 'no_viewer', JSON.stringify(r.error));
  assert.ok(Date.now() - started >= 900, 'it waited for the spawn timeout');
  assert.match(JSON.stringify(r.error), /window|viewer|surface/i, 'it names what it tried');
  assert.equal(fs.existsSync(marker), false, 'the command did not run');

  // Not later either: once a person watches, a new command in the same
  // terminal runs, and the refused one never did (it would have run first).
  // The refusal names the terminal it opened: the next command goes there.
  const terminalId = r.error.details?.terminal_id;
  assert.match(terminalId ?? '', /^t_/, `the refusal names its terminal: ${JSON.stringify(r.error)}`);
  const watch = startCli(broker, ['watch']);
  await watch.until(/watching every terminal/, 'stderr');
  const next = await terminal(agent.client, {
    action: 'execute',
    execution: { command: "printf 'after-%s\\n' 5" },
    target: { terminal_id: terminalId },
  });
  assert.equal(next.success, true, JSON.stringify(next.error));
  assert.equal(next.identity.terminal_id, terminalId, JSON.stringify(next.identity));
  assert.equal(next.result.stdout, 'after-5\n');
  await watch.until(/after-5/);
  assert.equal(fs.existsSync(marker), false, 'the refused command never ran');
  assert.doesNotMatch(watch.stdout, /touched/);
});

// ---------------------------------------------------------------- tmux

function haveTmux() {
  try {
    execFileSync('tmux', ['-V']);
    return true;
  } catch {
    return false;
  }
}

// A private tmux server (its own socket) with one window of a fixed size.
function startTmux(command, { cols = 100, rows = 30 } = {}) {
  const socketDir = tempDir('tb-tmux-');
  cleanups.push(() => removeDir(socketDir));  // runs after the server is gone
  const socket = path.join(socketDir, 'tmux.sock');
  const tmux = (...args) => execFileSync('tmux', ['-S', socket, ...args], { encoding: 'utf8' });
  tmux('-f', '/dev/null', 'new-session', '-d', '-s', 'tb', '-x', String(cols), '-y', String(rows),
    command);
  tmux('set-option', '-t', 'tb', 'remain-on-exit', 'on');
  const pane = {
    tmux,
    capture: () => tmux('capture-pane', '-p', '-J', '-S', '-200', '-t', 'tb'),
    keys: (...keys) => tmux('send-keys', '-t', 'tb', ...keys),
    // Resolves once the screen matches. tmux has no change events for a
    // pane, so this looks every 50 ms up to `timeoutMs`.
    until: async (pattern, timeoutMs = 15000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const screen = pane.capture();
        if (pattern.test(screen)) return screen;
        if (Date.now() > deadline) throw new Error(`no ${pattern} on the screen:\n${screen}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    kill: () => { try { tmux('kill-server'); } catch { /* already gone */ } },
  };
  cleanups.push(pane.kill);
  return pane;
}

test('termbridge attach in a real terminal: replay, size, typing, detach and close', {
  skip: !haveTmux() && 'tmux is not installed (deploy/setup.sh installs it)',
}, async () => {
  const { broker, agent } = await startBroker();
  const watch = startCli(broker, ['watch']);
  await watch.until(/watching every terminal/, 'stderr');
  const r = await terminal(agent.client, {
    action: 'execute', execution: { command: "printf 'replay-%s\\n' 42" },
  });
  assert.equal(r.success, true, JSON.stringify(r.error));
  const t = r.identity.terminal_id;
  await watch.stop();  // from here on, the attach in tmux is the only viewer

  const attach = `${CLI} --state-dir ${broker.stateDir} attach ${t}; echo "attach-exit=$?"`;
  const pane = startTmux(attach, { cols: 100, rows: 30 });
  // Scrollback replay: the command from before the attach is on the screen.
  await pane.until(/replay-42/);
  // The window says which terminal it is: its name, holder, state, lock and
  // last exit code, in a line when attached and in its title as they change.
  const title = () => pane.tmux('display-message', '-p', '-t', 'tb', '#{pane_title}').trim();
  const titleUntil = async (pattern) => {
    for (const deadline = Date.now() + 15000; !pattern.test(title());) {
      assert.ok(Date.now() < deadline, `no ${pattern} in the title: ${title()}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  await titleUntil(new RegExp(`^termbridge: \\S.* \\| for \\S+ \\| running \\| lock shared \\| last exit 0 \\| /.* \\| ${t}$`));
  await pane.until(/termbridge > terminal \S.* \| for \S+ \| running \| lock shared \| last exit 0/);
  await run(CLI, ['--state-dir', broker.stateDir, 'rename', t, 'build\u001b]2;spoof\u0007box']);
  // The broker keeps control characters out of names: the name cannot end
  // the title and set one of its own.
  await titleUntil(/^termbridge: "build\]2;spoofbox" \| /);
  // Nor can a name pose as a field, or output set the title.
  await run(CLI, ['--state-dir', broker.stateDir, 'rename', t, 'api | lock user_only']);
  await titleUntil(/^termbridge: "api \u00a6 lock user_only" \| for \S+ \| running \| lock shared \| /);
  const spoof = await terminal(agent.client, {
    action: 'execute', target: { terminal_id: t },
    execution: { command: "printf '\\033]2;%s\\007' spoofed-title; printf 'spoof-%s\\n' done" },
  });
  assert.equal(spoof.success, true, JSON.stringify(spoof.error));
  await pane.until(/^spoof-done\s*$/m);
  assert.match(title(), /^termbridge: "api \u00a6 lock user_only" \| /);
  await run(CLI, ['--state-dir', broker.stateDir, 'lock', t, 'user_only']);
  await titleUntil(/ \| lock user_only \| /);
  await run(CLI, ['--state-dir', broker.stateDir, 'lock', t, 'shared']);

  // The initial size reached the PTY, and typing reaches the shell.
  pane.keys('stty size; echo typed-$((6*7))', 'Enter');
  await pane.until(/^30 100\s*$/m);
  await pane.until(/^typed-42\s*$/m);
  const read = await terminal(agent.client, {
    action: 'read_output', target: { terminal_id: t }, wait_ms: 0,
  });
  assert.match(read.result.stdout, /typed-42/, 'the typed line went through the PTY');

  // Resizing the window resizes the PTY.
  pane.tmux('resize-window', '-t', 'tb', '-x', '120', '-y', '40');
  pane.keys('clear; stty size', 'Enter');
  await pane.until(/^40 120\s*$/m);

  // Ctrl-] detaches; the terminal keeps running.
  pane.keys('C-]');
  await pane.until(/termbridge > detached from t_\S+; it keeps running[\s\S]*attach-exit=0/);
  const listed = JSON.parse((await run(CLI, ['--state-dir', broker.stateDir, '--json', 'sessions'])).stdout);
  const mine = listed.terminals.filter((s) => s.terminal_id === t);
  assert.equal(mine.length, 1, JSON.stringify(listed));
  assert.equal(mine[0].exit.running, true, 'the terminal still runs after a detach');
  assert.ok(mine[0].ring_resident_bytes > 0 && mine[0].ring_resident_bytes <= 1 << 20, JSON.stringify(mine[0]));

  // Attach again: Ctrl-\ then k closes the terminal, and attach prints its end.
  // The replay ends with the `clear` typed above, so the new attach shows
  // a cleared screen with the last size, and no trace of the old attach.
  pane.tmux('respawn-pane', '-k', '-t', 'tb', attach);
  await pane.until(/^40 120\s*$/m);
  assert.doesNotMatch(pane.capture(), /detached from/);
  // The keys go out once the broker counts the new attach as a viewer: by
  // then it has its keyboard in raw mode (a Ctrl-\ typed earlier would be
  // the shell's quit key).
  for (const deadline = Date.now() + 15000; ;) {
    const now = JSON.parse((await run(CLI, ['--state-dir', broker.stateDir, '--json', 'sessions'])).stdout);
    if (now.terminals.some((s) => s.terminal_id === t && s.viewers >= 1)) break;
    assert.ok(Date.now() < deadline, 'the second attach never became a viewer');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  pane.keys('C-\\', 'k');
  await pane.until(/termbridge > terminal t_\S+ (exited|was killed)[^\n]*\n[\s\S]*attach-exit=0/);
});

// What an agent's command prints cannot make the person's terminal act on
// its own: here tmux, told to take clipboard writes (set-clipboard on), is
// the person's terminal. The same OSC 52 printed straight into a tmux window
// fills a paste buffer (the control); through attach it is dropped, so no
// command waits in the person's clipboard. Likewise a DCS (tmux passthrough,
// DECRQSS) and a title report never reach it, and the text around them does.
test('termbridge attach keeps output from making the person\'s terminal act (clipboard, reports)', {
  skip: !haveTmux() && 'tmux is not installed (deploy/setup.sh installs it)',
}, async () => {
  const { broker, agent, dir } = await startBroker();
  const watch = startCli(broker, ['watch']);
  await watch.until(/watching every terminal/, 'stderr');
  const r = await terminal(agent.client, { action: 'execute', execution: { command: 'true' } });
  assert.equal(r.success, true, JSON.stringify(r.error));
  const t = r.identity.terminal_id;
  await watch.stop();

  const pane = startTmux(`${CLI} --state-dir ${broker.stateDir} attach ${t}`);
  pane.tmux('set-option', '-g', 'set-clipboard', 'on');
  pane.tmux('set-option', '-g', 'allow-passthrough', 'on');
  const planted = Buffer.from(`touch ${path.join(dir, 'canary')}\n`).toString('base64');
  const osc52 = `printf '\\033]52;c;%s\\007' ${planted}`;
  // The control: tmux takes the clipboard write when it reaches it.
  pane.tmux('new-window', '-d', '-t', 'tb', `${osc52}; sleep 30`);
  const buffers = () => pane.tmux('list-buffers', '-F', '#{buffer_sample}');
  for (const deadline = Date.now() + 15000; !/touch/.test(buffers());) {
    assert.ok(Date.now() < deadline, 'tmux never took the direct clipboard write');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  pane.tmux('delete-buffer');
  assert.equal(buffers(), '');

  for (const deadline = Date.now() + 15000; ;) {
    const now = JSON.parse((await run(CLI, ['--state-dir', broker.stateDir, '--json', 'sessions'])).stdout);
    if (now.terminals.some((s) => s.terminal_id === t && s.viewers >= 1)) break;
    assert.ok(Date.now() < deadline, 'the attach never became a viewer');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const acted = await terminal(agent.client, {
    action: 'execute', target: { terminal_id: t },
    execution: {
      command: `${osc52}; printf 'a\\033Ptmux;\\033\\033]52;c;${planted}\\007\\033\\\\b\\033P$qm\\033\\\\c\\033[21td\\n'; echo acted-done`,
    },
  });
  assert.equal(acted.success, true, JSON.stringify(acted.error));
  await pane.until(/^acted-done\s*$/m);
  assert.match(pane.capture(), /^abcd\s*$/m, 'the text around the dropped sequences is shown');
  assert.equal(buffers(), '', 'no clipboard write reached the person\'s terminal');
  assert.equal(fs.existsSync(path.join(dir, 'canary')), false);
});

test('termbridge attach without a TTY forwards stdin and prints one JSON object per frame', async () => {
  const { broker, agent } = await startBroker();
  const watch = startCli(broker, ['watch']);
  await watch.until(/watching every terminal/, 'stderr');
  const r = await terminal(agent.client, { action: 'execute', execution: { command: 'echo first' } });
  assert.equal(r.success, true, JSON.stringify(r.error));
  const t = r.identity.terminal_id;

  const attach = startCli(broker, ['--json', 'attach', t], { stdin: 'pipe' });
  await attach.until(/first/, 'data');
  attach.child.stdin.write('echo piped-$((1+1))\n');
  await attach.until(/piped-2\r\n/, 'data');

  await run(CLI, ['--state-dir', broker.stateDir, 'close', t]);
  const [code] = await attach.exited;
  assert.equal(code, 0, attach.stderr);
  const frames = attach.stdout.trim().split('\n').map((l) => JSON.parse(l));
  assert.ok(frames.every((f) => f.terminal_id === t));
  const outputs = frames.filter((f) => f.type === 'output');
  assert.equal(outputs[0].offset, 0, 'replay starts at the beginning of the ring');
  for (let i = 1; i < outputs.length; i++) {
    const prev = outputs[i - 1];
    assert.equal(outputs[i].offset, prev.offset + Buffer.byteLength(prev.data), 'no byte lost');
  }
  assert.equal(frames.at(-1).type, 'exited');
  assert.equal(frames.at(-1).exit.running, false);

  // An unknown terminal is an error a person can read.
  const bad = await run(CLI, ['--state-dir', broker.stateDir, 'attach', 't_nope']).catch((e) => e);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /t_nope/);
});

test('lock modes decide whose input goes through, and viewers see notices for locks and approvals', async () => {
  const { broker, agent, dir } = await startBroker();
  // From here on, printf 'ask-... asks a person.
  fs.writeFileSync(path.join(dir, 'policy.toml'),
    'version = 1\ndefault = "allow"\n[[rule]]\naction = "ask"\nprefix = ["printf", "ask-%s\\\\n"]\n');
  const watch = startCli(broker, ['watch']);
  await watch.until(/watching every terminal/, 'stderr');
  const r = await terminal(agent.client, { action: 'execute', execution: { command: "printf 'first-%s\\n' line" } });
  assert.equal(r.success, true, JSON.stringify(r.error));
  const t = r.identity.terminal_id;
  const attach = startCli(broker, ['--json', 'attach', t], { stdin: 'pipe' });
  await attach.until(/first-line/, 'data');
  const notices = () => attach.stdout.trim().split('\n').filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l)).filter((f) => f.type === 'notice').map((f) => f.text);
  const cli = (...args) => run(CLI, ['--state-dir', broker.stateDir, ...args]);

  // user_only: the agent's commands are refused, the person's typing goes through.
  assert.match((await cli('lock', t, 'user_only')).stdout, /is user_only/);
  await attach.until(/"text":"lock user_only \(set by [^)]+ via cli\)"/);
  await attach.until(/\{"terminal":\{[^\n]*"lock":"user_only"[^\n]*\},"terminal_id":"t_[^"]+","type":"terminal"\}/);
  const refused = await terminal(agent.client, {
    action: 'execute', target: { terminal_id: t }, execution: { command: "printf 'agent-%s\\n' blocked" },
  });
  assert.equal(refused.error?.code, 'PM_TERM_DECLINED', JSON.stringify(refused));
  assert.match(refused.error.message, /user_only/);
  await attach.until(/agent command refused: the terminal is user_only/);
  attach.child.stdin.write("printf 'person-%s\\n' typed\n");
  await attach.until(/person-typed\r\n/, 'data');
  assert.doesNotMatch(attach.data, /agent-blocked/);

  // agent_only: the person's keystrokes are dropped (with a notice), the agent runs.
  await cli('lock', t, 'agent_only');
  await attach.until(/lock agent_only/);
  attach.child.stdin.write("printf 'dropped-%s\\n' keys\n");
  await attach.until(/typing ignored \(\d+ bytes\): the terminal is agent_only/);
  const ran = await terminal(agent.client, {
    action: 'execute', target: { terminal_id: t }, execution: { command: "printf 'agent-%s\\n' runs" },
  });
  assert.equal(ran.success, true, JSON.stringify(ran.error));
  assert.equal(ran.result.stdout, 'agent-runs\n');
  // The attach has shown the agent's output, which came after the dropped
  // keystrokes: had they reached the PTY, their echo would be here by now.
  await attach.until(/agent-runs\r\n/, 'data');
  assert.doesNotMatch(attach.data, /dropped/, 'dropped keystrokes never reached the PTY');

  // shared again; an approval for this terminal shows up as notices.
  await cli('lock', t, 'shared');
  await attach.until(/lock shared/);
  const call = terminal(agent.client, {
    action: 'execute', target: { terminal_id: t }, execution: { command: "printf 'ask-%s\\n' me" },
  });
  await attach.until(/approval needed \(a_\S+\): printf 'ask-%s\\\\n' me/);
  const pending = JSON.parse((await cli('--json', 'approvals', 'list')).stdout);
  const asking = (pending.approvals ?? pending).find((a) => a.terminal_id === t);
  const id = asking.approval_id;
  // The notice names everything about the run: terminal, agent, and the rule that asked.
  const askNotice = notices().find((n) => n.startsWith(`approval needed (${id})`));
  assert.ok(askNotice.includes(`[terminal ${t}]`), askNotice);
  assert.ok(askNotice.includes(`[agent ${asking.agent_id}]`), askNotice);
  assert.match(askNotice, new RegExp(`\\[rule ${asking.rule}: .+\\]`));
  await cli('approvals', 'approve', id, '--approver', 'carol');
  await attach.until(/approved once by carol via cli/);
  const approved = await call;
  assert.equal(approved.result.stdout, 'ask-me\n', JSON.stringify(approved));
  const listed = JSON.parse((await cli('--json', 'sessions')).stdout);
  assert.equal(listed.terminals.find((x) => x.terminal_id === t).lock, 'shared');
  assert.ok(notices().length >= 6, notices().join('\n'));

  // Control characters in a command show as escapes in the notice; had they
  // reached the window raw, "\r\e[2K" would have erased the real command.
  const hidden = terminal(agent.client, {
    action: 'execute', target: { terminal_id: t },
    execution: { command: "printf 'ask-%s\\n' hidden #\r\x1b[2K    ls -la" },
  });
  await attach.until(/approval needed \(a_\S+\): printf 'ask-%s\\\\n' hidden #/);
  const escaped = notices().find((n) => n.includes('hidden #'));
  assert.ok(escaped.includes("printf 'ask-%s\\n' hidden #\\r\\e[2K    ls -la"), escaped);
  assert.ok(!/[\r\x1b]/.test(escaped), JSON.stringify(escaped));
  const again = JSON.parse((await cli('--json', 'approvals', 'list')).stdout);
  await cli('approvals', 'deny', (again.approvals ?? again).find((a) => a.terminal_id === t).approval_id);
  assert.equal((await hidden).error?.code, 'PM_TERM_DECLINED');

  // A bad mode is a clear error.
  const bad = await cli('lock', t, 'nobody').catch((e) => e);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /shared, user_only or agent_only/);
});
