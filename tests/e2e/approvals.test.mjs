// Approval flows end to end, the way they happen for real: an MCP client
// (the official SDK) calls the agent, the broker's default policy asks, and a
// person decides with the `termbridge` CLI over the operator socket. Each
// test proves what ran by its side effect (a marker file), not by logs.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import {
  Broker, connectAgent, runCli, tempDir, terminal, watchApprovals,
} from '../lib/harness.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const cli = (broker, ...args) => runCli(broker.stateDir, ...args);

async function setup(extraArgs = []) {
  const broker = await Broker.start({ policy: null, extraArgs });
  cleanups.push(() => broker.stop());
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => agent.client.close());
  const work = tempDir('tb-approve-');
  const approvals = watchApprovals(broker);
  cleanups.push(() => approvals.stop());
  return { broker, agent, work, approvals };
}

const execute = (agent, command, extra = {}) => terminal(agent.client, {
  action: 'execute', execution: { command }, runtime: { timeout_ms: 20000 }, ...extra,
});

test('a command policy asks about runs once a person approves it', async () => {
  const { broker, agent, work, approvals } = await setup();
  const marker = path.join(work, 'approved');
  const call = execute(agent, `touch ${marker} && echo made-it`);
  const request = await approvals.next();
  assert.equal(request.command, `touch ${marker} && echo made-it`);
  assert.equal(request.kind, 'command');
  assert.equal(request.lane, 'interactive');
  assert.equal(request.state, 'pending');
  assert.match(request.reason, /ask/);
  assert.ok(request.trace_id, 'the request carries the trace_id');
  assert.equal(fs.existsSync(marker), false, 'nothing runs before the decision');
  const decided = await cli(broker, 'approvals', 'approve', request.approval_id, '--approver', 'alice');
  assert.equal(decided.code, 0, decided.stderr);
  const r = await call;
  assert.equal(r.success, true, JSON.stringify(r));
  assert.equal(r.result.approval.state, 'approved');
  assert.equal(r.result.approval.decided_by, 'alice');
  assert.match(r.result.stdout, /made-it/);
  assert.equal(fs.existsSync(marker), true);

  const audit = fs.readFileSync(broker.ready.audit_log, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  const requested = audit.filter((e) => e.event === 'approval_requested');
  const decidedRecords = audit.filter((e) => e.event === 'approval_decided');
  assert.equal(requested.length, 1);
  assert.equal(decidedRecords.length, 1);
  assert.equal(decidedRecords[0].approver, 'alice');
  assert.equal(decidedRecords[0].surface, 'cli');
  assert.equal(decidedRecords[0].trace_id, request.trace_id);
});

test('a denial with a note reaches the agent as PM_TERM_DECLINED and nothing runs', async () => {
  const { broker, agent, work, approvals } = await setup();
  const marker = path.join(work, 'denied');
  const call = execute(agent, `touch ${marker}`);
  const request = await approvals.next();
  const denied = await cli(broker, 'approvals', 'deny', request.approval_id, '--note', 'use the staging db');
  assert.equal(denied.code, 0, denied.stderr);
  const r = await call;
  assert.equal(r.success, false);
  assert.equal(r.error.code, 'PM_TERM_DECLINED');
  assert.match(r.error.message, /use the staging db/);
  assert.equal(r.error.retriable, false);
  assert.equal(r.fallback.can_auto_retry, false);
  assert.equal(r.fallback.strategy, 'report_decline');
  assert.equal(fs.existsSync(marker), false);
  // Deciding twice is refused.
  const again = await cli(broker, 'approvals', 'approve', request.approval_id);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /already denied/);
});

test('a request nobody decides ends as PM_TERM_TIMEOUT in phase approval', async () => {
  const { agent, work, approvals } = await setup(['--approval-timeout-s', '1']);
  // The request lives 1 s: the watcher must be subscribed before it is made.
  await approvals.live();
  const marker = path.join(work, 'late');
  const call = execute(agent, `touch ${marker}`);
  await approvals.next();
  const r = await call;
  assert.equal(r.success, false, JSON.stringify(r));
  assert.equal(r.error.code, 'PM_TERM_TIMEOUT');
  assert.equal(r.error.details.phase, 'approval');
  assert.equal(fs.existsSync(marker), false);
});

