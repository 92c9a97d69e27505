// Attacks through the environment an agent sets (execution.env), issue 20
// class 1. Names that make bash, zsh, readline, git, less or the dynamic
// loader run code reach the shell and the allowed program: exported shell
// functions that shadow builtins (`printf`, `unset`, `builtin`), xtrace with
// a PS4 command substitution, prompt and start-up hooks, readline macros,
// pager and git-configuration injection, home and config directories, the
// loader's preload. Each variant sets such a name on an execute of a
// harmless, allowed command (printf, git log, git status, less -F) and on an
// open_only; a canary file in a temp dir proves whether code ran.
//
// Expected (issue 20): any agent-set name outside the harmless list (LANG,
// LC_*, TZ, NO_COLOR, COLUMNS, LINES, plus what the operator adds) makes
// execute ask a person, and the request lists the name in its env field;
// open_only, where no command is judged, refuses it with
// PM_TERM_INVALID_PAYLOAD naming the variable. Nothing runs either way. A
// harmless name (LANG=C.UTF-8) still runs without asking.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { terminal } from '../lib/harness.mjs';
import {
  assertAbsent, assertAsked, attempt, cleanupList, policyWith, setup, show, whichProgram,
  writeFiles,
} from './lib.mjs';

const cleanups = cleanupList();
// Besides the harmless programs: the read-only git subcommands are default
// rules already; less on a file that fits one screen (-F) is read-only too.
const POLICY = policyWith(['less']);

function gitRepo(dir) {
  const git = (...args) => execFileSync('git', args, {
    cwd: dir, stdio: 'ignore',
    env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: dir, GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' },
  });
  git('init', '-q');
  fs.writeFileSync(path.join(dir, 'tracked.txt'), 'one\n');
  git('add', 'tracked.txt');
  git('commit', '-q', '-m', 'first');
  fs.writeFileSync(path.join(dir, 'tracked.txt'), 'one\ntwo\n');  // a change for git diff
}

