// The threads of the real binaries as /proc shows them (issue 23). A person
// running `top -H` on termbridge-agent (stdio and HTTP), termbridge-broker or
// `termbridge watch` can tell every thread apart by its name; after load
// (concurrent tool calls, cancelled ones, HTTP connections opened, closed and
// dropped mid-request) each process is back to the thread count it had
// before, so nothing leaks a thread; and a clean shutdown (SIGTERM, or EOF on
// the stdio agent's stdin) ends each process promptly with exit code 0.
//
// Thread names. Ours start with "tb-" (docs/ARCHITECTURE.md, "Threads",
// lists them). gRPC names its own threads, and those names are accepted as
// they are: GRPC_THREADS below. The main thread (tid = pid) keeps the
// binary's name, which is the process's name in ps and pgrep.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { once } from 'node:events';
import {
  AGENT_BIN, Broker, startHttpAgent, tempDir, removeDir, withDeadline,
} from '../lib/harness.mjs';

const cleanups = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

// gRPC's threads (libgrpc, libgrpc++ 1.51), by the name Linux keeps (15
// bytes): its timer and executor threads, the EventEngine pool, the
// callback completion queue's poller, and the sync server's pool.
const GRPC_THREADS = new Set([
  'grpc_global_tim', 'default-executo', 'resolver-execut', 'timer_manager', 'event_engine',
  'nexting_thread', 'grpcpp_sync_ser',
]);
const OURS = /^tb-[a-z-]+$/;

// How long a process may take to be back at its thread count, and to exit.
const SETTLE_MS = 30000;
const EXIT_MS = 10000;

function threadCount(pid) {
  return Number(/^Threads:\s+(\d+)$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
}

// The name of each thread but the main one: [{ tid, name }].
function threadNames(pid) {
  const names = [];
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    if (Number(tid) === pid) continue;
    try {
      names.push({ tid: Number(tid), name: fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim() });
    } catch { /* the thread ended meanwhile */ }
  }
  return names;
}

// Resolves once `check()` is true. A thread's end has no event a test can
// wait on, so this looks every 25 ms, up to `timeoutMs`; the error says
// what `describe()` reports then.
async function waitUntil(check, timeoutMs, describe) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(describe());
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

// The thread count once it has held still for 500 ms (the threads of the
// last warm-up call are gone by then): the baseline.
async function settledCount(pid, what) {
  let last = threadCount(pid);
  let since = Date.now();
  await waitUntil(() => {
    const now = threadCount(pid);
    if (now !== last) {
      last = now;
      since = Date.now();
    }
    return Date.now() - since >= 500;
  }, SETTLE_MS, () => `${what}: the thread count never held still (last ${last})`);
  return last;
}

const accepted = (name) => OURS.test(name) || GRPC_THREADS.has(name);

// Looks at the threads of `pids` every 10 ms until stop(): `seen` holds
// every name seen, `peak` the most threads each process had, and
// `unnamed()` the threads that never had a name of ours or gRPC's. A new
// thread carries its creator's name until its first instruction names it,
// so a thread counts as unnamed only when two looks at least 10 ms apart
// found it so and none found it named (one that lives less than that
// escapes this check).
function watchNames(pids) {
  const seen = Object.fromEntries(Object.keys(pids).map((what) => [what, new Map()]));
  const tids = Object.fromEntries(Object.keys(pids).map((what) => [what, new Map()]));
  const peak = Object.fromEntries(Object.keys(pids).map((what) => [what, 0]));
  const look = () => {
    for (const [what, pid] of Object.entries(pids)) {
      try {
        const threads = threadNames(pid);
        for (const { tid, name } of threads) {
          seen[what].set(name, tid);
          const t = tids[what].get(tid) ?? { named: false, unnamedLooks: 0, name };
          if (accepted(name)) t.named = true;
          else t.unnamedLooks += 1;
          t.name = name;
          tids[what].set(tid, t);
        }
        peak[what] = Math.max(peak[what], threads.length + 1);
      } catch { /* exited */ }
    }
  };
  look();
  const timer = setInterval(look, 10);
  // Stopped also when the test fails before stop(): a running timer would
  // keep node (and the failed test) alive until ctest's timeout.
  cleanups.push(() => clearInterval(timer));
  const unnamed = (what) => [...tids[what].entries()]
    .filter(([, t]) => !t.named && t.unnamedLooks >= 2).map(([tid, t]) => `${t.name} (tid ${tid})`);
  return { seen, peak, unnamed, stop: () => { clearInterval(timer); look(); } };
}

