// Test harness for termbridge end-to-end tests: starts a real broker on port
// 0 in a private state directory, waits for its ready file (an event, not a
// sleep), connects real MCP clients to real agent processes, and cleans up
// every process it started.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export const BROKER_BIN = process.env.TERMBRIDGE_BROKER_BIN;
export const AGENT_BIN = process.env.TERMBRIDGE_AGENT_BIN;
export const CLI_BIN = process.env.TERMBRIDGE_CLI_BIN;
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// The termbridge.v1 package for @grpc/grpc-js clients (64-bit integers as
// `longs`: Number or String).
export function brokerProto({ longs = Number } = {}) {
  return grpc.loadPackageDefinition(protoLoader.loadSync(
    path.join(ROOT, 'proto/termbridge/v1/broker.proto'),
    { keepCase: true, longs, enums: String, defaults: true, oneofs: true },
  )).termbridge.v1;
}

// Runs the operator CLI against the broker whose state dir is `stateDir`;
// resolves with its exit code, stdout and stderr, whatever the code.
export function runCli(stateDir, ...args) {
  return new Promise((resolve) => {
    execFile(CLI_BIN, ['--state-dir', stateDir, ...args], (error, stdout, stderr) => {
      resolve({ code: error ? (error.code ?? 1) : 0, stdout, stderr });
    });
  });
}
if (!BROKER_BIN || !AGENT_BIN) {
  throw new Error('set TERMBRIDGE_BROKER_BIN and TERMBRIDGE_AGENT_BIN (ctest does)');
}

export function tempDir(prefix = 'tb-e2e-') {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

// Removes a directory tempDir made, and everything in it.
export function removeDir(dir) {
  fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

// Resolves as `promise` does, or rejects once `timeoutMs` have passed with
// the message `describe()` gives then (say what was collected so far).
export async function withDeadline(promise, timeoutMs, describe) {
  let timer;
  const expired = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(describe())), timeoutMs);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

// Runs `bin args`, which must exit by itself within `timeoutMs` (a broker
// that has to refuse to start). Returns { code, log } (log: its stderr). A
// cleanup that kills it if it did not exit, then removes `dir`, is pushed
// onto `cleanups` before the wait, so nothing outlives a failing test.
export async function expectExit(bin, args, { env = process.env, timeoutMs = 20000, cleanups, dir, what }) {
  const child = spawn(bin, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr.on('data', (d) => { log += d; });
  const exited = exitOf(child);
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited.catch(() => {});
    if (dir) removeDir(dir);
  });
  const [code] = await withDeadline(exited, timeoutMs,
    () => `${what} did not exit within ${timeoutMs / 1000} s; its stderr so far:\n${log}`);
  return { code, log };
}

// once(child, 'exit'), which rejects if `child` could not be started; marked
// handled here, so that only those who wait on it see that.
function exitOf(child) {
  const exited = once(child, 'exit');
  exited.catch(() => {});
  return exited;
}

// Ends `child` (one of ours; `exited` is its exitOf promise) with
// `signal`, then, if it is still there after `timeoutMs`, SIGKILL and an
// error that says so, with `log()` (what it printed): a process that does
// not stop when told to is a bug the test should report.
async function stopChild(child, exited, what, { log = () => '', signal = 'SIGTERM', timeoutMs = 30000 } = {}) {
  if (child.pid === undefined) return;  // it never started
  if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  try {
    await withDeadline(exited, timeoutMs, () => `${what} did not exit within ${timeoutMs} ms of ${signal}`);
  } catch (e) {
    child.kill('SIGKILL');
    await exited;
    throw new Error(`${e.message}; killed it. Its output:\n${log()}`);
  }
}

// Pids and command lines of the processes whose command line mentions
// `needle` (a private state dir names every process started for it).
export function pidsMentioning(needle) {
  const pids = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      if (cmdline.includes(needle)) pids.push({ pid: Number(entry), cmdline });
    } catch { /* gone */ }
  }
  return pids;
}

