// `termbridge policy replay` end to end (docs/operating.md, "Policy replay"):
// an agent runs commands the broker's policy allows, denies and asks about
// (a person approves one), then the CLI judges the audited commands again,
// with the policy in force (nothing changes) and with a candidate file, and
// lists exactly the decisions the candidate would change.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  brokerAgentAndApprovals, openTerminalIn, runCli, tempDir,
} from '../lib/harness.mjs';

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const cli = (broker, ...args) => runCli(broker.stateDir, ...args);

test('replay lists exactly the decisions a candidate policy would change', async () => {
  // The policy in force: the defaults (ls, cat, echo allowed), the rest asks.
  const { broker, agent, approvals } = await brokerAgentAndApprovals(cleanups, { policy: 'version = 1\n' });
  const work = tempDir('tb-replay-');
  cleanups.push(() => fs.rmSync(work, { recursive: true, force: true }));
  fs.writeFileSync(path.join(work, 'notes.txt'), 'hello\n');
  const inWork = await openTerminalIn(agent.client, work);

  assert.equal((await inWork('ls')).result.approval.state, 'allowed');
  assert.equal((await inWork('cat notes.txt')).result.approval.state, 'allowed');
  assert.equal((await inWork('echo hi')).result.approval.state, 'allowed');
  const denied = await inWork('rm -rf /');
  assert.equal(denied.error.code, 'PM_TERM_BLOCKED_DESTRUCTIVE');
  const asked = inWork('touch made');
  const request = await approvals.next();
  assert.equal((await cli(broker, 'approvals', 'approve', request.approval_id)).code, 0);
  assert.equal((await asked).success, true);

  // The policy in force decides as it did.
  const same = await cli(broker, '--json', 'policy', 'replay');
  assert.equal(same.code, 0, same.stderr);
  const sameResult = JSON.parse(same.stdout);
  assert.equal(sameResult.judged, 5, same.stdout);
  assert.deepEqual(sameResult.changed, []);
  assert.equal(sameResult.candidate, false);

  // A candidate: cat denied, touch allowed; ls, echo and rm -rf / as before.
  const candidate = path.join(work, 'candidate.toml');
  fs.writeFileSync(candidate, 'version = 1\n'
    + '[[rule]]\nid = "no-cat"\naction = "deny"\nprefix = ["cat"]\n'
    + '[[rule]]\nid = "touch-ok"\naction = "allow"\nprefix = ["touch"]\nwrites = true\n');
  const replayed = await cli(broker, '--json', 'policy', 'replay', '--policy', candidate);
  assert.equal(replayed.code, 0, replayed.stderr);
  const result = JSON.parse(replayed.stdout);
  assert.equal(result.judged, 5);
  assert.equal(result.candidate, true);
  assert.deepEqual(result.changed.map((c) => [c.command, c.before.action, c.after.action, c.after.rule]), [
    ['cat notes.txt', 'allow', 'deny', 'no-cat'],
    ['touch made', 'ask', 'allow', 'touch-ok'],
  ]);
  assert.equal(result.changed[0].cwd, work);
  assert.equal(result.changed[1].decision, 'approved', 'what the person decided is kept');
  assert.deepEqual(result.summary, { 'allow->deny': 1, 'ask->allow': 1 });
  assert.equal(result.unchanged, 3);

  const text = await cli(broker, 'policy', 'replay', '--policy', candidate);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /allow \(default\.cat\S*\) -> deny \(no-cat\)\s+cat notes\.txt\n/);
  assert.match(text.stdout, /ask \(default action\), approved by \S+ via cli, scope once -> allow \(touch-ok\)\s+touch made\n/);
  assert.match(text.stdout, /\n2 of 5 decisions would change \(allow -> deny: 1, ask -> allow: 1\)\n$/);

  // The window and the agent choose the commands.
  const none = JSON.parse((await cli(broker, '--json', 'policy', 'replay', '--policy', candidate,
    '--agent', 'somebody-else')).stdout);
  assert.equal(none.judged, 0);
  const future = JSON.parse((await cli(broker, '--json', 'policy', 'replay', '--policy', candidate,
    '--since', new Date(Date.now() + 3600000).toISOString())).stdout);
  assert.equal(future.judged, 0);
  const bad = await cli(broker, 'policy', 'replay', '--since', 'yesterday-ish');
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--since yesterday-ish: not a time/);
  const missing = await cli(broker, 'policy', 'replay', '--policy', path.join(work, 'nope.toml'));
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /no such file/);
  const broken = path.join(work, 'broken.toml');
  fs.writeFileSync(broken, 'version = 1\n[[rule]]\naction = "alow"\nexact = ["ls"]\n');
  const rejected = await cli(broker, 'policy', 'replay', '--policy', broken);
  assert.equal(rejected.code, 1);
  assert.match(rejected.stderr, /broken\.toml:3/);
});
