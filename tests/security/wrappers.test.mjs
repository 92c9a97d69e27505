// Programs that run another program change how it runs: `env -C DIR` runs
// it in another directory, `env -i`/`-u NAME` and `exec -c` take away the
// environment the terminal sets (pagers off, git's configured programs
// off), `env -a NAME` renames it, and `time -o F`, `nohup`, `flock F` and
// `script F` write files. The check skipped those options and judged the
// wrapped command alone, so `env -C /elsewhere cat secret.txt` read outside
// the read scope under the built-in rules. Expected: each asks (denied
// here), no canary appears and no secret is printed; plain wrappers still run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  assertAbsent, assertAsked, attempt, attemptThroughGate, cleanupList, policyWith, setup, show,
  whichProgram,
} from './lib.mjs';
import { removeDir, tempDir } from '../lib/harness.mjs';

const cleanups = cleanupList();

test('wrappers that move, strip or rename what they run ask; their writes are writes', async () => {
  const ctx = await setup(cleanups, { policy: policyWith([['git', 'status']]) });
  const work = ctx.work;
  const outside = tempDir('tb-sec-outside-');
  cleanups.push(async () => removeDir(outside));
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'TB-SECRET-4411\n');
  const canary = path.join(outside, 'canary');
  // nohup appends to ./nohup.out when its output is a terminal: here a
  // symlink out of the work dir.
  fs.symlinkSync(canary, path.join(work, 'nohup.out'));
  const inWork = (command) => inWorkAttempt(ctx, work, command, canary);

  // A planted program named like a wrapper, and a script bash would source.
  fs.writeFileSync(path.join(work, 'nice'), `#!/bin/sh\ntouch ${canary}\n`, { mode: 0o755 });
  fs.writeFileSync(path.join(work, 'evil.sh'), `touch ${canary}\n`);
  const lines = [
    // The second review's: env -S splits by env's rules ('#' ends its
    // string, the words after it run), bash -k moves assignments into the
    // environment, dash reads $'...' as text, ./nice is not nice, getopt
    // keeps script's last -c.
    `env -S'#' touch ${canary}`, "bash -k -c 'bash -c true BASH_ENV=./evil.sh'",
    `bash --rcfile ./evil.sh -i -c true`, `sh -c "true \$'\\'; touch ${canary} #'"`,
    './nice cat evil.sh', `script -q -c true -c 'touch ${canary}' /dev/null`,
    `env -C ${outside} cat secret.txt`, `env --chdir=${outside} cat secret.txt`,
    `env -iC${outside} cat secret.txt`, `env --ch=${outside} cat secret.txt`,
    `env -a echo touch ${canary}`, `exec -c -a echo touch ${canary}`,
    'nohup echo planted', `flock ${canary} true`, `script -qc true ${canary}`,
    `script /dev/null -qc true -O ${canary}`, `strace -o ${canary} true`,
  ];
  if (await whichProgram('time')) lines.push(`/usr/bin/time -o ${canary} true`);
  for (const line of lines) {
    const o = await inWork(line);
    assertAbsent(canary, line);
    assertAsked(o, line);
    assert.doesNotMatch(JSON.stringify(o.r), /TB-SECRET-4411/, line);
  }
  for (const line of ['timeout 5 echo plain', 'nice -n 5 echo plain', 'env -- echo plain',
    'script -qc "echo plain" /dev/null']) {
    const o = await inWork(line);
    assert.equal(o.kind, 'ran', `${line}: ${show(o)}`);
    assert.match(o.text, /plain/, line);
  }
  assertAbsent(canary, 'the plain uses');
});

// The terminal overrides core.fsmonitor (and the pagers, hooks and editors)
// through its environment, so a repository configuration written after the
// check cannot run them. `env -u GIT_CONFIG_COUNT` took that away: the agent
// holds the line at a FIFO until the check has passed, then writes the
// program into .git/config.
test('a line that removes the terminal\'s git overrides asks before the config can change', async () => {
  const ctx = await setup(cleanups, { policy: policyWith([['git', 'status']]) });
  const work = ctx.work;
  const canary = path.join(work, 'canary');
  const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
  execFileSync('git', ['init', '-q'], { cwd: work, env });
  fs.writeFileSync(path.join(work, 'f.txt'), 'x\n');
  execFileSync('git', ['add', 'f.txt'], { cwd: work, env });
  fs.writeFileSync(path.join(work, 'evil.sh'), `#!/bin/sh\ntouch ${canary}\nexit 1\n`, { mode: 0o755 });
  const line = 'cat ./gate; env -u GIT_CONFIG_COUNT git status';
  const o = await attemptThroughGate(ctx, work, line, {
    canaries: [canary],
    meanwhile: () => execFileSync('git', ['config', '--file', path.join(work, '.git/config'),
      'core.fsmonitor', path.join(work, 'evil.sh')]),
  });
  assertAbsent(canary, line);
  assertAsked(o, line);
});

// One execute in `work`, settled as lib.mjs's attempt settles it.
function inWorkAttempt(ctx, work, command, canary) {
  return attempt(ctx, { runtime: { cwd: work }, execution: { command } }, { canaries: [canary] });
}
