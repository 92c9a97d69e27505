// Helpers for the adversarial suite (tests/security/): a real broker with a
// test policy, a real agent over MCP (the official SDK), the harness's
// `termbridge watch` as the person who sees every terminal, and a recorder of
// approval requests. `attempt` sends one execute the way an attacker holding
// agent credentials would and settles it as an event: the command ran (its
// completion), a person was asked (the request; the test denies it through
// the CLI and the agent gets PM_TERM_DECLINED), or it was refused (a typed
// PM_TERM error). Tests then prove non-execution with canary files.
import { after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { promisify } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  Broker, CLI_BIN, connectAgent, readAll, removeDir, tempDir, terminal, withDeadline,
} from '../lib/harness.mjs';

const run = promisify(execFile);
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// Programs every security test may run without asking: harmless ones, so
// that an attack can hide behind them.
export const HARMLESS = ['printf', 'sleep', 'cat', 'true', 'echo'];

// The policy file text: the default rules plus allow rules. Each entry is a
// program name (a prefix rule), an argv array (a prefix rule) or
// { exact: [...] } / { regex: '...' }.
export function policyWith(extra = [], { base = HARMLESS } = {}) {
  let text = 'version = 1\ndefault = "ask"\n';
  let n = 0;
  for (const entry of [...base, ...extra]) {
    const id = `sec-${n++}`;
    let matcher;
    if (typeof entry === 'string') matcher = `prefix = ${JSON.stringify([entry])}`;
    else if (Array.isArray(entry)) matcher = `prefix = ${JSON.stringify(entry)}`;
    else if (entry.exact) matcher = `exact = ${JSON.stringify(entry.exact)}`;
    else matcher = `regex = ${JSON.stringify(entry.regex)}`;
    text += `\n[[rule]]\nid = "${id}"\naction = "allow"\n${matcher}\n`;
  }
  return text;
}

// The cleanups of one test file, run after its last test (every process a
// test started ends, even when the test failed).
export function cleanupList() {
  const cleanups = [];
  after(async () => {
    for (const c of cleanups.reverse()) await c().catch((e) => console.error(e));
  });
  return cleanups;
}

export async function whichProgram(name) {
  try {
    const { stdout } = await run('sh', ['-c', `command -v ${name}`]);
    return stdout.trim() || null;
  } catch {
    return null;
  }
}

// Every approval request the broker announces, in order (`termbridge
// approvals watch --json`). Unlike the harness's watcher, a wait for the
// next request can be abandoned without swallowing a later one.
export function recordApprovals(broker) {
  const child = spawn(CLI_BIN, ['--state-dir', broker.stateDir, '--json', 'approvals', 'watch'],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = once(child, 'exit');
  exited.catch(() => {});
  const requests = [];
  const listeners = new Set();
  let stderr = '';
  let markLive;
  const live = new Promise((resolve) => { markLive = resolve; });
  child.stderr.on('data', (d) => { stderr += d; });
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    let event;
    try { event = JSON.parse(line); } catch { return; }
    if (event.event === 'live') markLive();
    if (event.event !== 'requested') return;
    requests.push(event.approval);
    for (const l of listeners) l();
  });
  return {
    requests,
    live: (timeoutMs = 30000) => withDeadline(live, timeoutMs,
      () => `approvals watch did not go live; stderr:\n${stderr}`),
    // Resolves with the first request at index >= from; never rejects.
    after(from) {
      return new Promise((resolve) => {
        const check = () => {
          if (requests.length > from) {
            listeners.delete(check);
            resolve(requests[from]);
          }
        };
        listeners.add(check);
        check();
      });
    },
    stop: async () => {
      listeners.clear();
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited.catch(() => {});
    },
  };
}

