// What a person on the host reads about earlier commands, from the audit log
// alone: `termbridge approvals history` (every decision, the policy's and
// people's, with filters) and `termbridge history <terminal>` (each command
// with who sent it, the decision, exit code, duration and where its output is
// in the recording). A real broker and agent through MCP make the history:
// one command the policy allows, one it denies, one a person approves with
// `termbridge approvals approve`, one a person declines.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  Broker, connectAgent, readAll, removeDir, runCli, tempDir, terminal, watchApprovals,
} from '../lib/harness.mjs';

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const POLICY = `version = 1
default = "ask"

[[rule]]
id = "hist-allow"
action = "allow"
prefix = ["printf"]

[[rule]]
id = "hist-deny"
action = "deny"
prefix = ["shred"]
`;

const broker = await Broker.start({ policy: POLICY });
cleanups.push(() => broker.stop());
const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
cleanups.push(() => agent.client.close());
const approvals = watchApprovals(broker);
cleanups.push(() => approvals.stop());
const work = tempDir('tb-history-');
cleanups.push(async () => removeDir(work));

// The four commands, all in one terminal. The first holds a tab, which the
// history must show as \t, not as a raw control character.
const allowedCommand = "printf '%s\\n' 'hist\tone'";
const first = await terminal(agent.client, {
  action: 'execute', execution: { command: allowedCommand }, runtime: { timeout_ms: 20000 },
});
assert.equal(first.success, true, JSON.stringify(first));
const terminalId = first.identity.terminal_id;
await readAll(agent.client, first.identity.session_id, first.result.cursor, first.result.stdout);
const inTerminal = (command) => terminal(agent.client, {
  action: 'execute', target: { terminal_id: terminalId }, execution: { command },
  runtime: { timeout_ms: 20000 },
});

const denied = await inTerminal(`shred ${path.join(work, 'nothing')}`);
assert.equal(denied.success, false, JSON.stringify(denied));

const approvedMarker = path.join(work, 'approved');
const asking = inTerminal(`touch ${approvedMarker} && echo made-it`);
const approveRequest = await approvals.next();
const approved = await runCli(broker.stateDir, 'approvals', 'approve', approveRequest.approval_id,
  '--approver', 'alice');
assert.equal(approved.code, 0, approved.stderr);
const ran = await asking;
assert.equal(ran.success, true, JSON.stringify(ran));
await readAll(agent.client, ran.identity.session_id, ran.result.cursor, ran.result.stdout);

const declining = inTerminal(`touch ${path.join(work, 'declined')}`);
const declineRequest = await approvals.next();
const declined = await runCli(broker.stateDir, 'approvals', 'deny', declineRequest.approval_id,
  '--note', 'not today');
assert.equal(declined.code, 0, declined.stderr);
assert.equal((await declining).error?.code, 'PM_TERM_DECLINED');

const json = async (...args) => {
  const r = await runCli(broker.stateDir, '--json', ...args);
  assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
  return JSON.parse(r.stdout);
};

test('approvals history lists the policy\'s and the people\'s decisions, newest last', async () => {
  const all = (await json('approvals', 'history', '--terminal', terminalId)).decisions;
  assert.deepEqual(all.map((d) => d.decision), ['allow', 'deny', 'approved', 'denied'],
    JSON.stringify(all, null, 1));
  assert.equal(all[0].command, allowedCommand);
  assert.equal(all[0].rule, 'hist-allow');
  assert.equal(all[1].rule, 'hist-deny');
  assert.equal(all[2].approver, 'alice');
  assert.equal(all[2].surface, 'cli');
  assert.equal(all[2].scope, 'once');
  assert.equal(all[2].approval_id, approveRequest.approval_id);
  assert.equal(all[3].note, 'not today');
  assert.ok(all.every((d) => d.agent_id && d.agent_id === all[0].agent_id), 'each names the agent');

  const text = await runCli(broker.stateDir, 'approvals', 'history', '--terminal', terminalId);
  assert.equal(text.code, 0, text.stderr);
  const lines = text.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 5, text.stdout);  // a header and one line per decision
  assert.match(lines[1], /allow .*rule hist-allow .*printf '%s\\n' 'hist\\tone'/);
  assert.ok(!text.stdout.includes('\t'), 'the tab is shown as \\t, not sent to the terminal');
  assert.match(lines[2], /deny .*rule hist-deny .*shred/);
  assert.match(lines[3], /approved .*alice via cli, scope once .*touch/);
  assert.match(lines[4], /denied .*via cli .*# not today/);
});

