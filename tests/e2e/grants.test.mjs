// Grants end to end (docs/operating.md, "Grants"): an MCP client calls the
// agent, the broker's default policy asks, and a person decides with the
// `termbridge` CLI. "Always" shows its rule before it is written, a narrowed
// rule is written instead of it only when it is narrower, and a grant given
// for a while ends on its own: `termbridge grants` shows it, then not, the
// audit says so, and the same command asks again. Each test proves what ran
// by its side effect (a marker file) and what asked by the approval state.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  brokerAgentAndApprovals, openTerminalIn, runCli, tempDir,
} from '../lib/harness.mjs';

const CLI = process.env.TERMBRIDGE_CLI_BIN;
const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const cli = (broker, ...args) => runCli(broker.stateDir, ...args);

const setup = () => brokerAgentAndApprovals(cleanups, { policy: null });
const openTerminal = (agent, cwd) => openTerminalIn(agent.client, cwd);

const grants = async (broker) => {
  const r = await cli(broker, '--json', 'grants');
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout).grants;
};

// Polls `termbridge grants` until `done(grants)` holds, up to `timeoutMs`.
async function grantsUntil(broker, done, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const list = await grants(broker);
    if (done(list)) return list;
    if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs} ms; grants: ${JSON.stringify(list)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const auditRecords = (broker) => fs.readFileSync(broker.ready.audit_log, 'utf8').trim().split('\n')
  .map((line) => JSON.parse(line));

test('"always" shows its rule, refuses a broader one, and writes a narrowed one', async () => {
  const { broker, agent, approvals } = await setup();
  const work = tempDir('tb-grants-work-');
  const other = tempDir('tb-grants-other-');
  cleanups.push(() => { fs.rmSync(work, { recursive: true, force: true }); fs.rmSync(other, { recursive: true, force: true }); });
  const inWork = await openTerminal(agent, work);
  const call = inWork('mkdir -p made');
  const request = await approvals.next();
  // The exact rule "always" would write, before anyone chooses it.
  assert.match(request.always_rules_toml, /^\[\[rule\]\]\nid = "always-mkdir-[0-9a-f]{8}"\naction = "allow"\nexact = \["mkdir", "-p", "made"\]\n/);
  assert.equal(request.always_refusal, '');
  const shown = await cli(broker, 'approvals', 'show', request.approval_id);
  assert.ok(shown.stdout.includes('    always would write:\n      [[rule]]\n'), shown.stdout);
  assert.ok(shown.stdout.includes('      exact = ["mkdir", "-p", "made"]\n'), shown.stdout);

  // Broader than shown: refused, nothing written, still pending.
  const policyFile = path.join(broker.stateDir, 'policy.toml');
  const broad = path.join(work, 'broad.toml');
  fs.writeFileSync(broad, '[[rule]]\naction = "allow"\nprefix = ["mkdir"]\n');
  const refused = await cli(broker, 'approvals', 'approve', request.approval_id, '--scope', 'always', '--rule', broad);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /allows more than "always" proposed: prefix \[mkdir\] matches more arguments/);
  assert.equal(fs.existsSync(policyFile) && fs.readFileSync(policyFile, 'utf8').includes('mkdir'), false,
    'a refused rule was written');
  const pending = JSON.parse((await cli(broker, '--json', 'approvals', 'list')).stdout).approvals;
  assert.deepEqual(pending.map((a) => a.approval_id), [request.approval_id]);
  // One that would not allow this very request is refused too.
  const elsewhere = path.join(work, 'elsewhere.toml');
  fs.writeFileSync(elsewhere, `[[rule]]\naction = "allow"\nexact = ["mkdir", "-p", "made"]\nwrites = true\nwrite_paths = ["made"]\ncwd = ["${other}"]\n`);
  const wrongPlace = await cli(broker, 'approvals', 'approve', request.approval_id, '--scope', 'always', '--rule', elsewhere);
  assert.equal(wrongPlace.code, 1);
  assert.match(wrongPlace.stderr, /do not allow this request/);

  // Narrowed to this directory, from stdin: written, and the command runs.
  // mkdir writes the directory it makes: the rule says so.
  const narrow = `[[rule]]\nid = "mkdir-made-here"\naction = "allow"\nexact = ["mkdir", "-p", "made"]\nwrites = true\nwrite_paths = ["made"]\ncwd = ["${work}"]\n`;
  const approved = await new Promise((resolve) => {
    const child = execFile(CLI, ['--state-dir', broker.stateDir, 'approvals', 'approve', request.approval_id,
      '--scope', 'always', '--rule', '-'], (err, stdout, stderr) => resolve({ code: err ? err.code : 0, stdout, stderr }));
    child.stdin.end(narrow);
  });
  assert.equal(approved.code, 0, approved.stderr);
  assert.match(approved.stdout, /wrote to the policy file:\n {2}\[\[rule\]\]\n {2}id = "mkdir-made-here"/);
  const first = await call;
  assert.equal(first.success, true, JSON.stringify(first));
  assert.equal(fs.existsSync(path.join(work, 'made')), true);
  const text = fs.readFileSync(policyFile, 'utf8');
  assert.ok(text.includes(`cwd = ["${work}"]`), text);
  assert.ok(!text.includes('always-mkdir-'), `the proposed rule was written as well:\n${text}`);
  const changed = auditRecords(broker).filter((r) => r.event === 'policy_changed');
  assert.equal(changed.length, 1);
  assert.equal(changed[0].narrowed, true);

  // The same command here runs without asking, by the narrowed rule.
  fs.rmdirSync(path.join(work, 'made'));
  const again = await inWork('mkdir -p made');
  assert.equal(again.success, true, JSON.stringify(again));
  assert.equal(again.result.approval.state, 'allowed');
  assert.equal(again.result.approval.rule, 'mkdir-made-here');
  assert.equal(fs.existsSync(path.join(work, 'made')), true);
  // Elsewhere, which the shown rule would have allowed, it still asks.
  const inOther = await openTerminal(agent, other);
  const asked = await inOther('mkdir -p made', 300);
  assert.equal(asked.result.approval.state, 'pending', JSON.stringify(asked));
  const otherRequest = await approvals.next();
  assert.equal(otherRequest.cwd, other);
  assert.equal(fs.existsSync(path.join(other, 'made')), false);
  assert.equal((await cli(broker, 'approvals', 'deny', otherRequest.approval_id)).code, 0);
});

