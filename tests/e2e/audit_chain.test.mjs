// The audit log as evidence (issue 24), checked the way an operator would:
// `termbridge audit verify` passes on a real broker's log and fails, naming
// the line, once a record is deleted or edited; rotation keeps one chain
// across files; and while the log cannot be written, new work is refused with
// the reason and what happened meanwhile is written once the disk takes it.
// Each record's "prev" is also recomputed here with node's own SHA-256.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import grpc from '@grpc/grpc-js';
import {
  Broker, brokerProto, removeDir, runCli, tempDir, withDeadline,
} from '../lib/harness.mjs';

const proto = brokerProto();
const broker = await Broker.start();
const scratch = tempDir('tb-audit-chain-');
after(async () => {
  await broker.stop();
  removeDir(scratch);
});
const client = new proto.TerminalBroker(`127.0.0.1:${broker.port}`, grpc.credentials.createInsecure());
const auth = new grpc.Metadata();
auth.set('authorization', `Bearer ${fs.readFileSync(broker.tokenFile, 'utf8').trim()}`);
const call = (method, request, metadata = auth) => new Promise((resolve, reject) => {
  client[method](request, metadata, (err, res) => (err ? reject(err) : resolve(res)));
});
const logPath = () => broker.ready.audit_log;
const linesOf = (file) => fs.readFileSync(file, 'utf8').split('\n').filter((l) => l !== '');
const sha256 = (line) => crypto.createHash('sha256').update(line, 'utf8').digest('hex');
const GENESIS = '0'.repeat(64);
const verify = (...args) => runCli(broker.stateDir, '--json', 'audit', 'verify', ...args);

// Runs `command` in a new terminal until it exits.
async function run(command) {
  const ran = await call('Execute', { command: `${command}; exit`, wait_ms: 20000 });
  assert.equal(ran.exit.running, false, `${command} still running`);
  return ran;
}

test('verify passes on a real log, and a deleted or edited line is found by its line', async () => {
  const bad = new grpc.Metadata();
  bad.set('authorization', 'Bearer not-the-token-not-the-token');
  await assert.rejects(call('List', {}, bad), (e) => e.code === grpc.status.UNAUTHENTICATED);
  for (const word of ['one', 'two', 'three']) await run(`echo ${word}`);

  const lines = linesOf(logPath());
  assert.ok(lines.length >= 8, `a few records: ${lines.length}`);
  // The chain, recomputed independently of the broker's code.
  lines.forEach((line, i) => {
    assert.equal(JSON.parse(line).prev, i === 0 ? GENESIS : sha256(lines[i - 1]), `prev of line ${i + 1}`);
  });

  const ok = await verify();
  assert.equal(ok.code, 0, ok.stderr + ok.stdout);
  const report = JSON.parse(ok.stdout);
  assert.equal(report.intact, true);
  assert.equal(report.problem, null);
  assert.ok(report.records >= lines.length, `${report.records} records`);
  // For people: the default text names the result.
  const text = await runCli(broker.stateDir, 'audit', 'verify');
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /audit log intact: \d+ records/);

  // A person deletes record 3 from a copy of the log.
  const deleted = path.join(scratch, 'deleted.jsonl');
  fs.writeFileSync(deleted, `${lines.filter((_, i) => i !== 2).join('\n')}\n`);
  const gap = await verify(deleted);
  assert.equal(gap.code, 1, gap.stdout);
  const found = JSON.parse(gap.stdout);
  assert.equal(found.intact, false);
  assert.equal(found.problem.kind, 'index_gap');
  assert.equal(found.problem.line, 3);
  assert.match(found.problem.message, /record 3 is missing/);
  const gapText = await runCli(broker.stateDir, 'audit', 'verify', deleted);
  assert.equal(gapText.code, 1);
  assert.match(gapText.stdout, /BROKEN: .*deleted\.jsonl line 3: /);

  // ... or rewrites what a command was.
  const edited = path.join(scratch, 'edited.jsonl');
  const at = lines.findIndex((l) => JSON.parse(l).event === 'command_requested');
  const changed = lines.map((l, i) => (i === at ? l.replace('echo one', 'echo 111') : l));
  assert.notEqual(changed[at], lines[at]);
  fs.writeFileSync(edited, `${changed.join('\n')}\n`);
  const mismatch = JSON.parse((await verify(edited)).stdout);
  assert.equal(mismatch.problem.kind, 'prev_mismatch');
  assert.equal(mismatch.problem.line, at + 2, 'found at the record after the edited one');
});

