// Words bash changes after the policy has read them, under the built-in
// default policy, with a workspace the agent filled from its container:
// - a NUL in $'...' ends the quote (`$'--output\0'=f` reaches git as
//   --output=f, which the git-output rule never saw);
// - a ~ after the = of an argument shaped like an assignment is expanded
//   (`cat a=~/x` read the home through a planted symlink `a=` -> /);
// - a glob expands to planted names that the program takes as options
//   (`git log *` with a file `--output=.x`, `grep k *` with a file `-r`).
// Expected: each asks (denied here), no canary appears, no secret leaks;
// the same commands written safely still run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  assertAbsent, attempt, cleanupList, setup, show, writeFiles,
} from './lib.mjs';
import { removeDir, tempDir } from '../lib/harness.mjs';

const cleanups = cleanupList();
const SECRET = 'PLANTED-SECRET-51c0de';

const GIT_ENV = {
  ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com',
  GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com',
};

function assertAskedNoSecret(o, what) {
  assert.equal(o.kind, 'asked', `${what}: expected an approval request; got ${show(o)}`);
  assert.doesNotMatch(JSON.stringify(o.r), new RegExp(SECRET), `${what}: the secret reached the agent`);
}

test('words bash expands differently from how they read ask under the default policy', async () => {
  const home = tempDir('tb-home-');
  cleanups.push(async () => removeDir(home));
  writeFiles(home, { '.ssh/id_ed25519': `${SECRET}\n`, 'notes/todo.txt': `${SECRET}\n` });
  const ctx = await setup(cleanups, { policy: null, env: { HOME: home } });
  const work = ctx.work;
  const git = (...args) => execFileSync('git', args, { cwd: work, env: GIT_ENV });
  git('init', '-q');
  writeFiles(work, { 'tracked.txt': 'KEY=1\n' });
  git('add', 'tracked.txt');
  git('commit', '-q', '-m', 'first');
  const canary = path.join(work, 'canary');
  const inWork = (command) => attempt(ctx, { runtime: { cwd: work }, execution: { command } },
    { canaries: [canary] });

  // The NUL: git log would write the canary.
  for (const line of [`git log -1 $'--output\\0'=${canary}`, `git log -1 $'--out\\x00put'=${canary}`]) {
    const o = await inWork(line);
    assertAbsent(canary, line);
    assert.equal(o.kind, 'asked', `${line}: ${show(o)}`);
  }

  // The tilde after a=: a symlink `a=` to / turns a=~/x into the home's x.
  fs.symlinkSync('/', path.join(work, 'a='));
  for (const line of ['cat a=~/notes/todo.txt', 'cat a=~/.ssh/id_ed25519', 'grep -r -D skip . a=~']) {
    assertAskedNoSecret(await inWork(line), line);
  }

  // Planted option names: `--output=canary` for git log, `-r` for grep.
  fs.writeFileSync(path.join(work, `--output=${path.basename(canary)}`), '');
  const log = await inWork('git log *');
  assertAbsent(canary, 'git log *');
  assert.equal(log.kind, 'asked', show(log));
  assert.match(log.request.reason, /named like an option/, show(log));
  const dotted = await inWork('git log --oneline -1 -- ./*.txt');
  assert.equal(dotted.kind, 'ran', show(dotted));
  writeFiles(work, { 'sub/.env': `KEY=${SECRET}\n` });
  fs.writeFileSync(path.join(work, '-r'), '');
  assertAskedNoSecret(await inWork('grep -h KEY *'), 'grep -h KEY *');

  // Written so that the shell hands the program what it reads, they run.
  const safe = await inWork('grep -h KEY -- *.txt');
  assert.equal(safe.kind, 'ran', show(safe));
  assert.match(safe.text, /KEY=1/, show(safe));
  assertAbsent(canary, 'the safe forms');
});
