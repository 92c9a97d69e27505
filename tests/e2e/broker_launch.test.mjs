// Local launch (seed 000 section 6): an agent in bundled mode finds no broker
// on its port, starts the one bundled next to it (after a configured path
// that fails), waits for it to be ready, handshakes and serves the call. The
// broker stays up for later agents. Without launch, nothing is started.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { connectAgent, startWatch, tempDir, terminal, waitPidGone } from '../lib/harness.mjs';

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function freePort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test('bundled mode launches the broker when none answers, after a configured path that fails', async () => {
  const stateDir = tempDir('tb-launch-');
  const port = await freePort();
  // The launched broker reads the policy in its state dir: nothing asks here.
  fs.writeFileSync(path.join(stateDir, 'policy.toml'), 'version = 1\ndefault = "allow"\n');
  // A configured binary that starts and dies: tried first, then the bundled one.
  const broken = path.join(stateDir, 'broken-broker');
  fs.writeFileSync(broken, '#!/bin/sh\necho "broken on purpose" >&2\nexit 3\n', { mode: 0o755 });
  const env = {
    PM_TERM_ADAPTER_MODE: 'bundled',
    PM_INTERACTIVE_TERMINAL_HOST_PORT: String(port),
    PM_INTERACTIVE_TERMINAL_BINARY: broken,
    PM_INTERACTIVE_TERMINAL_TOKEN_FILE: '',
    TERMBRIDGE_STATE_DIR: stateDir,
    TERMBRIDGE_WINDOW_COMMAND: 'none',  // the launched broker inherits the environment
    TERMBRIDGE_ALLOW_IN_CONTAINER: 'true',
  };
  const agent = await connectAgent({ port, tokenFile: '', env });
  cleanups.push(() => agent.client.close());
  const listed = await terminal(agent.client, { action: 'list', invocation: { mode: 'interactive' } });
  assert.equal(listed.success, true, JSON.stringify(listed.error));

  const launched = agent.log().match(/event=broker_launched source=(\S+) path=(\S+) pid=(\d+) port=(\d+) attempts=(.*)/);
  assert.ok(launched, agent.log());
  const [, source, , pid, launchedPort, attempts] = launched;
  cleanups.push(async () => {
    try { process.kill(Number(pid), 'SIGTERM'); } catch { /* gone */ }
    await waitPidGone(Number(pid));
  });
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
  const second = await connectAgent({ port, tokenFile: '', env });
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
  const stateDir = tempDir('tb-nolaunch-');
  const port = await freePort();
  const agent = await connectAgent({ port, tokenFile: '', env: {
    PM_INTERACTIVE_TERMINAL_HOST_PORT: String(port), PM_INTERACTIVE_TERMINAL_TOKEN_FILE: '',
    TERMBRIDGE_STATE_DIR: stateDir,
  } });
  cleanups.push(() => agent.client.close());
  const r = await terminal(agent.client, { action: 'list', invocation: { mode: 'interactive' } });
  assert.equal(r.error.code, 'PM_TERM_GUI_UNAVAILABLE');
  assert.doesNotMatch(agent.log(), /broker_launched/);
  assert.equal(fs.existsSync(path.join(stateDir, 'broker.log')), false);
});