test('a decision slower than the call returns accepted, and read_output reports it', async () => {
  const { broker, agent, work, approvals } = await setup();
  const marker = path.join(work, 'slow');
  const r = await terminal(agent.client, {
    action: 'execute', execution: { command: `touch ${marker} && echo slow-ok` }, runtime: { timeout_ms: 300 },
  });
  assert.equal(r.success, true, JSON.stringify(r));
  assert.equal(r.status, 'accepted');
  assert.equal(r.result.approval.state, 'pending');
  const sessionId = r.identity.session_id;
  assert.match(sessionId, /^s_/);
  const pending = await terminal(agent.client, { action: 'read_output', target: { session_id: sessionId } });
  assert.equal(pending.result.approval.state, 'pending');
  assert.equal(pending.result.running, true);

  // Input into that terminal while its command is pending is refused, not queued.
  const request = await approvals.next();
  assert.equal(request.session_id, sessionId);
  const listed = JSON.parse((await cli(broker, '--json', 'approvals', 'list')).stdout).approvals;
  assert.deepEqual(listed.map((a) => a.approval_id), [request.approval_id]);

  await cli(broker, 'approvals', 'approve', request.approval_id);
  let text = '';
  for (let cursor; ;) {
    const read = await terminal(agent.client, {
      action: 'read_output', target: { session_id: sessionId }, cursor, wait_ms: 2000,
    });
    assert.equal(read.success, true, JSON.stringify(read));
    text += read.result.stdout;
    cursor = read.result.cursor;
    if (!read.result.running && !read.result.more) {
      assert.equal(read.result.approval.state, 'approved');
      break;
    }
  }
  assert.match(text, /slow-ok/);
  assert.equal(fs.existsSync(marker), true);
});

test('input to a terminal whose command is pending is refused', async () => {
  const { broker, agent, approvals } = await setup();
  const opened = await terminal(agent.client, { action: 'execute', invocation: { intent: 'open_only' } });
  assert.equal(opened.success, true, JSON.stringify(opened));
  const terminalId = opened.identity.terminal_id;
  const first = await terminal(agent.client, {
    action: 'execute', target: { terminal_id: terminalId }, execution: { command: 'make deploy' },
    runtime: { timeout_ms: 200 },
  });
  assert.equal(first.result.approval.state, 'pending', JSON.stringify(first));
  await approvals.next();
  const second = await terminal(agent.client, {
    action: 'execute', target: { terminal_id: terminalId }, execution: { command: 'echo sneaky' },
    runtime: { timeout_ms: 200 },
  });
  assert.equal(second.success, false);
  assert.equal(second.error.code, 'PM_TERM_DECLINED');
  assert.equal(second.error.details.reason, 'pending_approval');
  const pendingNow = JSON.parse((await cli(broker, '--json', 'approvals', 'list')).stdout).approvals;
  assert.equal(pendingNow.length, 1, 'the refused input was not queued');
});

test('approval for this terminal covers later commands there, and only there', async () => {
  const { broker, agent, work, approvals } = await setup();
  const opened = await terminal(agent.client, { action: 'execute', invocation: { intent: 'open_only' } });
  const terminalId = opened.identity.terminal_id;
  const inTerminal = (command) => terminal(agent.client, {
    action: 'execute', target: { terminal_id: terminalId }, execution: { command },
    runtime: { timeout_ms: 20000 },
  });
  const call = inTerminal(`touch ${path.join(work, 'one')}`);
  const request = await approvals.next();
  assert.equal(request.terminal_id, terminalId);
  assert.equal((await cli(broker, 'approvals', 'approve', request.approval_id, '--scope', 'terminal')).code, 0);
  assert.equal((await call).result.approval.scope, 'terminal');

  const second = await inTerminal(`touch ${path.join(work, 'two')}`);
  assert.equal(second.success, true, JSON.stringify(second));
  assert.equal(second.result.approval.state, 'approved');
  assert.equal(second.result.approval.scope, 'terminal');
  assert.equal(fs.existsSync(path.join(work, 'two')), true);

  // Another terminal still asks.
  const other = await terminal(agent.client, {
    action: 'execute', execution: { command: `touch ${path.join(work, 'three')}` }, runtime: { timeout_ms: 200 },
  });
  assert.equal(other.result.approval.state, 'pending', JSON.stringify(other));
  assert.equal(fs.existsSync(path.join(work, 'three')), false);
});