test('a terminal grant for a few seconds ends on its own, and the command asks again', async () => {
  const { broker, agent, approvals } = await setup();
  const work = tempDir('tb-grants-for-');
  cleanups.push(() => fs.rmSync(work, { recursive: true, force: true }));
  const inWork = await openTerminal(agent, work);
  const call = inWork(`touch ${path.join(work, 'one')}`);
  const request = await approvals.next();
  const bad = await cli(broker, 'approvals', 'approve', request.approval_id, '--scope', 'terminal', '--for', 'soon');
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--for soon: give a duration/);
  const once = await cli(broker, 'approvals', 'approve', request.approval_id, '--for', '5s');
  assert.equal(once.code, 1, 'a time limit on "once" is refused');
  assert.match(once.stderr, /time limit/);
  const approved = await cli(broker, 'approvals', 'approve', request.approval_id, '--scope', 'terminal', '--for', '5s');
  assert.equal(approved.code, 0, approved.stderr);
  assert.match(approved.stdout, /approved a_\S+ \(terminal\) until .* \([1-5]s\)/);
  const first = await call;
  assert.equal(first.success, true, JSON.stringify(first));
  assert.equal(first.result.approval.scope, 'terminal');

  // In force: listed with its time left, and a later command runs unasked.
  const listed = await grants(broker);
  assert.equal(listed.length, 1, JSON.stringify(listed));
  assert.equal(listed[0].kind, 'terminal');
  assert.equal(listed[0].terminal_id, request.terminal_id);
  assert.ok(listed[0].seconds_left <= 5, JSON.stringify(listed[0]));
  const shown = await cli(broker, 'grants');
  assert.match(shown.stdout, new RegExp(`terminal ${request.terminal_id} .* [0-5]s left`));
  const second = await inWork(`touch ${path.join(work, 'two')}`);
  assert.equal(second.success, true, JSON.stringify(second));
  assert.equal(second.result.approval.state, 'approved');
  assert.equal(fs.existsSync(path.join(work, 'two')), true);

  // Ends by itself: gone from the list, audited, and the next command asks.
  await grantsUntil(broker, (list) => list.length === 0, 20000, 'the grant did not end');
  const ended = auditRecords(broker).filter((r) => r.event === 'grant_expired');
  assert.equal(ended.length, 1, JSON.stringify(ended));
  assert.equal(ended[0].kind, 'terminal');
  assert.equal(ended[0].terminal_id, request.terminal_id);
  assert.equal(ended[0].approval_id, request.approval_id);
  const third = await inWork(`touch ${path.join(work, 'three')}`, 300);
  assert.equal(third.result.approval.state, 'pending', JSON.stringify(third));
  assert.equal(fs.existsSync(path.join(work, 'three')), false);
  const again = await approvals.next();
  assert.equal((await cli(broker, 'approvals', 'deny', again.approval_id)).code, 0);
  assert.equal((await cli(broker, 'grants')).stdout, 'no grants in force\n');
});

