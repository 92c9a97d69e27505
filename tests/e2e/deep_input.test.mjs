// No input crashes a process: JSON nested 100,000 deep sent to the console's
// WebSocket and HTTP API, and a policy file nested 100,000 deep, get each
// protocol's error (an error message, 413 or 400, a refused policy) while the
// broker goes on serving. Each of these once overflowed a recursive parser's
// stack (SIGSEGV). The agent's own JSON inputs are covered in mcp_http and
// stdio_transport_test.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
// ws comes with puppeteer-core (Node 20 has no WebSocket client of its own).
import WebSocket from 'ws';
import {
  BROKER_BIN, Broker, connectAgent, removeDir, tempDir, terminal, withDeadline,
} from '../lib/harness.mjs';

const run = promisify(execFile);
const CLI = process.env.TERMBRIDGE_CLI_BIN;
const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const DEEP = 100000;
const deepArray = () => '['.repeat(DEEP) + ']'.repeat(DEEP);

async function startConsole() {
  const broker = await Broker.start({ extraArgs: ['--console', '127.0.0.1:0'] });
  cleanups.push(() => broker.stop());
  const url = new URL(broker.ready.console_url);
  const token = url.searchParams.get('token');
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => agent.client.close());
  return { broker, agent, origin: url.origin, token };
}

// A WebSocket to the console that keeps every message it gets; `until`
// resolves with the first one `match` accepts (text parsed as JSON, binary
// frames as {binary: text after the 8-byte offset}).
async function openSocket(url, token) {
  const socket = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
  cleanups.push(async () => {
    if (socket.readyState === WebSocket.OPEN) {
      socket.close();
      await once(socket, 'close');
    }
  });
  const messages = [];
  const waiters = [];
  socket.on('message', (data, isBinary) => {
    const message = isBinary ? { binary: data.subarray(8).toString('utf8') } : JSON.parse(data.toString());
    messages.push(message);
    for (const w of [...waiters]) {
      if (w.match(message)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(message);
      }
    }
  });
  await once(socket, 'open');
  return {
    socket,
    messages,
    until: (match, what) => {
      const seen = messages.find(match);
      if (seen) return Promise.resolve(seen);
      return withDeadline(new Promise((resolve) => waiters.push({ match, resolve })), 20000,
        () => `no ${what} on the console socket; it got: ${JSON.stringify(messages).slice(0, 2000)}`);
    },
  };
}

test('a console WebSocket message nested 100,000 deep gets an error message, and the console serves on', async () => {
  const { broker, agent, origin, token } = await startConsole();
  const opened = await terminal(agent.client, { action: 'execute', invocation: { intent: 'open_only' } });
  assert.equal(opened.success, true, JSON.stringify(opened.error));
  const t = opened.identity.terminal_id;
  const attachUrl = `${origin.replace(/^http/, 'ws')}/ws/attach?terminal=${t}`;

  const first = await openSocket(attachUrl, token);
  first.socket.send(`{"type":"resize","cols":${deepArray()},"rows":24}`);
  const error = await first.until((m) => m.type === 'error', 'error message');
  assert.match(error.message, /nests deeper than 128 levels/);
  assert.equal(first.socket.readyState, WebSocket.OPEN, 'the connection stays open');

  // Another client attaches, and both see what the terminal prints next.
  const second = await openSocket(attachUrl, token);
  const echoed = await terminal(agent.client, {
    action: 'execute', target: { terminal_id: t }, execution: { command: 'echo still-serving' },
  });
  assert.equal(echoed.success, true, JSON.stringify(echoed.error));
  for (const client of [first, second]) {
    await client.until((m) => m.binary?.includes('still-serving'), 'output after the deep message');
  }
  assert.equal(broker.child.exitCode, null);
  assert.equal(broker.child.signalCode, null);
});

test('a console HTTP API body nested deep gets 413 or 400, and the console serves on', async () => {
  const { broker, origin, token } = await startConsole();
  const post = (body) => fetch(`${origin}/api/approvals/decide`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body,
  });
  // 100,000 deep is 200 KB: over the body limit.
  const huge = await post(`{"approval_id":"a_x","decision":${deepArray()}}`);
  assert.equal(huge.status, 413, await huge.text());
  // Deep but under the limit (20,000 levels, 40 KB): refused before parsing.
  const deep = await post(`{"approval_id":"a_x","decision":${'['.repeat(20000)}${']'.repeat(20000)}}`);
  assert.equal(deep.status, 400);
  const body = await deep.json();
  assert.match(body.error.message, /nests deeper than 128 levels/);
  // And the next request is served as usual.
  const listed = await fetch(`${origin}/api/approvals`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(listed.status, 200, await listed.text());
  assert.equal(broker.child.exitCode, null);
});

// A policy file 100,000 deep, as dotted keys and as a table header: toml++
// recursed on each until the stack overflowed.
function deepPolicies() {
  return {
    'dotted keys': `version = 1\na${'.b'.repeat(DEEP)} = 1\n`,
    'a table header': `version = 1\n[a${'.b'.repeat(DEEP)}]\n`,
    arrays: `version = 1\nx = ${deepArray()}\n`,
  };
}

test('termbridge-broker refuses a policy file nested 100,000 deep with a clear error', async () => {
  for (const [what, text] of Object.entries(deepPolicies())) {
    const dir = tempDir('tb-deep-policy-');
    cleanups.push(() => removeDir(dir));
    const policy = path.join(dir, 'policy.toml');
    fs.writeFileSync(policy, text);
    const child = spawn(BROKER_BIN, ['--listen', '127.0.0.1:0', '--state-dir', path.join(dir, 'state'),
      '--policy', policy, '--window-command', 'none'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c) => { stderr += c; });
    const exited = once(child, 'exit');
    cleanups.push(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    });
    const [code, signal] = await withDeadline(exited, 20000, () => `the broker kept running (${what}):\n${stderr}`);
    assert.equal(signal, null, `${what}: the broker died of ${signal}:\n${stderr}`);
    assert.notEqual(code, 0, what);
    assert.ok(stderr.includes(`${policy}: tables, keys and arrays nest deeper than 128 levels`), `${what}:\n${stderr}`);
  }
});

test('a running broker keeps its policy when the file is replaced by one nested 100,000 deep', async () => {
  const broker = await Broker.start();
  cleanups.push(() => broker.stop());
  const policy = path.join(broker.stateDir, 'policy.toml');
  fs.writeFileSync(`${policy}.new`, deepPolicies()['dotted keys']);
  fs.renameSync(`${policy}.new`, policy);
  const { stdout } = await run(CLI, ['--state-dir', broker.stateDir, '--json', 'policy', 'show']);
  const shown = JSON.parse(stdout);
  assert.match(shown.last_error, /nest deeper than 128 levels/, stdout.slice(0, 500));
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => agent.client.close());
  const r = await terminal(agent.client, { action: 'execute', execution: { command: 'echo policy-kept' } });
  assert.equal(r.success, true, JSON.stringify(r.error));
  assert.equal(r.result.stdout, 'policy-kept\n');
  assert.equal(broker.child.exitCode, null);
});
