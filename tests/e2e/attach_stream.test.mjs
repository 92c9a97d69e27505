// The broker's streaming contract over a real gRPC socket: the handshake
// names both protocol versions on a mismatch and reports limits; a client that
// reconnects with its last offset gets every byte still in the ring exactly
// once; a slow attachment never stalls the PTY: it reads what the ring dropped from the
// terminal's recording (without one, it gets an explicit gap).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import { Broker, grpcOutputMatches, withDeadline } from '../lib/harness.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const proto = grpc.loadPackageDefinition(protoLoader.loadSync(
  path.join(ROOT, 'proto/termbridge/v1/broker.proto'),
  { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true },
)).termbridge.v1;

const brokers = [];
after(async () => { for (const b of brokers) await b.stop(); });

async function connect(extraArgs = [], options = {}) {
  const broker = await Broker.start({ extraArgs, ...options });
  brokers.push(broker);
  const client = new proto.TerminalBroker(`127.0.0.1:${broker.port}`, grpc.credentials.createInsecure());
  const auth = new grpc.Metadata();
  auth.set('authorization', `Bearer ${fs.readFileSync(broker.tokenFile, 'utf8').trim()}`);
  const call = (method, request) => new Promise((resolve, reject) => {
    client[method](request, auth, (err, res) => (err ? reject(err) : resolve(res)));
  });
  return { broker, client, auth, call };
}

function expectedSeq(n) {
  let s = '';
  for (let i = 1; i <= n; i++) s += `${i}\r\n`;
  return s;
}

test('handshake reports limits and capabilities; a version mismatch names both versions', async () => {
  const { call } = await connect(['--max-input-bytes', '1234']);
  const ok = await call('Handshake', { protocol_version: 1 });
  assert.equal(ok.protocol_version, 1);
  assert.match(ok.runtime_session_id, /^rs_/);
  assert.ok(ok.capabilities.includes('attach'));
  assert.equal(ok.limits.max_input_bytes, 1234);
  await assert.rejects(call('Handshake', { protocol_version: 99 }), (err) =>
    /agent speaks 99, broker speaks 1/.test(err.details) && err.metadata.get('termbridge-error-bin').length === 1);
});

test('a client that reconnects with its last offset gets every byte exactly once', async () => {
  const { client, auth, call } = await connect();
  // The shell exits after the command, so the terminal's stream is finite.
  const started = await call('Execute', { command: 'seq 1 300000; exit', wait_ms: 10000 });
  assert.equal(started.exit.running, false);
  let raw = Buffer.alloc(0);
  for (let cursor = 0; ;) {
    const r = await call('ReadOutput', { terminal_id: started.terminal_id, cursor, max_bytes: 1 << 20, format: 'OUTPUT_FORMAT_RAW' });
    if (r.output.raw.length === 0) break;
    raw = Buffer.concat([raw, r.output.raw]);
    cursor = r.output.next_cursor;
  }
  assert.ok(raw.toString().includes(expectedSeq(300000)), 'the terminal holds every line');
  const expected = raw.toString();

  // First attachment: read about a third (frames are at most 1 MiB, the output
  // ~2 MiB), then drop the stream.
  let first = Buffer.alloc(0);
  await new Promise((resolve) => {
    const stream = client.Attach(auth);
    stream.on('data', (frame) => {
      assert.ok(!frame.gap, 'no gap: everything is still in the ring');
      if (frame.output) first = Buffer.concat([first, frame.output.data]);
      if (first.length > expected.length / 3) stream.cancel();
    });
    stream.on('error', resolve);
    stream.on('end', resolve);
    stream.write({ resume: { terminal_id: started.terminal_id, offset: 0 } });
  });
  assert.ok(first.length > 0 && first.length < expected.length);

  // Reconnect from exactly where we stopped.
  let rest = Buffer.alloc(0);
  let firstOffset = null;
  let exited = null;
  await new Promise((resolve, reject) => {
    const stream = client.Attach(auth);
    stream.on('data', (frame) => {
      if (frame.output) {
        if (firstOffset === null) firstOffset = frame.output.offset;
        rest = Buffer.concat([rest, frame.output.data]);
      }
      if (frame.exited) exited = frame.exited;
    });
    stream.on('error', reject);
    stream.on('end', resolve);
    stream.write({ resume: { terminal_id: started.terminal_id, offset: first.length } });
  });
  assert.equal(firstOffset, first.length);
  assert.equal(Buffer.concat([first, rest]).toString(), expected);
  assert.equal(exited.running, false);
});

