// Attacks through fake command ends, issue 20 class 8. The broker learns
// that a command ended from the shell integration's OSC 133 marks in the
// output; an allowed program can print the same marks. Each variant prints
// a command-end mark (D;0, BEL or ST terminated, with a fake prompt's A and
// B marks, with guessed extra parameters such as a key, as 8-bit C1
// controls, split over two writes, OSC 633 as VS Code spells it), or cats a
// file holding them, and then keeps running: `sleep 1; printf TAIL; false`.
//
// Expected (issue 20): shell-integration marks are authenticated, so marks
// the program prints are ignored: the command is not reported finished
// early; its result holds TAIL and the real exit code (1, from false).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { attempt, cleanupList, policyWith, setup, show } from './lib.mjs';

const cleanups = cleanupList();
const POLICY = policyWith(['false']);
const REST = 'sleep 1; printf TAIL; false';

const VARIANTS = [
  { name: 'D;0 ended by BEL', marks: '\\033]133;D;0\\007' },
  { name: 'D;0 ended by ST (ESC backslash)', marks: '\\033]133;D;0\\033\\\\' },
  { name: 'D;0 followed by a fake prompt (A, "$ ", B)', marks: '\\033]133;D;0\\007\\033]133;A\\007$ \\033]133;B\\007' },
  { name: 'C, then D;0 with a guessed key parameter', marks: '\\033]133;C\\007\\033]133;D;0;k=0123456789abcdef\\007' },
  { name: 'D;0 with aid= and extra fields', marks: '\\033]133;D;0;aid=1;cl=m\\007' },
  { name: 'D;0 as 8-bit C1 controls (OSC 0x9d, ST 0x9c)', marks: '\\235133;D;0\\234' },
  { name: 'OSC 633 D (the VS Code spelling)', marks: '\\033]633;D;0\\007\\033]633;A\\007' },
  { name: 'D;0 split over two printf calls', split: true, marks: ['\\033]133;', 'D;0\\007'] },
];

async function expectFullRun(ctx, command, what) {
  const o = await attempt(ctx, { runtime: { cwd: ctx.work }, execution: { command } }, { timeoutMs: 20000 });
  assert.equal(o.kind, 'ran', `${what}: ${show(o)}`);
  assert.match(o.text, /TAIL/, `${what}: the command was reported finished before it printed TAIL: ${show(o)}`);
  assert.equal(o.result.exit_code, 1, `${what}: the real exit code is 1 (false): ${show(o)}`);
}

for (const v of VARIANTS) {
  test(`printf of a fake mark, ${v.name}: not reported finished early, TAIL and exit 1 arrive`, async () => {
    const ctx = await setup(cleanups, { policy: POLICY });
    const print = v.split ? v.marks.map((m) => `printf '${m}'`).join('; ') : `printf '${v.marks}'`;
    await expectFullRun(ctx, `${print}; ${REST}`, v.name);
  });
}

test('cat of a file holding fake marks: not reported finished early, TAIL and exit 1 arrive', async () => {
  const ctx = await setup(cleanups, { policy: POLICY });
  fs.writeFileSync(path.join(ctx.work, 'marks.txt'),
    'before\n\x1b]133;D;0\x07\x1b]133;A\x07$ \x1b]133;B\x07\x1b]133;D;0\x1b\\after\n');
  await expectFullRun(ctx, `cat marks.txt; ${REST}`, 'cat marks.txt');
});

test('fake marks printed by one command do not spill into the next command: it gets its own TAIL and exit 1', async () => {
  const ctx = await setup(cleanups, { policy: POLICY });
  const first = await attempt(ctx, { runtime: { cwd: ctx.work },
    execution: { command: "printf '\\033]133;D;0\\007'; printf '\\033]133;D;0\\007'; printf FIRST" } });
  assert.equal(first.kind, 'ran', show(first));
  assert.match(first.text, /FIRST/, show(first));
  await expectFullRun(ctx, `printf '\\033]133;A\\007'; ${REST}`, 'the command after fake marks');
});
