// Programs a realistic policy allows by prefix run other programs through
// their own options: `git grep -O CMD`, `tar --checkpoint-action=exec=CMD`,
// `man -P CMD`, `sort --compress-program=CMD`, mawk's `-W exec FILE` (whose
// program the agent wrote), and write files through others (`sort -o`).
// Each ran its canary with no person asked. Expected: each asks (denied
// here), the canary never appears; the plain uses still run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  assertAbsent, assertAsked, attempt, cleanupList, policyWith, setup, show,
} from './lib.mjs';
import { removeDir, tempDir } from '../lib/harness.mjs';

const cleanups = cleanupList();

test('options that run a program or write a file ask under rules allowing the program', async () => {
  const policy = policyWith([['git', 'grep'], 'awk', ['tar', '-tf'], 'man', 'sort', 'find']);
  const ctx = await setup(cleanups, { policy });
  const work = ctx.work;
  const canary = path.join(work, 'canary');
  execFileSync('git', ['init', '-q'], { cwd: work });
  fs.writeFileSync(path.join(work, 'notes.txt'), 'hello\nworld\n');
  execFileSync('git', ['add', 'notes.txt'], { cwd: work });
  execFileSync('tar', ['-cf', 'x.tar', 'notes.txt'], { cwd: work });
  fs.writeFileSync(path.join(work, 'x.awk'), `BEGIN { system("touch ${canary}") }\n`);
  const inWork = (command) => attempt(ctx, { runtime: { cwd: work }, execution: { command } },
    { canaries: [canary] });

  for (const line of [
    `git grep -O'touch ${canary};:' -e hello`,
    'awk -W exec x.awk', 'awk -We x.awk',
    `tar -tf x.tar --checkpoint=1 --checkpoint-action=exec='touch ${canary}'`,
    `tar -tf x.tar -I 'touch ${canary}'`,
    `man -P 'touch ${canary}' ls`,
    `sort --compress-program='touch ${canary}' -S 1 notes.txt`,
    `sort -o ${canary} notes.txt`,
    'find . -name canary -delete',
  ]) {
    const o = await inWork(line);
    assertAbsent(canary, line);
    assertAsked(o, line);
  }
  for (const line of ['git grep -n hello', 'tar -tf x.tar', 'sort notes.txt', "awk '{ print $1 }' notes.txt"]) {
    const o = await inWork(line);
    assert.equal(o.kind, 'ran', `${line}: ${show(o)}`);
  }
  assertAbsent(canary, 'the plain uses');
});

// The reviewers' writes through option values: a rule may write out/**, and
// cp -t, tar -C and curl -o put the file elsewhere (attached values too).
test('file utilities write where their options say, and the rule judges that', async () => {
  const writes = (id, argv) => `\n[[rule]]\nid = "${id}"\naction = "allow"\nprefix = ${JSON.stringify(argv)}\n` +
    'writes = true\nwrite_paths = ["out/**"]\n';
  const policy = policyWith([]) + writes('cp', ['cp']) + writes('tar', ['tar', '-xf']) +
    writes('curl', ['curl']) + '\n[[rule]]\nid = "touch"\naction = "allow"\nprefix = ["touch"]\n';
  const ctx = await setup(cleanups, { policy });
  const work = ctx.work;
  const outside = tempDir('tb-sec-outside-');
  cleanups.push(async () => removeDir(outside));
  fs.mkdirSync(path.join(work, 'out/d'), { recursive: true });
  fs.writeFileSync(path.join(work, 'evil'), 'x\n');
  execFileSync('tar', ['-cf', 'x.tar', 'evil'], { cwd: work });
  const landed = path.join(outside, 'evil');
  fs.symlinkSync(landed, path.join(work, 'out/d/evil'));
  const inWork = (command) => attempt(ctx, { runtime: { cwd: work }, execution: { command } },
    { canaries: [landed] });
  for (const line of [
    `cp --target-directory=${outside} evil`, `cp -t${outside} evil`, `cp evil ${outside}/evil`,
    `tar -xf x.tar --directory=${outside}`, `tar -xf x.tar -C${outside}`,
    `curl -s -o${landed} file://${work}/evil`, `curl -s -o ${landed} https://127.0.0.1:9/`,
    `touch ${landed}`, 'touch made-here',
    // A copy into a directory whose entry is a symlink out; an extraction,
    // whose members (absolute, -P, through planted symlinks) no glob pins.
    'cp evil out/d', 'tar -xf x.tar -C out', `tar -xf x.tar -C out -P`,
  ]) {
    const o = await inWork(line);
    assertAbsent(landed, line);
    assertAsked(o, line);
  }
  assert.equal(fs.existsSync(path.join(work, 'made-here')), false, 'touch wrote without writes = true');
  const inside = await inWork('cp evil out/evil');
  assert.equal(inside.kind, 'ran', show(inside));
  assert.ok(fs.existsSync(path.join(work, 'out/evil')));
});
