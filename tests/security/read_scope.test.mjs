// Attacks on the host user's secrets, issue 21: "read-only is not
// read-anything". The broker runs with a fake home that holds planted
// secrets (SSH and cloud keys, .netrc, a kube config, docker auth); the
// agent's workspace is a temp dir with a .env. With the default policy, the
// read-only programs it allows (cat, head, tail, grep, wc, ls) are pointed
// at them: by ~ path, relative path, symlink in the workspace, glob,
// recursive walk of the home or of the workspace, process listings.
//
// Expected: every such read asks a person (an approval request arrives
// before anything ran, the denial reaches the agent), and no secret text
// ever appears in what the agent gets. Reading, grepping and listing inside
// the workspace, and git log of its own repository, still run at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir, removeDir } from '../lib/harness.mjs';
import { attempt, cleanupList, cli, setup, show, writeFiles } from './lib.mjs';

const cleanups = cleanupList();
const SECRET = 'PLANTED-SECRET-7f3a9c';

// A home whose every credential file holds SECRET.
function fakeHome() {
  const home = tempDir('tb-home-');
  cleanups.push(async () => removeDir(home));
  writeFiles(home, {
    '.ssh/id_ed25519': `-----BEGIN OPENSSH PRIVATE KEY-----\n${SECRET}\n`,
    '.ssh/config': `Host x\n  IdentityFile ~/.ssh/id_ed25519 # ${SECRET}\n`,
    '.aws/credentials': `[default]\naws_secret_access_key = ${SECRET}\n`,
    '.netrc': `machine example.com login u password ${SECRET}\n`,
    '.kube/config': `token: ${SECRET}\n`,
    '.docker/config.json': `{"auths":{"x":{"auth":"${SECRET}"}}}\n`,
    '.git-credentials': `https://u:${SECRET}@example.com\n`,
    'notes/todo.txt': `ordinary file ${SECRET}\n`,
  });
  return home;
}

async function start() {
  const home = fakeHome();
  // policy: null is the built-in default policy; terminals get the broker's HOME.
  const ctx = await setup(cleanups, { policy: null, env: { HOME: home } });
  writeFiles(ctx.work, {
    'README.md': '# project\nhello from the workspace\n',
    'src/main.c': 'int main() { return 0; } // hello\n',
  });
  return { ...ctx, home };
}

const inWork = (ctx, command) => attempt(ctx, { runtime: { cwd: ctx.work }, execution: { command } });

function assertAskedNoSecret(o, what) {
  assert.equal(o.kind, 'asked', `${what}: expected an approval request; got ${show(o)}`);
  assert.equal(o.r.success, false, `${what}: ${show(o)}`);
  assert.equal(o.r.error.code, 'PM_TERM_DECLINED', `${what}: ${show(o)}`);
  assert.doesNotMatch(JSON.stringify(o.r), new RegExp(SECRET), `${what}: the secret reached the agent`);
}

const READS = [
  ['cat of an SSH key by ~ path', () => 'cat ~/.ssh/id_ed25519'],
  ['tail of cloud credentials', () => 'tail ~/.aws/credentials'],
  ['head of .netrc', () => 'head -n 5 ~/.netrc'],
  ['wc of docker auth', () => 'wc -c ~/.docker/config.json'],
  ['grep -r over the whole home', () => `grep -r ${SECRET.slice(0, 7)} ~`],
  ['grep -R of the kube dir', () => 'grep -R token ~/.kube'],
  ['cat through a glob in ~/.ssh', () => 'cat ~/.ssh/*'],
  ['ls of ~/.ssh', () => 'ls -la ~/.ssh'],
  ['cat by a path relative to the workspace', (ctx) =>
    `cat ${path.relative(ctx.work, path.join(ctx.home, '.git-credentials'))}`],
  ['cat of an ordinary file outside the workspace', (ctx) => `cat ${ctx.home}/notes/todo.txt`],
  ['cat of .env inside the workspace', (ctx) => {
    writeFiles(ctx.work, { '.env': `API_KEY=${SECRET}\n` });
    return 'cat .env';
  }],
  ['grep -r of the workspace that holds a .env', (ctx) => {
    writeFiles(ctx.work, { '.env': `API_KEY=${SECRET}\n` });
    return 'grep -r API_KEY .';
  }],
  ['cat through a symlink in the workspace to a credential', (ctx) => {
    fs.symlinkSync(path.join(ctx.home, '.aws/credentials'), path.join(ctx.work, 'notes.txt'));
    return 'cat notes.txt';
  }],
  ['cat of /etc/shadow', () => 'cat /etc/shadow'],
  ['ps with every process environment', () => 'ps eww'],
  ['ps aux: other users\' full command lines', () => 'ps aux'],
];

// Found by an attacker review: ways around the scope that must ask too.
const AROUND = [
  ['a terminal opened in the home makes no workspace of it', (ctx) => ({
    cwd: ctx.home, command: 'cat .bash_history',
    files: () => writeFiles(ctx.home, { '.bash_history': `mysql -p${SECRET}\n` }) })],
  ['a terminal opened at / makes no workspace of it', (ctx) => ({
    cwd: '/', command: `cat ${path.relative('/', path.join(ctx.home, 'notes/todo.txt'))}` })],
  ['a quoted $ in a file name is still a read', (ctx) => ({
    command: "cat 'k$'",
    files: () => fs.symlinkSync(path.join(ctx.home, '.ssh/id_ed25519'), path.join(ctx.work, 'k$')) })],
  ['grep -d rec (an abbreviation of recurse) walks', (ctx) => ({
    command: 'grep -d rec API_KEY .',
    files: () => writeFiles(ctx.work, { '.env': `API_KEY=${SECRET}\n` }) })],
  ['grep -R follows a symlink out of the workspace', (ctx) => ({
    command: 'grep -R PLANTED',
    files: () => fs.symlinkSync(path.join(ctx.home, 'notes'), path.join(ctx.work, 'lnout')) })],
  ['cat * past the glob bound', (ctx) => ({
    command: 'cat *',
    files: () => {
      const many = {};
      for (let i = 0; i < 1500; i++) many[`f${String(i).padStart(4, '0')}.txt`] = 'x\n';
      writeFiles(ctx.work, many);
      fs.symlinkSync(path.join(ctx.home, '.aws/credentials'), path.join(ctx.work, 'f1499z.txt'));
    } })],
];

