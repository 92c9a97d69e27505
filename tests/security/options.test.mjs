// Attacks through option spelling, issue 20 class 7. The default policy
// allows date, file, tree and read-only git, and takes back the options
// that write with ask rules (date -s/--set, file -C/--compile, tree -o/-R,
// git --output). Programs match options as getopt_long does: a unique
// prefix of a long option (--se, --comp, --co, --outp), a short option with
// its value attached (-s2020...), combined short flags (-us, -bC), options
// after operands; the variants spell the refused options those ways.
//
// Expected (issue 20): options are matched as the program matches them, so
// each variant asks a person (denied here); where the option writes a file
// (file -C writes magic.mgc, tree -o and git --output write their file), the
// canary is not created. The date values are not dates, so that nothing
// would change the clock even if one ran.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  assertAbsent, assertAsked, attempt, cleanupList, policyWith, setup, whichProgram,
} from './lib.mjs';

const cleanups = cleanupList();

const DATE = [
  'date --se=not-a-date',
  'date --s not-a-date',
  'date -snot-a-date',
  'date -us not-a-date',
  'date -Rsnot-a-date',
  'date +%F --se not-a-date',
  'date --uni --set=not-a-date',
];

for (const command of DATE) {
  test(`default policy: \`${command}\` asks a person`, async () => {
    const ctx = await setup(cleanups, { policy: null });
    const o = await attempt(ctx, { runtime: { cwd: ctx.work }, execution: { command } }, { timeoutMs: 15000 });
    assertAsked(o, command);
  });
}

// file -C compiles the magic file named by -m into <name>.mgc in the cwd.
const FILE = [
  'file --comp -m magic',
  'file --compil --magic-file magic',
  'file -m magic --co',
  'file -bC -m magic',
  'file -mmagic -C',
  'file magic -C -m magic',
  'file --magic-file=magic --compile',
];

for (const command of FILE) {
  test(`default policy: \`${command}\` asks a person and writes no magic.mgc`, async (t) => {
    if (!(await whichProgram('file'))) return t.skip('file is not installed');
    const ctx = await setup(cleanups, { policy: null });
    fs.writeFileSync(path.join(ctx.work, 'magic'), '0\tstring\tTBTEST\ttermbridge test data\n');
    const canary = path.join(ctx.work, 'magic.mgc');
    const o = await attempt(ctx, { runtime: { cwd: ctx.work }, execution: { command } },
      { canaries: [canary], timeoutMs: 15000 });
    assertAbsent(canary, command);
    assertAsked(o, command);
  });
}

const TREE = [
  'tree -ocanary .',
  'tree --o canary .',
  'tree -aocanary',
  'tree . -o canary',
  'tree -R -H . .',
];

for (const command of TREE) {
  test(`default policy: \`${command}\` asks a person and writes no file`, async (t) => {
    if (!(await whichProgram('tree'))) return t.skip('tree is not installed');
    const ctx = await setup(cleanups, { policy: null });
    fs.mkdirSync(path.join(ctx.work, 'sub'));
    const canaries = [path.join(ctx.work, 'canary'), path.join(ctx.work, '00Tree.html'),
      path.join(ctx.work, 'sub', '00Tree.html')];
    const o = await attempt(ctx, { runtime: { cwd: ctx.work }, execution: { command } },
      { canaries, timeoutMs: 15000 });
    for (const c of canaries) assertAbsent(c, command);
    // tree (2.x) takes no abbreviated long options: `--o` is its usage
    // error, so the policy may let it run; it must not write.
    if (command.includes('--o') && o.kind === 'ran') {
      assert.notEqual(o.exit, 0, `${command}: ${JSON.stringify(o)}`);
      assert.match(o.text, /Invalid argument/, `${command} was refused by tree itself`);
      return;
    }
    assertAsked(o, command);
  });
}

// git parse-options takes unique prefixes of long options.
const GIT = [
  'git log --outp=canary',
  'git log --outpu canary',
  'git diff --outp=canary',
  'git show --output=canary HEAD',
  'git log -p --outp=canary -- tracked.txt',
];

for (const command of GIT) {
  test(`git log/diff/show allowed: \`${command}\` asks a person and writes no file`, async () => {
    const ctx = await setup(cleanups, {
      policy: policyWith([['git', 'log'], ['git', 'diff'], ['git', 'show']]),
    });
    const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@example.com' };
    execFileSync('git', ['init', '-q'], { cwd: ctx.work, env });
    fs.writeFileSync(path.join(ctx.work, 'tracked.txt'), 'one\n');
    execFileSync('git', ['add', 'tracked.txt'], { cwd: ctx.work, env });
    execFileSync('git', ['commit', '-q', '-m', 'first'], { cwd: ctx.work, env });
    fs.writeFileSync(path.join(ctx.work, 'tracked.txt'), 'one\ntwo\n');
    const canary = path.join(ctx.work, 'canary');
    const o = await attempt(ctx, { runtime: { cwd: ctx.work }, execution: { command } },
      { canaries: [canary], timeoutMs: 15000 });
    assertAbsent(canary, command);
    assertAsked(o, command);
    assert.ok(o.request.reason, 'the request says why');
  });
}
