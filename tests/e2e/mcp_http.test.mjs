// The agent's Streamable HTTP transport end to end: progress while a call
// waits and cancellation with the official MCP TypeScript SDK, and the
// transport's protocol rules (versions, sessions, Origin, the bearer token
// it creates by default, GET/DELETE, JSON and SSE responses) with plain HTTP
// requests. A real broker runs every interactive command in a real PTY.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { once } from 'node:events';
import {
  AGENT_BIN, Broker, connectHttpAgent, removeDir, startHttpAgent as harnessStartHttpAgent, tempDir,
  terminal, withDeadline,
} from '../lib/harness.mjs';

const cleanups = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

// Each agent's Authorization header by URL: every request below carries it
// unless it says otherwise (authorization: null).
const authorizations = new Map();

// The harness's HTTP agent, stopped when the file's tests end.
async function startHttpAgent(broker, options) {
  const agent = await harnessStartHttpAgent(broker, options);
  cleanups.push(() => agent.stop());
  authorizations.set(agent.url, agent.authorization);
  return agent;
}

// `extra` over the agent's Authorization header; a null value drops a header.
function headersFor(url, extra = {}) {
  const headers = { authorization: authorizations.get(url) || null, ...extra };
  for (const name of Object.keys(headers)) if (headers[name] === null) delete headers[name];
  return headers;
}

let shared = null;
// One broker and one HTTP agent for the tests that do not change their flags.
function sharedSetup() {
  shared ??= (async () => {
    const broker = await Broker.start();
    cleanups.push(() => broker.stop());
    const agent = await startHttpAgent(broker);
    return { broker, agent };
  })();
  return shared;
}

async function sdkClient(url, requestInit = { headers: headersFor(url) }) {
  const agent = await connectHttpAgent(url, requestInit);
  cleanups.push(() => agent.client.close());
  return agent.client;
}

const JSON_AND_SSE = 'application/json, text/event-stream';

async function post(url, body, headers = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: headersFor(url, { 'content-type': 'application/json', accept: JSON_AND_SSE, ...headers }),
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* SSE or empty */ }
  return { status: response.status, headers: response.headers, text, json };
}

// A legacy (2025-11-25 or 2025-06-18) session opened by hand.
async function openSession(url, version = '2025-11-25') {
  const init = await post(url, {
    jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  });
  assert.equal(init.status, 200, init.text);
  const session = init.headers.get('mcp-session-id');
  assert.match(session, /^[0-9a-f]{32}$/);
  await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' },
    { 'mcp-session-id': session, 'mcp-protocol-version': version });
  return { session, init: init.json,
    headers: { 'mcp-session-id': session, 'mcp-protocol-version': version } };
}

function modernHeaders(method, name) {
  const headers = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': method };
  if (name) headers['mcp-name'] = name;
  return headers;
}

const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
};

test('progress notifications arrive while execute waits for its command', async () => {
  const { agent } = await sharedSetup();
  const client = await sdkClient(agent.url);
  const progress = [];
  const r = await terminal(client, {
    action: 'execute', execution: { command: 'sleep 1.5; echo waited' }, runtime: { timeout_ms: 20000 },
  }, { onprogress: (p) => progress.push(p) });
  assert.equal(r.success, true, JSON.stringify(r.error));
  assert.equal(r.status, 'completed');
  assert.equal(r.result.stdout, 'waited\n');
  assert.ok(progress.length >= 1, 'at least one progress notification');
  for (let i = 1; i < progress.length; ++i) assert.ok(progress[i].progress > progress[i - 1].progress);
});

