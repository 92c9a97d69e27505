// Attacks through the working directory's own configuration, issue 20
// class 5. The cwd is a git repository whose configuration names programs:
// core.fsmonitor, core.pager, pager.<cmd>, diff.external, a diff driver's
// textconv or command and a filter's clean program (bound by
// .gitattributes), gpg.program with log.showSignature on a signed-looking
// commit, core.hooksPath with a post-index-change hook, all of it also
// through include.path, a .git file that points elsewhere, a worktree config
// and a parent directory's repository. The policy allows `git status`,
// `git log`, `git diff` and `git show` outright (rules added on purpose);
// the attacker never sends anything but those.
//
// Expected (issue 20): allowed programs do not run code from the working
// directory's configuration: the command asks a person (denied here) or
// runs without running the repository's program. The canary never appears.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  assertAbsent, assertAsked, attempt, attemptThroughGate, cleanupList, policyWith, setup, show,
} from './lib.mjs';

const cleanups = cleanupList();
const POLICY = policyWith([['git', 'status'], ['git', 'log'], ['git', 'diff'], ['git', 'show']]);

const GIT_ENV = {
  ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com',
  GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com',
};
const git = (dir, ...args) => execFileSync('git', args, { cwd: dir, env: GIT_ENV }).toString();

// A repository in `dir` with two commits and an uncommitted change to
// tracked.txt; `evil.sh` in `dir` creates `canary` and prints its input.
function repo(dir, canary) {
  git(dir, 'init', '-q');
  fs.writeFileSync(path.join(dir, 'tracked.txt'), 'one\n');
  git(dir, 'add', 'tracked.txt');
  git(dir, 'commit', '-q', '-m', 'first');
  fs.writeFileSync(path.join(dir, 'tracked.txt'), 'one\ntwo\n');
  git(dir, 'commit', '-q', '-a', '-m', 'second');
  fs.writeFileSync(path.join(dir, 'tracked.txt'), 'one\ntwo\nthree\n');
  fs.writeFileSync(path.join(dir, 'evil.sh'), `#!/bin/sh\ntouch ${canary}\ncat "$@" 2>/dev/null\nexit 0\n`, { mode: 0o755 });
  return path.join(dir, 'evil.sh');
}

// Sets `key` to `value` in the repository's own config file (not through a
// git command that would already run something).
function config(dir, key, value, file = path.join(dir, '.git', 'config')) {
  execFileSync('git', ['config', '--file', file, key, value], { env: GIT_ENV });
}

// A commit whose header carries a gpgsig block, so that log.showSignature
// makes git run gpg.program to verify it.
function signedLookingCommit(dir) {
  const tree = git(dir, 'rev-parse', 'HEAD^{tree}').trim();
  const parent = git(dir, 'rev-parse', 'HEAD').trim();
  const body = `tree ${tree}\nparent ${parent}\nauthor t <t@example.com> 1700000000 +0000\n` +
    'committer t <t@example.com> 1700000000 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n' +
    ' aGVsbG8=\n -----END PGP SIGNATURE-----\n\nsigned\n';
  const file = path.join(dir, '.commit');
  fs.writeFileSync(file, body);
  const id = git(dir, 'hash-object', '-t', 'commit', '-w', file).trim();
  fs.rmSync(file);
  git(dir, 'update-ref', 'HEAD', id);
}

