// Test harness for termbridge end-to-end tests: starts a real broker on port
// 0 in a private state directory, waits for its ready file (an event, not a
// sleep), connects real MCP clients to real agent processes, and cleans up
// every process it started.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { once } from 'node:events';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export const BROKER_BIN = process.env.TERMBRIDGE_BROKER_BIN;
export const AGENT_BIN = process.env.TERMBRIDGE_AGENT_BIN;
export const CLI_BIN = process.env.TERMBRIDGE_CLI_BIN;
if (!BROKER_BIN || !AGENT_BIN) {
  throw new Error('set TERMBRIDGE_BROKER_BIN and TERMBRIDGE_AGENT_BIN (ctest does)');
}

export function tempDir(prefix = 'tb-e2e-') {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
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
    child?.on('exit', onExit);
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
  const watch = { child, stdout: '', stderr: '', exited: once(child, 'exit') };
  child.stdout.on('data', (d) => { watch.stdout += d; });
  await new Promise((resolve, reject) => {
    const onExit = (code) => reject(new Error(`termbridge watch exited (${code}):\n${watch.stderr}`));
    child.once('exit', onExit);
    child.stderr.on('data', (d) => {
      watch.stderr += d;
      if (/watching every terminal/.test(watch.stderr)) {
        child.off('exit', onExit);
        resolve();
      }
    });
  });
  watch.stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await watch.exited;
  };
  return watch;
}

// A policy for tests about terminals rather than policy: nothing asks.
// Built-in deny rules still apply. Pass `policy: null` for the built-in
// default policy, or the text of a policy file.
// `termbridge approvals watch --json`: next() resolves with each pending
// request in the order they arrive; stop() ends the watcher.
export function watchApprovals(broker) {
  const child = spawn(CLI_BIN, ['--state-dir', broker.stateDir, '--json', 'approvals', 'watch'],
    { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = once(child, 'exit');
  const waiting = [];
  const seen = [];
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    const event = JSON.parse(line);
    if (event.event !== 'requested') return;
    const next = waiting.shift();
    if (next) next(event.approval); else seen.push(event.approval);
  });
  return {
    next: () => (seen.length ? Promise.resolve(seen.shift()) : new Promise((r) => waiting.push(r))),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill();
      await exited;
    },
  };
}

export const PERMISSIVE_POLICY = 'version = 1\ndefault = "allow"\n';

export class Broker {
  static async start({
    extraArgs = [], env = {}, listen = '127.0.0.1:0', policy = PERMISSIVE_POLICY,
    viewer = 'watch',
  } = {}) {
    // viewer: 'watch' (default) runs `termbridge watch` as the person who
    // sees every terminal; 'required' starts no viewer (the test brings its
    // own); 'none' switches the visibility guarantee off (--require-viewer
    // false), for tests about the broker alone.
    const stateDir = tempDir('tb-state-');
    const readyFile = path.join(stateDir, 'ready.json');
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
    child.stderr.on('data', (chunk) => { broker.log += chunk; });
    broker.ready = await waitForJsonFile(readyFile, 15000, child);
    if (viewer === 'watch') broker.watch = await startWatch(stateDir);
    return broker;
  }

  constructor(child, stateDir) {
    this.child = child;
    this.stateDir = stateDir;
    this.log = '';
    this.exited = once(child, 'exit');
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

  async stop(signal = 'SIGTERM') {
    if (this.watch) await this.watch.stop();
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGCONT');
    this.child.kill(signal);
    await this.exited;
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
      PM_INTERACTIVE_TERMINAL_TOKEN_FILE: tokenFile,
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
// talking to `broker`; resolves once its ready file names the URL. The
// caller stops it (stop()) when done.
export async function startHttpAgent(broker, { args = [], env = {} } = {}) {
  const dir = tempDir('tb-agent-http-');
  const readyFile = path.join(dir, 'ready.json');
  const child = spawn(AGENT_BIN, ['--http', '127.0.0.1:0', '--ready-file', readyFile, ...args], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME ?? '/tmp',
      PM_INTERACTIVE_TERMINAL_HOST_PORT: String(broker.port),
      PM_INTERACTIVE_TERMINAL_TOKEN_FILE: broker.tokenFile,
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr.on('data', (chunk) => { log += chunk; });
  const exited = once(child, 'exit');
  const ready = await waitForJsonFile(readyFile, 15000, child);
  return {
    url: ready.url, child, dir, log: () => log,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
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

// Calls memory_terminal_interactive and returns the canonical payload, with
// the MCP-level isError flag alongside.
export async function terminal(client, args, options = {}) {
  const result = await client.callTool(
    { name: 'memory_terminal_interactive', arguments: args },
    undefined,
    { timeout: 120000, ...options },
  );
  const payload = result.structuredContent;
  const text = JSON.parse(result.content[0].text);
  return { ...payload, isError: result.isError === true, textMatches: JSON.stringify(text) === JSON.stringify(payload) };
}

// Reads a session's output from `cursor` until it has exited and nothing is left.
export async function readAll(client, sessionId, cursor, first = '') {
  let text = first;
  for (;;) {
    const r = await terminal(client, {
      action: 'read_output', target: { session_id: sessionId }, cursor, wait_ms: 2000,
    });
    if (!r.success) throw new Error(`read_output failed: ${JSON.stringify(r.error)}`);
    text += r.result.stdout;
    cursor = r.result.cursor;
    if (!r.result.running && !r.result.more) return { text, result: r.result };
  }
}