// A slow attachment (HTTP/2 flow control pushes back on the broker) while
// 400,000 lines go through a 64 KiB ring: the PTY is never stalled, and the
// frames it gets in the end.
async function slowAttachment(extraArgs) {
  const { client, auth, call } = await connect(['--ring-bytes', '65536', ...extraArgs]);
  const opened = await call('Execute', { command: 'echo armed ready; read go; seq 1 400000; echo done-marker; exit', wait_ms: 0 });
  await grpcOutputMatches(call, opened.terminal_id, /\narmed ready\n/);
  const stream = client.Attach(auth);
  const frames = [];
  stream.on('data', (frame) => frames.push(frame));
  const ended = new Promise((resolve, reject) => { stream.on('end', resolve); stream.on('error', reject); });
  stream.write({ resume: { terminal_id: opened.terminal_id, offset: 0 } });
  stream.pause();  // the slow reader: HTTP/2 flow control pushes back on the broker
  stream.write({ input: Buffer.from('\n') });

  // The command finishes while the attachment is not reading: the PTY was never stalled.
  const done = await call('ReadOutput', { terminal_id: opened.terminal_id, wait_ms: 30000, tail: true, max_bytes: 4096 });
  // Each read returns as soon as there is output, so bound the loop by time, not count.
  for (const deadline = Date.now() + 60000; done.exit.running && Date.now() < deadline;) {
    Object.assign(done, await call('ReadOutput', { terminal_id: opened.terminal_id, wait_ms: 1000, tail: true, max_bytes: 4096 }));
  }
  assert.equal(done.exit.running, false, 'the command ran to completion without a reader');
  assert.match(done.output.text, /done-marker/);

  stream.resume();
  await ended;
  assert.ok(frames.at(-1).exited, 'the stream ends with the exit');
  return frames;
}

test('a slow attachment never stalls the PTY and still gets every byte from the recording', async () => {
  const frames = await slowAttachment([]);
  assert.deepEqual(frames.filter((f) => f.gap), [], 'nothing was lost to the slow attachment');
  const all = Buffer.concat(frames.filter((f) => f.output).map((f) => f.output.data)).toString();
  assert.ok(all.includes(`${expectedSeq(400000)}done-marker`), 'every line, in order');
});

test('without recording, a slow attachment gets an explicit gap instead of stalling the PTY', async () => {
  const frames = await slowAttachment(['--record', 'false']);
  const gaps = frames.filter((f) => f.gap);
  assert.ok(gaps.length >= 1, 'the slow attachment was told what it missed');
  // After each gap the output continues exactly where the gap ends.
  for (let i = 0; i < frames.length - 1; i++) {
    if (frames[i].gap && frames[i + 1].output) assert.equal(frames[i + 1].output.offset, frames[i].gap.to);
  }
  const tail = Buffer.concat(frames.filter((f) => f.output).map((f) => f.output.data)).toString();
  assert.match(tail, /done-marker/);
});

// The error an Attach stream ends with: its PM_TERM code and message.
function attachError(err) {
  const [bin] = err.metadata?.get('termbridge-error-bin') ?? [];
  const detail = bin ? proto.ErrorDetail.deserialize?.(bin) : null;
  return { code: err.code, details: err.details, pm: detail?.code ?? err.details.split(':')[0] };
}