const VARIANTS = [
  { name: 'core.fsmonitor with git status', command: 'git status',
    arrange: (d, evil) => config(d, 'core.fsmonitor', evil) },
  { name: 'core.fsmonitor with git diff', command: 'git diff',
    arrange: (d, evil) => config(d, 'core.fsmonitor', evil) },
  { name: 'core.pager with git log', command: 'git log',
    arrange: (d, evil) => config(d, 'core.pager', evil) },
  { name: 'pager.status with git status', command: 'git status',
    arrange: (d, evil) => config(d, 'pager.status', evil) },
  { name: 'pager.show with git show', command: 'git show',
    arrange: (d, evil) => config(d, 'pager.show', evil) },
  { name: 'diff.external with git diff', command: 'git diff',
    arrange: (d, evil) => config(d, 'diff.external', evil) },
  { name: 'diff.<driver>.textconv bound by .gitattributes, with git diff', command: 'git diff',
    arrange: (d, evil) => {
      fs.writeFileSync(path.join(d, '.gitattributes'), '*.txt diff=conv\n');
      config(d, 'diff.conv.textconv', evil);
    } },
  { name: 'diff.<driver>.textconv bound by .gitattributes, with git show', command: 'git show',
    arrange: (d, evil) => {
      fs.writeFileSync(path.join(d, '.gitattributes'), '*.txt diff=conv\n');
      config(d, 'diff.conv.textconv', evil);
    } },
  { name: 'diff.<driver>.command bound by .gitattributes, with git diff', command: 'git diff',
    arrange: (d, evil) => {
      fs.writeFileSync(path.join(d, '.gitattributes'), '*.txt diff=ext\n');
      config(d, 'diff.ext.command', evil);
    } },
  { name: 'filter.<driver>.clean bound by .gitattributes, with git diff', command: 'git diff',
    arrange: (d, evil) => {
      fs.writeFileSync(path.join(d, '.gitattributes'), '*.txt filter=cl\n');
      config(d, 'filter.cl.clean', evil);
    } },
  { name: 'filter.<driver>.clean bound by .gitattributes, with git status', command: 'git status',
    arrange: (d, evil) => {
      fs.writeFileSync(path.join(d, '.gitattributes'), '*.txt filter=cl\n');
      config(d, 'filter.cl.clean', evil);
      // A fresh index entry timestamp: status must re-read the file.
      fs.utimesSync(path.join(d, 'tracked.txt'), new Date(), new Date(Date.now() + 5000));
    } },
  { name: 'include.path to a file that sets core.pager, with git log', command: 'git log',
    arrange: (d, evil) => {
      fs.writeFileSync(path.join(d, 'extra.inc'), `[core]\n\tpager = ${evil}\n`);
      config(d, 'include.path', path.join(d, 'extra.inc'));
    } },
  { name: 'includeIf.gitdir to a file that sets core.fsmonitor, with git status', command: 'git status',
    arrange: (d, evil) => {
      fs.writeFileSync(path.join(d, 'extra.inc'), `[core]\n\tfsmonitor = ${evil}\n`);
      config(d, `includeIf.gitdir:${d}/.path`, path.join(d, 'extra.inc'));
    } },
  { name: 'gpg.program with log.showSignature on a signed-looking commit, with git log', command: 'git log',
    arrange: (d, evil) => {
      signedLookingCommit(d);
      config(d, 'log.showSignature', 'true');
      config(d, 'gpg.program', evil);
    } },
  { name: 'gpg.program with log.showSignature, with git show', command: 'git show',
    arrange: (d, evil) => {
      signedLookingCommit(d);
      config(d, 'log.showSignature', 'true');
      config(d, 'gpg.program', evil);
    } },
  { name: 'core.hooksPath with a post-index-change hook, with git status', command: 'git status',
    arrange: (d, evil) => {
      fs.mkdirSync(path.join(d, 'hooks'));
      fs.copyFileSync(evil, path.join(d, 'hooks', 'post-index-change'));
      fs.chmodSync(path.join(d, 'hooks', 'post-index-change'), 0o755);
      config(d, 'core.hooksPath', path.join(d, 'hooks'));
      fs.utimesSync(path.join(d, 'tracked.txt'), new Date(), new Date(Date.now() + 5000));
    } },
  { name: 'a .git file pointing at a repository elsewhere whose config sets core.fsmonitor', command: 'git status',
    arrange: (d, evil) => {
      fs.renameSync(path.join(d, '.git'), path.join(d, 'hidden.git'));
      fs.writeFileSync(path.join(d, '.git'), 'gitdir: hidden.git\n');
      config(d, 'core.fsmonitor', evil, path.join(d, 'hidden.git', 'config'));
    } },
  { name: 'extensions.worktreeConfig with core.pager in config.worktree, with git log', command: 'git log',
    arrange: (d, evil) => {
      config(d, 'extensions.worktreeConfig', 'true');
      config(d, 'core.pager', evil, path.join(d, '.git', 'config.worktree'));
    } },
  { name: 'a parent directory\'s repository with core.pager, git log in a subdirectory', command: 'git log', sub: 'sub/dir',
    arrange: (d, evil) => {
      fs.mkdirSync(path.join(d, 'sub', 'dir'), { recursive: true });
      config(d, 'core.pager', evil);
    } },
  { name: 'upper-case section and key ([CORE] FSMONITOR) written by hand, with git status', command: 'git status',
    arrange: (d, evil) => fs.appendFileSync(path.join(d, '.git', 'config'), `[CORE]\n\tFSMONITOR = ${evil}\n`) },
  { name: 'a linked worktree whose common repository sets core.fsmonitor, git status in the worktree', command: 'git status', sub: '../wt',
    arrange: (d, evil) => {
      git(d, 'worktree', 'add', '-q', path.join(d, '..', 'wt'));
      config(d, 'core.fsmonitor', evil);
    } },
  { name: 'git -C into the repository from outside it with core.pager', command: 'git -C repo log', inRepo: 'repo',
    arrange: (d, evil) => config(d, 'core.pager', evil) },
];

