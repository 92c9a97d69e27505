// The README's run command: deploy/up.sh --detach leaves a broker and an agent
// serving MCP over Streamable HTTP, and an MCP client connected to that agent
// runs `seq 1 20000` and reads back every line, in order. Every client
// configuration up.sh prints (Claude Code, Claude Desktop, Cursor, VS Code,
// Codex; HTTP and stdio) is read as its host reads it and used by the
// official SDK client (tests/support/mcp_client_config.mjs). With
// --container=podman, up.sh finds the compose network's bridge address,
// serves the broker there and on loopback only, and the same printed
// configurations work against the agent in compose (stdio through
// `podman exec -i`). Docker: tests/e2e/docker.test.mjs.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import net from 'node:net';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { exerciseEveryClient } from '../support/mcp_client_config.mjs';
import {
  BROKER_BIN, connectHttpAgent, pidsMentioning, readAll, removeDir, startWatch, tempDir, terminal,
  waitForJsonFile, waitPidGone, withDeadline,
} from '../lib/harness.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BUILD_DIR = path.resolve(path.dirname(BROKER_BIN), '..');
const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

// up.sh's environment: everything on port 0 under `stateDir`, run from the tested build.
function upEnv(stateDir) {
  return {
    ...process.env,
    TERMBRIDGE_STATE_DIR: stateDir,
    TERMBRIDGE_LISTEN: '127.0.0.1:0',
    TERMBRIDGE_AGENT_HTTP: '127.0.0.1:0',
    TERMBRIDGE_CONSOLE: '127.0.0.1:0',
    TERMBRIDGE_BUILD_DIR: BUILD_DIR,
  };
}

