// Floods of agent-originated work, issue 22 "Bounded agent-originated
// work". An agent (the official MCP SDK over stdio) sends 2,000 large rule
// proposals (memory_terminal update_allowlist) and hundreds of executes that
// ask a person, all at once, and a second agent fills its own caps.
//
// Expected (docs/limits.md): past an agent's cap each call gets
// PM_TERM_INVALID_PAYLOAD with details.limit and details.value; a repeat of
// a pending request gets that request (same approval id, same session); an
// oversized proposal is refused naming the field and the limit; the audit log
// holds one approval_limit_reached record per burst, not one per refusal;
// the broker's memory stays flat; and `termbridge approvals list` answers at
// once with at most the caps per agent, and a person can still approve one
// and see it run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { connectAgent, tempDir, terminal, withDeadline } from '../lib/harness.mjs';
import { cleanupList, cli, policyWith, setup } from './lib.mjs';

const cleanups = cleanupList();
const CAP = 16;  // the default max_pending_{approvals,proposals}_per_agent

function vmRssKb(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(status.match(/^VmRSS:\s+(\d+) kB/m)[1]);
}

function auditRecords(broker) {
  return fs.readFileSync(path.join(broker.stateDir, 'audit.jsonl'), 'utf8')
    .split('\n').filter(Boolean).map((line) => JSON.parse(line));
}

// memory_terminal (the headless tool) with `args`; the canonical payload.
async function headless(client, args) {
  const result = await client.callTool({ name: 'memory_terminal', arguments: args }, undefined,
    { timeout: 120000 });
  return result.structuredContent;
}

// Runs `count` calls of `make(i)` with at most `width` in flight; resolves
// with their results in order.
async function flood(count, width, make) {
  const results = new Array(count);
  let next = 0;
  const lanes = Array.from({ length: width }, async () => {
    while (next < count) {
      const i = next++;
      results[i] = await make(i);
    }
  });
  await Promise.all(lanes);
  return results;
}

// A proposal near the size limits: 32 words of 31 bytes, 1 KB of reason.
function bigRule(i) {
  return Array.from({ length: 32 }, (_, w) => `w${String(i).padStart(5, '0')}-${w}`.padEnd(30, 'x'));
}

// The error's limit, or the approval id a call got.
function outcomeOf(r) {
  if (r.error) return { limit: r.error.details?.limit, code: r.error.code, error: r.error };
  return { approval: r.result?.approval?.approval_id, state: r.result?.approval?.state,
    session: r.identity?.session_id };
}

// A second agent: its own credentials where the broker issues them
// (`termbridge agents add`), else the shared token with its own agent id.
async function secondAgent(broker, name) {
  const dir = tempDir('tb-flood-agent-');
  cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
  const tokenFile = path.join(dir, 'token');
  const added = await cli(broker, 'agents', 'add', name, '--token-file', tokenFile);
  const own = added.code === 0 && fs.existsSync(tokenFile);
  const agent = await connectAgent({
    port: broker.port, tokenFile: own ? tokenFile : broker.tokenFile,
    env: { TERMBRIDGE_AGENT_ID: name },
  });
  cleanups.push(() => agent.client.close());
  return agent.client;
}

