// Every terminal is recorded (issue 24; docs/operating.md "Recordings"): output
// the ring no longer holds reads back byte for byte from the recording, the
// audit says where a command's output is in it, `termbridge recordings` lists
// and exports it as asciicast (also after a broker restart), `termbridge
// replay` plays it, and a full disk leaves the terminal running with an
// explicit gap instead of blocking it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import {
  Broker, CLI_BIN, connectAgent, readAll, removeDir, runCli, tempDir, terminal,
} from '../lib/harness.mjs';
import { cleanupList } from '../security/lib.mjs';

const run = promisify(execFile);
const cleanups = cleanupList();

// What `seq 1 n` prints: through the PTY (onlcr) each newline is CR LF, which
// the recording keeps; read_output gives the agent plain newlines.
function seqOutput(n, newline = '\n') {
  const lines = [];
  for (let i = 1; i <= n; i++) lines.push(String(i));
  return `${lines.join(newline)}${newline}`;
}

function auditRecords(stateDir) {
  return fs.readFileSync(path.join(stateDir, 'audit.jsonl'), 'utf8')
    .split('\n').filter(Boolean).map((line) => JSON.parse(line));
}

// Every read from `cursor` until the session has ended and nothing is left,
// with the gaps the reads reported.
async function readEverything(client, sessionId, cursor) {
  let text = '';
  let gaps = 0;
  for (;;) {
    const r = await terminal(client, {
      action: 'read_output', target: { session_id: sessionId }, cursor, wait_ms: 2000, max_bytes: 1 << 20, tail: false,
    });
    assert.equal(r.success, true, JSON.stringify(r.error));
    text += r.result.stdout;
    gaps += r.result.gap_bytes ?? 0;
    cursor = r.result.cursor;
    if (!r.result.running && !r.result.more) return { text, gaps, result: r.result };
  }
}

async function runToEnd(client, command) {
  const r = await terminal(client, { action: 'execute', execution: { command }, max_bytes: 4096 });
  assert.equal(r.success, true, JSON.stringify(r.error));
  const sessionId = r.identity.session_id;
  // Wait for the command to end (reading forward), so the ring has long moved on.
  await readAll(client, sessionId, r.result.cursor, r.result.stdout, 120000);
  return { sessionId, terminalId: r.identity.terminal_id, start: r.result.output_start };
}

test('output the ring no longer holds reads back exactly from the recording', async () => {
  const broker = await Broker.start({ extraArgs: ['--ring-bytes', '65536'] });
  cleanups.push(() => broker.stop());
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => agent.client.close());

  const expected = seqOutput(100000);  // about 590 KB: nine times the ring
  const { sessionId, terminalId, start } = await runToEnd(agent.client, 'seq 1 100000');
  const { text, gaps } = await readEverything(agent.client, sessionId, start);
  assert.equal(gaps, 0, 'no byte is a gap: the recording has what the ring dropped');
  assert.equal(text.length, expected.length);
  assert.ok(text === expected, 'every byte, in order');

  // The audit says where the command's output is in the terminal's recording.
  const exited = auditRecords(broker.stateDir)
    .find((r) => r.event === 'command_exited' && r.session_id === sessionId);
  assert.ok(exited, 'command_exited is audited');
  assert.equal(exited.terminal_id, terminalId);
  assert.equal(exited.output.to - exited.output.from, seqOutput(100000, '\r\n').length,
    `the audited range ${JSON.stringify(exited.output)} is the command's output`);
});