test('"always" for a few seconds writes an expiring rule that stays, visibly expired', async () => {
  const { broker, agent, approvals } = await setup();
  const work = tempDir('tb-grants-rule-');
  cleanups.push(() => fs.rmSync(work, { recursive: true, force: true }));
  const inWork = await openTerminal(agent, work);
  const call = inWork('mkdir -p for-a-while');
  const request = await approvals.next();
  const approved = await cli(broker, 'approvals', 'approve', request.approval_id, '--scope', 'always', '--for', '4s');
  assert.equal(approved.code, 0, approved.stderr);
  assert.match(approved.stdout, /\n {2}expires = \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n/);
  assert.equal((await call).success, true);
  const policyFile = path.join(broker.stateDir, 'policy.toml');
  assert.match(fs.readFileSync(policyFile, 'utf8'), /\nexpires = \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n/);
  const listed = await grants(broker);
  assert.equal(listed.length, 1, JSON.stringify(listed));
  assert.equal(listed[0].kind, 'rule');
  assert.match(listed[0].rule_id, /^always-mkdir-/);
  assert.equal(listed[0].granted_by, process.env.USER || 'operator');
  const ruleId = listed[0].rule_id;

  await grantsUntil(broker, (list) => list.length === 0, 20000, 'the rule did not expire');
  const shown = await cli(broker, 'policy', 'show');
  assert.match(shown.stdout, new RegExp(`EXPIRED \\(kept in the file, no longer applied\\) \\S+: rule ${ruleId}\n`));
  assert.ok(fs.readFileSync(policyFile, 'utf8').includes(`id = "${ruleId}"`), 'the rule stays in the file');
  // Audited once the sweep saw it end (it may follow the list by a moment).
  const deadline = Date.now() + 10000;
  while (!auditRecords(broker).some((r) => r.event === 'grant_expired') && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const ended = auditRecords(broker).filter((r) => r.event === 'grant_expired');
  assert.equal(ended.length, 1, JSON.stringify(ended));
  assert.equal(ended[0].kind, 'rule');
  assert.equal(ended[0].rule_id, ruleId);
  // The next identical command asks again, and "always" proposes a fresh id.
  const asked = await inWork('mkdir -p for-a-while', 300);
  assert.equal(asked.result.approval.state, 'pending', JSON.stringify(asked));
  const again = await approvals.next();
  assert.ok(again.always_rules_toml.includes(`id = "${ruleId}-2"`), again.always_rules_toml);
  assert.equal((await cli(broker, 'approvals', 'deny', again.approval_id)).code, 0);
});
