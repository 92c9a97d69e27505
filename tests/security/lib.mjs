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
import { execFile, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { promisify } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import grpcLib from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
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
// { exact: [...] } / { regex: '...' } (either with writes: true).
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
    const writes = typeof entry === 'object' && !Array.isArray(entry) && entry.writes ? 'writes = true\n' : '';
    text += `\n[[rule]]\nid = "${id}"\naction = "allow"\n${matcher}\n${writes}`;
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
export async function attempt(ctx, args, { canaries = [], timeoutMs = 20000, deny = true, approve = false } = {}) {
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
  if (first.kind === 'asked' && approve) {
    // The test is about what runs once a person said yes.
    const approved = await cli(broker, 'approvals', 'approve', first.request.approval_id);
    assert.equal(approved.code, 0, `approve failed: ${approved.stderr}`);
    first.kind = 'returned';
    first.r = await call;
    first.approvedRequest = first.request;
  }
  if (first.kind === 'asked') {
    const before = canaries.filter((c) => fs.existsSync(c));
    if (!deny) return { kind: 'asked', request: first.request, before, call };
    const denied = await cli(broker, 'approvals', 'deny', first.request.approval_id,
      '--note', 'security test');
    assert.equal(denied.code, 0, `deny failed: ${denied.stderr}`);
    const r = await call;
    if (process.env.TB_SECURITY_DEBUG) console.error('outcome asked', first.request.reason);
    return { kind: 'asked', request: first.request, before, r };
  }
  const { r } = first;
  if (!r.success) {
    if (process.env.TB_SECURITY_DEBUG) console.error('outcome refused', JSON.stringify(r.error));
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
  const outcome = { kind: 'ran', r, text, result: final, session: r.identity.session_id };
  if (process.env.TB_SECURITY_DEBUG) console.error('outcome', show(outcome));
  return outcome;
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

// Sends `text` as a line to the terminal `terminalId` while its program runs
// (execute with target.terminal_id: the line is input for that program) and
// settles it without waiting for that program to end: 'delivered' (the
// broker wrote it), 'asked' (denied here, as in attempt) or 'refused'.
export async function sendInput(ctx, terminalId, text, { canaries = [] } = {}) {
  const { client, approvals, broker } = ctx;
  const mark = approvals.requests.length;
  const call = terminal(client, {
    action: 'execute', target: { terminal_id: terminalId }, execution: { command: text },
    runtime: { timeout_ms: 30000 },
  });
  const first = await withDeadline(Promise.race([
    call.then((r) => ({ kind: 'returned', r })),
    approvals.after(mark).then((request) => ({ kind: 'asked', request })),
  ]), 60000, () => 'the input neither returned nor asked');
  if (first.kind === 'asked') {
    if (process.env.TB_SECURITY_DEBUG) console.error('input asked', first.request.reason);
    const before = canaries.filter((c) => fs.existsSync(c));
    const denied = await cli(broker, 'approvals', 'deny', first.request.approval_id);
    assert.equal(denied.code, 0, denied.stderr);
    return { kind: 'asked', request: first.request, before, r: await call };
  }
  const { r } = first;
  if (process.env.TB_SECURITY_DEBUG) console.error('input', r.success, JSON.stringify(r.error ?? r.result?.approval));
  if (!r.success) return { kind: 'refused', r };
  if (r.result?.approval?.state === 'pending') {
    const request = await approvals.after(mark);
    const before = canaries.filter((c) => fs.existsSync(c));
    await cli(broker, 'approvals', 'deny', request.approval_id);
    return { kind: 'asked', request, before, r };
  }
  return { kind: 'delivered', r };
}

// Starts `command` in a fresh terminal in ctx.work and returns once its
// output matches `ready` (an RE2 regex): { terminalId, session, cursor }.
// If the policy asks about the command itself, a person approves it (the
// test is about what comes after). If the program ends before it is ready
// (no pager, nothing to escape from), returns { exited: true, text }.
export async function startProgram(ctx, command, ready, { env } = {}) {
  const mark = ctx.approvals.requests.length;
  const call = terminal(ctx.client, {
    action: 'execute', runtime: { cwd: ctx.work, timeout_ms: 300 },
    execution: env ? { command, env } : { command },
  });
  let r = await call;
  assert.equal(r.success, true, `${command}: ${JSON.stringify(r)}`);
  if (r.result.approval?.state === 'pending') {
    const request = await ctx.approvals.after(mark);
    const approved = await cli(ctx.broker, 'approvals', 'approve', request.approval_id);
    assert.equal(approved.code, 0, approved.stderr);
  }
  const session = r.identity.session_id;
  let seen;
  // A read returns early while an approved command is still being started.
  for (const deadline = Date.now() + 20000; Date.now() < deadline;) {
    seen = await terminal(ctx.client, {
      action: 'read_output', target: { session_id: session }, until: 'match', match: ready,
      wait_ms: Math.max(1, deadline - Date.now()), format: 'raw',
    });
    if (seen.result?.wait_result === 'matched' || seen.result?.running === false) break;
  }
  if (seen.result?.running === false) return { exited: true, text: seen.result.stdout, session };
  assert.equal(seen.result?.wait_result, 'matched',
    `${command} never showed ${ready}: ${JSON.stringify(seen.result)}`);
  // The terminal it really runs in (an approved command starts after the call returned).
  const terminalId = seen.identity?.terminal_id || r.identity.terminal_id;
  return { terminalId, session, cursor: seen.result.cursor };
}

// Waits (up to wait_ms) for the session's output after `cursor` to match
// `pattern`; resolves with the read result (wait_result says how it ended).
export async function waitOutput(ctx, session, cursor, pattern, waitMs = 10000) {
  const r = await terminal(ctx.client, {
    action: 'read_output', target: { session_id: session }, cursor, until: 'match', match: pattern,
    wait_ms: waitMs, format: 'raw',
  });
  return r.result ?? { wait_result: 'error', error: r.error };
}

// The agent's own gRPC Attach to `terminalId`: sends `chunks` as input
// frames in order. Resolves with { error } once the broker ends the stream
// with a PM_TERM code (a chunk was refused), or with { error: null } once
// the terminal's output shows `echo` (the tty echoed the last chunk: every
// chunk was written), or after 10 s with { error: null, echoed: false }.
export function agentAttachInput(broker, terminalId, chunks, { echo } = {}) {
  const proto = agentProto();
  const client = new proto.TerminalBroker(`127.0.0.1:${broker.port}`, grpcLib.credentials.createInsecure());
  const auth = new grpcLib.Metadata();
  auth.set('authorization', `Bearer ${fs.readFileSync(broker.tokenFile, 'utf8').trim()}`);
  return new Promise((resolve) => {
    const stream = client.Attach(auth);
    let out = '';
    let done = false;
    const finish = (result) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      stream.cancel();
      client.close();
      resolve(result);
    };
    const timer = setTimeout(() => finish({ error: null, echoed: false, output: out }), 10000);
    stream.on('data', (frame) => {
      if (frame.output) out += Buffer.from(frame.output.data).toString('latin1');
      if (echo && out.includes(echo)) finish({ error: null, echoed: true, output: out });
    });
    stream.on('error', (err) => {
      const [bin] = err.metadata?.get('termbridge-error-bin') ?? [];
      finish({ error: err.details?.match(/PM_TERM_[A-Z_]+/)?.[0] ?? (bin ? 'PM_TERM_?' : String(err.code)),
        details: err.details, output: out });
    });
    stream.on('end', () => finish({ error: null, ended: true, output: out }));
    stream.write({ resume: { terminal_id: terminalId, offset: 0 } });
    // A string is input; an object is any other client frame ({ signal: 2 }).
    for (const c of chunks) stream.write(typeof c === 'string' ? { input: Buffer.from(c) } : c);
  });
}

let cachedProto = null;
function agentProto() {
  if (!cachedProto) {
    cachedProto = grpcLib.loadPackageDefinition(protoLoader.loadSync(
      path.join(ROOT, 'proto/termbridge/v1/broker.proto'),
      { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true },
    )).termbridge.v1;
  }
  return cachedProto;
}

// The agent's race between the check and the run: sends `command` (which
// begins with `cat ./gate;`) in `cwd`, where this makes `gate` a FIFO. Once
// cat waits at the gate, the line passed the check and runs: `meanwhile()`
// changes what the rest will meet, then the gate opens. When a person is
// asked instead, the gate never opens. Returns attempt()'s outcome.
export async function attemptThroughGate(ctx, cwd, command, { canaries = [], meanwhile }) {
  const gate = path.join(cwd, 'gate');
  execFileSync('mkfifo', [gate]);
  const mark = ctx.approvals.requests.length;
  const settled = attempt(ctx, { runtime: { cwd }, execution: { command } }, { canaries });
  let done = false;
  settled.finally(() => { done = true; });
  while (!done && ctx.approvals.requests.length <= mark) {
    let fd = null;
    try {
      fd = fs.openSync(gate, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
    } catch (e) {
      if (e.code !== 'ENXIO') throw e;
    }
    if (fd !== null) {
      await meanwhile();
      fs.writeSync(fd, 'open\n');
      fs.closeSync(fd);
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const outcome = await settled;
  fs.rmSync(gate, { force: true });
  return outcome;
}
