// A line is judged as a fresh bash runs it, but an earlier command a person
// approved can change what the terminal's shell does with the same words: an
// alias or a function named like an allowed program, PATH or a hashed path
// leading to a file the agent wrote, a trap that runs code with every
// command, other shell options. Expected: once the shell is not as it
// started in a way that touches the line, the allowed line asks a person
// (builtin.shell-state) and nothing ran; in a fresh terminal, and once the
// change is undone, it runs at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  assertAbsent, assertAsked, attempt, cleanupList, openTerminal, policyWith, setup, show,
} from './lib.mjs';

const cleanups = cleanupList();

test('after an approved change to the shell, an allowed line it affects asks, and nothing ran', async () => {
  const ctx = await setup(cleanups, { policy: policyWith() });
  const canary = path.join(ctx.work, 'canary');
  const bin = path.join(ctx.work, 'bin');
  fs.mkdirSync(bin);
  fs.writeFileSync(path.join(bin, 'sleep'), `#!/bin/sh\ntouch '${canary}'\n`, { mode: 0o755 });

  const scenarios = [
    { change: `alias cat='touch ${canary}; cat'`, line: 'cat /dev/null', undo: 'unalias cat',
      reason: /`cat` is an alias/ },
    { change: `export PATH=${bin}:$PATH`, line: 'sleep 0', reason: /PATH was changed, and `sleep` runs/ },
    { change: `hash -p ${bin}/sleep sleep`, line: 'sleep 0', undo: 'hash -r',
      reason: /`sleep` is hashed to/ },
    // A DEBUG trap runs with every command, the shell's own prompt hooks
    // too, so its code runs once a person sets it; the line asks all the same.
    { change: "trap ': traced' DEBUG", line: 'true', undo: 'trap - DEBUG', reason: /a trap was set/ },
    { change: 'shopt -s extglob', line: 'true', undo: 'shopt -u extglob', reason: /options were changed \(\+extglob\)/ },
    { change: `printf() { touch '${canary}'; }`, line: 'printf x', undo: 'unset -f printf',
      reason: /`printf` is a shell function/ },
    // An alias of a reserved word: a line of several lines reaches bash as
    // `{ ...; }`, so `{` would run the alias.
    { change: `alias '{'='touch ${canary}; {'`, line: 'echo a\necho b', undo: "unalias '{'",
      reason: /an alias was set/ },
    // An alias of the shell's own hook would keep it from writing its state.
    { change: "alias __tb_precmd=':'", line: 'true', undo: 'unalias __tb_precmd',
      reason: /an alias was set/ },
    // An exported variable a program runs code from.
    { change: `export GIT_PAGER='touch ${canary}; cat'`, line: 'true', undo: 'export GIT_PAGER=cat',
      reason: /GIT_PAGER/ },
  ];
  for (const s of scenarios) {
    const t = await openTerminal(ctx, { runtime: { cwd: ctx.work } });
    const target = { target: { terminal_id: t } };
    const before = await attempt(ctx, { ...target, execution: { command: s.line } });
    assert.equal(before.kind, 'ran', `${s.line} in a fresh terminal: ${show(before)}`);
    const changed = await attempt(ctx, { ...target, execution: { command: s.change } }, { approve: true });
    assert.equal(changed.kind, 'ran', `${s.change} (approved): ${show(changed)}`);
    const o = await attempt(ctx, { ...target, execution: { command: s.line } }, { canaries: [canary] });
    assertAbsent(canary, `${s.line} after ${s.change}`);
    assertAsked(o, `${s.line} after ${s.change}`);
    assert.match(o.request.reason, s.reason, show(o));
    assert.match(o.request.reason, /the terminal's shell is not as it started/, show(o));
    if (s.undo) {
      const undone = await attempt(ctx, { ...target, execution: { command: s.undo } }, { approve: true });
      assert.equal(undone.kind, 'ran', `${s.undo}: ${show(undone)}`);
      const again = await attempt(ctx, { ...target, execution: { command: s.line } });
      assert.equal(again.kind, 'ran', `${s.line} after ${s.undo}: ${show(again)}`);
    }
    assertAbsent(canary, s.change);
  }
});
