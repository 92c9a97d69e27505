// Throughput through MCP (issue 24, "Throughput"): a command prints N MB at
// full speed and the official MCP SDK client reads all of it over stdio, once
// through termbridge-agent and termbridge-broker (memory_terminal_interactive
// execute, then read_output by cursor with tail: false and format raw) and
// once through the "MCP floor", tests/bench/floor_server.mjs (the SDK's own
// server spawning the same command on pipes and paging 4 MiB tool results).
// Same client, same machine, same run, the runs alternating; a third row is
// the floor returning each page twice (text and structuredContent, the shape
// termbridge's results have), for what the doubled payload costs the client,
// and a fourth the floor running the command in a PTY, for what the terminal
// itself costs. Every run is
// checked byte for byte (SHA-256 against what the generator prints; through
// the PTY each "\n" arrives as "\r\n"). Prints both rates, their ratio
// (termbridge / floor) and the peak RSS of the broker and the agent during
// the termbridge runs. See tests/bench/README.md ("Throughput through MCP").
//
//   cmake --build build && node tests/bench/throughput.mjs [--mb 20] [--runs 3] [--json]
//     [--min-ratio R]   exit 1 unless the best termbridge run / best floor run >= R
//     [--max-bytes B]   read_output's max_bytes (default 4 MiB; the broker's bound decides)
//     [--format F]      raw (default: the terminal's bytes) or clean (the default text format)
//     [--generator G]   lines (default: seq, 100-byte lines) or bytes (one line of "x")
//     [--json-out FILE] also write the JSON summary to FILE
//     [--text]          keep the output in the text content too (text_output true), as a
//                       model's client gets it; by default the pages are read with
//                       text_output: false, as a program paging output would
//     [--trace]         print each termbridge page (time, bytes, running, more, cursor) on stderr
//     [--dump-wrong F]  when a termbridge run's bytes are wrong, write its pages to F (JSON)
//
// Exit status 1 when a run lost, added or changed a byte, or --min-ratio failed.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BUILD = path.resolve(ROOT, process.env.TERMBRIDGE_BUILD_DIR || 'build');
process.env.TERMBRIDGE_BROKER_BIN ??= path.join(BUILD, 'broker/termbridge-broker');
process.env.TERMBRIDGE_AGENT_BIN ??= path.join(BUILD, 'agent/termbridge-agent');
process.env.TERMBRIDGE_CLI_BIN ??= path.join(BUILD, 'broker/cli/termbridge');
process.env.TERMBRIDGE_ALLOW_IN_CONTAINER ??= 'true';  // a benchmark rig, wherever it runs

const { Broker, connectAgent, terminal } = await import('../lib/harness.mjs');
const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');

