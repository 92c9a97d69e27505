// Issue 25, "Operable as written": the broker listens on several addresses
// (--listen repeated), each with the same rules, and says so in its ready
// file and to `termbridge doctor`; a bad address among several stops it
// with exit 2, naming that address. Viewers outlive the broker's going away:
// `termbridge watch` redials a restarted broker and follows its terminals;
// `termbridge attach` and `watch` resume across a dropped connection with no
// byte lost or doubled; attach says a terminal is gone when the broker that
// ran it was killed and restarted; Ctrl-C ends either while it redials, and
// --reconnect=false keeps the old exit for scripts.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import {
  BROKER_BIN, Broker, CLI_BIN, connectAgent, expectExit, removeDir, runCli, tempDir, terminal,
  withDeadline,
} from '../lib/harness.mjs';

if (!CLI_BIN) throw new Error('set TERMBRIDGE_CLI_BIN (ctest does)');

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

// A running CLI process whose output is collected; `until` resolves once the
// collected text matches (checked on every chunk: an event, not a poll).
// With --json, `frames` are attach's parsed lines.
function startCli(stateDir, args) {
  const child = spawn(CLI_BIN, ['--state-dir', stateDir, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const proc = { child, stdout: '', stderr: '', frames: [], exited: once(child, 'exit') };
  proc.exited.catch(() => {});
  let partial = '';
  const waiters = [];
  const check = () => {
    for (const w of [...waiters]) {
      if (w.pattern.test(proc[w.stream])) {
        waiters.splice(waiters.indexOf(w), 1);
        clearTimeout(w.timer);
        w.resolve(proc[w.stream]);
      }
    }
  };
  child.stdout.on('data', (d) => {
    proc.stdout += d;
    const lines = (partial + d).split('\n');
    partial = lines.pop();
    for (const line of lines) if (line.startsWith('{')) proc.frames.push(JSON.parse(line));
    check();
  });
  child.stderr.on('data', (d) => { proc.stderr += d; check(); });
  proc.until = (pattern, stream = 'stdout', timeoutMs = 20000) => new Promise((resolve, reject) => {
    const w = { pattern, stream, resolve };
    w.timer = setTimeout(() => {
      waiters.splice(waiters.indexOf(w), 1);
      reject(new Error(`no ${pattern} on ${stream} after ${timeoutMs} ms:\n${proc[stream]}\n` +
        `stderr:\n${proc.stderr}`));
    }, timeoutMs);
    waiters.push(w);
    check();
  });
  // Resolves with [code, signal] once it exits, within `timeoutMs` of `signal`.
  proc.signal = async (signal, timeoutMs = 3000) => {
    const started = Date.now();
    child.kill(signal);
    const result = await withDeadline(proc.exited, timeoutMs,
      () => `${args.join(' ')} did not exit within ${timeoutMs} ms of ${signal}:\n${proc.stderr}`);
    return { result, ms: Date.now() - started };
  };
  proc.stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await proc.exited;
  };
  cleanups.push(proc.stop);
  return proc;
}

// A unix socket that forwards every connection to `target`; drop() cuts every
// connection open now, as a network that fails for a moment does.
async function startProxy(target, dir) {
  const socketPath = path.join(dir, 'proxy.sock');
  const open = new Set();
  const server = net.createServer((client) => {
    const upstream = net.connect(target);
    for (const s of [client, upstream]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => {});
    }
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  server.listen(socketPath);
  await once(server, 'listening');
  cleanups.push(() => new Promise((resolve) => {
    for (const s of open) s.destroy();
    server.close(resolve);
  }));
  return {
    path: socketPath,
    drops: 0,
    drop() {
      this.drops += 1;
      for (const s of [...open]) s.destroy();
    },
  };
}

// A broker on `stateDir` (kept across restarts); no viewer of its own unless
// `viewer` says so.
async function startBroker(stateDir, { listen = '127.0.0.1:0', viewer = 'required', extraArgs = [] } = {}) {
  const broker = await Broker.start({ stateDir, listen, viewer, extraArgs });
  cleanups.push(() => broker.stop('SIGKILL'));
  return broker;
}

async function agentFor(broker, { port = broker.port, env = {} } = {}) {
  const agent = await connectAgent({ port, tokenFile: broker.tokenFile, env });
  cleanups.push(() => agent.client.close());
  return agent;
}

test('the broker listens on every --listen address, and agents reach it through each', async () => {
  const dir = tempDir('tb-listen-');
  cleanups.push(() => removeDir(dir));
  const broker = await startBroker(dir, { viewer: 'none', extraArgs: ['--listen', '127.0.0.2:0'] });

  // The ready file: the first address where it always was, and all of them.
  const ready = broker.ready;
  assert.equal(ready.grpc_addresses.length, 2, JSON.stringify(ready));
  assert.match(ready.grpc_addresses[0], /^127\.0\.0\.1:\d+$/);
  assert.match(ready.grpc_addresses[1], /^127\.0\.0\.2:\d+$/);
  assert.equal(ready.grpc_address, ready.grpc_addresses[0]);
  assert.deepEqual(ready.grpc_ports, ready.grpc_addresses.map((a) => Number(a.split(':')[1])));
  assert.equal(ready.grpc_port, ready.grpc_ports[0]);

  // One agent through each address. The second port is bound on 127.0.0.2
  // only: an agent that answers there came in through the second address.
  const first = await agentFor(broker);
  const second = await agentFor(broker, {
    port: ready.grpc_ports[1], env: { PM_INTERACTIVE_TERMINAL_HOST_ALIAS: '127.0.0.2' },
  });
  for (const [agent, word] of [[first, 'first'], [second, 'second']]) {
    const r = await terminal(agent.client, {
      action: 'execute', execution: { command: `echo via-${word}` },
    });
    assert.equal(r.success, true, JSON.stringify(r.error));
    assert.equal(r.result.stdout, `via-${word}\n`);
  }
  const refused = await new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port: ready.grpc_ports[1] });
    s.on('connect', () => { s.destroy(); resolve(false); });
    s.on('error', () => resolve(true));
  });
  assert.equal(refused, true, 'the second port is not bound on the first address');

  // doctor names both, and with the same settings finds no difference.
  const env = { ...process.env, XDG_CONFIG_HOME: path.join(dir, 'no-config') };
  delete env.TERMBRIDGE_CONFIG;
  const report = await new Promise((resolve) => {
    const child = spawn(CLI_BIN, ['--state-dir', dir, '--json', 'doctor',
      'listen=127.0.0.1:0,127.0.0.2:0', 'window_command=none', 'require_viewer=false'],
    { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.on('exit', () => resolve(JSON.parse(out)));
  });
  const brokerCheck = report.checks.find((c) => c.id === 'broker');
  assert.ok(brokerCheck.message.includes(`agents at ${ready.grpc_addresses.join(', ')}`),
    brokerCheck.message);
  const config = report.checks.find((c) => c.id === 'config');
  assert.equal(config.status, 'ok', JSON.stringify(config));
  const reach = report.checks.find((c) => c.id.startsWith('container_reach'));
  if (reach && /listens on|listen address/.test(reach.message)) {
    for (const a of ready.grpc_addresses) assert.ok(reach.message.includes(a), reach.message);
  }
});