test('a flood of proposals and asking executes is capped, merged, audited once per burst, and the operator still decides', async () => {
  const ctx = await setup(cleanups, {
    policy: policyWith(),
    extraArgs: ['--approval-timeout-s', '3600'],
  });
  const { broker, client, work } = ctx;
  const pid = broker.child.pid;
  const rssBefore = vmRssKb(pid);
  const auditBefore = fs.statSync(path.join(broker.stateDir, 'audit.jsonl')).size;

  // The command the person will approve at the end: it waits first.
  const canary = path.join(work, 'approved-canary');
  const keeper = await terminal(client, {
    action: 'execute', execution: { command: `touch ${canary}` }, runtime: { cwd: work, timeout_ms: 1 },
  });
  assert.equal(keeper.result?.approval?.state, 'pending', JSON.stringify(keeper));
  const keeperApproval = keeper.result.approval.approval_id;

  // Oversized proposals: refused before anything is queued, naming the field and limit.
  const huge = await headless(client, {
    action: 'update_allowlist', rule: ['rm', 'x'.repeat(100000)], reason: 'huge',
  });
  assert.equal(huge.error?.code, 'PM_TERM_INVALID_PAYLOAD', JSON.stringify(huge).slice(0, 500));
  assert.equal(huge.error.details.field, 'rule');
  assert.equal(huge.error.details.limit, 'max_proposal_rule_bytes');
  const wordy = await headless(client, {
    action: 'update_allowlist', rule: Array.from({ length: 500 }, () => 'a'), reason: '',
  });
  assert.equal(wordy.error?.details?.limit, 'max_proposal_words', JSON.stringify(wordy.error));
  const chatty = await headless(client, {
    action: 'update_allowlist', rule: ['make'], reason: 'r'.repeat(100000),
  });
  assert.equal(chatty.error?.details?.field, 'reason', JSON.stringify(chatty.error).slice(0, 500));
  assert.equal(chatty.error.details.limit, 'max_proposal_reason_bytes');

  // The flood: 2,000 distinct large proposals (every tenth repeats the first
  // rule) and 300 asking executes (every tenth repeats one command), at once.
  // The repeated ones are queued first, so that they are below the cap.
  const reason = 'r'.repeat(1000);
  const firstRule = outcomeOf(await headless(client, {
    action: 'update_allowlist', rule: bigRule(0), reason,
  }));
  assert.equal(firstRule.state, 'pending', JSON.stringify(firstRule));
  const firstCommand = outcomeOf(await terminal(client, {
    action: 'execute', execution: { command: 'ls /flood-repeat' }, runtime: { cwd: work, timeout_ms: 1 },
  }));
  assert.equal(firstCommand.state, 'pending', JSON.stringify(firstCommand));
  const started = Date.now();
  const [proposals, executes] = await Promise.all([
    flood(2000, 32, (i) => headless(client, {
      action: 'update_allowlist', rule: bigRule(i % 10 === 0 ? 0 : i), reason,
    }).then(outcomeOf)),
    flood(300, 16, (i) => terminal(client, {
      action: 'execute',
      execution: { command: i % 10 === 0 ? 'ls /flood-repeat' : `ls /flood-${i}-${'z'.repeat(2000)}` },
      runtime: { cwd: work, timeout_ms: 1 },
    }).then(outcomeOf)),
  ]);
  const floodMs = Date.now() - started;

  // Past the cap: a typed error with the limit; below it, at most CAP requests.
  const proposalLimit = proposals.filter((o) => o.limit === 'max_pending_proposals_per_agent');
  const proposalIds = new Set(proposals.filter((o) => o.approval).map((o) => o.approval));
  assert.ok(proposals.every((o) => o.approval || o.limit === 'max_pending_proposals_per_agent'),
    JSON.stringify(proposals.find((o) => !o.approval && o.limit !== 'max_pending_proposals_per_agent')));
  assert.equal(proposalIds.size, CAP, `distinct pending proposals: ${proposalIds.size}`);
  assert.equal(proposalLimit[0].code, 'PM_TERM_INVALID_PAYLOAD');
  assert.equal(proposalLimit[0].error.details.value, CAP);
  assert.equal(proposalLimit.length + proposals.filter((o) => o.approval).length, 2000);
  // Repeats of the first rule all got its request.
  const repeats = proposals.filter((o, i) => i % 10 === 0);
  assert.deepEqual(new Set(repeats.map((o) => o.approval)), new Set([firstRule.approval]),
    'every repeat of a pending rule joins it');

  const executeLimit = executes.filter((o) => o.limit === 'max_pending_approvals_per_agent');
  const executeIds = new Set(executes.filter((o) => o.approval).map((o) => o.approval));
  assert.ok(executes.every((o) => o.approval || o.limit === 'max_pending_approvals_per_agent'),
    JSON.stringify(executes.find((o) => !o.approval && o.limit !== 'max_pending_approvals_per_agent')));
  assert.equal(executeIds.size, CAP - 1, 'pending executes besides the keeper');
  assert.equal(executeLimit[0].error.details.value, CAP);
  const executeRepeats = executes.filter((o, i) => i % 10 === 0);
  assert.deepEqual(new Set(executeRepeats.map((o) => o.approval)), new Set([firstCommand.approval]),
    'every repeat of a pending command joins it');
  assert.deepEqual(new Set(executeRepeats.map((o) => o.session)), new Set([firstCommand.session]),
    'repeats share its session');

  // A second agent fills its own caps; the first agent's caps do not touch it.
  const other = await secondAgent(broker, 'flood-b');
  const otherProposals = await flood(40, 8, (i) => headless(other, {
    action: 'update_allowlist', rule: bigRule(10000 + i), reason,
  }).then(outcomeOf));
  assert.equal(otherProposals.filter((o) => o.approval).length, CAP);
  const otherExecutes = await flood(40, 8, (i) => terminal(other, {
    action: 'execute', execution: { command: `ls /flood-b-${i}-${'y'.repeat(2000)}` },
    runtime: { cwd: work, timeout_ms: 1 },
  }).then(outcomeOf));
  assert.equal(otherExecutes.filter((o) => o.approval).length, CAP);

  // The operator's list answers at once, bounded per agent.
  const listStarted = Date.now();
  const listed = await cli(broker, '--json', 'approvals', 'list');
  const listMs = Date.now() - listStarted;
  assert.equal(listed.code, 0, listed.stderr);
  assert.ok(listMs < 2000, `approvals list took ${listMs} ms`);
  const { approvals } = JSON.parse(listed.stdout);
  const byAgent = {};
  for (const a of approvals) {
    const key = `${a.agent_id}/${a.kind}`;
    byAgent[key] = (byAgent[key] ?? 0) + 1;
  }
  for (const [key, n] of Object.entries(byAgent)) assert.ok(n <= CAP, `${key}: ${n} listed`);
  assert.equal(approvals.length, 4 * CAP, JSON.stringify(byAgent));
  const repeated = approvals.find((a) => a.approval_id === firstRule.approval);
  assert.equal(repeated.duplicates, 200, 'the list says how often the rule was asked for');
  const agentA = repeated.agent_id;
  // Long texts are cut in the list, and whole for whoever asks for one.
  const long = approvals.find((a) => a.command.startsWith('ls /flood-b-'));
  assert.equal(long.abridged, true);
  assert.ok(long.command.length <= 1024, `listed command of ${long.command.length} bytes`);
  const shown = await cli(broker, '--json', 'approvals', 'show', long.approval_id);
  assert.equal(shown.code, 0, shown.stderr);
  const whole = JSON.parse(shown.stdout);
  assert.equal(whole.abridged, false);
  assert.match(whole.command, /^ls \/flood-b-\d+-y{2000}$/);
  const text = await cli(broker, 'approvals', 'list');
  assert.equal(text.code, 0, text.stderr);
  assert.ok(text.stdout.length < 512 * 1024, `the text list is ${text.stdout.length} bytes`);

  // The audit log: one limit record per burst (per agent and cap), no record
  // per refusal, and a bounded growth.
  const records = auditRecords(broker);
  const reached = records.filter((r) => r.event === 'approval_limit_reached');
  const mine = (agent, limit) => reached.filter((r) => r.limit === limit && r.agent_id === agent);
  assert.equal(mine(agentA, 'max_pending_proposals_per_agent').length, 1);
  assert.equal(mine(agentA, 'max_pending_approvals_per_agent').length, 1);
  assert.equal(reached.length, 4, JSON.stringify(reached));
  const requested = records.filter((r) => r.event === 'approval_requested');
  assert.equal(requested.length, 4 * CAP, 'one approval_requested per queued request');
  const auditGrowth = fs.statSync(path.join(broker.stateDir, 'audit.jsonl')).size - auditBefore;
  // 300 + 40 executes are each recorded as command_requested (with their
  // ~2 KB command); everything else is a few records.
  assert.ok(auditGrowth < 2 * 1024 * 1024, `the audit log grew by ${auditGrowth} bytes`);

  // Memory stays flat.
  const rssGrowthKb = vmRssKb(pid) - rssBefore;
  assert.ok(rssGrowthKb < 100 * 1024, `broker VmRSS grew by ${rssGrowthKb} kB`);

  // A person approves the first command: it runs, and the burst is summarized.
  const approved = await cli(broker, 'approvals', 'approve', keeperApproval);
  assert.equal(approved.code, 0, approved.stderr);
  const done = await withDeadline((async () => {
    for (;;) {
      const r = await terminal(client, {
        action: 'read_output', target: { session_id: keeper.identity.session_id }, until: 'exit', wait_ms: 5000,
      });
      if (r.result && r.result.running === false) return r;
    }
  })(), 30000, () => 'the approved command did not finish');
  assert.equal(done.result.exit_code, 0, JSON.stringify(done.result));
  assert.ok(fs.existsSync(canary), 'the approved command ran');
  const ended = auditRecords(broker).filter((r) => r.event === 'approval_limit_burst_ended' &&
    r.limit === 'max_pending_approvals_per_agent' && r.agent_id === agentA);
  assert.equal(ended.length, 1);
  assert.equal(ended[0].refused, executeLimit.length, 'the summary counts every refusal of the burst');

  console.error(`flood: ${floodMs} ms for 2,000 proposals + 300 executes; list ${listMs} ms; ` +
    `audit +${auditGrowth} B; VmRSS ${rssBefore} -> ${rssBefore + rssGrowthKb} kB`);
});
