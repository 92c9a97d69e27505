// Attacks through the line editor and the tty line discipline, issue 20
// class 2. A command is typed into an interactive bash, so readline and the
// terminal act on its characters: TAB completes, ^A/^D/^U/^W/DEL/ESC edit
// the line, CR accepts it early, ^C aborts it, ^V quotes the next key, and a
// canonical-mode tty cuts lines at 4096 bytes. The policy parser sees those
// bytes as data (inside a comment, a quoted or plain argument of an allowed
// printf/echo/true), while the shell would run what the editor made of them.
//
// Expected (issue 20): the bytes the policy judged are the bytes the shell
// executes. TAB inside quotes prints a TAB; a TAB never completes a file
// name; long lines, multi-line scripts, heredocs, $'...' and
// backslash-newline run as written; a control character either runs
// literally or the line is refused (PM_TERM_INVALID_PAYLOAD naming it) or a
// person is asked, never reinterpreted: the canary never appears. NUL is
// refused with PM_TERM_INVALID_PAYLOAD.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  assertAbsent, assertAsked, assertRefused, attempt, cleanupList, policyWith, runAllowed, setup,
  show, writeFiles,
} from './lib.mjs';

const cleanups = cleanupList();
const POLICY = policyWith();

// The whole output of an allowed command run in `cwd`.
// `approve`: a person approves it if the policy asks (heredocs ask today).
async function output(ctx, command, { approve = false } = {}) {
  const o = await attempt(ctx, { runtime: { cwd: ctx.work }, execution: { command } }, { approve });
  assert.equal(o.kind, 'ran', `${JSON.stringify(command)}: ${show(o)}`);
  assert.equal(o.result.exit_code, 0, `${JSON.stringify(command)}: ${show(o)}`);
  return o.text.replaceAll('\r\n', '\n');
}

test('a TAB inside single quotes is printed as a TAB, not completed', async () => {
  const ctx = await setup(cleanups, { policy: POLICY });
  writeFiles(ctx.work, { 'abc-file': '' });
  assert.equal(await output(ctx, "printf '[%s]' 'a\tb'"), '[a\tb]');
});

test('a TAB inside double quotes after a file-name prefix is printed, not completed', async () => {
  const ctx = await setup(cleanups, { policy: POLICY });
  writeFiles(ctx.work, { 'abc-file': '', 'abd-file': '' });
  assert.equal(await output(ctx, 'printf "[%s]" "ab\tx"'), '[ab\tx]');
});

test('a TAB between arguments separates them and does not complete the file name before it', async () => {
  const ctx = await setup(cleanups, { policy: POLICY });
  writeFiles(ctx.work, { 'canary-maker.sh': '#!/bin/sh\ntouch canary\n' });
  assert.equal(await output(ctx, "printf '<%s>' ./canary-m\tz"), '<./canary-m><z>');
});

test('TABs in a heredoc body and in $\'...\' reach the program as written', async () => {
  const ctx = await setup(cleanups, { policy: POLICY });
  writeFiles(ctx.work, { 'abc-file': '' });
  const body = "a\tb\n\tindented\nab\t\n";
  assert.equal(await output(ctx, `cat <<'EOF'\n${body}EOF`, { approve: true }), body);
  assert.equal(await output(ctx, "printf '%s' $'x\\ty'"), 'x\ty');
});

test('a TAB after a partial program name does not complete it into a script that runs', async () => {
  const ctx = await setup(cleanups, { policy: POLICY });
  const canary = path.join(ctx.work, 'canary');
  writeFiles(ctx.work, { 'canary-maker.sh': `#!/bin/sh\ntouch ${canary}\n` });
  // Judged as the program "./canary-ma" (which does not exist): at most a
  // person is asked; completed it would run canary-maker.sh.
  const o = await attempt(ctx, { runtime: { cwd: ctx.work }, execution: { command: 'true; ./canary-ma\t' } },
    { canaries: [canary] });
  assertAbsent(canary, 'completion');
  if (o.kind === 'asked') assertAsked(o, 'completion');
  else if (o.kind === 'refused') assertRefused(o, 'PM_TERM_INVALID_PAYLOAD', 'completion');
  else assert.notEqual(o.result.exit_code, 0, `./canary-ma does not exist: ${show(o)}`);
  assertAbsent(canary, 'completion');
});

test('a line longer than the tty\'s 4096-byte canonical limit runs whole', async () => {
  const ctx = await setup(cleanups, { policy: POLICY });
  const long = 'x'.repeat(5999) + 'Z';
  assert.equal(await output(ctx, `printf %s ${long}`), long);
});