test('"always" writes an allow rule to the policy file, which is reloaded and used', async () => {
  const { broker, agent, work, approvals } = await setup();
  const target = path.join(work, 'always');
  const command = `mkdir -p ${target}`;
  const call = execute(agent, command);
  const request = await approvals.next();
  const decided = await cli(broker, 'approvals', 'approve', request.approval_id, '--scope', 'always');
  assert.equal(decided.code, 0, decided.stderr);
  assert.equal((await call).success, true);

  const policyFile = path.join(broker.stateDir, 'policy.toml');
  const text = fs.readFileSync(policyFile, 'utf8');
  assert.match(text, /\[\[rule\]\]/);
  assert.match(text, /action = "allow"/);
  assert.ok(text.includes(target), text);
  const check = JSON.parse((await cli(broker, '--json', 'policy', 'check', command)).stdout);
  assert.equal(check.action, 'allow');

  // The same command now runs without asking.
  const again = await execute(agent, command);
  assert.equal(again.success, true, JSON.stringify(again));
  assert.equal(again.result.approval.state, 'allowed');
  const audit = fs.readFileSync(broker.ready.audit_log, 'utf8');
  assert.match(audit, /"event":"policy_changed"/);
});

test('a destructive command is blocked with the rule that matched', async () => {
  const { agent, approvals } = await setup();
  const r = await execute(agent, 'echo ok; rm -rf /');
  assert.equal(r.success, false);
  assert.equal(r.error.code, 'PM_TERM_BLOCKED_DESTRUCTIVE');
  assert.match(r.error.details.rule, /^builtin\./);
  void approvals;
});

test('a bad policy file is rejected with its line, and the previous policy stays', async () => {
  const { broker } = await setup();
  const policyFile = path.join(broker.stateDir, 'policy.toml');
  fs.writeFileSync(policyFile, 'version = 1\n[[rule]]\naction = "alow"\nexact = ["ls"]\n');
  const shown = JSON.parse((await cli(broker, '--json', 'policy', 'show')).stdout);
  assert.match(shown.last_error, /policy\.toml:3/);
  const check = JSON.parse((await cli(broker, '--json', 'policy', 'check', 'ls')).stdout);
  assert.equal(check.action, 'allow', 'the built-in policy is still in force');
  fs.writeFileSync(policyFile, 'version = 1\ndefault = "deny"\n');
  const fixed = JSON.parse((await cli(broker, '--json', 'policy', 'show')).stdout);
  assert.equal(fixed.last_error, '');
  const denied = JSON.parse((await cli(broker, '--json', 'policy', 'check', 'make')).stdout);
  assert.equal(denied.action, 'deny');
});

test('agent credentials cannot decide approvals', async () => {
  const { broker } = await setup();
  const proto = grpc.loadPackageDefinition(protoLoader.loadSync(
    path.join(ROOT, 'proto/termbridge/v1/broker.proto'),
    { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true },
  )).termbridge.v1;
  const token = fs.readFileSync(broker.tokenFile, 'utf8').trim();
  const metadata = new grpc.Metadata();
  metadata.set('authorization', `Bearer ${token}`);
  const operator = new proto.TerminalOperator(`unix:${broker.ready.operator_socket}`, grpc.credentials.createInsecure());
  const decide = (client) => new Promise((resolve) => {
    client.DecideApproval({ approval_id: 'a_x', decision: 'once' }, metadata, (err) => resolve(err));
  });
  const refused = await decide(operator);
  assert.equal(refused?.code, grpc.status.PERMISSION_DENIED);
  // The agent's own port does not serve the operator service at all.
  const viaAgentPort = new proto.TerminalOperator(`127.0.0.1:${broker.port}`, grpc.credentials.createInsecure());
  const unimplemented = await decide(viaAgentPort);
  assert.equal(unimplemented?.code, grpc.status.UNIMPLEMENTED);
  operator.close();
  viaAgentPort.close();
  const audit = fs.readFileSync(broker.ready.audit_log, 'utf8');
  assert.match(audit, /"event":"auth_failed"/);
});

