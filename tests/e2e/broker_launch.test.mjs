// Local launch (docs/configuration.md, 'Agent'): an agent in bundled mode finds no broker
// on its port, starts the one bundled next to it (after a configured path
// that fails), waits for it to be ready, handshakes and serves the call. The
// broker stays up for later agents. Without launch, nothing is started.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { once } from 'node:events';
import {
  connectAgent, pidsMentioning, removeDir, startWatch, tempDir, terminal, waitPidGone,
} from '../lib/harness.mjs';

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

// A private state dir, and, when the test ends however it ends, no process
// that names it (the launched broker, watch) and no dir.
function stateDirForTest(prefix) {
  const stateDir = tempDir(prefix);
  cleanups.push(async () => {
    const left = pidsMentioning(stateDir);
    for (const { pid } of left) {
      try { process.kill(pid, 'SIGTERM'); } catch { /* gone */ }
    }
    for (const { pid } of left) {
      if (await waitPidGone(pid, 10000)) continue;
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
      await waitPidGone(pid);
    }
    removeDir(stateDir);
  });
  return stateDir;
}

// A loopback port nobody listens on, to hand to a launched broker: the
// kernel picks it (port 0) and it is released at once, so another process
// may take it before the broker binds it; launchOnFreePort tries again then.
async function freePort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function canBind(port) {
  const server = net.createServer();
  try {
    await new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    await new Promise((resolve) => server.close(resolve));
    return true;
  } catch {
    return false;
  }
}

// An agent in bundled mode on a free port, after its first call (which
// launches the broker there). An attempt whose port another process took
// between freePort and the launch (the launched broker could not listen, or
// something else answers there and nothing was launched) is made again on a
// new port; any other outcome is returned for the test to judge.
async function launchOnFreePort(stateDir, env) {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const agent = await connectAgent({
      port, tokenFile: '', env: { ...env, PM_INTERACTIVE_TERMINAL_HOST_PORT: String(port) },
    });
    cleanups.push(() => agent.client.close());
    const listed = await terminal(agent.client, { action: 'list', invocation: { mode: 'interactive' } });
    if (listed.success || attempt === 3) return { port, agent, listed };
    const brokerLog = path.join(stateDir, 'broker.log');
    const lost = (fs.existsSync(brokerLog) && fs.readFileSync(brokerLog, 'utf8').includes(`cannot listen on 127.0.0.1:${port}`))
      || (!/event=broker_launched/.test(agent.log()) && !(await canBind(port)));
    if (!lost) return { port, agent, listed };
  }
}

// A loopback port nothing listens on, held for the rest of the file so no
// other process can take it: a connected client socket keeps its local port
// bound, and a connection to that port is refused.
async function closedPort() {
  const server = net.createServer();
  const accepted = [];
  server.on('connection', (socket) => accepted.push(socket));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const holder = net.connect(server.address().port, '127.0.0.1');
  await once(holder, 'connect');
  cleanups.push(async () => {
    holder.destroy();
    for (const socket of accepted) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return holder.localPort;
}

test('bundled mode launches the broker when none answers, after a configured path that fails', async () => {
  const stateDir = stateDirForTest('tb-launch-');
  // The launched broker reads the policy in its state dir: nothing asks here.
  fs.writeFileSync(path.join(stateDir, 'policy.toml'), 'version = 1\ndefault = "allow"\n');
  // A configured binary that starts and dies: tried first, then the bundled one.
  const broken = path.join(stateDir, 'broken-broker');
  fs.writeFileSync(broken, '#!/bin/sh\necho "broken on purpose" >&2\nexit 3\n', { mode: 0o755 });
  const env = {
    PM_TERM_ADAPTER_MODE: 'bundled',
    PM_INTERACTIVE_TERMINAL_BINARY: broken,
    TERMBRIDGE_BRIDGE_TOKEN_FILE: '',
    TERMBRIDGE_STATE_DIR: stateDir,
    TERMBRIDGE_WINDOW_COMMAND: 'none',  // the launched broker inherits the environment
    TERMBRIDGE_ALLOW_IN_CONTAINER: 'true',
  };
  const { port, agent, listed } = await launchOnFreePort(stateDir, env);
  assert.equal(listed.success, true, JSON.stringify(listed.error));

  const launched = agent.log().match(/event=broker_launched source=(\S+) path=(\S+) pid=(\d+) port=(\d+) attempts=(.*)/);
  assert.ok(launched, agent.log());
  const [, source, , pid, launchedPort, attempts] = launched;
  assert.equal(source, 'bundled');
  assert.equal(Number(launchedPort), port);
  const tried = JSON.parse(attempts);
  assert.equal(tried[0].source, 'configured');
  assert.match(tried[0].error, /exited with 3 before it was ready/);

  // A person watches, and commands run in the launched broker's terminals.
  const watch = await startWatch(stateDir);
  cleanups.push(() => watch.stop());
  const r = await terminal(agent.client, { action: 'execute', execution: { command: "printf 'launched-%s\\n' ok" } });
  assert.equal(r.success, true, JSON.stringify(r.error));
  assert.equal(r.result.stdout, 'launched-ok\n');

  // A second agent finds the running broker instead of starting another.
  const second = await connectAgent({ port, tokenFile: '', env: { ...env, PM_INTERACTIVE_TERMINAL_HOST_PORT: String(port) } });
  cleanups.push(() => second.client.close());
  const again = await terminal(second.client, { action: 'list', invocation: { mode: 'interactive' } });
  assert.equal(again.success, true, JSON.stringify(again.error));
  assert.doesNotMatch(second.log(), /event=broker_launched/);

  // When the broker stops while the agent lives on, the agent reaps it: no zombie.
  await watch.stop();
  process.kill(Number(pid), 'SIGTERM');
  assert.ok(await waitPidGone(Number(pid), 10000), 'the launched broker is gone, not a zombie');
});

test('without launch, a missing broker fails closed and nothing is started', async () => {
  const stateDir = stateDirForTest('tb-nolaunch-');
  const port = await closedPort();
  const agent = await connectAgent({ port, tokenFile: '', env: {
    PM_INTERACTIVE_TERMINAL_HOST_PORT: String(port), TERMBRIDGE_BRIDGE_TOKEN_FILE: '',
    TERMBRIDGE_STATE_DIR: stateDir,
  } });
  cleanups.push(() => agent.client.close());
  const r = await terminal(agent.client, { action: 'list', invocation: { mode: 'interactive' } });
  assert.equal(r.error.code, 'PM_TERM_GUI_UNAVAILABLE');
  assert.equal(r.error.details.reason, 'broker_unreachable');
  assert.doesNotMatch(agent.log(), /broker_launched/);
  assert.equal(fs.existsSync(path.join(stateDir, 'broker.log')), false);
});