test('approvals history filters by decision, agent, time and count', async () => {
  const decisions = async (...flags) =>
    (await json('approvals', 'history', '--terminal', terminalId, ...flags)).decisions.map((d) => d.decision);
  assert.deepEqual(await decisions('--decision', 'ask'), ['approved', 'denied']);
  assert.deepEqual(await decisions('--decision', 'deny'), ['deny']);
  assert.deepEqual(await decisions('--limit', '1'), ['denied']);
  assert.deepEqual(await decisions('--since', '1h'), ['allow', 'deny', 'approved', 'denied']);
  assert.deepEqual(await decisions('--until', '1h'), []);
  assert.deepEqual(await decisions('--since', '2999-01-01T00:00:00Z'), []);
  assert.deepEqual(await decisions('--agent', 'nobody'), []);
  const none = await runCli(broker.stateDir, 'approvals', 'history', '--agent', 'nobody');
  assert.equal(none.code, 0);
  assert.match(none.stdout, /no decisions in the audit log match/);

  const bad = await runCli(broker.stateDir, 'approvals', 'history', '--since', 'yesterday');
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--since yesterday: not a time/);
  const badDecision = await runCli(broker.stateDir, 'approvals', 'history', '--decision', 'maybe');
  assert.equal(badDecision.code, 2);
  assert.match(badDecision.stderr, /--decision maybe/);
});

test('history <terminal> is each command with its sender, decision, exit and output offsets', async () => {
  const timeline = await json('history', terminalId);
  assert.equal(timeline.terminal_id, terminalId);
  const commands = timeline.entries.filter((e) => e.kind === 'command');
  assert.equal(commands.length, 4, JSON.stringify(timeline, null, 1));
  const [allowed, refused, asked, declinedOne] = commands;
  assert.equal(allowed.command, allowedCommand);
  assert.match(allowed.from, /^agent /);
  assert.equal(allowed.state, 'ran');
  assert.equal(allowed.exit_code, 0);
  assert.ok(allowed.duration_ms >= 0);
  assert.equal(allowed.decision.rule, 'hist-allow');
  // The offsets are the recording's: the execute result said where it began.
  assert.equal(allowed.output.from, first.result.output_start);
  assert.ok(allowed.output.to > allowed.output.from, JSON.stringify(allowed.output));
  assert.equal(refused.state, 'refused');
  assert.equal(refused.decision.decision, 'deny');
  assert.equal(asked.state, 'ran');
  assert.equal(asked.exit_code, 0);
  assert.equal(asked.decision.approver, 'alice');
  assert.equal(asked.output.from, ran.result.output_start);
  assert.ok(asked.output.from >= allowed.output.to, 'later output, later in the recording');
  assert.equal(declinedOne.state, 'refused');
  assert.equal(declinedOne.decision.note, 'not today');
  assert.ok(timeline.entries.some((e) => e.kind === 'opened' && /shell/.test(e.detail)),
    'the timeline says when and how the terminal was opened');

  const text = await runCli(broker.stateDir, 'history', terminalId);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /\$ printf '%s\\n' 'hist\\tone'\n\s+allow by rule hist-allow; exit 0 after [0-9.]+m?s; output bytes \d+\.\.\d+/);
  assert.match(text.stdout, /approved by alice via cli, scope once; exit 0/);
  assert.match(text.stdout, /denied by [^\n]*via cli; not run/);
});

test('an unknown terminal, a missing log and a corrupt line each get one clear message', async () => {
  const unknown = await runCli(broker.stateDir, 'history', 't_nosuchterminal');
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /no terminal t_nosuchterminal in the audit log/);
  assert.equal(unknown.stdout, '');

  const empty = tempDir('tb-history-empty-');
  cleanups.push(async () => removeDir(empty));
  const missing = await runCli(empty, 'approvals', 'history');
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /no audit log at /);

  // A copy of the log, rotated in two (the older half gone to audit.jsonl.1)
  // and with a corrupt line: every record is still read, the line skipped.
  const copy = tempDir('tb-history-copy-');
  cleanups.push(async () => removeDir(copy));
  const lines = fs.readFileSync(path.join(broker.stateDir, 'audit.jsonl'), 'utf8').trimEnd().split('\n');
  const half = Math.floor(lines.length / 2);
  fs.writeFileSync(path.join(copy, 'audit.jsonl.1'), `${lines.slice(0, half).join('\n')}\n`);
  fs.writeFileSync(path.join(copy, 'audit.jsonl'), `${lines.slice(half).join('\n')}\n{"index": torn\n`);
  const read = await runCli(copy, '--json', 'approvals', 'history', '--terminal', terminalId);
  assert.equal(read.code, 0, read.stderr);
  assert.deepEqual(JSON.parse(read.stdout).decisions.map((d) => d.decision),
    ['allow', 'deny', 'approved', 'denied']);
  assert.equal(JSON.parse(read.stdout).skipped_lines, 1);
  assert.match(read.stderr, /warning: skipped 1 line/);
});