// A termbridge-agent on stdio, driven line by line: call() resolves with
// the reply to a request, notify() sends a notification, and `exited`
// resolves with [code, signal].
function startStdioAgent(broker) {
  const dir = tempDir('tb-threads-stdio-');
  const child = spawn(AGENT_BIN, [], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME ?? dir,
      TERMBRIDGE_STATE_DIR: path.join(dir, 'state'),
      PM_INTERACTIVE_TERMINAL_HOST_PORT: String(broker.port),
      PM_INTERACTIVE_TERMINAL_TOKEN_FILE: broker.tokenFile,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let log = '';
  child.stderr.on('data', (d) => { log += d; });
  const exited = once(child, 'exit');
  exited.catch(() => {});
  const waiting = new Map();
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    const message = JSON.parse(line);
    const resolve = waiting.get(message.id);
    if (resolve) {
      waiting.delete(message.id);
      resolve(message);
    }
  });
  let next = 1;
  const agent = {
    child, exited, log: () => log,
    call(method, params) {
      const id = next++;
      const reply = new Promise((resolve) => waiting.set(id, resolve));
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
      return { id, reply };
    },
    notify(method, params) {
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method, params })}\n`);
    },
  };
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited.catch(() => {});
    removeDir(dir);
  });
  return agent;
}

const toolCall = (args, meta) => ({
  name: 'memory_terminal_interactive', arguments: args, ...(meta ? { _meta: meta } : {}),
});
const payload = (reply) => reply.result?.structuredContent;

// One HTTP request on a connection of its own, closed after the response.
function httpRequest(url, { method = 'POST', headers = {}, body = '' } = {}) {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method, headers, agent: false }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (d) => { text += d; });
      response.on('end', () => resolve({ status: response.statusCode, headers: response.headers, text }));
    });
    request.on('error', reject);
    request.end(body);
  });
}

// A legacy (2025-11-25) session on the HTTP agent, for raw requests.
async function httpSession(agent) {
  const base = {
    authorization: agent.authorization, 'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  const init = await httpRequest(agent.url, {
    headers: base,
    body: JSON.stringify({
      jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'threads', version: '1' } },
    }),
  });
  assert.equal(init.status, 200, init.text);
  const headers = { ...base, 'mcp-session-id': init.headers['mcp-session-id'], 'mcp-protocol-version': '2025-11-25' };
  await httpRequest(agent.url, { headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  let next = 2;
  return {
    headers,
    async call(args) {
      const r = await httpRequest(agent.url, {
        headers, body: JSON.stringify({ jsonrpc: '2.0', id: next++, method: 'tools/call', params: toolCall(args) }),
      });
      assert.equal(r.status, 200, r.text);
      return JSON.parse(r.text);
    },
  };
}

// A tools/call whose connection is dropped once the call is under way (its
// first SSE heartbeat arrived): the agent sees the peer gone and cancels
// the call; the handler, still waiting on the broker, runs on until then.
function droppedCall(agent, headers, sessionId, id) {
  return new Promise((resolve, reject) => {
    const request = http.request(agent.url, { method: 'POST', headers, agent: false }, (response) => {
      response.once('data', () => {
        request.destroy();
        resolve();
      });
    });
    request.on('error', (e) => (e.code === 'ECONNRESET' ? resolve() : reject(e)));
    request.end(JSON.stringify({
      jsonrpc: '2.0', id, method: 'tools/call',
      params: toolCall({
        action: 'read_output', target: { session_id: sessionId },
        until: 'match', match: 'never-printed', wait_ms: 2000,
      }, { progressToken: `drop-${id}` }),
    }));
  });
}

// A connection that sends `bytes` (maybe none, maybe half a request) and
// is then dropped.
function dropAfter(agent, bytes) {
  const { port } = new URL(agent.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => {
      if (bytes) socket.write(bytes);
      socket.destroy();
      resolve();
    });
    socket.on('error', reject);
  });
}

test('every thread is named, each process is back at its thread count after load, and shuts down cleanly', async () => {
  const broker = await Broker.start();
  cleanups.push(() => broker.stop());
  const httpAgent = await startHttpAgent(broker);
  cleanups.push(() => httpAgent.stop());
  const stdio = startStdioAgent(broker);
  const init = await withDeadline(stdio.call('initialize', {
    protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'threads', version: '1' },
  }).reply, 15000, () => `the stdio agent did not answer initialize:\n${stdio.log()}`);
  assert.ok(init.result, JSON.stringify(init));
  stdio.notify('notifications/initialized', {});
  const session = await httpSession(httpAgent);

  const pids = {
    broker: broker.child.pid, 'stdio agent': stdio.child.pid, 'HTTP agent': httpAgent.child.pid,
    'termbridge watch': broker.watch.child.pid,
  };

  // Warm-up: one terminal per agent, a command in it, closed again, so that
  // the threads gRPC starts on first use are there before the baseline.
  const terminalCall = async (args) => payload(await stdio.call('tools/call', toolCall(args)).reply);
  const httpCall = (args) => session.call(args).then(payload);
  for (const call of [terminalCall, httpCall]) {
    const r = await call({ action: 'execute', execution: { command: 'echo warm' } });
    assert.equal(r.success, true, JSON.stringify(r));
    await call({ action: 'list' });
    await call({ action: 'terminate', target: { terminal_id: r.identity.terminal_id } });
  }
  const baseline = {};
  const before = {};
  const tally = (pid) => {
    const counts = {};
    for (const { name } of threadNames(pid)) counts[name] = (counts[name] ?? 0) + 1;
    return Object.entries(counts).map(([name, n]) => `${name}x${n}`).sort().join(' ');
  };
  for (const [what, pid] of Object.entries(pids)) {
    baseline[what] = await settledCount(pid, what);
    before[what] = tally(pid);
  }

  const names = watchNames(pids);
  // Terminals that print nothing, for calls that wait (and are cancelled or
  // dropped), and every terminal the load opens: closed after it by the
  // agent that opened it.
  const silent = [];
  const opened = [];
  for (let i = 0; i < 2; i++) {
    const r = await terminalCall({ action: 'execute', execution: { command: 'sleep 120' }, runtime: { timeout_ms: 100 } });
    assert.equal(r.status, 'accepted', JSON.stringify(r));
    silent.push(r.identity.session_id);
    opened.push([terminalCall, r.identity.terminal_id]);
  }
  const waitOn = (sessionId, waitMs) => ({
    action: 'read_output', target: { session_id: sessionId }, until: 'match', match: 'never-printed', wait_ms: waitMs,
  });
  const load = [];
  // stdio: 40 calls at once (16 run, the rest queue), 4 commands, 3 calls
  // that wait and 3 that are cancelled while they wait.
  for (let i = 0; i < 40; i++) load.push(stdio.call('tools/call', toolCall({ action: 'list' })).reply);
  // Commands, one after the other (at once, they would race for the default
  // terminal, which the two agents share: they present the same token).
  const commands = async (call, label) => {
    for (let i = 0; i < 4; i++) {
      const r = await call({ action: 'execute', execution: { command: `echo ${label}-${i}` } });
      assert.equal(r.success, true, JSON.stringify(r));
      opened.push([call, r.identity.terminal_id]);
    }
  };
  load.push(commands(terminalCall, 'stdio').then(() => commands(httpCall, 'http')));
  for (let i = 0; i < 3; i++) load.push(stdio.call('tools/call', toolCall(waitOn(silent[0], 1500))).reply);
  for (let i = 0; i < 3; i++) {
    const { id } = stdio.call('tools/call', toolCall(waitOn(silent[0], 2000)));
    setTimeout(() => stdio.notify('notifications/cancelled', { requestId: id, reason: 'test' }), 200);
  }
  // HTTP: 40 calls at once, each on a connection of its own; 4 commands;
  // 6 calls dropped mid-call; 100 connections dropped before, in the
  // middle of, or right after a request's headers or body.
  for (let i = 0; i < 40; i++) load.push(session.call({ action: 'list' }));
  for (let i = 0; i < 6; i++) load.push(droppedCall(httpAgent, session.headers, silent[1], 1000 + i));
  const partial = [
    '',
    'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n',
    `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${httpAgent.authorization}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"jsonrpc":"2.0",`,
    `GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`,
  ];
  // Ten at a time: with the calls above, fewer than the 64 connections the
  // agent serves, so that none of the calls' connections is closed to make room.
  load.push((async () => {
    for (let i = 0; i < 100; i += 10) {
      await Promise.all(Array.from({ length: 10 }, (_, j) => dropAfter(httpAgent, partial[(i + j) % partial.length])));
    }
  })());
  await withDeadline(Promise.all(load), 60000, () => 'the load did not finish within 60 s');
  const closed = new Set();
  for (const [call, terminalId] of opened) {
    if (closed.has(terminalId)) continue;
    closed.add(terminalId);
    const r = await call({ action: 'terminate', target: { terminal_id: terminalId } });
    assert.equal(r.success, true, JSON.stringify(r));
  }
  names.stop();

  // Every thread seen under load had a name of ours or gRPC's, and the
  // per-call and per-connection threads were among them.
  for (const [what, seen] of Object.entries(names.seen)) {
    assert.deepEqual(names.unnamed(what), [],
      `${what} had threads without a name of ours or gRPC's; names seen: ${[...seen.keys()]}`);
  }
  for (const [what, expected] of [
    ['stdio agent', ['tb-mcp-call', 'tb-mcp-handler']],
    ['HTTP agent', ['tb-http-accept', 'tb-http-conn', 'tb-mcp-handler']],
    ['broker', ['tb-pty-reader', 'tb-warden', 'tb-approval-exp']],
    ['termbridge watch', ['tb-watch-events', 'tb-watch-follow']],
  ]) {
    for (const name of expected) assert.ok(names.seen[what].has(name), `${what}: no ${name} thread seen; saw ${[...names.seen[what].keys()]}`);
  }

  // Back at the baseline: every call, connection, handler and terminal
  // reader thread has ended (cancelled calls' handlers once their wait is
  // over). No tolerance: gRPC's pools shrink back too.
  const loadEnded = Date.now();
  const back = {};
  for (const [what, pid] of Object.entries(pids)) {
    await waitUntil(() => threadCount(pid) <= baseline[what], SETTLE_MS,
      () => `${what}: ${threadCount(pid)} threads ${SETTLE_MS / 1000} s after the load, ` +
        `${baseline[what]} before it; before: ${before[what]}; now: ${tally(pid)}`);
    back[what] = Date.now() - loadEnded;
  }

  // Clean shutdown: EOF on stdin ends the stdio agent, SIGTERM the others;
  // each exits within EXIT_MS with code 0.
  const exits = async (what, exited, end) => {
    const started = Date.now();
    end();
    const [code, signal] = await withDeadline(exited, EXIT_MS, () => `${what} did not exit within ${EXIT_MS} ms`);
    assert.deepEqual({ code, signal }, { code: 0, signal: null }, `${what} exit`);
    return Date.now() - started;
  };
  const took = {};
  took['stdio agent'] = await exits('the stdio agent', stdio.exited, () => stdio.child.stdin.end());
  took['HTTP agent'] = await exits('the HTTP agent', once(httpAgent.child, 'exit'), () => httpAgent.child.kill('SIGTERM'));
  took['termbridge watch'] = await exits('termbridge watch', broker.watch.exited, () => broker.watch.child.kill('SIGTERM'));
  took.broker = await exits('the broker', broker.exited, () => broker.child.kill('SIGTERM'));
  console.log(`threads: baseline ${JSON.stringify(before)}, peak ${JSON.stringify(names.peak)}, ` +
    `back at baseline after (ms) ${JSON.stringify(back)}, exit (ms) ${JSON.stringify(took)}`);
});