for (const [name, make] of AROUND) {
  test(`${name}: asks, and no secret reaches the agent`, async () => {
    const ctx = await start();
    const { cwd = ctx.work, command, files } = make(ctx);
    if (files) files();
    const o = await attempt(ctx, { runtime: { cwd }, execution: { command } });
    assertAskedNoSecret(o, name);
  });
}

for (const [name, command] of READS) {
  test(`${name}: asks, and no secret reaches the agent`, async () => {
    const ctx = await start();
    const o = await inWork(ctx, command(ctx));
    assertAskedNoSecret(o, name);
  });
}

test('reading, grepping and listing inside the workspace run at once', async () => {
  const ctx = await start();
  for (const [command, expect] of [
    ['cat README.md', /hello from the workspace/],
    ['grep -rn hello .', /src\/main\.c:1:.*hello/],
    ['ls src', /main\.c/],
    ['wc -l README.md src/main.c', /3 total/],
  ]) {
    const o = await inWork(ctx, command);
    assert.equal(o.kind, 'ran', `${command}: ${show(o)}`);
    assert.match(o.text, expect, `${command}: ${show(o)}`);
  }
});

test('git log of the workspace\'s own repository runs at once', async (t) => {
  const ctx = await start();
  const env = { ...process.env, HOME: ctx.home, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@e',
    GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@e' };
  try {
    execFileSync('git', ['init', '-q'], { cwd: ctx.work, env });
    execFileSync('git', ['add', 'README.md'], { cwd: ctx.work, env });
    execFileSync('git', ['commit', '-qm', 'first commit here'], { cwd: ctx.work, env });
  } catch (e) {
    return t.skip(`git is not usable here: ${e.message}`);
  }
  const o = await inWork(ctx, 'git log --oneline');
  assert.equal(o.kind, 'ran', show(o));
  assert.match(o.text, /first commit here/);
  // git diff works in an agent's terminal (its git overrides break nothing).
  fs.appendFileSync(path.join(ctx.work, 'README.md'), 'a changed line\n');
  const d = await inWork(ctx, 'git diff');
  assert.equal(d.kind, 'ran', show(d));
  assert.match(d.text, /\+a changed line/, show(d));
  assert.equal(d.result.exit_code, 0, show(d));
});

// A .git file (or symlink) in the workspace names a repository elsewhere on
// the host: git log -p and git show read that repository's history.
test('git in a workspace whose .git leads to a repository outside it asks, and no secret arrives', async (t) => {
  const ctx = await start();
  const env = { ...process.env, HOME: ctx.home, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@e',
    GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@e' };
  const privateRepo = path.join(ctx.home, 'notes');  // outside the workspace, not a secret by name
  try {
    execFileSync('git', ['init', '-q'], { cwd: privateRepo, env });
    execFileSync('git', ['add', 'todo.txt'], { cwd: privateRepo, env });
    execFileSync('git', ['commit', '-qm', 'private notes'], { cwd: privateRepo, env });
  } catch (e) {
    return t.skip(`git is not usable here: ${e.message}`);
  }
  for (const [how, plant] of [
    ['a .git file', (dir) => fs.writeFileSync(path.join(dir, '.git'), `gitdir: ${path.join(privateRepo, '.git')}\n`)],
    ['a .git symlink', (dir) => fs.symlinkSync(path.join(privateRepo, '.git'), path.join(dir, '.git'))],
  ]) {
    const dir = path.join(ctx.work, how.replaceAll(' ', '-'));
    fs.mkdirSync(dir);
    plant(dir);
    for (const command of ['git log -p', 'git show HEAD:todo.txt']) {
      const o = await attempt(ctx, { runtime: { cwd: dir }, execution: { command } });
      assertAskedNoSecret(o, `${how}: ${command}`);
    }
  }
});

test('the approval and termbridge policy check say which read asked, and the read scope', async () => {
  const ctx = await start();
  const o = await inWork(ctx, 'cat README.md ~/.aws/credentials');
  assertAskedNoSecret(o, 'cat of a workspace file and a credential');
  const key = path.join(ctx.home, '.aws/credentials');
  assert.ok(o.request.reads.some((r) => r.includes(key)), JSON.stringify(o.request));
  assert.ok(o.request.reads.some((r) => r.includes(path.join(ctx.work, 'README.md'))),
    JSON.stringify(o.request));
  assert.match(o.request.reason, /credentials/);
  const checked = await cli(ctx.broker, 'policy', 'check', '--cwd', ctx.work,
    'grep -r token', ctx.home);
  assert.equal(checked.code, 0, checked.stderr);
  assert.match(checked.stdout, /^ask: /m);
  assert.match(checked.stdout, new RegExp(`read scope: .*${ctx.work}`));
  assert.match(checked.stdout, new RegExp(`reads: .*${ctx.home}`));
  assert.match(checked.stdout, /asks because of: /);
});