test('a bad address among several stops the broker with exit 2, naming it', async () => {
  const cases = [
    { args: ['--listen', '127.0.0.1:0', '--listen', '0.0.0.0:0'], names: /non-loopback address 0\.0\.0\.0:0 without TLS/ },
    { args: ['--listen', '127.0.0.1:0', '--listen', 'localhost'], names: /listen: 'localhost' must be host:port/ },
    { args: [], env: { TERMBRIDGE_LISTEN: '127.0.0.1:0, 127.0.0.3:99999' }, names: /'127\.0\.0\.3:99999'/ },
  ];
  for (const c of cases) {
    const dir = tempDir('tb-listen-bad-');
    const { code, log } = await expectExit(BROKER_BIN,
      [...c.args, '--state-dir', dir, '--window-command', 'none'],
      { env: { ...process.env, ...(c.env ?? {}) }, cleanups, dir, what: c.args.join(' ') });
    assert.equal(code, 2, log);
    assert.match(log, c.names);
  }
});

test('watch redials a broker that restarts and follows the new one\'s terminals', async () => {
  const dir = tempDir('tb-reconnect-');
  cleanups.push(() => removeDir(dir));
  const broker = await startBroker(dir);
  const port = broker.port;
  const watch = startCli(dir, ['watch']);
  const interrupted = startCli(dir, ['watch']);
  const scripted = startCli(dir, ['--reconnect=false', 'watch']);
  for (const w of [watch, interrupted, scripted]) await w.until(/watching every terminal/, 'stderr');

  const agent = await agentFor(broker);
  const before = await terminal(agent.client, {
    action: 'execute', execution: { command: "printf 'before-%s\\n' 1" },
  });
  assert.equal(before.success, true, JSON.stringify(before.error));
  await watch.until(/before-1/);
  await agent.client.close();

  await broker.stop('SIGTERM');
  await watch.until(/broker gone, reconnecting…/, 'stderr');
  await interrupted.until(/broker gone, reconnecting…/, 'stderr');
  // Without --reconnect, watch ends with the broker, as it always did.
  await withDeadline(scripted.exited, 10000, () => `watch --reconnect=false kept running:\n${scripted.stderr}`);
  assert.doesNotMatch(scripted.stderr, /reconnecting/);
  // Ctrl-C while it redials ends watch at once, with 0 as always.
  const { result: [code], ms } = await interrupted.signal('SIGINT');
  assert.equal(code, 0, interrupted.stderr);
  assert.ok(ms < 1500, `watch took ${ms} ms to stop`);
  assert.equal(watch.child.exitCode, null, 'watch keeps trying while no broker answers');

  // The same state dir, socket and port: watch reconnects and lists again,
  // and as the one viewer it lets the new broker's command run.
  const again = await startBroker(dir, { listen: `127.0.0.1:${port}` });
  await watch.until(/broker gone, reconnecting….*\n(.*\n)*termbridge > reconnected to the broker\n(.*\n)*termbridge > watching every terminal \(0 open\)/, 'stderr');
  const agent2 = await agentFor(again);
  const after2 = await terminal(agent2.client, {
    action: 'execute', execution: { command: "printf 'after-%s\\n' 2" },
  });
  assert.equal(after2.success, true, JSON.stringify(after2.error));
  const t = after2.identity.terminal_id;
  await watch.until(new RegExp(`^${t} \\| after-2$`, 'm'));
  const { result: [end] } = await watch.signal('SIGINT');
  assert.equal(end, 0, watch.stderr);
});

