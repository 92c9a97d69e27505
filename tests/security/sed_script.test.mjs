// GNU sed runs commands (e, s///e), writes (w) and reads (r) what its script
// names. With a rule allowing `sed -n`, `sed -n '1e touch canary' notes.txt`
// ran touch without a person. Expected: a script that runs, writes or reads
// anything (or comes from a file) asks, nothing ran; a plain edit still runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  assertAbsent, assertAsked, attempt, cleanupList, policyWith, setup, show,
} from './lib.mjs';

const cleanups = cleanupList();

test('a sed script that runs, writes or reads a file asks under a rule allowing sed -n', async () => {
  const ctx = await setup(cleanups, { policy: policyWith([['sed', '-n']]) });
  fs.writeFileSync(path.join(ctx.work, 'notes.txt'), 'one\ntwo\n');
  const canary = path.join(ctx.work, 'canary');
  for (const line of [
    `sed -n '1e touch ${canary}' notes.txt`,
    `sed -n 's/.*/touch ${canary}/e' notes.txt`,
    `sed -n -e p -e '2e touch ${canary}' notes.txt`,
    `sed -n 'w ${canary}' notes.txt`,
    `sed -n '1r /etc/passwd' notes.txt`,
  ]) {
    const o = await attempt(ctx, { runtime: { cwd: ctx.work }, execution: { command: line } },
      { canaries: [canary] });
    assertAbsent(canary, line);
    assertAsked(o, line);
    assert.match(o.request.reason, /sed script/, show(o));
  }
  const plain = await attempt(ctx, {
    runtime: { cwd: ctx.work }, execution: { command: "sed -n 's/one/ONE/p' notes.txt" },
  });
  assert.equal(plain.kind, 'ran', show(plain));
  assert.match(plain.text, /ONE/, show(plain));
});