test('notifications/cancelled stops the wait, not the command', async () => {
  const { agent } = await sharedSetup();
  const client = await sdkClient(agent.url);
  const opened = await terminal(client, { action: 'execute', invocation: { intent: 'open_only' } });
  assert.equal(opened.success, true, JSON.stringify(opened.error));
  const terminalId = opened.identity.terminal_id;

  const controller = new AbortController();
  const call = terminal(client, {
    action: 'execute', target: { terminal_id: terminalId },
    execution: { command: 'sleep 2; echo after-cancel' }, runtime: { timeout_ms: 25000 },
  }, {
    signal: controller.signal,
    // The first progress notification proves the call is waiting: cancel then.
    onprogress: () => controller.abort(new Error('the test gave up')),
  });
  await assert.rejects(call, /abort|gave up/i);

  // The agent still serves, and the command finishes in its terminal.
  let stream = '';
  let cursor = 0;
  const deadline = Date.now() + 30000;
  while (!stream.includes('after-cancel')) {
    assert.ok(Date.now() < deadline, `no after-cancel in the terminal within 30 s; its output so far:\n${stream}`);
    const out = await terminal(client, {
      action: 'read_output', target: { terminal_id: terminalId }, cursor, wait_ms: 5000,
    });
    assert.equal(out.success, true, JSON.stringify(out.error));
    stream += out.result.stdout;
    cursor = out.result.cursor;
  }
  assert.equal(agent.child.exitCode, null, 'the agent process is still running');
  // The client sends notifications/cancelled on its own POST after the abort:
  // it may reach the agent after the command's output does.
  const logged = Date.now() + 10000;
  while (!/event=cancelled/.test(agent.log()) && Date.now() < logged) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.match(agent.log(), /event=cancelled/);
});

test('a call with a progressToken answers as an SSE stream; without, as JSON', async () => {
  const { agent } = await sharedSetup();
  const { headers } = await openSession(agent.url);
  const streamed = await post(agent.url, {
    jsonrpc: '2.0', id: 2, method: 'tools/call',
    params: {
      name: 'memory_terminal_interactive', _meta: { progressToken: 'p1' },
      arguments: { action: 'execute', execution: { command: 'sleep 0.5; echo sse' } },
    },
  }, headers);
  assert.equal(streamed.status, 200);
  assert.match(streamed.headers.get('content-type'), /^text\/event-stream/);
  const events = streamed.text.split('\n').filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice(6)));
  assert.equal(events.at(0).method, 'notifications/progress');
  assert.equal(events.at(0).params.progressToken, 'p1');
  const last = events.at(-1);
  assert.equal(last.id, 2);
  assert.equal(last.result.structuredContent.result.stdout, 'sse\n');

  const plain = await post(agent.url, {
    jsonrpc: '2.0', id: 3, method: 'tools/call',
    params: { name: 'memory_terminal_interactive', arguments: { action: 'list' } },
  }, headers);
  assert.equal(plain.status, 200);
  assert.match(plain.headers.get('content-type'), /^application\/json/);
  assert.equal(plain.json.id, 3);
  assert.equal(plain.json.result.isError, false);
});

test('legacy sessions: 2025-06-18 and 2025-11-25 handshakes, DELETE ends a session', async () => {
  const { agent } = await sharedSetup();
  for (const version of ['2025-06-18', '2025-11-25']) {
    const { init, headers } = await openSession(agent.url, version);
    assert.equal(init.result.protocolVersion, version);
    assert.equal(init.result.serverInfo.name, 'termbridge-agent');
    const list = await post(agent.url, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, headers);
    assert.equal(list.json.result.tools.length, 2);

    const deleted = await fetch(agent.url, { method: 'DELETE', headers: headersFor(agent.url, headers) });
    assert.equal(deleted.status, 200);
    const gone = await post(agent.url, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, headers);
    assert.equal(gone.status, 404);
  }
  const noSession = await post(agent.url, { jsonrpc: '2.0', id: 4, method: 'tools/list' },
    { 'mcp-protocol-version': '2025-11-25' });
  assert.equal(noSession.status, 400);
  const get = await fetch(agent.url, { headers: headersFor(agent.url, { accept: 'text/event-stream' }) });
  assert.equal(get.status, 405);
});

