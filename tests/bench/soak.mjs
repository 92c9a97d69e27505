// Soak benchmark (issue 22, "Load"): one broker with a `termbridge watch`
// viewer and its built-in default policy, 8 MCP clients (the official SDK over
// stdio, each its own termbridge-agent with its own credentials from
// `termbridge agents add`) running a mixed loop for SOAK_SECONDS, and a
// scripted operator deciding every approval request through `termbridge
// approvals watch --json` and `approvals approve/deny`. It checks that no call
// fails unexpectedly, that every byte of output arrives exactly once and
// intact, and that the broker's and the agents' memory is flat after warm-up;
// it prints a table and writes a JSON summary. Exit status 1 when a check
// fails. See tests/bench/README.md ("Soak"). Run it by hand:
//
//   cmake --build build && node tests/bench/soak.mjs
//   SOAK_SECONDS=300 SOAK_CLIENTS=8 SOAK_JSON=soak.json node tests/bench/soak.mjs
//
// Environment: SOAK_SECONDS (60), SOAK_CLIENTS (8), SOAK_SEED (1),
// SOAK_DENY_EVERY (5: the operator denies every 5th request of a client),
// SOAK_WARMUP_SECONDS (0: load run before the measured seconds, left out of
// the RSS check), SOAK_RSS_CHECK (1; 0 reports RSS without failing on it),
// SOAK_RSS_GROWTH_SHARE / SOAK_RSS_GROWTH_MB (0.25 / 10: allowed growth),
// SOAK_JSON (the summary file; default <build>/artifacts/soak-summary.json).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BUILD = path.resolve(ROOT, process.env.TERMBRIDGE_BUILD_DIR || 'build');
process.env.TERMBRIDGE_BROKER_BIN ??= path.join(BUILD, 'broker/termbridge-broker');
process.env.TERMBRIDGE_AGENT_BIN ??= path.join(BUILD, 'agent/termbridge-agent');
process.env.TERMBRIDGE_CLI_BIN ??= path.join(BUILD, 'broker/cli/termbridge');
process.env.TERMBRIDGE_ALLOW_IN_CONTAINER ??= 'true';  // a benchmark rig, wherever it runs

const { Broker, connectAgent, tempDir, removeDir, terminal, watchApprovals, withDeadline } =
  await import('../lib/harness.mjs');
const run = promisify(execFile);
const CLI = process.env.TERMBRIDGE_CLI_BIN;