// Each variant: env(canary, work) -> the variables; files(canary, work) ->
// files to put into the cwd first (what an attacker finds or leaves there);
// command; repo: the cwd is a git repository with a commit.
const VARIANTS = [
  {
    name: 'an exported function BASH_FUNC_printf%% that shadows the printf builtin',
    env: (c) => ({ 'BASH_FUNC_printf%%': `() { touch ${c}; }` }),
    command: 'printf x',
  },
  {
    name: 'an exported function BASH_FUNC_builtin%% that the prompt hook calls',
    env: (c) => ({ 'BASH_FUNC_builtin%%': `() { touch ${c}; }` }),
    command: 'printf x',
    timeoutMs: 5000,  // today the broken prompt hook never reports the end
  },
  {
    name: 'SHELLOPTS=xtrace with a command substitution in PS4',
    env: (c) => ({ SHELLOPTS: 'xtrace', PS4: `$(touch ${c})+ ` }),
    command: 'printf x',
  },
  {
    name: 'PS1 with a command substitution',
    env: (c) => ({ PS1: `$(touch ${c})$ ` }),
    command: 'printf x',
  },
  {
    name: 'PROMPT_COMMAND',
    env: (c) => ({ PROMPT_COMMAND: `touch ${c}` }),
    command: 'printf x',
  },
  {
    name: 'PS0 with a command substitution',
    env: (c) => ({ PS0: `$(touch ${c})` }),
    command: 'printf x',
  },
  {
    name: 'BASH_ENV naming a script in the cwd',
    files: (c) => ({ 'evil.sh': `touch ${c}\n` }),
    env: (c, w) => ({ BASH_ENV: path.join(w, 'evil.sh') }),
    command: 'printf x',
  },
  {
    name: 'ENV naming a script in the cwd',
    files: (c) => ({ 'evil.sh': `touch ${c}\n` }),
    env: (c, w) => ({ ENV: path.join(w, 'evil.sh') }),
    command: 'printf x',
  },
  {
    name: 'INPUTRC whose Enter key is a macro that appends a command',
    files: (c) => ({ inputrc: `"\\C-j": "; touch ${c}\\C-m"\n"\\C-m": accept-line\n` }),
    env: (c, w) => ({ INPUTRC: path.join(w, 'inputrc') }),
    command: 'printf x',
  },
  {
    name: 'IFS',
    env: () => ({ IFS: '/' }),
    command: 'printf x',
  },
  {
    name: 'BASHOPTS',
    env: () => ({ BASHOPTS: 'extdebug' }),
    command: 'printf x',
  },
  {
    name: 'GIT_PAGER with git log',
    repo: true,
    env: (c) => ({ GIT_PAGER: `touch ${c}; cat` }),
    command: 'git log',
  },
  {
    name: 'PAGER with git log',
    repo: true,
    env: (c) => ({ PAGER: `touch ${c}; cat` }),
    command: 'git log',
  },
  {
    name: 'GIT_CONFIG_COUNT/KEY/VALUE setting core.fsmonitor for git status',
    repo: true,
    env: (c) => ({ GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'core.fsmonitor', GIT_CONFIG_VALUE_0: `touch ${c}; false` }),
    command: 'git status',
  },
  {
    name: 'GIT_CONFIG_PARAMETERS setting core.pager for git log',
    repo: true,
    env: (c) => ({ GIT_CONFIG_PARAMETERS: `'core.pager'='touch ${c}; cat'` }),
    command: 'git log',
  },
  {
    name: 'GIT_EXTERNAL_DIFF for git diff',
    repo: true,
    files: (c) => ({ 'extdiff.sh': `#!/bin/sh\ntouch ${c}\n` }),
    env: (c, w) => ({ GIT_EXTERNAL_DIFF: path.join(w, 'extdiff.sh') }),
    command: 'git diff',
  },
  {
    name: 'HOME pointing at a directory whose .gitconfig sets core.pager',
    repo: true,
    files: (c) => ({ 'home/.gitconfig': `[core]\n\tpager = touch ${c}; cat\n` }),
    env: (c, w) => ({ HOME: path.join(w, 'home') }),
    command: 'git log',
  },
  {
    name: 'XDG_CONFIG_HOME with a git/config that sets core.pager',
    repo: true,
    files: (c) => ({ 'xdg/git/config': `[core]\n\tpager = touch ${c}; cat\n` }),
    env: (c, w) => ({ XDG_CONFIG_HOME: path.join(w, 'xdg') }),
    command: 'git log',
  },
  {
    name: 'GIT_CONFIG_GLOBAL naming a file that sets core.pager',
    repo: true,
    files: (c) => ({ 'global.gitconfig': `[core]\n\tpager = touch ${c}; cat\n` }),
    env: (c, w) => ({ GIT_CONFIG_GLOBAL: path.join(w, 'global.gitconfig') }),
    command: 'git log',
  },
  {
    name: 'LESSOPEN with less on a file',
    files: () => ({ 'notes.txt': 'hello\n' }),
    env: (c) => ({ LESSOPEN: `|touch ${c}; cat %s` }),
    command: 'less -F notes.txt',
  },
  {
    name: 'LD_PRELOAD naming a library with a constructor',
    needs: 'cc',
    build: (c, w) => {
      fs.writeFileSync(path.join(w, 'evil.c'),
        `#include <fcntl.h>\n#include <unistd.h>\n__attribute__((constructor)) static void f(void) {\n` +
        `  int fd = open("${c}", O_CREAT | O_WRONLY, 0600); if (fd >= 0) close(fd);\n}\n`);
      execFileSync('cc', ['-shared', '-fPIC', '-o', path.join(w, 'evil.so'), path.join(w, 'evil.c')]);
    },
    env: (c, w) => ({ LD_PRELOAD: path.join(w, 'evil.so') }),
    command: 'sleep 0',
  },
  {
    name: 'LD_LIBRARY_PATH',
    env: (c, w) => ({ LD_LIBRARY_PATH: w }),
    command: 'printf x',
  },
  {
    name: 'PYTHONSTARTUP, NODE_OPTIONS and PERL5OPT',
    files: (c) => ({ 'start.py': `open(${JSON.stringify(c)}, 'w')\n` }),
    env: (c, w) => ({ PYTHONSTARTUP: path.join(w, 'start.py'), NODE_OPTIONS: `--require ${path.join(w, 'x.js')}`, PERL5OPT: '-MEvil' }),
    command: 'printf x',
  },
];