test('MCP-Protocol-Version: an unsupported version gets the error listing the supported ones', async () => {
  const { agent } = await sharedSetup();
  const { session } = await openSession(agent.url);
  const legacy = await post(agent.url, { jsonrpc: '2.0', id: 5, method: 'tools/list' },
    { 'mcp-session-id': session, 'mcp-protocol-version': '1999-01-01' });
  assert.equal(legacy.status, 400);
  assert.equal(legacy.json.error.code, -32022);
  assert.deepEqual(legacy.json.error.data.supported, ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26']);

  const modern = await post(agent.url, {
    jsonrpc: '2.0', id: 6, method: 'tools/list',
    params: { _meta: { ...MODERN_META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } },
  }, { ...modernHeaders('tools/list'), 'mcp-protocol-version': '2099-01-01' });
  assert.equal(modern.status, 400);
  assert.equal(modern.json.id, 6);
  assert.equal(modern.json.error.code, -32022);
  assert.deepEqual(modern.json.error.data.supported, ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26']);
});

test('2026-07-28 is stateless: server/discover, per-request _meta, no sessions', async () => {
  const { agent } = await sharedSetup();
  const discover = await post(agent.url,
    { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: MODERN_META } },
    modernHeaders('server/discover'));
  assert.equal(discover.status, 200, discover.text);
  assert.equal(discover.headers.get('mcp-session-id'), null);
  assert.deepEqual(discover.json.result.supportedVersions, ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26']);
  assert.ok(discover.json.result.capabilities.tools);

  const call = await post(agent.url, {
    jsonrpc: '2.0', id: 2, method: 'tools/call',
    params: { name: 'memory_terminal_interactive', arguments: { action: 'list' }, _meta: MODERN_META },
  }, modernHeaders('tools/call', 'memory_terminal_interactive'));
  assert.equal(call.status, 200, call.text);
  assert.equal(call.json.result.resultType, 'complete');
  assert.equal(call.json.result.structuredContent.success, true);

  const noMeta = await post(agent.url, { jsonrpc: '2.0', id: 3, method: 'tools/list' },
    modernHeaders('tools/list'));
  assert.equal(noMeta.status, 400);
  assert.equal(noMeta.json.error.code, -32602);

  const mismatch = await post(agent.url,
    { jsonrpc: '2.0', id: 4, method: 'tools/list', params: { _meta: MODERN_META } },
    modernHeaders('prompts/list'));
  assert.equal(mismatch.status, 400);
  assert.equal(mismatch.json.error.code, -32020);

  const initialize = await post(agent.url,
    { jsonrpc: '2.0', id: 5, method: 'initialize', params: { _meta: MODERN_META } },
    modernHeaders('initialize'));
  assert.equal(initialize.status, 404);
  assert.equal(initialize.json.error.code, -32601);

  const del = await fetch(agent.url, {
    method: 'DELETE', headers: headersFor(agent.url, { 'mcp-protocol-version': '2026-07-28' }),
  });
  assert.equal(del.status, 405);
});

test('malformed JSON, unknown methods and unknown tools are JSON-RPC errors', async () => {
  const { agent } = await sharedSetup();
  const { headers } = await openSession(agent.url);
  const malformed = await post(agent.url, '{"jsonrpc":"2.0","id":1,', headers);
  assert.equal(malformed.status, 400);
  assert.equal(malformed.json.error.code, -32700);
  assert.equal(malformed.json.id, null);

  // Nesting deep enough to overflow a recursive parser is refused up front,
  // and the agent goes on serving.
  const deep = await post(agent.url,
    `{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":${'['.repeat(100000)}${']'.repeat(100000)}}}`,
    headers);
  assert.equal(deep.status, 400);
  assert.equal(deep.json.error.code, -32600);
  assert.match(deep.json.error.message, /nests too deeply/);

  const unknownMethod = await post(agent.url, { jsonrpc: '2.0', id: 2, method: 'terminals/explode' }, headers);
  assert.equal(unknownMethod.json.error.code, -32601);
  assert.equal(unknownMethod.json.id, 2);

  const unknownTool = await post(agent.url,
    { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'nope', arguments: {} } }, headers);
  assert.equal(unknownTool.json.error.code, -32602);
  assert.match(unknownTool.json.error.message, /Unknown tool: nope/);

  const badArguments = await post(agent.url, {
    jsonrpc: '2.0', id: 4, method: 'tools/call',
    params: { name: 'memory_terminal_interactive', arguments: { action: 'execute', execution: { command: 42 } } },
  }, headers);
  assert.equal(badArguments.json.result.isError, true);
  assert.equal(badArguments.json.result.structuredContent.error.code, 'PM_TERM_INVALID_PAYLOAD');
  assert.match(JSON.stringify(badArguments.json.result.structuredContent.error), /execution\.command/);
});

test('a foreign Origin or Host gets 403; loopback origins are served', async () => {
  const { agent } = await sharedSetup();
  const initialize = {
    jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'o', version: '1' } },
  };
  const evil = await post(agent.url, initialize, { origin: 'http://evil.example.com' });
  assert.equal(evil.status, 403);
  const local = await post(agent.url, initialize, { origin: `http://localhost:${new URL(agent.url).port}` });
  assert.equal(local.status, 200);
  // DNS rebinding: a loopback-bound server refuses a foreign Host.
  const url = new URL(agent.url);
  const rebound = await new Promise((resolve, reject) => {
    const request = http.request({
      host: url.hostname, port: url.port, path: url.pathname, method: 'POST',
      headers: headersFor(agent.url, { host: 'evil.example.com', 'content-type': 'application/json', accept: JSON_AND_SSE }),
    }, (response) => { response.resume(); response.on('end', () => resolve(response.statusCode)); });
    request.on('error', reject);
    request.end(JSON.stringify(initialize));
  });
  assert.equal(rebound, 403);
});

