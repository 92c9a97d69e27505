// termbridge under a real Docker daemon (Debian's docker.io 20.10 and
// docker-compose 1.29), as a person runs it: `deploy/up.sh --container=docker`
// starts compose.yaml's agent with docker-compose, finds the compose
// network's bridge, serves the broker there only, waits for the
// container's healthcheck, and prints every MCP host's configuration; each
// one works from the official SDK client (stdio through `docker exec -i`).
// The healthcheck is truthful: with the broker down docker marks the
// container unhealthy, and healthy again once the broker is back. The
// agent-stdio service serves MCP through `docker-compose run --rm -T`.
//
// The daemon is private (tests/support/dockerd.sh: its own socket, exec
// root and image store, cleaned up so that podman keeps working) and the
// image is the one podman builds, loaded into docker (tests/support/docker.mjs;
// TERMBRIDGE_DOCKER_BUILD=1 builds it with docker). Budget on a 2-CPU
// machine with podman's cache warm: dockerd about 2 s, the image load about
// 15 s, the tests about 40 s. The whole file skips, saying why, where docker
// cannot run.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { connectServer, exerciseEveryClient } from '../support/mcp_client_config.mjs';
import {
  DOCKER, agentImageForDocker, podmanImageUnavailable, startDockerd,
} from '../support/docker.mjs';
import {
  BROKER_BIN, removeDir, startWatch, tempDir, terminal, waitPidGone, withDeadline,
} from '../lib/harness.mjs';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BUILD_DIR = path.resolve(path.dirname(BROKER_BIN), '..');
const PREBUILT_IMAGE = process.env.TERMBRIDGE_AGENT_IMAGE;
const IMAGE = PREBUILT_IMAGE ?? 'localhost/termbridge-agent:latest';

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

let docker;  // { env } or { skip }
before(async () => {
  const noImage = await podmanImageUnavailable();
  docker = noImage ? { skip: noImage } : await startDockerd(cleanups);
  if (docker.skip) return;
  const setup = { diagnostic: (m) => console.log(`# ${m}`) };
  await agentImageForDocker(setup, IMAGE, docker.env, { prebuilt: Boolean(PREBUILT_IMAGE) });
});

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

// Whether something accepts TCP connections on host:port.
function accepts(host, port) {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port: Number(port) });
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}

// This machine's IPv4 addresses besides loopback.
function hostAddresses() {
  return Object.values(os.networkInterfaces()).flat()
    .filter((a) => a.family === 'IPv4' && !a.internal).map((a) => a.address);
}

const stateDir = tempDir('tb-docker-');
const project = `tbdocker${process.pid}`;
const container = `tb-docker-${process.pid}`;
let stack;  // what up.sh started: { env, out, brokerPid }

async function dockerCli(...args) {
  const { stdout } = await run(DOCKER, args, { env: docker.env });
  return stdout.trim();
}

async function health() {
  return dockerCli('inspect', '-f', '{{.State.Health.Status}}', container);
}

// Resolves once docker reports health `want` for the container.
async function healthBecomes(want, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    last = await health();
    if (last === want) return;
    await new Promise((r) => setTimeout(r, 250));  // docker is polled: no event to wait on
  }
  const log = await dockerCli('inspect', '-f', '{{json .State.Health.Log}}', container);
  assert.fail(`health stayed ${last}, expected ${want}; its log: ${log}`);
}