test('after rotation the old and new files verify as one chain', async () => {
  const before = linesOf(logPath());
  const rotated = `${logPath()}.1`;
  fs.renameSync(logPath(), rotated);
  broker.child.kill('SIGHUP');
  await withDeadline((async () => {
    while (!fs.existsSync(logPath())) await new Promise((r) => setTimeout(r, 20));
  })(), 10000, () => 'the broker did not reopen its audit log after SIGHUP');
  await run('echo after-rotation');

  const now = linesOf(logPath());
  const first = JSON.parse(now[0]);
  assert.equal(first.event, 'audit_log_reopened');
  assert.equal(first.prev, sha256(before.at(-1)), 'chained to the last record of the old file');
  const both = await verify(rotated, logPath());
  assert.equal(both.code, 0, both.stdout + both.stderr);
  // (at least: the terminal's closing record may land after `now` was read)
  assert.ok(JSON.parse(both.stdout).records >= before.length + now.length, both.stdout);
  // The live file alone is intact too, and says older records were not checked.
  const live = JSON.parse((await verify()).stdout);
  assert.equal(live.intact, true);
  assert.deepEqual(live.warnings.map((w) => w.kind), ['starts_after_rotation']);
  // The last record of the rotated file removed: the new file's first record shows it.
  const cut = path.join(scratch, 'cut.jsonl');
  fs.writeFileSync(cut, `${before.slice(0, -1).join('\n')}\n`);
  const broken = await verify(cut, logPath());
  assert.equal(broken.code, 1);
  const problem = JSON.parse(broken.stdout).problem;
  assert.equal(problem.file, logPath());
  assert.equal(problem.line, 1);
});

// Sets the broker's file-size limit from outside (util-linux prlimit): at the
// log's size no record fits, as on a full disk.
function limitFileSize(pid, bytes) {
  return new Promise((resolve, reject) => {
    execFile('prlimit', [`--pid=${pid}`, `--fsize=${bytes}:`], (err, _out, stderr) => (err ? reject(new Error(stderr || err.message)) : resolve()));
  });
}
const hasPrlimit = fs.existsSync('/usr/bin/prlimit') || fs.existsSync('/bin/prlimit');

test('while the log cannot be written, work is refused with the reason; what happened is written later', { skip: !hasPrlimit && 'no prlimit' }, async () => {
  const size = fs.statSync(logPath()).size;
  await limitFileSize(broker.child.pid, size);
  let lifted = false;
  try {
    // A refused login happened: it cannot be refused, so it waits in memory.
    const bad = new grpc.Metadata();
    bad.set('authorization', 'Bearer wrong-while-full-wrong');
    await assert.rejects(call('List', {}, bad), (e) => e.code === grpc.status.UNAUTHENTICATED);
    // New work is refused, and says why.
    const refused = await call('Execute', { command: 'echo never', wait_ms: 5000 }).then(
      () => null, (e) => e);
    assert.ok(refused, 'the command was refused');
    assert.match(refused.details, /PM_TERM_INTERNAL: the audit log cannot be written; the broker refuses to act unaudited/);
    assert.equal(fs.statSync(logPath()).size, size, 'nothing reached the file');
    await limitFileSize(broker.child.pid, 'unlimited');
    lifted = true;
  } finally {
    if (!lifted) await limitFileSize(broker.child.pid, 'unlimited').catch(() => {});
  }
  await run('echo disk-is-back');
  const records = linesOf(logPath()).map((l) => JSON.parse(l));
  const late = records.findIndex((r) => r.event === 'auth_failed' && r.written !== undefined);
  assert.ok(late >= 0, `the refused login was written late: ${JSON.stringify(records.slice(-6))}`);
  const next = records.findIndex((r) => r.event === 'command_requested' && /disk-is-back/.test(r.command));
  assert.ok(late < next, 'written before the next work');
  assert.ok(!records.some((r) => r.command === 'echo never'), 'the refused command is not recorded as requested');
  const ok = await verify();
  assert.equal(ok.code, 0, ok.stdout);
});
