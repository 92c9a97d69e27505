// Lines the policy judges as bash reads them, run by a shell that reads them
// otherwise. With zsh as the terminals' shell, `echo hi # ; touch canary` is
// an allowed echo to bash (a comment follows) and ran touch in a zsh without
// interactive_comments; a zsh glob qualifier runs code. With dash,
// `echo $'\';touch canary;#'` is one quoted word to bash and ran touch
// (dash has no $'...'). Expected: in a terminal whose shell is not bash,
// every line outside what all shells read alike asks a person, and nothing
// ran; plain lines still run at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  assertAbsent, assertAsked, attempt, cleanupList, policyWith, setup, show, whichProgram,
} from './lib.mjs';

const cleanups = cleanupList();

const ZSH_LINES = (c) => [
  `echo hi # ; touch ${c}`,
  `echo ok #$(touch ${c})`,
  `echo *(e:'touch ${c}':)`,
  `cat =(touch ${c})`,
];
const DASH_LINES = (c) => [`echo $'\\';touch ${c};#'`];

for (const [shell, lines] of [['zsh', ZSH_LINES], ['dash', DASH_LINES]]) {
  test(`${shell}: a line ${shell} reads otherwise than bash asks, and nothing ran`, async (t) => {
    const program = await whichProgram(shell);
    if (!program) return t.skip(`${shell} is not installed`);
    const ctx = await setup(cleanups, { policy: policyWith(), extraArgs: ['--shell', program] });
    const canary = path.join(ctx.work, 'canary');
    for (const line of lines(canary)) {
      const o = await attempt(ctx, { runtime: { cwd: ctx.work }, execution: { command: line } },
        { canaries: [canary] });
      assertAbsent(canary, line);
      assertAsked(o, line);
      // Asked because the shell is not bash (or bash could not parse it either).
      assert.match(o.request.reason, /is not bash|cannot be parsed/, show(o));
    }
    // A line every shell reads alike runs at once.
    const plain = await attempt(ctx, {
      runtime: { cwd: ctx.work }, execution: { command: "echo 'plain words' && printf ok" },
    });
    assert.equal(plain.kind, 'ran', show(plain));
    assert.match(plain.text, /plain words\s+ok/, show(plain));
  });
}