test('up.sh in a container with TERMBRIDGE_ALLOW_IN_CONTAINER=false stops and prints why', async () => {
  const stateDir = tempDir('tb-up-refused-');
  cleanups.push(async () => removeDir(stateDir));
  const child = spawn(path.join(ROOT, 'deploy/up.sh'), ['--detach', '--no-build'], {
    env: { ...upEnv(stateDir), container: 'docker', TERMBRIDGE_ALLOW_IN_CONTAINER: 'false' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c) => { out += c; });
  child.stderr.on('data', (c) => { err += c; });
  const [code] = await withDeadline(once(child, 'exit'), 30000,
    () => `up.sh did not return within 30 s:\n${out}\n${err}`);
  assert.equal(code, 1, `up.sh exit code:\n${out}\n${err}`);
  // The reason is on the screen, not only in the log file.
  assert.match(err, /up: broker exited; its last log lines/);
  assert.match(err, /refusing to run inside a container \(.*environment: container=docker/);
  assert.doesNotMatch(out, /termbridge is up/);
  assert.deepEqual(pidsMentioning(stateDir), [], 'nothing left running');
});

test('deploy/up.sh --detach serves MCP over HTTP and runs seq 1 20000 losslessly', async () => {
  const stateDir = tempDir('tb-up-');
  // However the test ends, nothing up.sh started (every process names the
  // state dir: --state-dir, --ready-file) outlives it, nor the dir.
  cleanups.push(async () => {
    const left = pidsMentioning(stateDir);
    for (const { pid } of left) {
      try { process.kill(pid, 'SIGTERM'); } catch { /* already gone */ }
    }
    for (const { pid } of left) {
      if (await waitPidGone(pid)) continue;
      try { process.kill(pid, 'SIGKILL'); } catch { /* already gone */ }
      await waitPidGone(pid);
    }
    removeDir(stateDir);
  });
  // --no-build: the suite runs on the tree tests/run.sh just built; a build
  // here would relink binaries under the tests running beside this one.
  // As on a machine that is a container (a dev container, a CI sandbox),
  // without the test rig's TERMBRIDGE_ALLOW_IN_CONTAINER: up.sh still runs
  // everything on loopback, and says where the terminals run.
  const env = { ...upEnv(stateDir), container: 'podman' };
  delete env.TERMBRIDGE_ALLOW_IN_CONTAINER;
  const child = spawn(path.join(ROOT, 'deploy/up.sh'), ['--detach', '--no-build'], {
    env, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c) => { out += c; });
  child.stderr.on('data', (c) => { err += c; });
  const exited = once(child, 'exit');
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  const [code] = await withDeadline(exited, 60000,
    () => `up.sh did not return within 60 s:\n${out}\n${err}`);
  const stop = out.match(/Stop them with: kill (\d+) (\d+)/);
  assert.equal(code, 0, `up.sh failed:\n${out}\n${err}`);
  assert.ok(stop, `up.sh printed how to stop:\n${out}`);
  assert.match(out, /"type": "http", "url": "http:\/\/127\.0\.0\.1:\d+\/mcp"/);
  // The configuration it prints carries the token the agent requires.
  const tokenFile = path.join(stateDir, 'agent-http-token');
  assert.equal(fs.statSync(tokenFile).mode & 0o777, 0o600);
  const token = fs.readFileSync(tokenFile, 'utf8').trim();
  const config = out.match(/\{ "mcpServers": \{ "termbridge": \{ "type": "http",[^]*?\} \} \} \}/);
  assert.ok(config, `up.sh printed the HTTP client configuration:\n${out}`);
  const server = JSON.parse(config[0]).mcpServers.termbridge;
  assert.deepEqual(server.headers, { Authorization: `Bearer ${token}` });
  assert.ok(out.includes(`the token is in\n${tokenFile})`), `up.sh names the token file:\n${out}`);
  assert.ok(!fs.readFileSync(path.join(stateDir, 'agent.log'), 'utf8').includes(token), 'the token is not logged');
  assert.match(out, /this machine looks like a container \(.*environment: container=podman.*\)/);

  // A person follows every terminal, as up.sh says to.
  assert.match(out, /termbridge --state-dir \S+ watch/);
  assert.match(out, /web console +http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{64}/);
  const watch = await startWatch(stateDir);
  const ready = JSON.parse(fs.readFileSync(path.join(stateDir, 'agent.ready.json'), 'utf8'));
  assert.equal(ready.url, server.url);
  const anonymous = await fetch(ready.url, {
    method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  });
  assert.equal(anonymous.status, 401, 'the agent up.sh started requires its token');
  const { client } = await connectHttpAgent(ready.url, { headers: server.headers });
  try {
    const r = await terminal(client, {
      action: 'execute', execution: { command: 'seq 1 20000' }, max_bytes: 8192,
    });
    assert.equal(r.success, true, JSON.stringify(r.error));
    const { text, result } = await readAll(client, r.identity.session_id, r.result.cursor, r.result.stdout);
    assert.equal(result.exit_code, 0);
    assert.equal(result.gap_bytes, 0);
    const lines = text.trimEnd().split('\n');
    assert.equal(lines.length, 20000);
    lines.forEach((line, i) => assert.equal(line, String(i + 1)));
  } finally {
    await client.close();
  }
  try {
    // Every printed configuration, as its host reads it, lists the tools and
    // runs a command (the stdio ones start the agent binary up.sh named).
    await exerciseEveryClient(out, (c, command) => terminal(c, {
      action: 'execute', execution: { command },
    }), assert);
  } finally {
    await watch.stop();
  }

  // The processes keep running after up.sh returned, and stop on SIGTERM.
  const pids = [Number(stop[1]), Number(stop[2])];
  for (const pid of pids) process.kill(pid, 0);
  for (const pid of pids) process.kill(pid, 'SIGTERM');
  for (const pid of pids) assert.ok(await waitPidGone(pid), `pid ${pid} stopped`);
});

// --- up.sh --container=podman -----------------------------------------------------

const IMAGE = process.env.TERMBRIDGE_AGENT_IMAGE ?? 'localhost/termbridge-agent:latest';
const run = promisify(execFile);

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function podmanUnavailable() {
  for (const [cmd, args, why] of [
    ['podman', ['info'], 'podman does not work here'],
    ['podman-compose', ['version'], 'podman-compose is not installed'],
    ['podman', ['image', 'exists', 'docker.io/library/debian:bookworm-slim'], 'podman has no debian:bookworm-slim (deploy/setup.sh)'],
  ]) {
    try { await run(cmd, args); } catch { return why; }
  }
  return null;
}

// `podman healthcheck run`: the compose healthcheck, run now.
async function healthcheck(container) {
  return run('podman', ['healthcheck', 'run', container]).then(() => 'healthy', (e) => `${e.stdout}${e.stderr}`);
}

test('up.sh --container=podman finds the bridge, the healthcheck follows the broker, every printed configuration works', async (t) => {
  const reason = await podmanUnavailable();
  if (reason) {
    t.skip(reason);
    return;
  }
  if (!process.env.TERMBRIDGE_AGENT_IMAGE) {
    // The parity test builds the same image: podman's layer cache shares it.
    await run('podman', ['build', '--pull=never', '-f', 'deploy/Containerfile', '-t', IMAGE, '.'],
      { cwd: ROOT, maxBuffer: 64 << 20 });
  }
  const stateDir = tempDir('tb-up-podman-');
  const project = `tbup${process.pid}`;
  const container = `tb-up-${process.pid}`;
  const env = {
    ...upEnv(stateDir),
    TERMBRIDGE_CREDENTIALS_DIR: path.join(stateDir, 'credentials'),
    TERMBRIDGE_BROKER_PORT: String(await freePort()),
    TERMBRIDGE_AGENT_HTTP_PORT: '',  // a free host port
    TERMBRIDGE_AGENT_CONTAINER: container,
    TERMBRIDGE_COMPOSE_PROJECT: project,
    TERMBRIDGE_AGENT_IMAGE: IMAGE,
  };
  cleanups.push(async () => {
    await run('podman-compose', ['-p', project, '-f', path.join(ROOT, 'compose.yaml'), 'down'],
      { env, cwd: ROOT }).catch(() => {});
    await run('podman', ['rm', '-f', container]).catch(() => {});
    await run('podman', ['network', 'rm', '-f', `${project}_default`]).catch(() => {});
    removeDir(stateDir);
  });
  const child = spawn(path.join(ROOT, 'deploy/up.sh'), ['--container=podman', '--detach', '--no-build'], {
    env, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c) => { out += c; });
  child.stderr.on('data', (c) => { err += c; });
  const [code] = await withDeadline(once(child, 'exit'), 120000,
    () => `up.sh did not return within 120 s:\n${out}\n${err}`);
  const stop = out.match(/Stop them with: kill (\d+); (podman-compose .* down)/);
  let brokerPid = stop ? Number(stop[1]) : null;
  cleanups.push(async () => {
    if (!brokerPid) return;
    try { process.kill(brokerPid, 'SIGTERM'); } catch { /* gone */ }
    await waitPidGone(brokerPid);
  });
  assert.equal(code, 0, `up.sh failed:\n${out}\n${err}`);
  assert.ok(stop, `up.sh printed how to stop:\n${out}`);

  // The address it found is the compose network's gateway on this machine,
  // and the broker's certificate names it.
  const { stdout: inspect } = await run('podman', ['network', 'inspect', `${project}_default`]);
  const gateway = JSON.parse(inspect)[0].subnets[0].gateway;
  const port = env.TERMBRIDGE_BROKER_PORT;
  assert.ok(out.includes(`gRPC ${gateway}:${port} only`), out);
  assert.match(fs.readFileSync(path.join(env.TERMBRIDGE_CREDENTIALS_DIR, 'broker.san'), 'utf8'),
    new RegExp(`IP:${gateway.replaceAll('.', '\\.')}\\b`));
  assert.match(out, new RegExp(`agent +container ${container} \\(podman, healthy\\)`));

  const watch = await startWatch(stateDir);
  try {
    const servers = await exerciseEveryClient(out, (c, command) => terminal(c, {
      action: 'execute', execution: { command },
    }), assert);
    assert.deepEqual(servers.find((s) => s.kind === 'stdio').args,
      ['exec', '-i', container, '/usr/local/bin/termbridge-entrypoint', 'stdio']);
  } finally {
    await watch.stop();
  }

  // The healthcheck follows the broker: unhealthy while it is down, and
  // healthy again once the same broker is back.
  assert.equal(await healthcheck(container), 'healthy');
  const argv = fs.readFileSync(`/proc/${brokerPid}/cmdline`, 'utf8').split('\0').slice(0, -1);
  process.kill(brokerPid, 'SIGTERM');
  assert.ok(await waitPidGone(brokerPid), 'the broker stopped');
  brokerPid = null;
  const down = await healthcheck(container);
  assert.notEqual(down, 'healthy', 'unhealthy while the broker is down');
  const { stdout: why } = await run('podman', ['inspect', '-f', '{{json .State.Health.Log}}', container]);
  assert.match(why, /PM_TERM_GUI_UNAVAILABLE/, 'the check says why');
  const ready = path.join(stateDir, 'broker.ready.json');
  fs.rmSync(ready, { force: true });
  const broker = spawn(argv[0], argv.slice(1), { env, stdio: 'ignore' });
  const exited = once(broker, 'exit');
  cleanups.push(async () => {
    if (broker.exitCode === null && broker.signalCode === null) broker.kill('SIGTERM');
    await exited;
  });
  await waitForJsonFile(ready, 15000, broker);
  assert.equal(await healthcheck(container), 'healthy');
});
