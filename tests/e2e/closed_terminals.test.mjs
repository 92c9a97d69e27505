// A closed terminal leaves nothing behind (issue 22; docs/security.md): the
// processes a command started in it end with it however they detached
// (setsid, nohup, a double fork, disown), a broker restarted after a SIGKILL
// ends what its predecessor's terminals left running, and opening and closing
// 2,000 terminals leaves the broker's memory and descriptors where they were.
// Processes are checked by pid and start time (/proc/<pid>/stat field 22),
// written to canary files by the commands themselves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import grpc from '@grpc/grpc-js';
import protoLoader from '@grpc/proto-loader';
import {
  Broker, BROKER_BIN, CLI_BIN, PERMISSIVE_POLICY, connectAgent, removeDir, tempDir, terminal,
  waitForJsonFile, withDeadline,
} from '../lib/harness.mjs';
import { cleanupList } from '../security/lib.mjs';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const cleanups = cleanupList();

// { state, start } of `pid` from /proc/<pid>/stat, or null when it is gone.
function stat(pid) {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0], ppid: fields[1], start: fields[19] };
  } catch {
    return null;
  }
}

// True while the process the canary recorded runs (a zombie has ended; a
// pid reused by another process is not it).
function running(canary) {
  const s = stat(canary.pid);
  return s !== null && s.start === canary.start && !/^[ZX]$/.test(s.state);
}