const INITIALIZE = {
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
};

test('without --http-token-file the agent creates a 0600 token on first start and requires it', async () => {
  const { broker } = await sharedSetup();
  const stateDir = tempDir('tb-http-state-');
  cleanups.push(() => removeDir(stateDir));
  const agent = await startHttpAgent(broker, { env: { TERMBRIDGE_STATE_DIR: stateDir } });
  const tokenFile = path.join(stateDir, 'agent-http-token');
  assert.equal(agent.tokenFile, tokenFile);
  assert.equal(fs.statSync(tokenFile).mode & 0o777, 0o600);
  const token = fs.readFileSync(tokenFile, 'utf8').trim();
  assert.match(token, /^[0-9a-f]{64}$/, '256 random bits, hex');
  // The path is on stderr, the token nowhere in the log.
  assert.match(agent.log(), new RegExp(`event=http_auth mode=bearer token_file=${tokenFile} created=true`));
  assert.ok(!agent.log().includes(token), 'the token is not logged');

  const anonymous = await post(agent.url, INITIALIZE, { authorization: null });
  assert.equal(anonymous.status, 401);
  assert.equal(anonymous.headers.get('www-authenticate'), 'Bearer');
  assert.equal(anonymous.json?.error?.code, -32600, anonymous.text);
  const wrong = await post(agent.url, INITIALIZE, { authorization: `Bearer ${token.replace(/.$/, (c) => (c === '0' ? '1' : '0'))}` });
  assert.equal(wrong.status, 401);
  const notBearer = await post(agent.url, INITIALIZE, { authorization: token });
  assert.equal(notBearer.status, 401);
  const client = await sdkClient(agent.url, { headers: { authorization: `Bearer ${token}` } });
  const { tools } = await client.listTools();
  assert.equal(tools.length, 2);

  // A second start reads the same token instead of making another.
  const again = await startHttpAgent(broker, { env: { TERMBRIDGE_STATE_DIR: stateDir } });
  assert.match(again.log(), /event=http_auth mode=bearer token_file=\S+ created=false/);
  assert.equal(fs.readFileSync(tokenFile, 'utf8').trim(), token);
  assert.equal((await post(again.url, INITIALIZE, { authorization: `Bearer ${token}` })).status, 200);
  assert.deepEqual(fs.readdirSync(stateDir), ['agent-http-token']);
});

test('--http-token-file names the token to require', async () => {
  const { broker } = await sharedSetup();
  const dir = tempDir('tb-token-');
  cleanups.push(() => removeDir(dir));
  const tokenFile = path.join(dir, 'http-token');
  fs.writeFileSync(tokenFile, 'http-secret-token\n', { mode: 0o600 });
  const agent = await startHttpAgent(broker, { args: ['--http-token-file', tokenFile] });
  const anonymous = await post(agent.url, INITIALIZE, { authorization: null });
  assert.equal(anonymous.status, 401);
  assert.equal(anonymous.headers.get('www-authenticate'), 'Bearer');
  const wrong = await post(agent.url, INITIALIZE, { authorization: 'Bearer nope' });
  assert.equal(wrong.status, 401);

  const client = await sdkClient(agent.url, { headers: { authorization: 'Bearer http-secret-token' } });
  const { tools } = await client.listTools();
  assert.equal(tools.length, 2);
});