test('up.sh --container=docker: docker-compose runs the agent, healthy, and every printed configuration works', async (t) => {
  if (docker.skip) {
    t.skip(docker.skip);
    return;
  }
  const env = {
    ...docker.env,
    TERMBRIDGE_STATE_DIR: stateDir,
    TERMBRIDGE_CREDENTIALS_DIR: path.join(stateDir, 'credentials'),
    TERMBRIDGE_BROKER_PORT: String(await freePort()),
    TERMBRIDGE_AGENT_HTTP_PORT: '',  // a free host port
    TERMBRIDGE_AGENT_CONTAINER: container,
    TERMBRIDGE_COMPOSE_PROJECT: project,
    TERMBRIDGE_CONSOLE: '127.0.0.1:0',
    TERMBRIDGE_AGENT_IMAGE: IMAGE,
    TERMBRIDGE_BUILD_DIR: BUILD_DIR,
    TERMBRIDGE_HEALTH_INTERVAL: '1s',  // docker's own checks, for the next test
  };
  cleanups.push(async () => {
    await run('docker-compose', ['-p', project, '-f', path.join(ROOT, 'compose.yaml'), 'down'],
      { env, cwd: ROOT }).catch(() => {});
    removeDir(stateDir);
  });
  const child = spawn(path.join(ROOT, 'deploy/up.sh'), ['--container=docker', '--detach', '--no-build'], {
    env, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c) => { out += c; });
  child.stderr.on('data', (c) => { err += c; });
  const [code] = await withDeadline(once(child, 'exit'), 180000,
    () => `up.sh did not return within 180 s:\n${out}\n${err}`);
  const stop = out.match(/Stop them with: kill (\d+); (docker-compose .* down)/);
  if (stop) {
    const pid = Number(stop[1]);
    cleanups.push(async () => {
      try { process.kill(pid, 'SIGTERM'); } catch { /* gone */ }
      await waitPidGone(pid);
    });
  }
  assert.equal(code, 0, `up.sh failed:\n${out}\n${err}`);
  assert.ok(stop, `up.sh printed how to stop:\n${out}`);
  stack = { env, out, brokerPid: Number(stop[1]) };
  assert.match(out, new RegExp(`agent +container ${container} \\(docker, healthy\\)`));

  // The broker serves the compose network's bridge, no other address.
  const gateway = await dockerCli('network', 'inspect', `${project}_default`,
    '-f', '{{range .IPAM.Config}}{{.Gateway}}{{end}}');
  assert.match(gateway, /^\d+\.\d+\.\d+\.\d+$/);
  const port = env.TERMBRIDGE_BROKER_PORT;
  assert.ok(out.includes(`gRPC ${gateway}:${port} only`), out);
  assert.equal(await accepts(gateway, port), true);
  assert.equal(await accepts('127.0.0.1', port), false, 'the broker does not listen on loopback');
  for (const other of hostAddresses().filter((a) => a !== gateway)) {
    assert.equal(await accepts(other, port), false, `the broker does not listen on ${other}`);
  }

  const watch = await startWatch(stateDir);
  try {
    const servers = await exerciseEveryClient(out, (c, command) => terminal(c, {
      action: 'execute', execution: { command },
    }), assert);
    const stdio = servers.find((s) => s.kind === 'stdio');
    assert.deepEqual(stdio.args, ['exec', '-i', container, '/usr/local/bin/termbridge-entrypoint', 'stdio']);
    assert.equal(stdio.env.DOCKER_HOST, docker.env.DOCKER_HOST, 'the stdio form names the daemon it used');
  } finally {
    await watch.stop();
  }
});

test('the healthcheck under docker: unhealthy while the broker is down, healthy when it is back', async (t) => {
  if (docker.skip || !stack) {
    t.skip(docker.skip ?? 'the compose stack did not start');
    return;
  }
  await healthBecomes('healthy', 30000);
  const argv = fs.readFileSync(`/proc/${stack.brokerPid}/cmdline`, 'utf8').split('\0').slice(0, -1);
  process.kill(stack.brokerPid, 'SIGTERM');
  assert.ok(await waitPidGone(stack.brokerPid), 'the broker stopped');
  // Three failed checks a second apart (compose.yaml: retries 3).
  await healthBecomes('unhealthy', 45000);
  const log = JSON.parse(await dockerCli('inspect', '-f', '{{json .State.Health.Log}}', container));
  assert.match(log.at(-1).Output, /PM_TERM_GUI_UNAVAILABLE/, 'the check says why');

  // The same broker again (same addresses, certificate and token).
  const broker = spawn(argv[0], argv.slice(1), { env: stack.env, stdio: 'ignore' });
  const exited = once(broker, 'exit');
  cleanups.push(async () => {
    if (broker.exitCode === null && broker.signalCode === null) broker.kill('SIGTERM');
    await exited;
  });
  await healthBecomes('healthy', 45000);
});

test('agent-stdio under docker-compose: `docker-compose run --rm -T agent-stdio` serves MCP on stdio', async (t) => {
  if (docker.skip || !stack) {
    t.skip(docker.skip ?? 'the compose stack did not start');
    return;
  }
  const watch = await startWatch(stateDir);
  const env = {};
  for (const k of Object.keys(stack.env)) {
    if (/^(DOCKER_HOST|TERMBRIDGE_)/.test(k)) env[k] = stack.env[k];
  }
  const client = await connectServer({
    kind: 'stdio', command: 'docker-compose',
    args: ['-p', project, '-f', path.join(ROOT, 'compose.yaml'), 'run', '--rm', '-T', 'agent-stdio'], env,
  });
  try {
    const r = await terminal(client, { action: 'execute', execution: { command: 'echo from-agent-stdio' } });
    assert.equal(r.success, true, JSON.stringify(r.error));
    assert.equal(r.result.stdout, 'from-agent-stdio\n');
  } finally {
    await client.close();
    await watch.stop();
  }
});