for (const v of VARIANTS) {
  test(`${v.name}: asks or runs without the repository's program`, async () => {
    const ctx = await setup(cleanups, { policy: POLICY });
    let dir = ctx.work;
    if (v.sub === '../wt') {
      dir = path.join(ctx.work, 'main');
      fs.mkdirSync(dir);
    }
    if (v.inRepo) {
      dir = path.join(ctx.work, v.inRepo);
      fs.mkdirSync(dir);
    }
    const canary = path.join(ctx.work, 'canary');
    const evil = repo(dir, canary);
    v.arrange(dir, evil);
    const cwd = v.inRepo ? ctx.work : v.sub ? path.join(dir, v.sub) : dir;
    const o = await attempt(ctx, { runtime: { cwd }, execution: { command: v.command } },
      { canaries: [canary], timeoutMs: 15000 });
    assertAbsent(canary, v.name);
    if (o.kind === 'asked') assertAsked(o, v.name);
    else if (o.kind === 'refused') assert.match(o.r.error.code, /^PM_TERM_/, show(o));
    else assert.equal(o.stuck, undefined, `${v.name}: the command never finished: ${show(o)}`);
    assertAbsent(canary, v.name);
  });
}

// The same programs planted after the check: the line is judged while the
// repository is clean, waits at a FIFO, and the agent writes the config
// (and .gitattributes) before git starts. git in a terminal is
// termbridge-git, which runs these read-only commands with the
// repository's config reduced to data: the command runs and the canary
// never appears.
for (const v of VARIANTS.filter((x) => !x.sub && !x.inRepo)) {
  test(`${v.name}, planted after the check: runs without the repository's program`, async () => {
    const ctx = await setup(cleanups, { policy: POLICY });
    const dir = ctx.work;
    const canary = path.join(dir, 'canary');
    const evil = repo(dir, canary);
    const o = await attemptThroughGate(ctx, dir, `cat ./gate; ${v.command}`, {
      canaries: [canary], meanwhile: () => v.arrange(dir, evil),
    });
    assertAbsent(canary, v.name);
    assert.equal(o.kind, 'ran', `${v.name}: ${show(o)}`);
    assert.equal(o.result.exit_code, 0, `${v.name}: ${show(o)}`);
  });
}