// Resolves with the parsed JSON once `file` exists and is complete.
export async function waitForJsonFile(file, timeoutMs, child) {
  const dir = path.dirname(file);
  const base = path.basename(file);
  const read = () => {
    try {
      return JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch {
      return null;
    }
  };
  const found = read();
  if (found) return found;
  return await new Promise((resolve, reject) => {
    const finish = (fn, value) => {
      watcher.close();
      clearTimeout(timer);
      child?.off('exit', onExit);
      child?.off('error', onError);
      fn(value);
    };
    // Watch the directory: the file appears by rename, after it is complete.
    const watcher = fs.watch(dir, () => {
      const value = read();
      if (value) finish(resolve, value);
    });
    const timer = setTimeout(
      () => finish(reject, new Error(`no ${base} after ${timeoutMs} ms`)), timeoutMs);
    const onExit = (code) =>
      finish(reject, new Error(`process exited with ${code} before writing ${base}`));
    const onError = (error) => finish(reject, new Error(`process did not start: ${error.message}`));
    child?.on('exit', onExit);
    child?.on('error', onError);
    // The file may have appeared between the first read and the watch.
    const late = read();
    if (late) finish(resolve, late);
  });
}

// Starts `termbridge watch` against the broker in `stateDir`, the way a
// person on a host without a display follows every terminal, and resolves
// once it watches (its "watching every terminal" line: an event).
export async function startWatch(stateDir) {
  if (!CLI_BIN) throw new Error('set TERMBRIDGE_CLI_BIN (ctest does)');
  const child = spawn(CLI_BIN, ['--state-dir', stateDir, 'watch'],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  const watch = { child, stdout: '', stderr: '', exited: exitOf(child) };
  child.stdout.on('data', (d) => { watch.stdout += d; });
  const timeoutMs = 20000;
  let onExit;
  try {
    await withDeadline(new Promise((resolve, reject) => {
      onExit = (code) => reject(new Error(`termbridge watch exited (${code}):\n${watch.stderr}`));
      child.once('exit', onExit);
      child.once('error', reject);
      child.stderr.on('data', (d) => {
        watch.stderr += d;
        if (/watching every terminal/.test(watch.stderr)) resolve();
      });
    }), timeoutMs, () => `termbridge watch did not say it watches within ${timeoutMs} ms:\n${watch.stderr}`);
  } catch (e) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await watch.exited.catch(() => {});
    throw e;
  } finally {
    child.off('exit', onExit);
  }
  watch.stop = () => stopChild(child, watch.exited, 'termbridge watch', { log: () => watch.stderr });
  return watch;
}

// `termbridge approvals watch --json`: next() resolves with each pending
// request in the order they arrive; stop() ends the watcher.
export function watchApprovals(broker) {
  const child = spawn(CLI_BIN, ['--state-dir', broker.stateDir, '--json', 'approvals', 'watch'],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = exitOf(child);
  const waiting = [];
  const seen = [];
  const lines = [];
  let stderr = '';
  let markLive;
  const live = new Promise((resolve) => { markLive = resolve; });
  child.stderr.on('data', (d) => { stderr += d; });
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line);
    const event = JSON.parse(line);
    if (event.event === 'live') markLive();
    if (event.event !== 'requested') return;
    const next = waiting.shift();
    if (next) next(event.approval); else seen.push(event.approval);
  });
  const log = () => `its events so far:\n${lines.join('\n')}\nits stderr:\n${stderr}`;
  return {
    // Resolves once the watcher is subscribed: a request made after this is
    // seen however soon it expires.
    live: (timeoutMs = 30000) => withDeadline(live, timeoutMs,
      () => `approvals watch did not go live within ${timeoutMs} ms; ${log()}`),
    // Rejects when no request arrives within `timeoutMs`.
    next: (timeoutMs = 30000) => {
      if (seen.length) return Promise.resolve(seen.shift());
      let waiter;
      const arrived = new Promise((resolve) => { waiter = resolve; waiting.push(waiter); });
      return withDeadline(arrived, timeoutMs, () => {
        waiting.splice(waiting.indexOf(waiter), 1);
        return `no approval request within ${timeoutMs} ms; ${log()}`;
      });
    },
    stop: () => stopChild(child, exited, 'termbridge approvals watch', { log }),
  };
}

