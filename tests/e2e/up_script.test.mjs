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
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import net from 'node:net';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { exerciseEveryClient } from '../support/mcp_client_config.mjs';
import {
  BROKER_BIN, connectHttpAgent, pidsMentioning, readAll, removeDir, startWatch, tempDir, terminal,
  waitPidGone, withDeadline,
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