for (const v of VARIANTS) {
  test(`execute with ${v.name} asks a person, env listed, and nothing runs`, async (t) => {
    if (v.needs && !(await whichProgram(v.needs))) return t.skip(`${v.needs} is not installed`);
    const ctx = await setup(cleanups, { policy: POLICY });
    const canary = path.join(ctx.work, 'canary');
    if (v.repo) gitRepo(ctx.work);
    if (v.files) writeFiles(ctx.work, v.files(canary, ctx.work));
    if (v.build) v.build(canary, ctx.work);
    const env = v.env(canary, ctx.work);
    const o = await attempt(ctx, {
      runtime: { cwd: ctx.work }, execution: { command: v.command, env },
    }, { canaries: [canary], timeoutMs: v.timeoutMs });
    assertAbsent(canary, v.name);
    assertAsked(o, v.name);
    for (const name of Object.keys(env)) {
      assert.ok(Object.keys(o.request.env ?? {}).includes(name),
        `the request shows ${name}: ${JSON.stringify(o.request)}`);
    }
    assert.equal(o.request.cwd, ctx.work, 'the request shows the cwd');
    assertAbsent(canary, v.name);
  });
}

// open_only: no command is judged, so no person is asked; the variable is
// refused. The shell starts (and its rc runs) the moment the terminal opens.
const OPEN_VARIANTS = [
  {
    name: 'BASH_FUNC_unset%% (the rc file calls unset)',
    env: (c) => ({ 'BASH_FUNC_unset%%': `() { touch ${c}; }` }),
  },
  {
    name: 'BASH_FUNC_shopt%% (the rc file calls shopt)',
    env: (c) => ({ 'BASH_FUNC_shopt%%': `() { touch ${c}; }` }),
  },
  {
    name: 'BASH_FUNC_set%% (the rc file calls set)',
    env: (c) => ({ 'BASH_FUNC_set%%': `() { touch ${c}; }` }),
  },
  {
    name: 'SHELLOPTS=xtrace with a command substitution in PS4',
    env: (c) => ({ SHELLOPTS: 'xtrace', PS4: `$(touch ${c})+ ` }),
  },
  {
    name: 'PROMPT_COMMAND and PS1',
    env: (c) => ({ PROMPT_COMMAND: `touch ${c}`, PS1: `$(touch ${c})$ ` }),
  },
  {
    name: 'BASH_ENV and ENV',
    files: (c) => ({ 'evil.sh': `touch ${c}\n` }),
    env: (c, w) => ({ BASH_ENV: path.join(w, 'evil.sh'), ENV: path.join(w, 'evil.sh') }),
  },
];

