// Attacks on the broker's own secrets, issue 20 class 6. Read-only programs
// the default policy allows (cat, head, tail, grep -r, ls) are pointed at
// the broker's state directory (agent token, policy file, audit log,
// operator socket): by absolute path, by glob, through a symlink in the cwd,
// after `cd` into it, by a path relative to a cwd next to it or inside it,
// through `..`, and through /proc/<broker pid>/ (environ, cwd, fd, root).
//
// Expected (issue 20): nothing the policy allows reads or writes the
// broker's state: a built-in deny rule refuses it with
// PM_TERM_BLOCKED_DESTRUCTIVE, and no token text appears in any output the
// agent gets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  assertAbsent, assertRefused, attempt, cleanupList, policyWith, setup, show,
} from './lib.mjs';

const cleanups = cleanupList();
const POLICY = policyWith([['grep'], ['ls'], ['head'], ['tail'], ['wc']]);

// Each variant: command(state, ctx) -> the line; cwd(state, ctx) -> cwd;
// arrange(state, ctx) -> files the attacker has in the cwd.
const VARIANTS = [
  { name: 'cat of the agent token by absolute path', command: (s) => `cat ${s}/agent-token` },
  { name: 'head -c of the agent token file the ready file names', command: (s, ctx) => `head -c 200 ${ctx.broker.tokenFile}` },
  { name: 'tail of the policy file', command: (s) => `tail -n 50 ${s}/policy.toml` },
  { name: 'grep -r over the state directory', command: (s) => `grep -r . ${s}` },
  { name: 'ls -la of the state directory', command: (s) => `ls -la ${s}` },
  { name: 'wc of the audit log', command: (s) => `wc -c ${s}/audit.jsonl` },
  { name: 'cat through a glob into the state directory', command: (s) => `cat ${path.dirname(s)}/tb-state-*/agent-tok*` },
  { name: 'cat through a glob on the state directory name', command: (s) => `cat ${s.slice(0, -2)}??/agent-token` },
  { name: 'cat through a symlink in the cwd',
    arrange: (s, ctx) => fs.symlinkSync(s, path.join(ctx.work, 'notes')),
    command: () => 'cat notes/agent-token' },
  { name: 'cat through a symlink to the token file itself',
    arrange: (s, ctx) => fs.symlinkSync(path.join(s, 'agent-token'), path.join(ctx.work, 'readme.txt')),
    command: () => 'cat readme.txt' },
  { name: 'cd into the state directory, then cat a relative path', command: (s) => `cd ${s} && cat agent-token` },
  { name: 'cd into the state directory, then cat *', command: (s) => `cd ${s}; cat *` },
  { name: 'a cwd inside the state directory and a relative path', cwd: (s) => s, command: () => 'cat agent-token' },
  { name: 'a cwd next to the state directory and a relative path', cwd: (s) => path.dirname(s),
    command: (s) => `cat ${path.basename(s)}/agent-token` },
  { name: 'a path through .. from the cwd', command: (s, ctx) => `cat ${path.relative(ctx.work, s)}/agent-token` },
  { name: 'a path with // and /./ segments', command: (s) => `cat ${s.replace(/^\/([^/]+)\//, '/$1//./')}/./agent-token` },
  { name: '/proc/<broker pid>/environ', command: (s, ctx) => `cat /proc/${ctx.broker.child.pid}/environ` },
  { name: '/proc/<broker pid>/cwd and root into the state directory',
    command: (s, ctx) => `cat /proc/${ctx.broker.child.pid}/root${s}/agent-token` },
  { name: '/proc/<broker pid>/fd/*', command: (s, ctx) => `head -c 4096 /proc/${ctx.broker.child.pid}/fd/*` },
  { name: 'ls of /proc/<broker pid>/fd', command: (s, ctx) => `ls -l /proc/${ctx.broker.child.pid}/fd` },
  { name: '/proc/self/../<broker pid>/environ', command: (s, ctx) => `cat /proc/self/../${ctx.broker.child.pid}/environ` },
];

for (const v of VARIANTS) {
  test(`${v.name}: refused with PM_TERM_BLOCKED_DESTRUCTIVE, no token in the output`, async () => {
    const ctx = await setup(cleanups, { policy: POLICY });
    const state = ctx.broker.stateDir;
    const token = fs.readFileSync(ctx.broker.tokenFile, 'utf8').trim();
    assert.ok(token.length >= 16);
    if (v.arrange) v.arrange(state, ctx);
    const cwd = v.cwd ? v.cwd(state, ctx) : ctx.work;
    const o = await attempt(ctx, { runtime: { cwd }, execution: { command: v.command(state, ctx) } },
      { timeoutMs: 15000 });
    assert.ok(!JSON.stringify(o.r ?? {}).includes(token) && !(o.text ?? '').includes(token),
      `${v.name}: the agent token reached the agent`);
    assertRefused(o, 'PM_TERM_BLOCKED_DESTRUCTIVE', v.name);
    assert.match(o.r.error.details?.rule ?? '', /^builtin\./, show(o));
  });
}

test('writing into the state directory (an allowed printf redirected into the policy file) is refused', async () => {
  const ctx = await setup(cleanups, { policy: policyWith([{ regex: '^printf .*', writes: true }]) });
  const policyFile = path.join(ctx.broker.stateDir, 'policy.toml');
  const before = fs.readFileSync(policyFile, 'utf8');
  const marker = path.join(ctx.broker.stateDir, 'planted');
  const o = await attempt(ctx, { runtime: { cwd: ctx.work },
    execution: { command: `printf x > ${marker}; printf '\\n[[rule]]\\naction = "allow"\\nregex = ".*"\\n' >> ${policyFile}` } },
  { canaries: [marker], timeoutMs: 15000 });
  assertAbsent(marker, 'a file planted in the state directory');
  assert.equal(fs.readFileSync(policyFile, 'utf8'), before, 'the policy file changed');
  assert.notEqual(o.kind, 'ran', show(o));
});
