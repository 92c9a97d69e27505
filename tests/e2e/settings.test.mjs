// Renamed settings keep existing deployments working (docs/CONTRACT.md
// "Environment variables"): an agent given only the deprecated
// PM_INTERACTIVE_TERMINAL_TOKEN_FILE still reaches the broker and says once on
// stderr which name to use; the image's entrypoint reads the deprecated
// names too, before its own defaults, and the new names win over them.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Broker, connectAgent, removeDir, tempDir, terminal } from '../lib/harness.mjs';

const ENTRYPOINT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../deploy/entrypoint.sh');

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

test('an agent configured with a deprecated name still works and warns once', async () => {
  const broker = await Broker.start();
  cleanups.push(() => broker.stop());
  const agent = await connectAgent({ port: broker.port, tokenFile: '', env: {
    PM_INTERACTIVE_TERMINAL_TOKEN_FILE: broker.tokenFile } });
  cleanups.push(() => agent.client.close());
  for (let i = 0; i < 2; ++i) {
    const r = await terminal(agent.client, { action: 'list', invocation: { mode: 'interactive' } });
    assert.equal(r.success, true, JSON.stringify(r.error));
  }
  const warnings = agent.log().match(/event=deprecated_setting name=PM_INTERACTIVE_TERMINAL_TOKEN_FILE use=TERMBRIDGE_BRIDGE_TOKEN_FILE/g);
  assert.equal(warnings?.length, 1, agent.log());
});

// A loopback port where nothing accepts (a connected socket holds it).
async function closedPort() {
  const server = net.createServer((socket) => cleanups.push(() => socket.destroy()));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const holder = net.connect(server.address().port, '127.0.0.1');
  await once(holder, 'connect');
  cleanups.push(async () => {
    holder.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return holder.localPort;
}

// Runs `entrypoint.sh check` with `env` (plus the loopback bridge to a port
// where nothing listens); resolves with its exit code and stderr.
async function entrypointCheck(env) {
  const port = await closedPort();
  return await new Promise((resolve) => {
    execFile(ENTRYPOINT, ['check'], { env: {
      PATH: process.env.PATH, HOME: process.env.HOME ?? '/tmp',
      PM_TERM_ADAPTER_MODE: 'container_bridge',
      PM_INTERACTIVE_TERMINAL_HOST_ALIAS: '127.0.0.1',
      PM_INTERACTIVE_TERMINAL_HOST_FALLBACK_ALIAS: '127.0.0.1',
      PM_INTERACTIVE_TERMINAL_HOST_PORT: String(port),
      PM_INTERACTIVE_TERMINAL_CONNECT_TIMEOUT_MS: '1000',
      ...env,
    } }, (error, stdout, stderr) => resolve({ code: error ? error.code : 0, stdout, stderr }));
  });
}

test('the image entrypoint reads deprecated names before its defaults, and new names win', async () => {
  const dir = tempDir('tb-entrypoint-');
  cleanups.push(() => removeDir(dir));
  const token = path.join(dir, 'old-token');
  const ca = path.join(dir, 'old-ca.pem');
  const newToken = path.join(dir, 'new-token');
  for (const f of [token, ca, newToken]) fs.writeFileSync(f, 'x\n');

  const old = await entrypointCheck({
    PM_INTERACTIVE_TERMINAL_TOKEN_FILE: token, PM_INTERACTIVE_TERMINAL_TLS_CA_FILE: ca });
  assert.notEqual(old.code, 64, old.stderr);  // the configuration is valid (no broker: preflight warns)
  assert.equal(old.stdout, '', 'stdout belongs to MCP');
  assert.match(old.stderr, /warning: PM_INTERACTIVE_TERMINAL_TOKEN_FILE is deprecated, use TERMBRIDGE_BRIDGE_TOKEN_FILE/);
  assert.match(old.stderr, /warning: PM_INTERACTIVE_TERMINAL_TLS_CA_FILE is deprecated, use TERMBRIDGE_BRIDGE_TLS_CA_FILE/);
  assert.ok(old.stderr.includes(`token_file=${token} tls_ca_file=${ca}`), old.stderr);

  const both = await entrypointCheck({ TERMBRIDGE_BRIDGE_TOKEN_FILE: newToken,
    PM_INTERACTIVE_TERMINAL_TOKEN_FILE: token, TERMBRIDGE_BRIDGE_TLS_CA_FILE: ca });
  assert.notEqual(both.code, 64, both.stderr);
  assert.ok(both.stderr.includes(`token_file=${newToken} `), both.stderr);
  assert.doesNotMatch(both.stderr, /deprecated/);

  // Neither name: the image's default secret path, which is missing here.
  const none = await entrypointCheck({ TERMBRIDGE_BRIDGE_TLS_CA_FILE: ca });
  assert.equal(none.code, 64, none.stderr);
  assert.match(none.stderr, /TERMBRIDGE_BRIDGE_TOKEN_FILE=\/run\/secrets\/termbridge_agent_token: the agent token not found/);
});