// Starts an agent that must not start; resolves with its exit code and stderr.
async function refusedStart(args) {
  const stateDir = tempDir('tb-http-refused-');
  cleanups.push(() => removeDir(stateDir));
  const child = spawn(AGENT_BIN, args, {
    env: { PATH: process.env.PATH, HOME: process.env.HOME ?? '/tmp', TERMBRIDGE_STATE_DIR: stateDir },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c) => { stderr += c; });
  const exited = once(child, 'exit');
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  const [code] = await withDeadline(exited, 15000, () => `the agent kept running:\n${stderr}`);
  return { code, stderr };
}

test('--http-no-auth serves without a token, and only on a loopback address', async () => {
  const { broker } = await sharedSetup();
  const agent = await startHttpAgent(broker, { args: ['--http-no-auth'] });
  assert.equal(agent.tokenFile, '');
  assert.match(agent.log(), /event=http_auth mode=none/);
  const anonymous = await post(agent.url, INITIALIZE, { authorization: null });
  assert.equal(anonymous.status, 200, anonymous.text);
  assert.equal(fs.existsSync(path.join(agent.dir, 'state', 'agent-http-token')), false, 'no token made');

  // Anywhere but loopback, it refuses to start and says why.
  const open = await refusedStart(['--http', '0.0.0.0:0', '--http-no-auth']);
  assert.equal(open.code, 2, open.stderr);
  assert.match(open.stderr, /without a bearer token may listen only on a loopback address .*not on 0\.0\.0\.0/);
  assert.doesNotMatch(open.stderr, /event=serving/);
  // Both at once is a contradiction, not a guess.
  const both = await refusedStart(['--http', '127.0.0.1:0', '--http-no-auth', '--http-token-file', '/nonexistent']);
  assert.equal(both.code, 2, both.stderr);
  assert.match(both.stderr, /--http-no-auth and --http-token-file exclude each other/);
});

test('a field of the wrong type is a JSON-RPC error, and the agent goes on serving', async () => {
  const { agent } = await sharedSetup();
  // Each of these once aborted the whole agent, ending every client's session.
  const badInfo = await post(agent.url, {
    jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: 'oops' },
  });
  assert.equal(badInfo.json?.error?.code, -32602, badInfo.text);
  assert.equal(badInfo.json.id, 1);
  const badMethod = await post(agent.url, { jsonrpc: '2.0', id: 2, method: 7, params: { _meta: MODERN_META } },
    modernHeaders('7'));
  assert.ok([-32600, -32020].includes(badMethod.json?.error?.code), badMethod.text);
  const { headers } = await openSession(agent.url);
  const badMeta = await post(agent.url,
    { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'memory_terminal_interactive', _meta: 'x' } },
    headers);
  assert.equal(badMeta.json?.error?.code, -32602, badMeta.text);
  const ping = await post(agent.url, { jsonrpc: '2.0', id: 4, method: 'ping' }, headers);
  assert.equal(ping.status, 200, ping.text);
  assert.deepEqual(ping.json.result, {});
});

test('request headers over the limit get 431, not a dropped connection', async () => {
  const { agent } = await sharedSetup();
  const huge = await post(agent.url, { jsonrpc: '2.0', id: 1, method: 'ping' },
    { 'mcp-session-id': 'x'.repeat(20000) });
  assert.equal(huge.status, 431, huge.text);
  assert.equal(huge.json?.error?.code, -32600);
});

