// Slow readers lose nothing, and a dropped connection loses nothing (issue
// 24; docs/operating.md "Recordings", docs/CONTRACT.md "Errors"): two agents
// and a viewer that read one large output at different speeds through a ring
// far smaller than it each get every byte; an agent whose connection to the
// broker is cut mid-read, again and again and once for a while, sees
// PM_TERM_DISCONNECTED (retriable), retries from its cursor and ends with
// every byte exactly once; after a broker restart, a read of a session the
// old broker had is a typed error, not a hang.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import grpc from '@grpc/grpc-js';
import {
  Broker, brokerProto, connectAgent, removeDir, tempDir, terminal, withDeadline,
} from '../lib/harness.mjs';
import { cleanupList } from '../security/lib.mjs';

const cleanups = cleanupList();
const proto = brokerProto();

// What `seq 1 n` prints through the PTY (onlcr: CR LF), as read_output's
// raw format and Attach return it: its length and SHA-256, without holding
// it whole.
function seqDigest(n) {
  const hash = createHash('sha256');
  let length = 0;
  const lines = [];
  for (let i = 1; i <= n; i++) {
    lines.push(`${i}\r\n`);
    if (lines.length === 65536 || i === n) {
      const chunk = lines.join('');
      hash.update(chunk);
      length += chunk.length;
      lines.length = 0;
    }
  }
  return { length, sha256: hash.digest('hex') };
}

// One page of read_output in the raw format (the terminal's bytes, which
// the offsets count), from `cursor`, no tail.
function readPage(client, sessionId, cursor, maxBytes, extra = {}) {
  return terminal(client, {
    action: 'read_output', target: { session_id: sessionId }, cursor, wait_ms: 2000,
    max_bytes: maxBytes, tail: false, format: 'raw', ...extra,
  });
}

// Pages through a session from `cursor` until it has ended and nothing is
// left, checking that each page starts where the last one ended. A failed
// call goes to `onFailure(error, failuresInARow)`, which may wait and return
// to retry the same cursor, or throw; `beforePage(bytesSoFar)` may hold a
// page back. Returns the length, SHA-256 and gaps of everything read.
async function readSession(client, sessionId, cursor, {
  maxBytes, beforePage = async () => {}, onFailure = (e) => { throw new Error(JSON.stringify(e)); },
}) {
  const chunks = [];
  let length = 0;
  let gaps = 0;
  let pages = 0;
  let failed = 0;
  const recent = [];  // the first and last pages, for a failure's message
  for (;;) {
    await beforePage(length);
    const r = await readPage(client, sessionId, cursor, maxBytes);
    if (!r.success) {
      await onFailure(r.error, ++failed);
      continue;
    }
    failed = 0;
    pages++;
    gaps += r.result.gap_bytes ?? 0;
    const bytes = Buffer.from(r.result.stdout, 'utf8');
    recent.push({ asked: cursor, ...r.result, head: r.result.stdout.slice(0, 40), stdout: r.result.stdout.slice(-40), approval: undefined });
    if (recent.length > 6) recent.splice(2, 1);
    assert.equal(bytes.length, r.result.cursor - r.result.output_start, `page ${pages}: the cursor moved by what it returned; pages: ${JSON.stringify(recent)}`);
    if (length === 0) {
      // The command's output may begin after the cursor execute gave (the
      // echo of its line is not its output).
      assert.ok(r.result.output_start >= cursor, `${r.result.output_start} >= ${cursor}`);
    } else {
      assert.equal(r.result.output_start, cursor, `page ${pages} starts where the last one ended; pages: ${JSON.stringify(recent)}`);
    }
    chunks.push(bytes);
    length += bytes.length;
    cursor = r.result.cursor;
    if (!r.result.running && !r.result.more) {
      assert.equal(r.result.exit_code, 0);
      const last = JSON.stringify(recent);
      return { length, sha256: createHash('sha256').update(Buffer.concat(chunks)).digest('hex'), gaps, pages, last };
    }
  }
}

async function startBroker(options = {}) {
  const broker = await Broker.start({ viewer: 'none', extraArgs: ['--ring-bytes', '65536'], ...options });
  cleanups.push(() => broker.stop());
  return broker;
}

async function agentOf(port, broker, env = {}) {
  const agent = await connectAgent({ port, tokenFile: broker.tokenFile, env });
  cleanups.push(() => agent.client.close());
  return agent;
}

