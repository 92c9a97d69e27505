// The agent's configured connect timeout: a host that accepts TCP but never
// speaks gRPC (a wrong service on the port, a wedged broker) ends the call as
// PM_TERM_TIMEOUT in phase connect after PM_INTERACTIVE_TERMINAL_CONNECT_TIMEOUT_MS,
// naming the value, instead of hanging.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { connectAgent, tempDir, terminal } from '../lib/harness.mjs';

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

test('a listener that never answers gRPC gives PM_TERM_TIMEOUT after the configured connect timeout', async () => {
  const sockets = new Set();
  const silent = net.createServer((socket) => { sockets.add(socket); socket.on('error', () => {}); });
  await new Promise((resolve) => silent.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => {
    for (const s of sockets) s.destroy();
    silent.close(resolve);
  }));
  const tokenFile = path.join(tempDir('tb-silent-'), 'token');
  fs.writeFileSync(tokenFile, 'x'.repeat(64));
  const agent = await connectAgent({
    port: silent.address().port, tokenFile,
    env: { PM_INTERACTIVE_TERMINAL_CONNECT_TIMEOUT_MS: '1200' },
  });
  cleanups.push(() => agent.client.close());
  const started = Date.now();
  const r = await terminal(agent.client, { action: 'list', invocation: { mode: 'interactive' } });
  const elapsed = Date.now() - started;
  assert.equal(r.success, false);
  assert.equal(r.error.code, 'PM_TERM_TIMEOUT', JSON.stringify(r.error));
  assert.equal(r.error.details.phase, 'connect');
  assert.equal(r.error.details.timeout_ms, 1200);
  assert.ok(elapsed >= 1100 && elapsed < 6000, `took ${elapsed} ms`);
});