// Resolves once a process named `comm` runs in the terminal (its
// environment carries TERMBRIDGE_TERMINAL_ID); polls /proc, on this host.
async function programRuns(terminalId, comm) {
  const marker = `TERMBRIDGE_TERMINAL_ID=${terminalId}\0`;
  for (;;) {
    for (const pid of fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
      try {
        if (fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== comm) continue;
        if (fs.readFileSync(`/proc/${pid}/environ`, 'latin1').includes(marker)) return;
      } catch { /* gone meanwhile, or not ours */ }
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// Runs one Attach: sends `frames` after resume, collects until it ends.
function attachOnce(client, auth, terminalId, frames, { offset = 0 } = {}) {
  return new Promise((resolve) => {
    const stream = client.Attach(auth);
    const got = [];
    stream.on('data', (f) => got.push(f));
    stream.on('error', (err) => resolve({ got, error: attachError(err) }));
    stream.on('end', () => resolve({ got, error: null }));
    stream.write({ resume: { terminal_id: terminalId, offset } });
    for (const f of frames) stream.write(f);
  });
}

test('bad resize and resume frames are typed errors, and the broker lives on', async () => {
  const { client, auth, call } = await connect();
  const opened = await call('Execute', { command: 'sleep 60', wait_ms: 0 });
  const t = opened.terminal_id;
  // 65535 x 65535 once made the next screen snapshot allocate ~150 GB and crash the broker.
  const huge = await attachOnce(client, auth, t, [{ resize: { cols: 65535, rows: 65535 } }]);
  assert.ok(huge.error, 'the stream ends with an error');
  assert.equal(huge.error.pm, 'PM_TERM_INVALID_PAYLOAD', huge.error.details);
  const zero = await attachOnce(client, auth, t, [{ resize: { cols: 0, rows: 24 } }]);
  assert.equal(zero.error?.pm, 'PM_TERM_INVALID_PAYLOAD');
  const screen = await call('ReadOutput', { terminal_id: t, format: 'OUTPUT_FORMAT_SCREEN' });
  assert.ok(screen.screen || screen.output, 'the broker still answers');
  // An offset this terminal never produced would silently skip output.
  const ahead = await attachOnce(client, auth, t, [], { offset: 1e12 });
  assert.equal(ahead.error?.pm, 'PM_TERM_INVALID_PAYLOAD', JSON.stringify(ahead.error));
  assert.match(ahead.error.details, /past the end/);
  await call('Terminate', { terminal_id: t });
});

test('input a program does not read waits without blocking the broker, within a bound', async () => {
  const { broker, client, auth, call } = await connect();
  // `sleep` never reads its input (the tty out of canonical mode, so no line
  // limit holds bytes back). One process group from the start: the shell
  // itself is never in the foreground with the tty out of canonical mode,
  // which is how its line editor reads (and agent input is refused then).
  const opened = await call('Execute', {
    command: "sh -c 'stty -icanon -echo; exec sleep 60'", wait_ms: 0,
  });
  // Until sh has become sleep, sh holds the terminal (input to it needs a
  // person): wait for the exec.
  await withDeadline(programRuns(opened.terminal_id, 'sleep'), 10000,
    () => `no sleep in terminal ${opened.terminal_id}`);
  const stream = client.Attach(auth);
  let error = null;
  const ended = new Promise((resolve) => {
    stream.on('error', (err) => { error = attachError(err); resolve(); });
    stream.on('end', resolve);
  });
  stream.on('data', () => {});
  stream.write({ resume: { terminal_id: opened.terminal_id, offset: 0 } });
  // 2 MiB in 64 KiB chunks: the PTY takes a few KiB, the broker queues up to
  // 1 MiB more, and refuses the chunk that would go past that.
  for (let i = 0; i < 32; i++) stream.write({ input: Buffer.alloc(65536, 'x') });
  await withDeadline(ended, 30000, () => 'the stream did not report the unread input');
  assert.equal(error?.pm, 'PM_TERM_TIMEOUT', JSON.stringify(error));
  assert.match(error.details, /has not read its input/);
  // The waiting bytes held no broker thread: other calls answer at once.
  const before = Date.now();
  await call('List', {});
  assert.ok(Date.now() - before < 2000, `List took ${Date.now() - before} ms`);
  // Execute into the same terminal types its line as input to the running
  // program: past the bound it is refused the same way, not "disconnected".
  let refused = null;
  for (let i = 0; i < 64 && !refused; i++) {
    await call('Execute', { terminal_id: opened.terminal_id, command: `: ${'y'.repeat(32 * 1024)}`, wait_ms: 0 })
      .catch((err) => { refused = attachError(err); });
  }
  assert.equal(refused?.pm, 'PM_TERM_TIMEOUT', JSON.stringify(refused));
  assert.match(refused.details, /has not read its input/);
  await call('Terminate', { terminal_id: opened.terminal_id });
  await broker.stop();  // input that waits when the program ends must not hold up SIGTERM
});

test('a viewer that goes away stops counting at once; a stream without resume does not block SIGTERM', async () => {
  // No `termbridge watch`: the test's own attach is the only viewer.
  const { broker, client, auth, call } = await connect([], { viewer: 'none' });
  const opened = await call('Execute', { command: 'sleep 60', wait_ms: 0 });
  const operator = new proto.TerminalOperator(`unix:${broker.ready.operator_socket}`, grpc.credentials.createInsecure());
  const viewers = async () => {
    const listed = await new Promise((resolve, reject) =>
      operator.ListAll({}, (err, res) => (err ? reject(err) : resolve(res))));
    return listed.sessions.find((s) => s.terminal_id === opened.terminal_id)?.viewers ?? 0;
  };
  const view = operator.Attach();
  view.on('error', () => {});
  view.on('data', () => {});
  view.write({ resume: { terminal_id: opened.terminal_id, offset: 0, viewer: 'test' } });
  for (const deadline = Date.now() + 20000; (await viewers()) < 1;) {
    assert.ok(Date.now() < deadline, 'the attach never counted as a viewer');
    await new Promise((r) => setTimeout(r, 50));
  }
  view.cancel();  // the tab closes, the CLI exits: the terminal prints nothing meanwhile
  for (const deadline = Date.now() + 10000; (await viewers()) > 0;) {
    assert.ok(Date.now() < deadline, 'a closed viewer still counts: commands would run unwatched');
    await new Promise((r) => setTimeout(r, 50));
  }
  // An agent stream that never sends resume, then the client leaves.
  const silent = client.Attach(auth);
  silent.on('error', () => {});
  silent.cancel();
  operator.close();
  await broker.stop();  // fails the test (after 30 s) if SIGTERM does not end the broker
});
