// Where an allowed write really lands. A rule may write only its
// write_paths, compared as text: `tee out/x` under write_paths = ["out/**"].
// The agent writes its workspace from its container, so it made `out` a
// symlink to a directory outside, and the allowed `tee out/x` wrote there;
// `sed -i'../outside/*'` renamed the edited file's backup to a path built
// from the suffix. Expected: each asks, and nothing is written outside.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  assertAbsent, assertAsked, attempt, cleanupList, policyWith, setup, show,
} from './lib.mjs';
import { removeDir, tempDir } from '../lib/harness.mjs';

const cleanups = cleanupList();

function writeRule(id, program, writePaths) {
  return `\n[[rule]]\nid = "${id}"\naction = "allow"\nprefix = ${JSON.stringify(program)}\n` +
    `writes = true\nwrite_paths = ${JSON.stringify(writePaths)}\n`;
}

test('a write covered as text asks when a symlink or a backup suffix takes it outside', async () => {
  const policy = policyWith([]) + writeRule('tee-out', ['tee'], ['out/**']) +
    writeRule('sed-any', ['sed'], ['**']);
  const ctx = await setup(cleanups, { policy });
  const outside = tempDir('tb-sec-outside-');
  cleanups.push(async () => removeDir(outside));
  fs.mkdirSync(path.join(ctx.work, 'out'));
  fs.writeFileSync(path.join(ctx.work, 'notes.txt'), 'one\n');

  // What the rules are for still runs.
  const plain = await attempt(ctx, {
    runtime: { cwd: ctx.work }, execution: { command: 'echo fine | tee out/log' },
  });
  assert.equal(plain.kind, 'ran', show(plain));
  assert.equal(fs.readFileSync(path.join(ctx.work, 'out/log'), 'utf8'), 'fine\n');
  const edit = await attempt(ctx, {
    runtime: { cwd: ctx.work }, execution: { command: 'sed -i.bak s/one/ONE/ notes.txt' },
  });
  assert.equal(edit.kind, 'ran', show(edit));
  assert.equal(fs.readFileSync(path.join(ctx.work, 'notes.txt'), 'utf8'), 'ONE\n');

  // The agent turns out/ into a symlink to a directory outside the workspace.
  fs.rmSync(path.join(ctx.work, 'out'), { recursive: true });
  fs.symlinkSync(outside, path.join(ctx.work, 'out'));
  fs.symlinkSync(path.join(outside, 'rc'), path.join(ctx.work, 'rc-link'));
  const canaries = [path.join(outside, 'canary'), path.join(outside, 'rc'),
    path.join(outside, 'notes.txt')];
  for (const line of [
    'echo pwned | tee out/canary',
    'echo pwned | tee -a rc-link',
    'cd out && echo pwned | tee canary',
    `sed -i'${outside}/*' s/ONE/one/ notes.txt`,
    `sed -i'../${path.basename(outside)}/*' s/ONE/one/ notes.txt`,
    'sed -i --follow-symlinks s/x/y/ rc-link',
  ]) {
    const o = await attempt(ctx, { runtime: { cwd: ctx.work }, execution: { command: line } },
      { canaries });
    for (const c of canaries) assertAbsent(c, line);
    assertAsked(o, line);
  }
  assert.equal(fs.readFileSync(path.join(ctx.work, 'notes.txt'), 'utf8'), 'ONE\n');
});