// Starts `command` and returns after `timeoutMs` or once it has ended.
// Half a second: a large output has begun by then, and the reads begin in
// it, clear of the command's start (see the last test).
async function startCommand(client, command, timeoutMs = 500) {
  const r = await terminal(client, {
    action: 'execute', execution: { command }, runtime: { timeout_ms: timeoutMs }, max_bytes: 4096,
  });
  assert.equal(r.success, true, JSON.stringify(r.error));
  assert.equal(r.result.gap_bytes, 0, 'execute read no gap');
  return { sessionId: r.identity.session_id, terminalId: r.identity.terminal_id, start: r.result.output_start };
}

// Resolves once the agent's log has `count` lines matching `pattern`.
async function agentSays(agent, pattern, count = 1, timeoutMs = 10000) {
  const matches = () => (agent.log().match(new RegExp(pattern.source, 'g')) ?? []).length;
  const deadline = Date.now() + timeoutMs;
  while (matches() < count) {
    assert.ok(Date.now() < deadline, `no ${pattern} (${count}) in the agent's log:\n${agent.log()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function auditRecords(stateDir) {
  return fs.readFileSync(path.join(stateDir, 'audit.jsonl'), 'utf8')
    .split('\n').filter(Boolean).map((line) => JSON.parse(line));
}

test('two agents and a paused viewer each get every byte of 23 MB through a 64 KiB ring', async () => {
  const broker = await startBroker();
  // A terminal is readable only by the agent that owns it (docs/security.md
  // "Agent identity"): two agent processes with the same credentials.
  const fast = await agentOf(broker.port, broker);
  const slow = await agentOf(broker.port, broker);
  const lines = 3000000;
  const expected = seqDigest(lines);  // 25.9 MB (22.9 MB of text)
  const started = Date.now();
  const { sessionId, terminalId, start } = await startCommand(fast.client, `seq 1 ${lines}`);

  // The viewer attaches from the terminal's first byte and then reads
  // nothing until the command has ended: HTTP/2 flow control holds the broker back.
  const operator = new proto.TerminalOperator(`unix:${broker.ready.operator_socket}`, grpc.credentials.createInsecure());
  cleanups.push(async () => operator.close());
  const view = operator.Attach();
  cleanups.push(async () => view.cancel());
  const viewed = { chunks: [], end: 0, gaps: [], jumps: [], error: null };
  let reached = () => {};
  let target = Infinity;
  view.on('data', (frame) => {
    if (frame.gap) viewed.gaps.push(frame.gap);
    if (!frame.output) return;
    if (frame.output.offset !== viewed.end) viewed.jumps.push([viewed.end, frame.output.offset]);
    viewed.chunks.push(frame.output);
    viewed.end = frame.output.offset + frame.output.data.length;
    if (viewed.end >= target) reached();
  });
  view.on('error', (e) => { viewed.error = e; reached(); });
  view.write({ resume: { terminal_id: terminalId, offset: 0, viewer: 'attach' } });
  view.pause();

  let fastDone;
  const fastRead = readSession(fast.client, sessionId, start, { maxBytes: 1 << 20 })
    .then((r) => { fastDone = Date.now(); return r; });
  // The slow agent reads 128 KiB a call; after its first MiB it stops until
  // the fast one has everything, so the rest is long gone from the ring.
  const slowRead = readSession(slow.client, sessionId, start, {
    maxBytes: 128 << 10,
    beforePage: async (sofar) => { if (sofar >= 1 << 20 && !fastDone) await fastRead; },
  });
  const fastResult = await fastRead;
  const fastMs = fastDone - started;

  // The command has ended: its output's range in the terminal is audited.
  const exited = auditRecords(broker.stateDir)
    .find((r) => r.event === 'command_exited' && r.session_id === sessionId);
  assert.ok(exited?.output, `command_exited with its output range: ${JSON.stringify(exited)}`);
  assert.equal(exited.output.to - exited.output.from, expected.length);
  target = exited.output.to;
  const viewing = new Promise((resolve) => { reached = resolve; });
  if (viewed.end >= target) reached();
  view.resume();
  await withDeadline(viewing, 60000, () => `the viewer got to ${viewed.end} of ${target}`);
  const slowResult = await slowRead;
  const slowMs = Date.now() - started;

  for (const [who, got] of [['fast agent', fastResult], ['slow agent', slowResult]]) {
    assert.equal(got.gaps, 0, `${who}: no byte was a gap`);
    assert.equal(got.length, expected.length, `${who}: every byte; the last pages: ${got.last}`);
    assert.equal(got.sha256, expected.sha256, `${who}: every byte, in order`);
  }
  assert.equal(viewed.error, null, `the viewer's stream ended: ${viewed.error?.message}`);
  assert.deepEqual(viewed.gaps, [], 'the viewer was told of no gap');
  assert.deepEqual(viewed.jumps, [], 'each frame starts where the last one ended');
  const hash = createHash('sha256');
  let length = 0;
  for (const { offset, data } of viewed.chunks) {
    const from = Math.max(offset, exited.output.from) - offset;
    const to = Math.min(offset + data.length, exited.output.to) - offset;
    if (to <= from) continue;
    hash.update(data.subarray(from, to));
    length += to - from;
  }
  assert.equal(length, expected.length, 'the viewer: every byte of the command\'s output');
  assert.equal(hash.digest('hex'), expected.sha256, 'the viewer: every byte, in order');
  console.log(`measured: ${(expected.length / 1e6).toFixed(1)} MB; fast agent ${fastMs} ms ` +
    `(${fastResult.pages} pages), slow agent ${slowMs} ms (${slowResult.pages} pages)`);
});

// A TCP proxy between the agent and the broker that can cut every
// connection it carries and stop accepting new ones for a while.
class Proxy {
  static async start(targetPort) {
    const proxy = new Proxy(targetPort);
    await proxy.up();
    cleanups.push(() => proxy.close());
    return proxy;
  }

  constructor(targetPort) {
    this.targetPort = targetPort;
    this.port = 0;
    this.server = null;
    this.sockets = new Set();
    this.relayed = 0;      // bytes from the broker to the agent
    this.cuts = 0;
    this.cutAt = [];       // relayed byte counts to cut at, ascending
    this.downAfterCut = new Set();  // cut numbers after which it stops accepting
  }

  // Accepts connections (again), on the same port as before.
  async up() {
    this.server = net.createServer((agentSide) => this.relay(agentSide));
    this.server.listen(this.port, '127.0.0.1');
    await once(this.server, 'listening');
    this.port = this.server.address().port;
  }

  get isUp() { return this.server !== null; }

  relay(agentSide) {
    const brokerSide = net.connect(this.targetPort, '127.0.0.1');
    for (const [from, to] of [[agentSide, brokerSide], [brokerSide, agentSide]]) {
      this.sockets.add(from);
      from.on('error', () => to.destroy());
      from.on('close', () => { this.sockets.delete(from); to.destroy(); });
      from.on('data', (chunk) => {
        if (from === brokerSide) {
          this.relayed += chunk.length;
          if (this.cutAt.length && this.relayed >= this.cutAt[0]) {
            this.cutAt.shift();
            this.cut();  // this chunk never arrives: the reply is cut mid-way
            return;
          }
        }
        if (!to.write(chunk)) from.pause();
      });
      to.on('drain', () => from.resume());
    }
  }

  // Destroys every connection; stops accepting too when asked to.
  cut() {
    this.cuts++;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    if (this.downAfterCut.has(this.cuts)) this.down();
  }

  down() {
    this.server?.close();
    this.server = null;
  }

  async close() {
    this.cutAt = [];
    this.down();
    for (const socket of this.sockets) socket.destroy();
  }
}

test('an agent whose connection drops mid-read resumes from its cursor and gets every byte once', async () => {
  const broker = await startBroker();
  const proxy = await Proxy.start(broker.port);
  const agent = await agentOf(proxy.port, broker);
  const lines = 2600000;
  const expected = seqDigest(lines);  // 22.3 MB (19.7 MB of text)
  const { sessionId, start } = await startCommand(agent.client, `seq 1 ${lines}`);

  // Cut mid-reply three times; after the second cut nothing answers until
  // the agent has said so.
  proxy.cutAt = [3e6, 9e6, 15e6].map((n) => proxy.relayed + n);
  proxy.downAfterCut.add(2);
  const failures = [];
  const got = await readSession(agent.client, sessionId, start, {
    maxBytes: 1 << 20,
    onFailure: async (error, inARow) => {
      failures.push({ code: error.code, retriable: error.retriable, reason: error.details?.reason, proxyUp: proxy.isUp });
      assert.ok(inARow <= 2, `the agent does not recover: ${JSON.stringify(failures)}\n${agent.log()}`);
      if (!proxy.isUp && error.code !== 'PM_TERM_DISCONNECTED') await proxy.up();
    },
  });
  assert.equal(proxy.cuts, 3, `all three cuts happened (${proxy.relayed} bytes relayed)`);
  const dropped = failures.filter((f) => f.code === 'PM_TERM_DISCONNECTED');
  assert.equal(dropped.length, 3, `each cut call failed as disconnected: ${JSON.stringify(failures)}`);
  assert.ok(dropped.every((f) => f.retriable === true), 'and retriable');
  // While nothing listened: the broker is unreachable, which is retriable too.
  const unreachable = failures.filter((f) => f.code !== 'PM_TERM_DISCONNECTED');
  assert.deepEqual(unreachable, [{ code: 'PM_TERM_GUI_UNAVAILABLE', retriable: true, reason: 'broker_unreachable', proxyUp: false }]);
  assert.equal(got.gaps, 0);
  assert.equal(got.length, expected.length, `every byte exactly once; the last pages: ${got.last}`);
  assert.equal(got.sha256, expected.sha256, 'every byte, in order');
  assert.equal((agent.log().match(/event=bridge_connected/g) ?? []).length, 4,
    `the agent connected once and again after each cut:\n${agent.log()}`);

  // A cut while no call is in flight costs no failed call: the agent lets
  // the dead connection go, and the next call connects anew.
  const drops = (agent.log().match(/event=bridge_dropped/g) ?? []).length;
  proxy.cut();
  await agentSays(agent, /event=bridge_dropped/, drops + 1);
  const after = await readPage(agent.client, sessionId, start, 4096);
  assert.equal(after.success, true, JSON.stringify(after.error));
  assert.equal(after.result.running, false);
});

test('after a broker restart, reading a session of the old broker is a typed error', async () => {
  const stateDir = tempDir('tb-state-');
  cleanups.push(async () => removeDir(stateDir));
  const first = await startBroker({ stateDir });
  const proxy = await Proxy.start(first.port);
  const agent = await agentOf(proxy.port, first);
  const { sessionId, start } = await startCommand(agent.client, 'seq 1 20000', 20000);
  const before = await readPage(agent.client, sessionId, start, 4096);
  assert.equal(before.success, true, 'the old broker has the session');

  await first.stop();
  const second = await startBroker({ stateDir });
  proxy.targetPort = second.port;
  // The agent has let the old connection go by itself (no call was in flight).
  await agentSays(agent, /event=bridge_dropped/);
  const began = Date.now();
  const r = await readPage(agent.client, sessionId, start, 4096);
  assert.equal(r.success, false, JSON.stringify(r.result));
  assert.equal(r.isError, true);
  assert.equal(r.error.code, 'PM_TERM_NOT_FOUND', JSON.stringify(r.error));
  assert.ok(r.fallback?.strategy, 'the fallback says what to do next');
  assert.ok(Date.now() - began < 15000, `answered in ${Date.now() - began} ms, not a hang`);
  // The agent goes on: a new command runs on the new broker.
  const next = await terminal(agent.client, { action: 'execute', execution: { command: "printf 'after-%s\\n' restart" } });
  assert.equal(next.success, true, JSON.stringify(next.error));
  assert.match(next.result.stdout, /after-restart/);
});

// A reader that starts at once and waits at the live end reads across the
// two moments the broker's session view once lagged its terminal: the
// command's start (its C mark in the ring before the command tracker has
// taken it) and its end (the same for the D mark). A read at the start then
// returned nothing and a gap up to the terminal's end, though the ring held
// that output, and a read at the end returned the D mark and the next prompt
// as the command's output, the next read starting before its cursor.
test('a reader at a command\'s start and end gets exactly its output', async () => {
  const broker = await startBroker();
  const agent = await agentOf(broker.port, broker);
  const expected = seqDigest(20000);
  const runs = [];
  for (let run = 0; run < 8; run++) {
    const { sessionId, start } = await startCommand(agent.client, 'seq 1 20000', 1);
    const got = await readSession(agent.client, sessionId, start, { maxBytes: 8192 });
    runs.push({ gaps: got.gaps, lost: expected.length - got.length, same: got.sha256 === expected.sha256 });
  }
  assert.deepEqual(runs, runs.map(() => ({ gaps: 0, lost: 0, same: true })));
});