test('attach and watch resume across a dropped connection with no byte lost or doubled', async () => {
  const dir = tempDir('tb-drop-');
  cleanups.push(() => removeDir(dir));
  const broker = await startBroker(dir, { viewer: 'watch' });
  const agent = await agentFor(broker);
  const first = await terminal(agent.client, { action: 'execute', execution: { command: 'echo ready' } });
  assert.equal(first.success, true, JSON.stringify(first.error));
  const t = first.identity.terminal_id;

  const proxy = await startProxy(path.join(dir, 'operator.sock'), dir);
  const dropped = startCli(dir, ['--operator-socket', proxy.path, '--json', 'attach', t]);
  const direct = startCli(dir, ['--json', 'attach', t]);
  const watch = startCli(dir, ['--operator-socket', proxy.path, '--json', 'watch']);
  await dropped.until(/ready/);
  await direct.until(/ready/);
  await watch.until(/ready/);

  // 3000 numbered lines over about 1.5 s; the connection drops every 150 ms
  // while they come. (One awk program: the policy reads a plain command.)
  const LINES = 3000;
  const run = terminal(agent.client, {
    action: 'execute',
    execution: {
      command: `awk 'BEGIN { for (i = 1; i <= ${LINES}; i++) { print "line-" i; fflush(); ` +
        'if (i % 100 == 0) system("sleep 0.05") } print "done-" "lines" }\'',
    },
  });
  let finished = false;
  run.finally(() => { finished = true; });
  while (!finished) {
    await new Promise((resolve) => setTimeout(resolve, 150));
    if (!finished) proxy.drop();
  }
  const result = await run;
  assert.equal(result.success, true, JSON.stringify(result.error));
  await dropped.until(/done-lines\\r\\n/);
  await direct.until(/done-lines\\r\\n/);
  await watch.until(/done-lines\\r\\n/);

  const outputs = (p) => p.frames.filter((f) => f.type === 'output' && f.terminal_id === t);
  // What each attach printed up to the end of the run (a prompt may follow).
  const joined = (p) => {
    const all = outputs(p).map((f) => f.data).join('');
    return all.slice(0, all.indexOf('done-lines\r\n') + 'done-lines\r\n'.length);
  };
  const reconnects = dropped.frames.filter((f) => f.type === 'local_notice' && /^reconnected; resuming at byte \d+$/.test(f.text));
  assert.ok(proxy.drops >= 3 && reconnects.length >= 1,
    `${proxy.drops} drops, ${reconnects.length} reconnects: ${JSON.stringify(dropped.frames.filter((f) => f.type !== 'output'))}`);
  assert.ok(dropped.frames.some((f) => f.type === 'local_notice' && f.text.startsWith('broker gone, reconnecting…')));
  // Each output frame starts where the one before ended, across every reconnect.
  const frames = outputs(dropped);
  for (let i = 1; i < frames.length; i++) {
    assert.equal(frames[i].offset, frames[i - 1].offset + Buffer.byteLength(frames[i - 1].data),
      `frame ${i} after a drop`);
  }
  assert.ok(!dropped.frames.some((f) => f.type === 'gap'), 'nothing skipped');
  // The same bytes as an attach that never dropped: every line once, in order.
  const sha = (s) => createHash('sha256').update(s).digest('hex');
  assert.equal(sha(joined(dropped)), sha(joined(direct)));
  const numbers = [...joined(dropped).matchAll(/line-(\d+)\r\n/g)].map((m) => Number(m[1]));
  assert.deepEqual(numbers, Array.from({ length: LINES }, (_, i) => i + 1));
  // watch follows the terminal again from where each dropped stream stopped.
  assert.match(watch.stderr, /broker gone, reconnecting…[^]*reconnected to the broker/);
  const watched = outputs(watch);
  for (let i = 1; i < watched.length; i++) {
    assert.equal(watched[i].offset, watched[i - 1].offset + Buffer.byteLength(watched[i - 1].data),
      `watch's frame ${i} after a drop`);
  }
  assert.equal(sha(joined(watch)), sha(joined(direct)));
  console.log(`attach across drops: ${proxy.drops} drops, ${reconnects.length} resumes, ` +
    `${Buffer.byteLength(joined(dropped))} bytes, sha256 ${sha(joined(dropped)).slice(0, 16)} on both`);
});