function option(name, fallback) {
  const i = process.argv.indexOf(name);
  if (i < 0) return fallback;
  const n = Number(process.argv[i + 1]);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} needs a number > 0`);
  return n;
}
const MB = 1e6;
const LINE = 100;  // bytes per generated line, its "\n" included
const megabytes = option('--mb', 20);
const runs = Math.round(option('--runs', 1));
const minRatio = option('--min-ratio', 0);
const maxBytes = Math.round(option('--max-bytes', 4 * 1024 * 1024));
const json = process.argv.includes('--json');
const textOutput = process.argv.includes('--text');
const stringOption = (name) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : null;
};
const jsonOut = stringOption('--json-out');
const dumpWrong = stringOption('--dump-wrong');
const trace = process.argv.includes('--trace');
// raw: the terminal's bytes ("\r\n" line ends); clean: the default text
// format (escape sequences and carriage returns taken out, so "\n").
const format = stringOption('--format') ?? 'raw';
if (!['raw', 'clean'].includes(format)) throw new Error('--format is raw or clean');
// lines: 99 digits and a newline per line, every line different, so a lost,
// repeated or reordered page changes the checksum (a PTY's line discipline
// turns each "\n" into "\r\n", which costs the kernel: a bare PTY moves
// this at about a third of the rate of the other). bytes: one long line of
// "x", what the PTY passes at full speed.
const generator = stringOption('--generator') ?? 'lines';
if (!['lines', 'bytes'].includes(generator)) throw new Error('--generator is lines or bytes');
const lines = Math.round((megabytes * MB) / LINE);
const bytes = generator === 'lines' ? lines * LINE : Math.round(megabytes * MB);
const COMMAND = generator === 'lines' ? `seq -f '%0${LINE - 1}.0f' 1 ${lines}`
  : `head -c ${bytes} /dev/zero | tr '\\0' x`;

// SHA-256 of what COMMAND prints, with `newline` for each "\n".
function expectedDigest(newline) {
  const hash = createHash('sha256');
  if (generator === 'bytes') {
    const block = 'x'.repeat(1 << 20);
    for (let left = bytes; left > 0; left -= block.length) hash.update(block.slice(0, Math.min(left, block.length)));
    return hash.digest('hex');
  }
  const batch = [];
  for (let i = 1; i <= lines; i++) {
    batch.push(String(i).padStart(LINE - 1, '0'), newline);
    if (batch.length >= 20000) hash.update(batch.splice(0).join(''));
  }
  hash.update(batch.join(''));
  return hash.digest('hex');
}
const EXPECTED_PIPE = expectedDigest('\n');
const EXPECTED_PTY = expectedDigest('\r\n');

// --- memory of a process ---------------------------------------------------------

function statusKb(pid, field) {
  try {
    const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`^${field}:\\s+(\\d+)`, 'm'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;  // gone
  }
}

// CPU seconds (user + system) process `pid` has used so far.
function cpuSeconds(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;  // utime, stime in clock ticks
  } catch {
    return 0;
  }
}

// Samples VmRSS of `pids` every 10 ms until stop(); returns the peak of each
// in MB and the CPU seconds each used meanwhile (`client`: this process).
function sampleRss(pids) {
  const peak = Object.fromEntries(Object.keys(pids).map((k) => [k, 0]));
  const cpuStart = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid)]));
  const clientStart = process.cpuUsage();
  const sample = () => {
    for (const [name, pid] of Object.entries(pids)) {
      const kb = statusKb(pid, 'VmRSS');
      if (kb !== null) peak[name] = Math.max(peak[name], kb / 1024);
    }
  };
  sample();
  const timer = setInterval(sample, 10);
  return () => {
    clearInterval(timer);
    sample();
    const used = process.cpuUsage(clientStart);
    const cpu = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid) - cpuStart[k]]));
    cpu.client = (used.user + used.system) / 1e6;
    return { peak, cpu };
  };
}

// --- one run through each server ---------------------------------------------------

// One memory_terminal_interactive call: its structuredContent (the canonical
// payload). Straight through the SDK, as floorRun calls the floor.
async function call(client, args) {
  const r = await client.callTool({ name: 'memory_terminal_interactive', arguments: args },
    undefined, { timeout: 120000 });
  return r.structuredContent;
}

// Reads COMMAND through termbridge: execute (returns at once), then
// read_output pages by cursor until the command has ended and nothing is left.
async function termbridgeRun(client, terminalId) {
  const hash = createHash('sha256');
  const pages = dumpWrong ? [] : null;
  let received = 0;
  let calls = 1;
  let gap = 0;
  const start = performance.now();
  let r = await call(client, {
    action: 'execute', execution: { command: COMMAND }, target: { terminal_id: terminalId },
    runtime: { timeout_ms: 1 }, max_bytes: maxBytes, tail: false, format,
    text_output: textOutput,
  });
  if (!r.success) throw new Error(`execute failed: ${JSON.stringify(r.error)}`);
  const sessionId = r.identity.session_id;
  for (;;) {
    hash.update(r.result.stdout);
    pages?.push({ start: r.result.output_start, cursor: r.result.cursor, gap: r.result.gap_bytes, text: r.result.stdout });
    received += Buffer.byteLength(r.result.stdout);
    gap += r.result.gap_bytes ?? 0;
    if (trace) console.error(`${(performance.now() - start).toFixed(1)} ms: ${r.result.stdout.length} bytes, running ${r.result.running}, more ${r.result.more}, cursor ${r.result.cursor}`);
    if (!r.result.running && !r.result.more) break;
    r = await call(client, {
      action: 'read_output', target: { session_id: sessionId }, cursor: r.result.cursor,
      max_bytes: maxBytes, tail: false, format, wait_ms: 10000, text_output: textOutput,
    });
    calls++;
    if (!r.success) throw new Error(`read_output failed: ${JSON.stringify(r.error)}`);
  }
  const seconds = (performance.now() - start) / 1000;
  const digest = hash.digest('hex');
  if (pages && digest !== (format === 'raw' ? EXPECTED_PTY : EXPECTED_PIPE)) fs.writeFileSync(dumpWrong, JSON.stringify(pages));
  return { seconds, mb_per_s: bytes / MB / seconds, received, calls, gap_bytes: gap, complete: digest === (format === 'raw' ? EXPECTED_PTY : EXPECTED_PIPE) };
}

// `structured`: the floor also returns each page in structuredContent, in
// pages of 2 MiB so that its messages are as large as the plain floor's (the
// SDK's stdio reader copies a message once per 64 KiB that arrives: its cost
// per byte grows with the message). `pty`: the command runs in a PTY.
async function floorRun(client, { structured = false, pty = false } = {}) {
  const hash = createHash('sha256');
  let received = 0;
  let calls = 1;
  const start = performance.now();
  const started = await client.callTool({ name: 'run', arguments: { command: COMMAND, pty } });
  const id = started.structuredContent.id;
  let cursor = 0;
  for (;;) {
    const r = await client.callTool({ name: 'read', arguments: { id, cursor, structured, ...(structured ? { max_bytes: 2 << 20 } : {}) } }, undefined, { timeout: 120000 });
    calls++;
    if (r.isError) throw new Error(`floor read failed: ${r.content?.[0]?.text}`);
    const text = r.content[0].text;
    hash.update(text);
    received += Buffer.byteLength(text);
    cursor = r.structuredContent.cursor;
    if (!r.structuredContent.running && !r.structuredContent.more) break;
  }
  const seconds = (performance.now() - start) / 1000;
  const digest = hash.digest('hex');
  return { seconds, mb_per_s: bytes / MB / seconds, received, calls, gap_bytes: 0, complete: digest === (pty ? EXPECTED_PTY : EXPECTED_PIPE) };
}

// --- the benchmark -----------------------------------------------------------------

// The default broker configuration (recording on), every command allowed and
// no viewer to wait for: the data path alone.
const broker = await Broker.start({ viewer: 'none' });
const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
const floorTransport = new StdioClientTransport({
  command: process.execPath,
  args: [path.join(path.dirname(fileURLToPath(import.meta.url)), 'floor_server.mjs')],
  cwd: path.join(ROOT, 'tests'),
  stderr: 'inherit',
});
const floor = new Client({ name: 'termbridge-throughput', version: '0.0.0' });
const results = { termbridge: [], floor: [], floor_structured: [], floor_pty: [] };
let peak = { broker_mb: 0, agent_mb: 0 };
let floorPeakMb = 0;
let failure = null;
try {
  await floor.connect(floorTransport);
  // Open the terminal first, untimed: an interactive shell's start-up is a
  // one-off cost per terminal, not throughput.
  const opened = await terminal(agent.client, { action: 'execute', execution: { command: 'true' } });
  if (!opened.success) throw new Error(`execute true failed: ${JSON.stringify(opened.error)}`);
  const terminalId = opened.identity.terminal_id;
  for (let i = 0; i < runs; i++) {
    // Alternating, floor first, so that a drift of the machine's speed hits both.
    const stopFloor = sampleRss({ floor_server: floorTransport.pid });
    const f = await floorRun(floor);
    const fu = stopFloor();
    floorPeakMb = Math.max(floorPeakMb, fu.peak.floor_server);
    results.floor.push({ ...f, cpu_seconds: fu.cpu });
    const stopStructured = sampleRss({ floor_server: floorTransport.pid });
    const fs2 = await floorRun(floor, { structured: true });
    results.floor_structured.push({ ...fs2, cpu_seconds: stopStructured().cpu });
    const stopPty = sampleRss({ floor_server: floorTransport.pid });
    const fp = await floorRun(floor, { pty: true });
    results.floor_pty.push({ ...fp, cpu_seconds: stopPty().cpu });
    const stop = sampleRss({ broker: broker.child.pid, agent: agent.transport.pid });
    const t = await termbridgeRun(agent.client, terminalId);
    const ts = stop();
    peak = { broker_mb: Math.max(peak.broker_mb, ts.peak.broker), agent_mb: Math.max(peak.agent_mb, ts.peak.agent) };
    results.termbridge.push({ ...t, cpu_seconds: ts.cpu });
  }
} catch (e) {
  failure = e;
} finally {
  await floor.close().catch(() => {});
  await agent.client.close().catch(() => {});
  await broker.stop().catch((e) => { failure ??= e; });
}
if (failure) {
  console.error(`throughput: ${failure.stack ?? failure}`);
  process.exit(1);
}

const best = (rows) => Math.max(...rows.map((r) => r.mb_per_s));
const median = (rows) => {
  const v = rows.map((r) => r.mb_per_s).sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};
const complete = Object.values(results).flat().every((r) => r.complete);
const summary = {
  bytes,
  command: COMMAND,
  generator,
  runs,
  read_max_bytes: maxBytes,
  format,
  termbridge_mb_per_s: best(results.termbridge),
  floor_mb_per_s: best(results.floor),
  // The floor returning each page twice, as text and in structuredContent
  // (termbridge's shape, 2 MiB pages): what the doubled payload costs the client.
  floor_structured_mb_per_s: best(results.floor_structured),
  ratio_to_floor_structured: best(results.termbridge) / best(results.floor_structured),
  // The floor with the command in a PTY (util-linux script): what a terminal
  // costs the same command before any MCP.
  floor_pty_mb_per_s: best(results.floor_pty),
  ratio_to_floor_pty: best(results.termbridge) / best(results.floor_pty),
  ratio: best(results.termbridge) / best(results.floor),
  median_ratio: median(results.termbridge) / median(results.floor),
  paired_ratios: results.termbridge.map((r, i) => r.mb_per_s / results.floor[i].mb_per_s),
  byte_complete: complete,
  peak_rss_mb: { ...peak, floor_server_mb: floorPeakMb },
  min_ratio: minRatio || null,
  runs_detail: results,
};
const ratioOk = summary.ratio >= minRatio;
if (jsonOut) {
  fs.mkdirSync(path.dirname(jsonOut), { recursive: true });
  fs.writeFileSync(jsonOut, JSON.stringify(summary, null, 2));
}
if (json) {
  console.log(JSON.stringify(summary, null, 2));
} else {
  const f = (x) => x.toFixed(1).padStart(7);
  console.log(`${(bytes / MB).toFixed(0)} MB (${COMMAND}) through the MCP SDK client over stdio, ${runs} run(s) each, alternating`);
  console.log('                   best MB/s  runs (MB/s/calls/CPU s: server[+agent]+client)');
  const row = (name, rows) => console.log(`  ${name.padEnd(16)} ${f(best(rows))}   ` +
    rows.map((r) => `${r.mb_per_s.toFixed(1)}/${r.calls}/${Object.values(r.cpu_seconds).map((c) => c.toFixed(2)).join('+')}${r.complete ? '' : ' BYTES WRONG'}${r.gap_bytes ? ` gap ${r.gap_bytes}` : ''}`).join('  '));
  row('MCP floor', results.floor);
  row('floor, page x2', results.floor_structured);  // 2 MiB pages, in text and structuredContent
  row('floor, in a PTY', results.floor_pty);
  row('termbridge', results.termbridge);
  console.log(`  ratio termbridge/floor: ${summary.ratio.toFixed(2)} (best of each), ${summary.median_ratio.toFixed(2)} (medians), paired ${summary.paired_ratios.map((x) => x.toFixed(2)).join(' ')}`);
  console.log(`  ratio termbridge/(floor, page also in structuredContent): ${summary.ratio_to_floor_structured.toFixed(2)}, termbridge/(floor, in a PTY): ${summary.ratio_to_floor_pty.toFixed(2)} (best of each)`);
  console.log(`  byte-complete: ${complete ? 'yes (SHA-256 of every run)' : 'NO'}`);
  console.log(`  peak RSS during the termbridge runs: broker ${peak.broker_mb.toFixed(1)} MB, agent ${peak.agent_mb.toFixed(1)} MB (floor server ${floorPeakMb.toFixed(1)} MB)`);
  if (minRatio) console.log(`  ratio >= ${minRatio}: ${ratioOk ? 'yes' : 'NO'}`);
}
process.exit(complete && ratioOk ? 0 : 1);