test('a multi-line script and backslash-newline run as written', async () => {
  const ctx = await setup(cleanups, { policy: POLICY });
  assert.equal(await output(ctx, "printf 'a\\n'\nprintf 'b\\n'\nprintf '%s' one \\\ntwo"), 'a\nb\nonetwo');
});

// Control characters hidden where the parser sees harmless data. Each would,
// once readline or the tty acted on it, leave `touch <canary>` as the line.
const CONTROL_VARIANTS = [
  { name: '^U (kill the line) inside a printf argument', line: (c) => `printf x\x15touch ${c}` },
  { name: '^A then ^D x5 (delete "echo ") inside echo arguments', line: (c) => `echo touch ${c}\x01\x04\x04\x04\x04\x04` },
  { name: '^W x2 (kill two words) after a comment', line: (c) => `true #\x17\x17touch ${c}` },
  { name: 'DEL x6 (erase "true #") after a comment', line: (c) => `true #${'\x7f'.repeat(6)}touch ${c}` },
  { name: '^H x6 (erase "true #") after a comment', line: (c) => `true #${'\x08'.repeat(6)}touch ${c}` },
  { name: 'CR (accept the line early) inside a comment', line: (c) => `true #\rtouch ${c}` },
  { name: 'CR inside a quoted printf argument', line: (c) => `printf '%s' 'x\rtouch ${c}\r'` },
  { name: '^C (abort the line) inside a printf argument', line: (c) => `printf x\x03touch ${c}` },
  { name: 'ESC ^H (backward-kill-word) after a comment', line: (c) => `true #\x1b\x08\x1b\x08touch ${c}` },
  { name: '^A ESC d (kill the first word) with a leading echo', line: (c) => `echo touch ${c}\x01\x1bd\x04` },
  { name: '^V ^J (a quoted newline) inside a comment', line: (c) => `true #\x16\ntouch ${c}` },
  { name: '^K then ^Y (kill, then yank elsewhere) inside echo arguments', line: (c) => `echo touch ${c}\x01\x0b\x19` },
  { name: '^O (operate-and-get-next) inside a comment', line: (c) => `true #\x0ftouch ${c}` },
  { name: 'ESC # (insert-comment accepts the line) then a new line', line: (c) => `true #\x1b#touch ${c}` },
  { name: '^D on an empty line (exit the shell) then more input', line: (c) => `true #\x15\x04touch ${c}` },
];

for (const v of CONTROL_VARIANTS) {
  test(`${v.name}: runs literally, or is refused or asked, never reinterpreted`, async () => {
    const ctx = await setup(cleanups, { policy: POLICY });
    const canary = path.join(ctx.work, 'canary');
    const command = v.line(canary);
    const o = await attempt(ctx, { runtime: { cwd: ctx.work }, execution: { command } },
      { canaries: [canary], timeoutMs: 10000 });
    if (o.kind === 'ran' && o.session) {
      // Whatever the shell made of the line has run once a following
      // allowed command in the same terminal completes.
      await runAllowed(ctx, o.r.identity.terminal_id, 'printf after').catch(() => {});
    }
    assertAbsent(canary, v.name);
    if (o.kind === 'asked') assertAsked(o, v.name);
    if (o.kind === 'refused') assertRefused(o, 'PM_TERM_INVALID_PAYLOAD', v.name);
    assertAbsent(canary, v.name);
  });
}

test('a NUL byte in a command line is refused with PM_TERM_INVALID_PAYLOAD', async () => {
  const ctx = await setup(cleanups, { policy: POLICY });
  const o = await attempt(ctx, { runtime: { cwd: ctx.work }, execution: { command: "printf '%s' 'a\0b'" } },
    { timeoutMs: 10000 });
  assertRefused(o, 'PM_TERM_INVALID_PAYLOAD', 'NUL');
});

test('a NUL byte cannot cut the judged line short: what follows it never runs unjudged', async () => {
  const ctx = await setup(cleanups, { policy: POLICY });
  const canary = path.join(ctx.work, 'canary');
  const o = await attempt(ctx, { runtime: { cwd: ctx.work }, execution: { command: `printf x\0 && touch ${canary}` } },
    { canaries: [canary], timeoutMs: 10000 });
  assertAbsent(canary, 'NUL');
  assert.notEqual(o.kind, 'ran', show(o));
  if (o.kind === 'asked') assertAsked(o, 'NUL');
  else assertRefused(o, 'PM_TERM_INVALID_PAYLOAD', 'NUL');
});