test('attach after the broker was killed and restarted says the terminal is gone', async () => {
  const dir = tempDir('tb-gone-');
  cleanups.push(() => removeDir(dir));
  const broker = await startBroker(dir, { viewer: 'watch' });
  const port = broker.port;
  const agent = await agentFor(broker);
  const r = await terminal(agent.client, { action: 'execute', execution: { command: 'echo alive' } });
  assert.equal(r.success, true, JSON.stringify(r.error));
  const t = r.identity.terminal_id;
  const attach = startCli(dir, ['attach', t]);
  const interrupted = startCli(dir, ['attach', t]);
  const scripted = startCli(dir, ['--reconnect=false', 'attach', t]);
  for (const a of [attach, interrupted, scripted]) await a.until(/alive/);

  await broker.stop('SIGKILL');  // its terminals end with it
  await attach.until(/broker gone, reconnecting…/);
  await interrupted.until(/broker gone, reconnecting…/);
  const [scriptedCode] = await withDeadline(scripted.exited, 10000, () => 'attach --reconnect=false kept running');
  assert.equal(scriptedCode, 1, scripted.stderr);
  assert.match(scripted.stderr, /no broker on/);
  const { result: [, signal], ms } = await interrupted.signal('SIGINT');
  const [code] = await interrupted.exited;
  assert.ok(code === 130 || signal === 'SIGINT', `exit ${code} ${signal}`);
  assert.ok(ms < 1500, `attach took ${ms} ms to stop`);

  await startBroker(dir, { listen: `127.0.0.1:${port}` });
  const [goneCode] = await withDeadline(attach.exited, 20000, () => `attach did not end:\n${attach.stdout}\n${attach.stderr}`);
  assert.equal(goneCode, 1, attach.stderr);
  assert.match(attach.stderr, new RegExp(`terminal ${t} is gone: the broker restarted.*termbridge replay ${t}`));
});