// A policy for tests about terminals rather than policy: nothing asks.
// Built-in deny rules still apply. Pass `policy: null` for the built-in
// default policy, or the text of a policy file.
export const PERMISSIVE_POLICY = 'version = 1\ndefault = "allow"\n';

export class Broker {
  static async start({
    extraArgs = [], env = {}, listen = '127.0.0.1:0', policy = PERMISSIVE_POLICY,
    viewer = 'watch', stateDir: givenStateDir = null,
  } = {}) {
    // viewer: 'watch' (default) runs `termbridge watch` as the person who
    // sees every terminal; 'required' starts no viewer (the test brings its
    // own); 'none' switches the visibility guarantee off (--require-viewer
    // false), for tests about the broker alone.
    // stateDir: a directory the caller owns (a restart test reuses it); it
    // stays when the broker stops.
    const stateDir = givenStateDir ?? tempDir('tb-state-');
    const readyFile = path.join(stateDir, 'ready.json');
    fs.rmSync(readyFile, { force: true });
    if (policy !== null) fs.writeFileSync(path.join(stateDir, 'policy.toml'), policy);
    if (viewer === 'none') extraArgs = ['--require-viewer', 'false', ...extraArgs];
    // Never a real window from a test that did not ask for one.
    if (!extraArgs.includes('--window-command')) extraArgs = ['--window-command', 'none', ...extraArgs];
    const child = spawn(
      BROKER_BIN,
      ['--listen', listen, '--state-dir', stateDir, '--ready-file', readyFile, ...extraArgs],
      { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const broker = new Broker(child, stateDir);
    broker.ownsState = givenStateDir === null;
    child.stderr.on('data', (chunk) => { broker.log += chunk; });
    try {
      broker.ready = await waitForJsonFile(readyFile, 15000, child);
      if (viewer === 'watch') broker.watch = await startWatch(stateDir);
    } catch (e) {
      // Nothing of it outlives the failed start: the caller has no broker to stop.
      await broker.stop('SIGKILL').catch(() => {});
      e.message += `\nbroker stderr:\n${broker.log}`;
      throw e;
    }
    return broker;
  }

  constructor(child, stateDir) {
    this.child = child;
    this.stateDir = stateDir;
    this.log = '';
    this.exited = exitOf(child);
  }

  get port() { return this.ready.grpc_port; }
  get tokenFile() { return this.ready.agent_token_file; }

  // Stops the broker (SIGSTOP) and returns once every one of its threads is
  // stopped: the kernel stops the threads one by one as each gets a CPU, and
  // on a busy machine a thread that is still running could answer a request.
  async freeze() {
    this.child.kill('SIGSTOP');
    const tasks = `/proc/${this.child.pid}/task`;
    const stopped = () => fs.readdirSync(tasks).every((tid) => {
      try {
        const stat = fs.readFileSync(`${tasks}/${tid}/stat`, 'utf8');
        return /^[TtXZ]$/.test(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
      } catch { return true; }  // the thread is gone
    });
    const deadline = Date.now() + 10000;
    while (!stopped()) {
      if (Date.now() > deadline) throw new Error('the broker did not stop within 10 s of SIGSTOP');
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }

  thaw() { this.child.kill('SIGCONT'); }

  // Stops the watch and the broker (a frozen one too), waits until the
  // broker has exited and removes its state dir. Safe to call again, and
  // after the broker was killed some other way.
  async stop(signal = 'SIGTERM') {
    try {
      if (this.watch) await this.watch.stop();
    } finally {
      if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGCONT');
      try {
        await stopChild(this.child, this.exited, 'the broker', { log: () => this.log, signal });
      } finally {
        if (this.ownsState) removeDir(this.stateDir);
      }
    }
  }
}

// An MCP client (the official TypeScript SDK) connected over stdio to a new
// termbridge-agent process that talks to `broker`.
export async function connectAgent({ port, tokenFile, env = {}, args = [] }) {
  const transport = new StdioClientTransport({
    command: AGENT_BIN,
    args,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME ?? '/tmp',
      PM_INTERACTIVE_TERMINAL_HOST_PORT: String(port),
      TERMBRIDGE_BRIDGE_TOKEN_FILE: tokenFile,
      ...env,
    },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'termbridge-e2e', version: '0.0.0' });
  let log = '';
  transport.stderr?.on('data', (chunk) => { log += chunk; });
  await client.connect(transport);
  return { client, transport, log: () => log };
}

// A termbridge-agent serving MCP over Streamable HTTP on 127.0.0.1 port 0,
// talking to `broker`; resolves once its ready file names the URL. Its state
// dir is a temporary one, where it creates its bearer token on start (unless
// `args` name a token file or --http-no-auth); `authorization` is the header
// that token makes ('' without one) and `requestInit` carries it for the
// SDK. The caller stops it (stop()) when done.
export async function startHttpAgent(broker, { args = [], env = {}, listen = '127.0.0.1:0' } = {}) {
  const dir = tempDir('tb-agent-http-');
  const readyFile = path.join(dir, 'ready.json');
  const child = spawn(AGENT_BIN, ['--http', listen, '--ready-file', readyFile, ...args], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME ?? '/tmp',
      TERMBRIDGE_STATE_DIR: path.join(dir, 'state'),
      PM_INTERACTIVE_TERMINAL_HOST_PORT: String(broker.port),
      TERMBRIDGE_BRIDGE_TOKEN_FILE: broker.tokenFile,
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr.on('data', (chunk) => { log += chunk; });
  const exited = exitOf(child);
  let ready;
  try {
    ready = await waitForJsonFile(readyFile, 15000, child);
  } catch (e) {
    // Nothing of it outlives the failed start: the caller has no agent to stop.
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited.catch(() => {});
    removeDir(dir);
    e.message += `\nagent stderr:\n${log}`;
    throw e;
  }
  const tokenFile = ready.token_file || '';
  const authorization = tokenFile ? `Bearer ${fs.readFileSync(tokenFile, 'utf8').trim()}` : '';
  return {
    url: ready.url, child, dir, log: () => log, tokenFile, authorization,
    requestInit: authorization ? { headers: { authorization } } : {},
    stop: async () => {
      try {
        await stopChild(child, exited, 'the HTTP agent', { log: () => log });
      } finally {
        removeDir(dir);
      }
    },
  };
}

// An MCP client connected over Streamable HTTP to an agent already serving `url`.
export async function connectHttpAgent(url, requestInit = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit });
  const client = new Client({ name: 'termbridge-e2e-http', version: '0.0.0' });
  await client.connect(transport);
  return { client, transport };
}

// Resolves once process `pid` (not our child) is gone. There is no event for
// that, so this polls every 20 ms up to `timeoutMs`.
export async function waitPidGone(pid, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
}

// Whether a terminal tool's text content agrees with its structuredContent
// (docs/CONTRACT.md, 'MCP wrapping'): text for a model, not JSON. A success
// with output starts with that output and ends with a one-line status in
// brackets; a failure starts with its PM_TERM code.
export function textAgrees(payload, text) {
  if (typeof text !== 'string') return false;
  try { JSON.parse(text); return false; } catch { /* not JSON: as it should be */ }
  if (payload?.success === false) return text.startsWith(`${payload.error?.code}: `);
  const lastLine = text.slice(text.lastIndexOf('\n') + 1);
  if (!/^\[.*\]$/.test(lastLine)) return false;
  const stdout = payload?.result?.stdout;
  return typeof stdout !== 'string' || text.startsWith(stdout);
}

// Calls memory_terminal_interactive and returns the canonical payload
// (structuredContent), with the MCP-level isError flag, the text content
// (`text`) and whether that text agrees with the payload (`textMatches`).
export async function terminal(client, args, options = {}) {
  const result = await client.callTool(
    { name: 'memory_terminal_interactive', arguments: args },
    undefined,
    { timeout: 120000, ...options },
  );
  const payload = result.structuredContent;
  const text = result.content?.[0]?.text;
  return { ...payload, isError: result.isError === true, text, textMatches: textAgrees(payload, text) };
}

// A broker started with `brokerOptions` (Broker.start), an agent connected
// to it and a watch on its approvals (watchApprovals), each stopped by one
// of `cleanups` (run in reverse order by the test file's after()).
export async function brokerAgentAndApprovals(cleanups, brokerOptions = {}) {
  const broker = await Broker.start(brokerOptions);
  cleanups.push(() => broker.stop());
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => agent.client.close());
  const approvals = watchApprovals(broker);
  cleanups.push(() => approvals.stop());
  return { broker, agent, approvals };
}

// Opens a terminal for the agent (intent open_only) in `cwd`; resolves with
// a function running a command line in it that resolves with the result.
export async function openTerminalIn(client, cwd) {
  const opened = await terminal(client, {
    action: 'execute', invocation: { intent: 'open_only' }, runtime: { cwd },
  });
  if (opened.success !== true) throw new Error(`opening a terminal in ${cwd}: ${JSON.stringify(opened)}`);
  const terminalId = opened.identity.terminal_id;
  const run = (command, timeoutMs = 20000) => terminal(client, {
    action: 'execute', target: { terminal_id: terminalId }, execution: { command },
    runtime: { timeout_ms: timeoutMs },
  });
  run.terminalId = terminalId;
  return run;
}

// Reads a session's output from `cursor` until it has exited and nothing is
// left; rejects if that takes longer than `timeoutMs`.
export async function readAll(client, sessionId, cursor, first = '', timeoutMs = 60000) {
  let text = first;
  let last = null;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (Date.now() > deadline) {
      throw new Error(`session ${sessionId} still running or unread after ${timeoutMs} ms; ` +
        `read ${text.length} characters, ending:\n${text.slice(-2000)}\nlast result: ${JSON.stringify(last)}`);
    }
    const r = await terminal(client, {
      action: 'read_output', target: { session_id: sessionId }, cursor, wait_ms: 2000,
    });
    if (!r.success) throw new Error(`read_output failed: ${JSON.stringify(r.error)}`);
    text += r.result.stdout;
    cursor = r.result.cursor;
    last = { ...r.result, stdout: `(${r.result.stdout.length} characters)` };
    if (!r.result.running && !r.result.more) return { text, result: r.result };
  }
}

// Resolves once a terminal's output (read over the broker's gRPC ReadOutput
// through `call(method, request)`) matches `pattern`; rejects after
// `timeoutMs` with what it read. An agent's input is refused while the
// shell's line editor reads the terminal, so tests that type into a command
// wait for a line the command prints first (not the echo of the command).
export async function grpcOutputMatches(call, terminalId, pattern, timeoutMs = 30000) {
  let seen = '';
  for (let cursor = 0, deadline = Date.now() + timeoutMs; !pattern.test(seen);) {
    if (Date.now() > deadline) throw new Error(`terminal ${terminalId} never printed ${pattern}; read:\n${seen.slice(-2000)}`);
    const r = await call('ReadOutput', { terminal_id: terminalId, cursor, wait_ms: 1000, max_bytes: 4096 });
    seen += r.output.text;
    cursor = r.output.next_cursor;
  }
  return seen;
}