// The canaries `names` in `dir`, each once its file holds a pid (up to 20 s).
async function canaries(dir, names) {
  const out = [];
  for (const name of names) {
    const file = path.join(dir, `${name}.pid`);
    const deadline = Date.now() + 20000;
    for (;;) {
      const pid = Number(fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim() : NaN);
      const s = pid > 0 ? stat(pid) : null;
      if (s) {
        out.push({ name, pid, start: s.start });
        break;
      }
      if (Date.now() > deadline) throw new Error(`no live pid in ${file}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  return out;
}

// A command line that starts one escapee per way out, each writing its pid
// to <dir>/<name>.pid before it becomes `sleep 1000`, and returns at once.
function escapees(dir) {
  const as = (name) => `sh -c 'echo $$ > ${dir}/${name}.pid; exec sleep 1000'`;
  return [
    `setsid ${as('setsid')} </dev/null >/dev/null 2>&1 &`,
    `nohup ${as('nohup')} </dev/null >/dev/null 2>&1 &`,
    `( (${as('fork')} </dev/null >/dev/null 2>&1 &) & )`,
    `${as('disown')} </dev/null >/dev/null 2>&1 & disown`,
    'echo started',
  ].join('; ').replace(/&;/g, '&');
}
const NAMES = ['setsid', 'nohup', 'fork', 'disown'];

function killAll(list) {
  for (const c of list) {
    if (running(c)) process.kill(c.pid, 'SIGKILL');
  }
}

async function runEscapees(client, work) {
  const r = await terminal(client, {
    action: 'execute', execution: { command: escapees(work) }, runtime: { cwd: work, timeout_ms: 20000 },
  });
  assert.equal(r.success, true, JSON.stringify(r));
  const list = await canaries(work, NAMES);
  cleanups.push(async () => killAll(list));
  for (const c of list) assert.ok(running(c), `${c.name} (${c.pid}) never ran`);
  return { terminalId: r.identity.terminal_id, list };
}

test('processes that left the terminal end when it is terminated or closed', async () => {
  const broker = await Broker.start();
  cleanups.push(() => broker.stop());
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => agent.client.close());

  // The agent terminates its terminal.
  const work = tempDir('tb-closed-');
  cleanups.push(async () => removeDir(work));
  const first = await runEscapees(agent.client, work);
  const t = await terminal(agent.client, { action: 'terminate', target: { terminal_id: first.terminalId } });
  assert.equal(t.success, true, JSON.stringify(t));
  for (const c of first.list) {
    assert.equal(running(c), false, `${c.name} (pid ${c.pid}) outlived terminate`);
  }
  // What the command printed is still readable from the closed terminal.
  const out = await terminal(agent.client, { action: 'read_output', target: { terminal_id: first.terminalId } });
  assert.equal(out.success, true, JSON.stringify(out));
  assert.match(out.result.stdout, /started/);

  // An operator closes another one.
  const work2 = tempDir('tb-closed-');
  cleanups.push(async () => removeDir(work2));
  const second = await runEscapees(agent.client, work2);
  await run(CLI_BIN, ['--state-dir', broker.stateDir, 'close', second.terminalId]);
  for (const c of second.list) {
    assert.equal(running(c), false, `${c.name} (pid ${c.pid}) outlived the operator's close`);
  }
});

// A broker in `stateDir` (kept across restarts), no viewer required.
async function brokerIn(stateDir) {
  const readyFile = path.join(stateDir, 'ready.json');
  fs.rmSync(readyFile, { force: true });
  const child = spawn(BROKER_BIN, [
    '--listen', '127.0.0.1:0', '--state-dir', stateDir, '--ready-file', readyFile,
    '--window-command', 'none', '--require-viewer', 'false',
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  const broker = { child, log: '', exited: new Promise((resolve) => child.once('exit', resolve)) };
  child.stderr.on('data', (d) => { broker.log += d; });
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await broker.exited;
  });
  try {
    broker.ready = await waitForJsonFile(readyFile, 15000, child);
  } catch (e) {
    e.message += `\nbroker stderr:\n${broker.log}`;
    throw e;
  }
  return broker;
}

test('a broker restarted after SIGKILL ends what its predecessor left running', async () => {
  const stateDir = tempDir('tb-state-');
  cleanups.push(async () => removeDir(stateDir));
  fs.writeFileSync(path.join(stateDir, 'policy.toml'), PERMISSIVE_POLICY);
  const first = await brokerIn(stateDir);
  const agent = await connectAgent({ port: first.ready.grpc_port, tokenFile: first.ready.agent_token_file });
  const work = tempDir('tb-crash-');
  cleanups.push(async () => removeDir(work));
  const { list } = await runEscapees(agent.client, work);
  await agent.client.close();
  // The shells themselves are left too: every process of the terminal.
  first.child.kill('SIGKILL');
  await first.exited;
  for (const c of list) assert.ok(running(c), `${c.name} ended with the broker already`);

  const second = await brokerIn(stateDir);
  // Ended before the new broker said it is ready.
  for (const c of list) {
    assert.equal(running(c), false, `${c.name} (pid ${c.pid}) outlived the restart:\n${second.log}`);
  }
  assert.match(second.log, /event=leftover_processes terminal_id=t_\S+ broker_pid=\d+ pids=[1-9]\d* ended=true/);
  const audit = fs.readFileSync(second.ready.audit_log, 'utf8');
  assert.match(audit, /"event":"leftover_processes"/);
  second.child.kill('SIGTERM');
  await second.exited;
});

// The broker's resident memory (kB) and open descriptors.
function usage(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return {
    rssKb: Number(status.match(/VmRSS:\s+(\d+)/)[1]),
    fds: fs.readdirSync(`/proc/${pid}/fd`).length,
  };
}

test('2,000 terminals opened and closed leave the broker near its baseline', async () => {
  const broker = await Broker.start({ viewer: 'none' });
  cleanups.push(() => broker.stop());
  const proto = grpc.loadPackageDefinition(protoLoader.loadSync(
    path.join(ROOT, 'proto/termbridge/v1/broker.proto'),
    { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true },
  )).termbridge.v1;
  const client = new proto.TerminalBroker(`127.0.0.1:${broker.port}`, grpc.credentials.createInsecure());
  cleanups.push(async () => client.close());
  const auth = new grpc.Metadata();
  auth.set('authorization', `Bearer ${fs.readFileSync(broker.tokenFile, 'utf8').trim()}`);
  const call = (method, request) => new Promise((resolve, reject) => {
    client[method](request, auth, (err, res) => (err ? reject(err) : resolve(res)));
  });
  // One terminal: opened (its shell prints a prompt), every 4th one also
  // prints 32 KiB, then closed.
  const cycle = async (i) => {
    const opened = await call('Execute', { open_only: true });
    const id = opened.terminal_id;
    if (i % 4 === 0) {
      await call('Execute', {
        terminal_id: id, command: "head -c 32768 /dev/zero | tr '\\0' x; echo", wait_ms: 10000,
      });
    }
    await call('Terminate', { terminal_id: id });
  };
  const cycles = async (n, parallel) => {
    let next = 0;
    await Promise.all(Array.from({ length: parallel }, async () => {
      while (next < n) {
        next += 1;
        await cycle(next);
      }
    }));
  };
  const pid = broker.child.pid;
  await cycles(100, 8);  // warm-up: thread pools, allocator arenas, caches
  const before = usage(pid);
  const started = Date.now();
  await withDeadline(cycles(2000, 8), 240000, () => 'the 2,000 terminals took over 240 s');
  const seconds = (Date.now() - started) / 1000;
  const after = usage(pid);
  console.log(`2,000 terminals in ${seconds.toFixed(1)} s: broker VmRSS ${before.rssKb} -> ${after.rssKb} kB, ` +
    `fds ${before.fds} -> ${after.fds}`);
  assert.ok(after.fds <= before.fds + 20, `descriptors grew from ${before.fds} to ${after.fds}`);
  assert.ok(after.rssKb <= before.rssKb + 30 * 1024,
    `VmRSS grew from ${before.rssKb} to ${after.rssKb} kB`);
  // No terminal process was left either.
  const children = fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p) && stat(p)?.ppid === String(pid));
  assert.deepEqual(children, [], 'the broker still has children');
});