const envNumber = (name, fallback) => {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a number >= 0, not '${v}'`);
  return n;
};
const SECONDS = envNumber('SOAK_SECONDS', 60);
const CLIENTS = envNumber('SOAK_CLIENTS', 8);
const SEED = envNumber('SOAK_SEED', 1);
// Load run before the measured SOAK_SECONDS: RSS samples taken during it are
// shown but left out of the flatness check.
const WARMUP = envNumber('SOAK_WARMUP_SECONDS', 0);
// 0: report RSS without failing on it (for runs too short to leave warm-up).
const RSS_CHECK = envNumber('SOAK_RSS_CHECK', 1) !== 0;
const DENY_EVERY = envNumber('SOAK_DENY_EVERY', 5);  // the operator denies 1 request in 5
// Broker (and each agent) fails the memory check when the mean RSS of the last
// 20 % of samples exceeds the mean at 20-40 % by more than this share + this many MB.
const RSS_GROWTH_SHARE = envNumber('SOAK_RSS_GROWTH_SHARE', 0.25);
const RSS_GROWTH_MB = envNumber('SOAK_RSS_GROWTH_MB', 10);
const JSON_FILE = process.env.SOAK_JSON || path.join(BUILD, 'artifacts', 'soak-summary.json');
const MB = 1024 * 1024;

// --- measurements of a process ------------------------------------------------

function statusField(pid, field) {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = status.match(new RegExp(`^${field}:\\s+(\\d+)`, 'm'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;  // gone
  }
}
const rssBytes = (pid) => { const kb = statusField(pid, 'VmRSS'); return kb === null ? null : kb * 1024; };
const fdCount = (pid) => { try { return fs.readdirSync(`/proc/${pid}/fd`).length; } catch { return null; } };

// The broker's resident memory by kind at one moment: the [heap] mapping and
// all other anonymous mappings (ring buffers, thread arenas and stacks), in MB.
function memoryMap(pid) {
  const out = { heap_mb: 0, anon_other_mb: 0, file_mb: 0 };
  let current = null;
  try {
    for (const line of fs.readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
      const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ (\d+)\s*(.*)$/.exec(line);
      if (header) {
        current = header[2] === '[heap]' ? 'heap_mb' : (header[1] === '0' ? 'anon_other_mb' : 'file_mb');
        continue;
      }
      const rss = /^Rss:\s+(\d+) kB/.exec(line);
      if (rss && current) out[current] += Number(rss[1]) / 1024;
    }
  } catch { /* gone */ }
  return out;
}

const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);

// The flatness of `samples` (RSS in bytes, in time order): the mean of the
// last 20 % against the mean at 20-40 % of the run (after warm-up).
function flatness(samples) {
  const n = samples.length;
  const slice = (from, to) => samples.slice(Math.floor(n * from), Math.max(Math.floor(n * from) + 1, Math.floor(n * to)));
  const warm = mean(slice(0.2, 0.4));
  const last = mean(slice(0.8, 1.0));
  const growth = last - warm;
  const allowed = RSS_GROWTH_SHARE * warm + RSS_GROWTH_MB * MB;
  return {
    samples: n, first_mb: samples[0] / MB, max_mb: Math.max(...samples) / MB,
    mean_20_40_mb: warm / MB, mean_last_20_mb: last / MB,
    growth_mb: growth / MB, growth_pct: (100 * growth) / warm,
    allowed_growth_mb: allowed / MB, flat: n >= 5 && growth <= allowed,
  };
}

function percentiles(xs) {
  if (!xs.length) return { p50_ms: null, p99_ms: null, max_ms: null };
  const s = [...xs].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  return { p50_ms: at(0.5), p99_ms: at(0.99), max_ms: s.at(-1) };
}

// --- what the clients do ------------------------------------------------------

// A small deterministic PRNG (mulberry32), one per client, so a run can be repeated.
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const seqText = (n) => {
  let s = '';
  for (let i = 1; i <= n; i++) s += `${i}\n`;
  return s;
};

const stats = {
  ops: {},          // kind -> count
  latencies: {},    // kind -> [ms]
  errors: [],       // { client, kind, detail }
  expected_bytes: 0,
  received_bytes: 0,
  lost_bytes: 0,       // expected but never delivered
  incorrect_bytes: 0,  // delivered but different from what was expected (from the first difference on)
  gap_bytes: 0,        // reported lost by the broker (gap_bytes)
  reads_per_large: [],
  decisions: { approve: 0, deny: 0, unexpected: 0 },
  approvals_seen: { approved: 0, denied: 0 },
  slow_calls: [],   // calls that took more than 5 s: what was asked and answered
  anomalies: [],    // answers against the contract that lost nothing (a cursor that went back)
};

class SoakError extends Error {
  constructor(kind, detail) { super(`${kind}: ${detail}`); this.kind = kind; }
}

const short = (r) => {
  const s = JSON.stringify(r, (k, v) => (k === 'stdout' && typeof v === 'string' && v.length > 200
    ? `${v.slice(0, 100)}...(${v.length} chars)...${v.slice(-100)}` : v));
  return s.length > 1500 ? `${s.slice(0, 1500)}...` : s;
};

// One memory_terminal_interactive call, timed and counted under `kind`; a
// transport or protocol failure (not an isError payload) is a SoakError.
async function call(client, kind, args) {
  const start = performance.now();
  let r;
  try {
    r = await terminal(client, args, { timeout: 60000 });
  } catch (e) {
    throw new SoakError(kind, `the call failed: ${e.message}`);
  }
  const ms = performance.now() - start;
  (stats.latencies[kind] ??= []).push(ms);
  if (ms > 5000) stats.slow_calls.push({ kind, ms: Math.round(ms), args, result: short(r) });
  stats.ops[kind] = (stats.ops[kind] ?? 0) + 1;
  if (!r.textMatches) throw new SoakError(kind, `text content disagrees with structuredContent: ${short(r)}`);
  return r;
}

const expectOk = (kind, r, what) => {
  if (!r.success) throw new SoakError(kind, `${what} failed: ${short(r)}`);
};

// Compares `text` with `expected` and counts the bytes lost or wrong.
function checkBytes(kind, text, expected, what) {
  stats.expected_bytes += expected.length;
  stats.received_bytes += text.length;
  if (text === expected) return;
  let i = 0;
  while (i < text.length && i < expected.length && text[i] === expected[i]) i++;
  const lost = Math.max(0, expected.length - text.length);
  stats.lost_bytes += lost;
  stats.incorrect_bytes += Math.max(0, Math.min(text.length, expected.length) - i);
  throw new SoakError(kind, `${what}: got ${text.length} bytes, expected ${expected.length}; ` +
    `first difference at byte ${i}: got ${JSON.stringify(text.slice(Math.max(0, i - 40), i + 40))}, ` +
    `expected ${JSON.stringify(expected.slice(Math.max(0, i - 40), i + 40))}`);
}

// Reads session `sessionId` from `cursor` until it has exited and nothing is
// left, with waits (until exit or new output) and varied slice sizes.
async function readToEnd(c, sessionId, cursor, rnd) {
  let text = '';
  let reads = 0;
  const deadline = Date.now() + 60000;
  for (;;) {
    if (Date.now() > deadline) throw new SoakError('read_output', `session ${sessionId} not finished after 60 s (${text.length} bytes read)`);
    const args = { action: 'read_output', target: { session_id: sessionId }, cursor, wait_ms: 10000,
      until: rnd() < 0.5 ? 'exit' : 'output' };
    if (rnd() < 0.5) args.max_bytes = 1024 + Math.floor(rnd() * 64 * 1024);
    const r = await call(c.client, 'read_output', args);
    reads++;
    expectOk('read_output', r, `read_output of ${sessionId} at cursor ${cursor}`);
    if (r.result.gap_bytes) {
      stats.gap_bytes += r.result.gap_bytes;
      throw new SoakError('read_output', `gap_bytes ${r.result.gap_bytes} reading ${sessionId} at ${cursor}`);
    }
    if (r.result.cursor < cursor) {
      // Not an error by itself (the bytes are checked whole), but against the
      // contract: listed with the anomalies.
      stats.anomalies.push({ kind: 'cursor_went_back', client: c.name, from: cursor, args, result: short(r) });
    }
    text += r.result.stdout;
    cursor = r.result.cursor;
    if (!r.result.running && !r.result.more) return { text, result: r.result, reads };
  }
}

// `echo` of a known line: completed, exact.
async function opSmall(c, i) {
  const word = `soak-${c.name}-${i}`;
  const r = await call(c.client, 'execute_small', { action: 'execute', execution: { command: `echo ${word}` } });
  expectOk('execute_small', r, 'echo');
  if (r.status !== 'completed' || r.result.exit_code !== 0) throw new SoakError('execute_small', `not completed: ${short(r)}`);
  checkBytes('execute_small', r.result.stdout, `${word}\n`, `echo ${word}`);
}

// `seq 1 N` (100 KB to 400 KB): the first slice from execute (which waits for
// the exit, or returns at once while it runs), then read_output by cursor.
async function opLarge(c, i, rnd) {
  const n = 20000 + Math.floor(rnd() * 50000);
  const args = { action: 'execute', execution: { command: `seq 1 ${n}` } };
  if (rnd() < 0.5) args.runtime = { timeout_ms: 1 + Math.floor(rnd() * 50) };
  const r = await call(c.client, 'execute_large', args);
  expectOk('execute_large', r, `seq 1 ${n}`);
  let text = r.result.stdout;
  let result = r.result;
  let reads = 0;
  if (r.result.running || r.result.more) {
    const rest = await readToEnd(c, r.identity.session_id, r.result.cursor, rnd);
    text += rest.text;
    result = rest.result;
    reads = rest.reads;
  }
  stats.reads_per_large.push(reads);
  if (result.exit_code !== 0) throw new SoakError('execute_large', `seq 1 ${n} exit ${result.exit_code}: ${short(result)}`);
  checkBytes('execute_large', text, seqText(n), `seq 1 ${n} (${r.identity.session_id})`);
}

// list: succeeds, and none of this client's commands is still running (each
// one before it has been read to its exit).
async function opList(c) {
  const r = await call(c.client, 'list', { action: 'list' });
  expectOk('list', r, 'list');
  if (!Array.isArray(r.result.items)) throw new SoakError('list', `no items: ${short(r)}`);
  const running = r.result.items.filter((x) => x.running);
  if (running.length) throw new SoakError('list', `sessions still running: ${short(running)}`);
  c.listItems = r.result.items.length;
}

// A command that runs until stopped: terminated by its session (SIGINT, the
// shell stays) or by its terminal (closes the terminal), then read to its end.
async function opLong(c, i, rnd) {
  const word = `long-${c.name}-${i}`;
  const r = await call(c.client, 'execute_long', {
    action: 'execute', execution: { command: `echo ${word}; tail -f /dev/null` }, runtime: { timeout_ms: 100 },
  });
  expectOk('execute_long', r, 'echo; tail -f');
  if (r.status !== 'accepted' || !r.result.running) throw new SoakError('execute_long', `not running: ${short(r)}`);
  const session = r.identity.session_id;
  let seen = r.result.stdout;
  let cursor = r.result.cursor;
  if (!seen.includes(word)) {
    const m = await call(c.client, 'read_output', {
      action: 'read_output', target: { session_id: session }, cursor, until: 'match', match: word, wait_ms: 10000,
    });
    expectOk('read_output', m, `read_output until match of ${session}`);
    if (m.result.wait_result !== 'matched') throw new SoakError('read_output', `no match for ${word}: ${short(m)}`);
    seen += m.result.stdout;
    cursor = m.result.cursor;
  }
  const byTerminal = rnd() < 0.3;
  const kind = byTerminal ? 'terminate_terminal' : 'terminate_session';
  const target = byTerminal ? { terminal_id: r.identity.terminal_id } : { session_id: session };
  const t = await call(c.client, kind, { action: 'terminate', target });
  expectOk(kind, t, `terminate ${JSON.stringify(target)}`);
  const rest = await readToEnd(c, session, cursor, rnd);
  if (rest.result.running) throw new SoakError(kind, `still running after terminate: ${short(rest.result)}`);
  // After SIGINT the shell starts a new line, as after Ctrl-C in a terminal.
  const text = seen + rest.text;
  const expected = !byTerminal && text === `${word}\n\n` ? text : `${word}\n`;
  checkBytes('execute_long', text, expected, `echo ${word}; tail -f, then ${kind}`);
}

// A command the default policy asks about (`touch`); the operator approves or
// denies it by the word in its path: approve-... or deny-....
async function opApproval(c, i) {
  const deny = DENY_EVERY > 0 && (c.approvals++ % DENY_EVERY) === DENY_EVERY - 1;
  const marker = path.join(c.work, `${deny ? 'deny' : 'approve'}-${c.name}-${i}`);
  const word = `done-${c.name}-${i}`;
  const r = await call(c.client, 'execute_approval', {
    action: 'execute', execution: { command: `touch ${marker} && echo ${word}` }, runtime: { timeout_ms: 30000 },
  });
  if (deny) {
    if (r.success || r.error?.code !== 'PM_TERM_DECLINED') throw new SoakError('execute_approval', `denied, but: ${short(r)}`);
    if (fs.existsSync(marker)) throw new SoakError('execute_approval', `denied, yet ${marker} exists`);
    stats.approvals_seen.denied++;
    return;
  }
  expectOk('execute_approval', r, 'approved touch');
  if (r.status !== 'completed' || r.result.approval?.state !== 'approved') {
    throw new SoakError('execute_approval', `approved, but: ${short(r)}`);
  }
  checkBytes('execute_approval', r.result.stdout, `${word}\n`, `touch && echo ${word}`);
  if (!fs.existsSync(marker)) throw new SoakError('execute_approval', `approved, yet no ${marker}`);
  stats.approvals_seen.approved++;
}

async function clientLoop(c, until) {
  const rnd = prng(SEED * 1000 + c.index);
  for (let i = 0; performance.now() < until; i++) {
    const x = rnd();
    try {
      if (x < 0.30) await opSmall(c, i);
      else if (x < 0.50) await opLarge(c, i, rnd);
      else if (x < 0.65) await opList(c);
      else if (x < 0.80) await opLong(c, i, rnd);
      else await opApproval(c, i);
    } catch (e) {
      stats.errors.push({ client: c.name, iteration: i, kind: e.kind ?? 'client', detail: e.message,
        at_s: Number(((performance.now() - c.loadStart) / 1000).toFixed(2)) });
    }
  }
}

// The scripted operator: follows `approvals watch --json` and decides each
// request by the word in its command line.
async function operatorLoop(broker, approvals, state) {
  while (!state.stopping) {
    let request;
    try {
      request = await approvals.next(1000);
    } catch {
      continue;  // nothing within a second
    }
    const m = /\/(approve|deny)-(c\d+)-(\d+) && echo/.exec(request.command ?? '');
    const verdict = m ? m[1] : 'deny';
    if (!m) {
      stats.decisions.unexpected++;
      stats.errors.push({ client: 'operator', kind: 'approval', detail: `an unexpected request: ${short(request)}` });
    }
    const start = performance.now();
    const args = verdict === 'approve'
      ? ['approvals', 'approve', request.approval_id, '--approver', 'soak-operator']
      : ['approvals', 'deny', request.approval_id, '--note', 'soak says no'];
    try {
      await run(CLI, ['--state-dir', broker.stateDir, ...args]);
      stats.decisions[verdict]++;
    } catch (e) {
      stats.errors.push({ client: 'operator', kind: 'decide', detail: `${args.join(' ')}: ${e.stderr || e.message}` });
    }
    (stats.latencies[`operator_${verdict}`] ??= []).push(performance.now() - start);
  }
}

// --- the run ------------------------------------------------------------------

async function main() {
  const broker = await Broker.start({ policy: null });  // built-in default policy, `termbridge watch` viewer
  const cleanups = [() => broker.stop()];
  const summary = { seconds: SECONDS, warmup_seconds: WARMUP, clients: CLIENTS, seed: SEED,
    started: new Date().toISOString() };
  let failed = false;
  try {
    // The viewer follows every terminal: count what it gets instead of keeping it.
    let viewerBytes = 0;
    broker.watch.child.stdout.removeAllListeners('data');
    broker.watch.child.stdout.on('data', (d) => { viewerBytes += d.length; });
    const brokerPid = broker.child.pid;
    const fds = { broker_start: fdCount(brokerPid) };

    const approvals = watchApprovals(broker);
    cleanups.push(() => approvals.stop());
    await approvals.live();

    const clients = [];
    const tokens = tempDir('tb-soak-tokens-');
    cleanups.push(() => removeDir(tokens));
    for (let k = 0; k < CLIENTS; k++) {
      const name = `c${k}`;
      const tokenFile = path.join(tokens, `${name}.token`);
      await run(CLI, ['--state-dir', broker.stateDir, 'agents', 'add', name, '--token-file', tokenFile]);
      const agent = await connectAgent({ port: broker.port, tokenFile });
      cleanups.push(() => (agent.closed ? undefined : agent.client.close()));
      const work = tempDir('tb-soak-work-');
      cleanups.push(() => removeDir(work));
      clients.push({ ...agent, agent, name, index: k, work, approvals: 0, pid: agent.transport.pid, listItems: 0 });
    }
    fds.broker_clients_connected = fdCount(brokerPid);

    const samples = { t_s: [], broker_rss: [], broker_fds: [], broker_threads: [], viewer_rss: [], agents_rss: clients.map(() => []) };
    const loadStart = performance.now();
    const sample = () => {
      samples.t_s.push((performance.now() - loadStart) / 1000);
      samples.broker_rss.push(rssBytes(brokerPid));
      samples.broker_fds.push(fdCount(brokerPid));
      samples.broker_threads.push(statusField(brokerPid, 'Threads'));
      samples.viewer_rss.push(rssBytes(broker.watch.child.pid));
      clients.forEach((c, k) => samples.agents_rss[k].push(rssBytes(c.pid)));
    };
    sample();
    const sampler = setInterval(sample, 1000);
    const state = { stopping: false };
    const operator = operatorLoop(broker, approvals, state);
    const until = loadStart + (WARMUP + SECONDS) * 1000;
    for (const c of clients) c.loadStart = loadStart;
    const loops = clients.map((c) => clientLoop(c, until));
    try {
      await withDeadline(Promise.all(loops), (WARMUP + SECONDS) * 1000 + 120000,
        () => `clients still busy 120 s after the end of the run: a call hangs`);
    } catch (e) {
      stats.errors.push({ client: 'harness', kind: 'hang', detail: e.message });
    }
    const elapsed = (performance.now() - loadStart) / 1000;
    clearInterval(sampler);
    sample();
    state.stopping = true;
    await operator;

    fds.broker_end = fdCount(brokerPid);
    const brokerMemoryAtEnd = memoryMap(brokerPid);
    const sessions = JSON.parse((await run(CLI, ['--state-dir', broker.stateDir, '--json', 'sessions'])).stdout);
    const terminals = sessions.terminals ?? [];
    const auditBytes = fs.statSync(path.join(broker.stateDir, 'audit.jsonl')).size;
    for (const c of clients) {
      await c.client.close();
      c.agent.closed = true;
    }
    fds.broker_clients_closed = fdCount(brokerPid);

    const totalOps = Object.values(stats.ops).reduce((a, b) => a + b, 0);
    const measured = (xs) => xs.filter((_, i) => samples.t_s[i] >= WARMUP);
    const brokerFlat = flatness(measured(samples.broker_rss));
    const agentsFlat = samples.agents_rss.map((xs, k) => ({ agent: clients[k].name, ...flatness(measured(xs)) }));
    const viewerFlat = flatness(measured(samples.viewer_rss));
    Object.assign(summary, {
      elapsed_s: elapsed,
      total_operations: totalOps,
      operations_per_s: totalOps / elapsed,
      operations: stats.ops,
      latency_ms: Object.fromEntries(Object.entries(stats.latencies).map(([k, v]) => [k, percentiles(v)])),
      errors: stats.errors.length,
      error_details: stats.errors,
      output: {
        expected_bytes: stats.expected_bytes, received_bytes: stats.received_bytes,
        lost_bytes: stats.lost_bytes, incorrect_bytes: stats.incorrect_bytes, gap_bytes: stats.gap_bytes,
        large_commands: stats.reads_per_large.length,
        read_output_calls_per_large: mean(stats.reads_per_large),
      },
      approvals: { operator_decisions: stats.decisions, outcomes_seen_by_agents: stats.approvals_seen },
      rss: { broker: brokerFlat, agents: agentsFlat, viewer: viewerFlat },
      fds,
      broker_memory_at_end: {
        ...brokerMemoryAtEnd,
        ring_resident_mb: terminals.reduce((a, t) => a + Number(t.ring_resident_bytes ?? 0), 0) / MB,
      },
      slow_calls: stats.slow_calls,
      anomalies: stats.anomalies,
      broker_threads: { start: samples.broker_threads[0], max: Math.max(...samples.broker_threads), end: samples.broker_threads.at(-1) },
      broker_terminals_at_end: terminals.length,
      broker_terminals_running_at_end: terminals.filter((t) => t.exit?.running).length,
      broker_sessions_at_end: (sessions.sessions ?? []).length,
      list_items_per_agent_at_end: clients.map((c) => c.listItems),
      viewer_bytes: viewerBytes,
      audit_log_bytes: auditBytes,
      samples: { ...samples, broker_rss_mb: samples.broker_rss.map((x) => x / MB) },
    });
    delete summary.samples.broker_rss;
    summary.samples.agents_rss_mb = samples.agents_rss.map((xs) => xs.map((x) => x / MB));
    delete summary.samples.agents_rss;
    summary.samples.viewer_rss_mb = samples.viewer_rss.map((x) => x / MB);
    delete summary.samples.viewer_rss;

    const checks = {
      no_errors: stats.errors.length === 0,
      no_lost_output: stats.lost_bytes === 0 && stats.incorrect_bytes === 0 && stats.gap_bytes === 0,
      broker_rss_flat: !RSS_CHECK || brokerFlat.flat,
      agents_rss_flat: !RSS_CHECK || agentsFlat.every((a) => a.flat),
      every_kind_ran: ['execute_small', 'execute_large', 'read_output', 'list', 'execute_long',
        'terminate_session', 'execute_approval'].every((k) => stats.ops[k] > 0) &&
        stats.decisions.approve > 0 && (DENY_EVERY === 0 || stats.decisions.deny > 0),
    };
    summary.checks = checks;
    summary.pass = Object.values(checks).every(Boolean);
    failed = !summary.pass;
    printTable(summary);
  } catch (e) {
    failed = true;
    summary.pass = false;
    summary.fatal = e.stack;
    console.error(`soak: ${e.stack}\nbroker stderr (last 4000 characters):\n${broker.log.slice(-4000)}`);
  } finally {
    for (const c of cleanups.reverse()) await c();
    fs.mkdirSync(path.dirname(JSON_FILE), { recursive: true });
    fs.writeFileSync(JSON_FILE, `${JSON.stringify(summary, null, 2)}\n`);
    console.log(`summary: ${JSON_FILE}`);
  }
  process.exitCode = failed ? 1 : 0;
}

function printTable(s) {
  const f1 = (x) => (x === null || x === undefined || Number.isNaN(x) ? '-' : x.toFixed(1));
  const lines = [];
  lines.push(`soak: ${s.clients} MCP clients for ${f1(s.elapsed_s)} s${s.warmup_seconds ? ` (RSS checked after ${s.warmup_seconds} s of warm-up)` : ''} ` +
    'against one broker (built-in default policy, a watch viewer)');
  lines.push(`  operations ${s.total_operations} (${f1(s.operations_per_s)}/s), errors ${s.errors}`);
  lines.push('  kind                    count   p50 ms   p99 ms   max ms');
  for (const [k, n] of Object.entries(s.operations).sort()) {
    const l = s.latency_ms[k];
    lines.push(`  ${k.padEnd(22)} ${String(n).padStart(6)} ${f1(l.p50_ms).padStart(8)} ${f1(l.p99_ms).padStart(8)} ${f1(l.max_ms).padStart(8)}`);
  }
  for (const k of ['operator_approve', 'operator_deny']) {
    const l = s.latency_ms[k];
    if (l) lines.push(`  ${k.padEnd(22)} ${String(s.approvals.operator_decisions[k.slice(9)]).padStart(6)} ${f1(l.p50_ms).padStart(8)} ${f1(l.p99_ms).padStart(8)} ${f1(l.max_ms).padStart(8)}`);
  }
  const o = s.output;
  lines.push(`  output: ${(o.expected_bytes / MB).toFixed(1)} MB expected, ${(o.received_bytes / MB).toFixed(1)} MB received; ` +
    `lost ${o.lost_bytes}, incorrect ${o.incorrect_bytes}, gap ${o.gap_bytes} bytes; ` +
    `${o.large_commands} large outputs, ${f1(o.read_output_calls_per_large)} read_output calls each`);
  lines.push('  RSS MB                  first  mean@20-40%  mean@last20%   growth   max   flat');
  const row = (name, r) => `  ${name.padEnd(22)} ${f1(r.first_mb).padStart(6)} ${f1(r.mean_20_40_mb).padStart(12)} ${f1(r.mean_last_20_mb).padStart(13)} ` +
    `${`${r.growth_mb >= 0 ? '+' : ''}${f1(r.growth_mb)} (${f1(r.growth_pct)}%)`.padStart(16)} ${f1(r.max_mb).padStart(5)}   ${r.flat ? 'yes' : 'NO'}`;
  lines.push(row('broker', s.rss.broker));
  for (const a of s.rss.agents) lines.push(row(`agent ${a.agent}`, a));
  lines.push(row('viewer (watch)', s.rss.viewer));
  lines.push(`  broker fds: ${s.fds.broker_start} at start, ${s.fds.broker_clients_connected} with clients connected, ` +
    `${s.fds.broker_end} at the end, ${s.fds.broker_clients_closed} after the clients closed; ` +
    `terminals at the end ${s.broker_terminals_at_end} (${s.broker_terminals_running_at_end} running), ` +
    `sessions ${s.broker_sessions_at_end}`);
  const m = s.broker_memory_at_end;
  lines.push(`  broker memory at the end: heap ${f1(m.heap_mb)} MB, other anonymous ${f1(m.anon_other_mb)} MB ` +
    `(rings of listed terminals ${f1(m.ring_resident_mb)} MB), file-backed ${f1(m.file_mb)} MB; ` +
    `threads ${s.broker_threads.start}/${s.broker_threads.max}/${s.broker_threads.end} (start/max/end)`);
  lines.push(`  anomalies (nothing lost): ${s.anomalies.length} cursors that went back, ` +
    `${s.slow_calls.length} calls slower than 5 s (details in the JSON)`);
  lines.push(`  approvals: operator approved ${s.approvals.operator_decisions.approve}, denied ${s.approvals.operator_decisions.deny}; ` +
    `audit log ${(s.audit_log_bytes / MB).toFixed(1)} MB; viewer got ${(s.viewer_bytes / MB).toFixed(1)} MB`);
  for (const e of s.error_details.slice(0, 20)) lines.push(`  ERROR ${e.client} ${e.kind} #${e.iteration ?? '-'} @${e.at_s ?? '-'}s: ${e.detail}`);
  if (s.error_details.length > 20) lines.push(`  ... ${s.error_details.length - 20} more errors in the JSON summary`);
  if (!RSS_CHECK) lines.push('  (SOAK_RSS_CHECK=0: RSS reported, not checked)');
  lines.push(`  checks: ${Object.entries(s.checks).map(([k, v]) => `${k} ${v ? 'ok' : 'FAILED'}`).join(', ')}`);
  lines.push(s.pass ? 'soak: PASS' : 'soak: FAIL');
  console.log(lines.join('\n'));
}

await main();