test('recordings are listed, exported as asciicast and replayed, also after a broker restart', async () => {
  const stateDir = tempDir('tb-state-');
  cleanups.push(async () => removeDir(stateDir));
  let broker = await Broker.start({ stateDir, extraArgs: ['--ring-bytes', '65536'] });
  cleanups.push(() => broker.stop());
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  const expected = seqOutput(30000, '\r\n');
  const { terminalId } = await runToEnd(agent.client, 'seq 1 30000');
  // The agent cannot read recordings, its own included (builtin.broker-state).
  const canary = path.join(stateDir, 'recordings', terminalId, 'meta.json');
  for (const command of [`cat ${canary}`, `ls ${path.dirname(canary)}`, `head -c 100 ${path.join(stateDir, 'recordings')}/*/out.*`]) {
    const peek = await terminal(agent.client, { action: 'execute', execution: { command } });
    assert.equal(peek.success, false, `${command} must be refused: ${JSON.stringify(peek.result)}`);
    assert.equal(peek.error.code, 'PM_TERM_BLOCKED_DESTRUCTIVE', command);
    assert.match(JSON.stringify(peek.error), /builtin.broker-state/, command);
  }
  await agent.client.close();

  const listed = await runCli(stateDir, '--json', 'recordings', 'list');
  assert.equal(listed.code, 0, listed.stderr);
  const entry = JSON.parse(listed.stdout).recordings.find((r) => r.terminal_id === terminalId);
  assert.ok(entry, `the terminal is listed: ${listed.stdout}`);
  assert.equal(entry.state, 'live');
  assert.ok(entry.end_offset >= expected.length);

  const castFile = path.join(stateDir, 'out.cast');
  const exported = await runCli(stateDir, 'recordings', 'export', terminalId, '--output', castFile);
  assert.equal(exported.code, 0, exported.stderr);
  const lines = fs.readFileSync(castFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(lines[0].version, 2);
  assert.ok(lines[0].width > 0 && lines[0].height > 0);
  const events = lines.slice(1);
  assert.ok(events.every((e, i) => i === 0 || e[0] >= events[i - 1][0]), 'times never go back');
  const played = events.filter((e) => e[1] === 'o').map((e) => e[2]).join('');
  assert.ok(played.includes(expected), 'the asciicast holds the whole output');
  assert.equal(fs.statSync(castFile).mode & 0o777, 0o600);

  const replayed = await run(CLI_BIN, ['--state-dir', stateDir, 'replay', terminalId, '--speed', '0'],
    { maxBuffer: 64 << 20 });
  assert.ok(replayed.stdout.includes(expected), 'replay prints what the terminal showed');

  // A restarted broker lists and exports what the previous one recorded.
  await broker.stop();
  broker = await Broker.start({ stateDir, extraArgs: ['--ring-bytes', '65536'] });
  const after = await runCli(stateDir, '--json', 'recordings', 'list');
  assert.equal(after.code, 0, after.stderr);
  const kept = JSON.parse(after.stdout).recordings.find((r) => r.terminal_id === terminalId);
  assert.ok(kept, `still listed after the restart: ${after.stdout}`);
  assert.equal(kept.state, 'finished');
  const again = await run(CLI_BIN, ['--state-dir', stateDir, 'recordings', 'export', terminalId],
    { maxBuffer: 64 << 20 });
  const replayedAgain = again.stdout.trim().split('\n').slice(1).map((l) => JSON.parse(l))
    .filter((e) => e[1] === 'o').map((e) => e[2]).join('');
  assert.ok(replayedAgain.includes(expected));

  const missing = await runCli(stateDir, 'recordings', 'export', 't_NOSUCHTERMINAL');
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /no recording/);
  const traversal = await runCli(stateDir, 'recordings', 'export', '../audit.jsonl');
  assert.equal(traversal.code, 1, 'a path is not a terminal id');
});

// A tmpfs of 1 MiB under the recordings: root can mount one here; elsewhere the
// test says why it cannot run.
async function mountSmallTmpfs(dir) {
  if (process.getuid() !== 0) return 'needs root to mount a tmpfs';
  try {
    await run('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', dir]);
    return null;
  } catch (e) {
    return `mount failed: ${e.message}`;
  }
}

test('a full disk keeps the terminal running; only what the recording lost is a gap', async (t) => {
  const stateDir = tempDir('tb-state-');
  cleanups.push(async () => removeDir(stateDir));
  const recordings = path.join(stateDir, 'recordings');
  fs.mkdirSync(recordings, { mode: 0o700 });
  const why = await mountSmallTmpfs(recordings);
  if (why) {
    t.skip(why);
    return;
  }
  cleanups.push(() => run('umount', ['-l', recordings]).catch(() => {}));
  const broker = await Broker.start({ stateDir, extraArgs: ['--ring-bytes', '262144'] });
  cleanups.push(() => broker.stop());
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => agent.client.close());

  const expected = seqOutput(400000);  // about 2.9 MB into 1 MiB of disk
  const { sessionId, start } = await runToEnd(agent.client, "seq 1 400000; printf 'done-%s\\n' 42");
  const { text, gaps, result } = await readEverything(agent.client, sessionId, start);
  assert.equal(result.exit_code, 0, 'the command ran to its end');
  assert.ok(gaps > 0, 'the bytes neither the disk nor the ring kept are an explicit gap');
  // Gaps count the PTY's bytes (CR LF); the text has plain newlines, but a CR
  // LF cut by a gap stays as it was.
  const rawLength = seqOutput(400000, '\r\n').length + 'done-42\r\n'.length;
  const lines = (text.match(/(?<!\r)\n/g) ?? []).length;
  assert.equal(text.length + lines + gaps, rawLength, 'nothing else is lost');
  assert.ok(expected.startsWith(text.slice(0, 500000)), 'the head came back from the recording');
  assert.ok(text.endsWith('done-42\n'), 'the tail came back from the ring');
  assert.ok(auditRecords(broker.stateDir).some((r) => r.event === 'recording_gap'),
    'the audit says the recording has a gap');
  assert.match(broker.log, /event=recording_gap/);

  // The broker goes on serving.
  const next = await terminal(agent.client, { action: 'execute', execution: { command: "printf 'still-%s\\n' 2" } });
  assert.equal(next.success, true, JSON.stringify(next.error));
  assert.match(next.result.stdout, /still-2/);
});