export async function cli(broker, ...args) {
  try {
    const { stdout, stderr } = await run(CLI_BIN, ['--state-dir', broker.stateDir, ...args]);
    return { code: 0, stdout, stderr };
  } catch (e) {
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

// A broker with `policy` (policyWith(...) text, or null for the built-in
// policy), one agent, an approvals recorder (live before this returns) and
// a work dir, all cleaned up by `cleanups`.
export async function setup(cleanups, { policy = policyWith(), extraArgs = [], env = {} } = {}) {
  const broker = await Broker.start({ policy, extraArgs, env });
  cleanups.push(() => broker.stop());
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => agent.client.close());
  const approvals = recordApprovals(broker);
  cleanups.push(() => approvals.stop());
  await approvals.live();
  const work = tempDir('tb-sec-');
  cleanups.push(async () => removeDir(work));
  return { broker, agent, client: agent.client, approvals, work };
}

// Sends one execute and settles it (see the file comment). `args` is merged
// into the call: { execution: {command, env}, runtime: {cwd}, target, invocation }.
// Returns { kind: 'ran' | 'asked' | 'refused', r, text, request, before }:
//   ran: r is the final result, text all of the session's output;
//   asked: request is the approval request, before says whether `canaries`
//     existed when it arrived (they must not: nothing runs before a person
//     decides); the request was denied and r is the agent's answer;
//   refused: r is the error result.
export async function attempt(ctx, args, { canaries = [], timeoutMs = 20000, deny = true } = {}) {
  const { client, approvals, broker } = ctx;
  const mark = approvals.requests.length;
  const call = terminal(client, {
    action: 'execute', ...args,
    runtime: { timeout_ms: timeoutMs, ...(args.runtime ?? {}) },
  });
  const first = await withDeadline(Promise.race([
    call.then((r) => ({ kind: 'returned', r })),
    approvals.after(mark).then((request) => ({ kind: 'asked', request })),
  ]), timeoutMs + 30000, () => 'the execute neither returned nor asked');
  if (first.kind === 'asked') {
    const before = canaries.filter((c) => fs.existsSync(c));
    if (!deny) return { kind: 'asked', request: first.request, before, call };
    const denied = await cli(broker, 'approvals', 'deny', first.request.approval_id,
      '--note', 'security test');
    assert.equal(denied.code, 0, `deny failed: ${denied.stderr}`);
    const r = await call;
    return { kind: 'asked', request: first.request, before, r };
  }
  const { r } = first;
  if (!r.success) {
    // A request that came in while the call returned still counts as asked.
    return { kind: 'refused', r };
  }
  if (r.result?.approval?.state === 'pending') {
    const request = await approvals.after(mark);
    const before = canaries.filter((c) => fs.existsSync(c));
    await cli(broker, 'approvals', 'deny', request.approval_id);
    return { kind: 'asked', request, before, r };
  }
  let text = r.result.stdout ?? '';
  let final = r.result;
  if (r.result.running) {
    try {
      const all = await readAll(client, r.identity.session_id, r.result.cursor, text, timeoutMs);
      text = all.text;
      final = all.result;
    } catch (e) {
      // It never finished (an attack can break the shell's marks): it ran
      // all the same; end it so the canary check sees everything it did.
      await terminal(client, { action: 'terminate', target: { session_id: r.identity.session_id } })
        .catch(() => {});
      return { kind: 'ran', r, text: `${text}\n(never finished: ${e.message.slice(0, 200)})`,
        result: { ...r.result, exit_code: null }, session: r.identity.session_id, stuck: true };
    }
  }
  return { kind: 'ran', r, text, result: final, session: r.identity.session_id };
}

// Describes an outcome for assertion messages.
export function show(outcome) {
  const { kind, r, text, request } = outcome;
  return JSON.stringify({
    kind, error: r?.error, exit: outcome.result?.exit_code, text: text?.slice(0, 600),
    request: request && { command: request.command, env: request.env, reason: request.reason },
  });
}

// The outcome was "a person is asked": the request arrived before anything
// ran, the denial reached the agent as PM_TERM_DECLINED.
export function assertAsked(outcome, what) {
  assert.equal(outcome.kind, 'asked', `${what}: expected an approval request; got ${show(outcome)}`);
  assert.deepEqual(outcome.before, [], `${what}: ran before a person decided`);
  assert.equal(outcome.r.success, false, `${what}: ${show(outcome)}`);
  assert.equal(outcome.r.error.code, 'PM_TERM_DECLINED', `${what}: ${show(outcome)}`);
}

// The outcome was a refusal with `code`.
export function assertRefused(outcome, code, what) {
  assert.equal(outcome.kind, 'refused', `${what}: expected ${code}; got ${show(outcome)}`);
  assert.equal(outcome.r.error.code, code, `${what}: ${show(outcome)}`);
}

// The outcome was "asked" or "refused" (with a PM_TERM code), never "ran".
export function assertNotRunUnjudged(outcome, what) {
  assert.notEqual(outcome.kind, 'ran', `${what}: ran without a person: ${show(outcome)}`);
  if (outcome.kind === 'asked') assertAsked(outcome, what);
  else assert.match(outcome.r.error.code, /^PM_TERM_/, `${what}: ${show(outcome)}`);
}

export function assertAbsent(file, what) {
  assert.equal(fs.existsSync(file), false, `${what}: the canary ${path.basename(file)} exists: it ran`);
}

// Opens a terminal with open_only (no command) and returns its id.
export async function openTerminal(ctx, extra = {}) {
  const opened = await terminal(ctx.client, {
    action: 'execute', invocation: { intent: 'open_only' }, ...extra,
  });
  assert.equal(opened.success, true, JSON.stringify(opened));
  return opened.identity.terminal_id;
}

// Runs an allowed command in `terminalId` and returns its output: the
// terminal still works and runs what it is given.
export async function runAllowed(ctx, terminalId, command, { timeoutMs = 30000 } = {}) {
  const target = terminalId ? { target: { terminal_id: terminalId } } : {};
  const o = await attempt(ctx, { ...target, execution: { command } }, { timeoutMs });
  assert.equal(o.kind, 'ran', `${command}: ${show(o)}`);
  return o;
}

// Writes files into dir: { name: content }.
export function writeFiles(dir, files) {
  for (const [name, content] of Object.entries(files)) {
    const file = path.join(dir, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content, { mode: 0o755 });
  }
}

export function sq(s) {
  return `'${s.replaceAll("'", "'\\''")}'`;
}