test('idle connections cannot lock out a new client, and an initialize flood ends no session in use', async () => {
  const broker = await Broker.start();
  cleanups.push(() => broker.stop());
  const agent = await startHttpAgent(broker);
  const { headers } = await openSession(agent.url);
  const { port } = new URL(agent.url);
  // A request on a connection of its own (agent: false): a pooled
  // keep-alive connection may be the one the agent closed to make room.
  const viaNewConnection = (body, session = headers) => new Promise((resolve, reject) => {
    const request = http.request(agent.url, {
      method: 'POST', agent: false,
      headers: headersFor(agent.url, { 'content-type': 'application/json', accept: JSON_AND_SSE, ...session }),
    }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (d) => { text += d; });
      response.on('end', () => resolve({ status: response.statusCode, text }));
    });
    request.on('error', reject);
    request.end(JSON.stringify(body));
  });
  const connectIdle = () => new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => resolve(socket));
    socket.on('error', reject);
  });
  const idle = await Promise.all(Array.from({ length: 64 }, connectIdle));
  // The agent counts a connection once its thread runs, so it makes room
  // only for sockets that come once it is full: more, one at a time, until
  // it has closed some.
  const closedForRoom = () => agent.log().split('reason=idle_for_new_connection').length - 1;
  for (let extra = 0; closedForRoom() < 3; extra++) {
    assert.ok(extra < 500, `the agent closed no idle connection for new ones:\n${agent.log()}`);
    idle.push(await connectIdle());
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  try {
    const ping = await viaNewConnection({ jsonrpc: '2.0', id: 3, method: 'ping' });
    assert.equal(ping.status, 200, ping.text);
  } finally {
    for (const socket of idle) socket.destroy();
  }
  // 260 sessions opened and never used: more than the agent keeps (256).
  for (let i = 0; i < 260; i++) {
    const init = await viaNewConnection({
      jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'flood', version: '1' } },
    }, {});
    assert.equal(init.status, 200, init.text);
  }
  const still = await viaNewConnection({ jsonrpc: '2.0', id: 2, method: 'ping' });
  assert.equal(still.status, 200, `the session in use was evicted: ${still.text}`);
});

test('with every connection serving a request, a new one gets 503 with Retry-After, and is served again after', async () => {
  const broker = await Broker.start();
  cleanups.push(() => broker.stop());
  const agent = await startHttpAgent(broker);
  const client = await sdkClient(agent.url);
  const r = await terminal(client, {
    action: 'execute', execution: { command: 'sleep 60' }, runtime: { timeout_ms: 100 },
  });
  assert.equal(r.status, 'accepted', JSON.stringify(r));
  const { headers } = await openSession(agent.url);
  // 64 calls (as many connections as the agent serves), each waiting up to 6 s
  // for output that never comes. With a progress token the agent answers in
  // SSE and sends its first heartbeat at once, so once every response has
  // its headers, every connection is serving a call.
  const read = (id) => fetch(agent.url, {
    method: 'POST',
    headers: headersFor(agent.url, { 'content-type': 'application/json', accept: JSON_AND_SSE, ...headers }),
    body: JSON.stringify({
      jsonrpc: '2.0', id, method: 'tools/call',
      params: {
        name: 'memory_terminal_interactive',
        _meta: { progressToken: `p${id}` },
        arguments: {
          action: 'read_output', target: { session_id: r.identity.session_id },
          until: 'match', match: 'never-printed', wait_ms: 6000,
        },
      },
    }),
  });
  const waiting = await Promise.all(Array.from({ length: 64 }, (_, i) => read(100 + i)));
  for (const response of waiting) {
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type'), /text\/event-stream/);
  }
  // Idle keep-alive connections (the SDK's, the session's) may still hold a
  // slot; each probe that is served closes its own, until none is left.
  let busy = null;
  for (let i = 0; i < 8 && !busy; i++) {
    const probe = await post(agent.url, { jsonrpc: '2.0', id: 1, method: 'ping' },
      { ...headers, connection: 'close' });
    if (probe.status === 503) busy = probe;
    else assert.equal(probe.status, 200, probe.text);
  }
  assert.ok(busy, 'no 503 while 64 calls were being served');
  assert.equal(busy.headers.get('retry-after'), '1');
  assert.equal(busy.json?.error?.code, -32000, busy.text);
  assert.match(busy.json.error.message, /busy/i);
  // Every waiting call still ends with its result, and then there is room again.
  const bodies = await Promise.all(waiting.map((response) => response.text()));
  bodies.forEach((body, i) => {
    assert.match(body, new RegExp(`data: \\{"id":${100 + i},"jsonrpc":"2.0","result":`), body.slice(-300));
    assert.match(body, /"structuredContent":\{.*"wait_result":"timeout"/);
  });
  const after = await post(agent.url, { jsonrpc: '2.0', id: 2, method: 'ping' }, headers);
  assert.equal(after.status, 200, after.text);
  await terminal(client, { action: 'terminate', target: { session_id: r.identity.session_id } });
});