async function expectOpenRefused(ctx, env, canary, what) {
  const r = await terminal(ctx.client, {
    action: 'execute', invocation: { intent: 'open_only' }, runtime: { cwd: ctx.work },
    execution: { env },
  });
  if (r.success) {
    // It opened: the shell's start-up has run once its first prompt shows
    // (an event on the terminal's output), then look for the canary.
    await terminal(ctx.client, {
      action: 'read_output', target: { terminal_id: r.identity.terminal_id },
      until: 'match', match: '\\$ ', wait_ms: 10000,
    });
  }
  assertAbsent(canary, what);
  assert.equal(r.success, false, `${what}: expected PM_TERM_INVALID_PAYLOAD; the terminal opened: ${JSON.stringify(r.identity)}`);
  assert.equal(r.error.code, 'PM_TERM_INVALID_PAYLOAD', JSON.stringify(r.error));
  const named = Object.keys(env).some((name) => JSON.stringify(r.error).includes(name));
  assert.ok(named, `the refusal names the variable: ${JSON.stringify(r.error)}`);
  assertAbsent(canary, what);
  // The refusal is audited with its code and the variable.
  const refused = fs.readFileSync(ctx.broker.ready.audit_log, 'utf8').trimEnd().split('\n')
    .map((l) => JSON.parse(l)).filter((rec) => rec.event === 'command_refused');
  assert.equal(refused.length, 1, `${what}: one command_refused record`);
  assert.equal(refused[0].code, 'PM_TERM_INVALID_PAYLOAD');
  assert.ok(Object.keys(env).includes(refused[0].details.variable), JSON.stringify(refused[0]));
}

for (const v of OPEN_VARIANTS) {
  test(`open_only with ${v.name} is refused with PM_TERM_INVALID_PAYLOAD and nothing runs`, async () => {
    const ctx = await setup(cleanups, { policy: POLICY });
    const canary = path.join(ctx.work, 'canary');
    if (v.files) writeFiles(ctx.work, v.files(canary, ctx.work));
    await expectOpenRefused(ctx, v.env(canary, ctx.work), canary, v.name);
  });
}

test('zsh: open_only with ZDOTDIR naming a directory with a .zshrc is refused and nothing runs', async (t) => {
  const zsh = await whichProgram('zsh');
  if (!zsh) return t.skip('zsh is not installed');
  const ctx = await setup(cleanups, { policy: POLICY, extraArgs: ['--shell', zsh] });
  const canary = path.join(ctx.work, 'canary');
  writeFiles(ctx.work, { 'zdot/.zshrc': `touch ${canary}\n`, 'zdot/.zshenv': `touch ${canary}\n` });
  await expectOpenRefused(ctx, { ZDOTDIR: path.join(ctx.work, 'zdot') }, canary, 'ZDOTDIR');
});

test('zsh: execute with ZDOTDIR or HOME naming a directory with zsh start-up files asks and nothing runs', async (t) => {
  const zsh = await whichProgram('zsh');
  if (!zsh) return t.skip('zsh is not installed');
  const ctx = await setup(cleanups, { policy: POLICY, extraArgs: ['--shell', zsh] });
  const canary = path.join(ctx.work, 'canary');
  writeFiles(ctx.work, {
    'zdot/.zshrc': `touch ${canary}\n`, 'zdot/.zshenv': `touch ${canary}\n`,
    'zdot/.zprofile': `touch ${canary}\n`, 'zdot/.zlogin': `touch ${canary}\n`,
  });
  for (const name of ['ZDOTDIR', 'HOME']) {
    const o = await attempt(ctx, {
      runtime: { cwd: ctx.work },
      execution: { command: 'printf x', env: { [name]: path.join(ctx.work, 'zdot') } },
    }, { canaries: [canary] });
    assertAbsent(canary, name);
    assertAsked(o, name);
    assert.ok(name in (o.request.env ?? {}), JSON.stringify(o.request));
  }
});

test('execute with a harmless LANG=C.UTF-8 runs printf without asking', async () => {
  const ctx = await setup(cleanups, { policy: POLICY });
  const o = await attempt(ctx, {
    runtime: { cwd: ctx.work }, execution: { command: "printf '%s' lang-ok", env: { LANG: 'C.UTF-8', TZ: 'UTC' } },
  });
  assert.equal(o.kind, 'ran', show(o));
  assert.equal(o.r.result.approval.state, 'allowed');
  assert.equal(o.result.exit_code, 0);
  assert.match(o.text, /lang-ok/);
  assert.equal(ctx.approvals.requests.length, 0, 'no person was asked');
});