test('control characters in a command are shown, not obeyed, where a person decides', async () => {
  const { broker, agent, work, approvals } = await setup();
  const marker = path.join(work, 'hidden');
  // On a raw terminal "\r\e[2K" would erase the real command and leave only "ls -la".
  const command = `touch ${marker} #\r\x1b[2K    ls -la`;
  const call = execute(agent, command);
  const request = await approvals.next();
  assert.equal(request.command, command, 'the JSON view carries the exact bytes');
  const listed = await cli(broker, 'approvals', 'list');
  assert.equal(listed.code, 0, listed.stderr);
  assert.ok(!/[\r\x1b]/.test(listed.stdout), `raw control bytes reached the terminal: ${JSON.stringify(listed.stdout)}`);
  assert.ok(listed.stdout.includes(`touch ${marker} #\\r\\e[2K    ls -la`), listed.stdout);
  // Besides the command, the person sees everything about how it would run:
  // where, in which terminal (a new one here), for which agent, and what asked.
  assert.ok(request.agent_id, 'the request names its agent');
  assert.equal(request.new_terminal, true);
  assert.ok(listed.stdout.includes(`agent ${request.agent_id}  terminal (new)\n`), listed.stdout);
  assert.ok(listed.stdout.includes(`    cwd ${request.cwd}\n`), listed.stdout);
  const asked = request.rule ? `rule ${request.rule}` : 'default action';
  assert.ok(request.reason, 'the request carries the reason policy asked');
  assert.ok(listed.stdout.includes(`    policy: ${asked}: ${request.reason}\n`), listed.stdout);
  const denied = await cli(broker, 'approvals', 'deny', request.approval_id);
  assert.equal(denied.code, 0, denied.stderr);
  assert.equal((await call).error.code, 'PM_TERM_DECLINED');
  assert.equal(fs.existsSync(marker), false);
});

test('an oversized environment or proposal is refused with the limit named', async () => {
  const { agent } = await setup();
  const env = await execute(agent, 'true', { execution: { command: 'true', env: { BIG: 'x'.repeat(200000) } } });
  assert.equal(env.success, false);
  assert.equal(env.error.code, 'PM_TERM_INVALID_PAYLOAD', JSON.stringify(env.error));
  assert.equal(env.error.details.field, 'execution.env');
  assert.equal(env.error.details.limit, 'max_input_bytes');
  assert.equal(env.error.retriable, false);
  const neither = await terminal(agent.client, { action: 'read_output', target: {} });
  assert.equal(neither.success, false);
  assert.notEqual(neither.error.code, 'PM_TERM_NOT_FOUND', JSON.stringify(neither.error));
});

test('"always" on a request already denied is refused and writes no rule', async () => {
  const { broker, agent, work, approvals } = await setup();
  const command = `touch ${path.join(work, 'late')}`;
  const call = execute(agent, command);
  const request = await approvals.next();
  assert.equal((await cli(broker, 'approvals', 'deny', request.approval_id)).code, 0);
  assert.equal((await call).error.code, 'PM_TERM_DECLINED');
  // A second person clicks "always" a moment too late.
  const late = await cli(broker, 'approvals', 'approve', request.approval_id, '--scope', 'always');
  assert.equal(late.code, 1);
  assert.match(late.stderr, /already denied/);
  const policyFile = path.join(broker.stateDir, 'policy.toml');
  const text = fs.existsSync(policyFile) ? fs.readFileSync(policyFile, 'utf8') : '';
  assert.ok(!text.includes(work), `an allow rule was written anyway:\n${text}`);
  const check = JSON.parse((await cli(broker, '--json', 'policy', 'check', command)).stdout);
  assert.notEqual(check.action, 'allow');
});
