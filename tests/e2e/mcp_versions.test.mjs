// Every released MCP protocol version, end to end against a real
// termbridge-agent and broker (docs/CONTRACT.md, "MCP protocol versions"):
// the official TypeScript SDK client pinned to 2024-11-05 (stdio), 2025-03-26,
// 2025-06-18 and 2025-11-25 (stdio and Streamable HTTP) gets its own version
// back and answers in that version's shape; raw JSON-RPC covers what the SDK
// does not send (a 2025-03-26 client without MCP-Protocol-Version, batches,
// the stateless 2026-07-28 over stdio) and the refusals.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import readline from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AGENT_BIN, Broker, startHttpAgent, withDeadline } from '../lib/harness.mjs';

const cleanups = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const POLICY = `version = 1
default = "ask"
default_rules = false

[[rule]]
id = "echo"
action = "allow"
prefix = ["echo"]

[[rule]]
id = "sleep"
action = "allow"
prefix = ["sleep"]
`;

let setup = null;
// One broker and one HTTP agent for the whole file.
function shared() {
  setup ??= (async () => {
    const broker = await Broker.start({ policy: POLICY });
    cleanups.push(() => broker.stop());
    const http = await startHttpAgent(broker);
    cleanups.push(() => http.stop());
    return { broker, http };
  })();
  return setup;
}

function agentEnv(broker) {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME ?? '/tmp',
    PM_INTERACTIVE_TERMINAL_HOST_PORT: String(broker.port),
    TERMBRIDGE_BRIDGE_TOKEN_FILE: broker.tokenFile,
  };
}

// Makes the SDK client (which always asks for its latest version) ask for
// `version` instead, as a client of that version would, and records the
// version the server agreed on.
function pinTo(transport, version) {
  const seen = { agreed: null };
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    if (message.method === 'initialize') {
      message = { ...message, params: { ...message.params, protocolVersion: version } };
    }
    return send(message, options);
  };
  const start = transport.start.bind(transport);
  transport.start = async () => {
    const deliver = transport.onmessage;
    transport.onmessage = (message, extra) => {
      if (seen.agreed === null && message.result?.protocolVersion) seen.agreed = message.result.protocolVersion;
      deliver?.(message, extra);
    };
    return start();
  };
  return seen;
}

async function connectPinned(kind, version) {
  const { broker, http } = await shared();
  const transport = kind === 'stdio'
    ? new StdioClientTransport({ command: AGENT_BIN, env: agentEnv(broker), stderr: 'pipe' })
    : new StreamableHTTPClientTransport(new URL(http.url), { requestInit: http.requestInit });
  const seen = pinTo(transport, version);
  const client = new Client({ name: `termbridge-e2e-${version}`, version: '0.0.0' });
  await client.connect(transport);
  cleanups.push(() => client.close());
  return { client, seen };
}

const CASES = [
  ['stdio', '2024-11-05'],
  ['stdio', '2025-03-26'], ['http', '2025-03-26'],
  ['stdio', '2025-06-18'], ['http', '2025-06-18'],
  ['stdio', '2025-11-25'], ['http', '2025-11-25'],
];

for (const [kind, version] of CASES) {
  test(`${kind} ${version}: the SDK client gets its version and answers in its shape`, async () => {
    const { client, seen } = await connectPinned(kind, version);
    assert.equal(seen.agreed, version);
    const structured = version >= '2025-06-18';
    assert.equal('title' in client.getServerVersion(), structured);

    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name === 'memory_terminal');
    assert.ok(tool, 'memory_terminal is listed');
    assert.equal('outputSchema' in tool, structured, 'outputSchema only from 2025-06-18');
    assert.equal('title' in tool, structured, 'title only from 2025-06-18');
    assert.equal('annotations' in tool, version >= '2025-03-26', 'annotations only from 2025-03-26');

    const progress = [];
    const result = await client.callTool(
      { name: 'memory_terminal', arguments: { action: 'run', command: 'sleep', args: ['1.5'], wait_ms: 10000 } },
      undefined, { timeout: 60000, onprogress: (p) => progress.push(p) });
    assert.equal(result.isError, false, JSON.stringify(result));
    assert.equal('structuredContent' in result, structured, 'structuredContent only from 2025-06-18');
    // The text content stands on its own for the versions without structuredContent.
    assert.match(result.content[0].text, /exit 0/);
    assert.ok(progress.length > 0, 'the heartbeat reported progress while the command ran');
    assert.equal('message' in progress[0], version >= '2025-03-26', 'progress messages only from 2025-03-26');
  });
}

// A raw stdio agent: one JSON-RPC line out, replies read line by line.
async function rawStdio() {
  const { broker } = await shared();
  const child = spawn(AGENT_BIN, [], { env: agentEnv(broker), stdio: ['pipe', 'pipe', 'pipe'] });
  const exited = once(child, 'exit');
  exited.catch(() => {});
  let log = '';
  child.stderr.on('data', (d) => { log += d; });
  const lines = readline.createInterface({ input: child.stdout });
  const queue = [];
  const waiting = [];
  lines.on('line', (line) => {
    const message = JSON.parse(line);
    if (waiting.length) waiting.shift()(message); else queue.push(message);
  });
  const agent = {
    send: (message) => child.stdin.write(`${typeof message === 'string' ? message : JSON.stringify(message)}\n`),
    next: () => withDeadline(
      queue.length ? Promise.resolve(queue.shift()) : new Promise((resolve) => waiting.push(resolve)),
      30000, () => `no reply from the stdio agent; its log:\n${log}`),
    async request(message) {
      agent.send(message);
      return agent.next();
    },
  };
  cleanups.push(async () => {
    child.stdin.end();  // closing stdin ends a stdio session
    await withDeadline(exited, 30000, () => `the stdio agent did not exit; its log:\n${log}`);
  });
  return agent;
}

const initialize = (version, id = 1) => ({
  jsonrpc: '2.0', id, method: 'initialize',
  params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

test('stdio 2025-03-26: a batch is answered with one array, and refused once another version is agreed', async () => {
  const agent = await rawStdio();
  assert.equal((await agent.request(initialize('2025-03-26'))).result.protocolVersion, '2025-03-26');
  const replies = await agent.request([
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'ping' },
    { jsonrpc: '2.0', id: 3, method: 'tools/call',
      params: { name: 'memory_terminal', arguments: { action: 'run', command: 'echo', args: ['batched'] } } },
  ]);
  assert.ok(Array.isArray(replies), JSON.stringify(replies));
  assert.deepEqual(replies.map((r) => r.id), [2, 3]);
  assert.match(replies[1].result.content[0].text, /batched/);
  assert.equal(replies[1].result.structuredContent, undefined);

  const later = await rawStdio();
  await later.request(initialize('2025-06-18'));
  const refused = await later.request([{ jsonrpc: '2.0', id: 2, method: 'ping' }]);
  assert.equal(refused.error.code, -32600);
  assert.match(refused.error.message, /2025-03-26 only/);
});

test('stdio 2026-07-28: stateless requests list every stdio version and refuse unknown ones', async () => {
  const agent = await rawStdio();
  const meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  };
  const discover = await agent.request({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: meta } });
  assert.deepEqual(discover.result.supportedVersions,
    ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']);
  const call = await agent.request({
    jsonrpc: '2.0', id: 2, method: 'tools/call',
    params: { name: 'memory_terminal', arguments: { action: 'run', command: 'echo', args: ['modern'] }, _meta: meta },
  });
  assert.equal(call.result.resultType, 'complete');
  assert.equal(call.result.structuredContent.result.stdout, 'modern\n');
  const unknown = await agent.request({
    jsonrpc: '2.0', id: 3, method: 'tools/list',
    params: { _meta: { ...meta, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } },
  });
  assert.equal(unknown.error.code, -32022);
  assert.equal(unknown.error.data.requested, '2099-01-01');
});

async function post(http, body, headers = {}) {
  const response = await fetch(http.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json', accept: 'application/json, text/event-stream',
      ...(http.authorization ? { authorization: http.authorization } : {}), ...headers,
    },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, json: text ? JSON.parse(text) : null };
}

test('http 2025-03-26: a client that sends no MCP-Protocol-Version is served, batches included', async () => {
  const { http } = await shared();
  const init = await post(http, initialize('2025-03-26'));
  assert.equal(init.status, 200);
  assert.equal(init.json.result.protocolVersion, '2025-03-26');
  const session = { 'mcp-session-id': init.headers.get('mcp-session-id') };
  assert.equal((await post(http, { jsonrpc: '2.0', method: 'notifications/initialized' }, session)).status, 202);
  const batch = await post(http, [
    { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    { jsonrpc: '2.0', id: 3, method: 'tools/call',
      params: { name: 'memory_terminal', arguments: { action: 'run', command: 'echo', args: ['over http'] } } },
  ], session);
  assert.equal(batch.status, 200);
  assert.deepEqual(batch.json.map((r) => r.id), [2, 3]);
  assert.equal(batch.json[0].result.tools.some((t) => 'outputSchema' in t), false);
  assert.match(batch.json[1].result.content[0].text, /over http/);
});

test('http: 2024-11-05 (an HTTP+SSE-era version) and unknown versions are refused with the supported list', async () => {
  const { http } = await shared();
  const init = await post(http, initialize('2024-11-05'));
  assert.equal(init.json.result.protocolVersion, '2025-11-25', 'initialize offers the latest instead');
  const session = { 'mcp-session-id': init.headers.get('mcp-session-id') };
  for (const version of ['2024-11-05', '2099-01-01']) {
    const refused = await post(http, { jsonrpc: '2.0', id: 2, method: 'ping' },
      { ...session, 'mcp-protocol-version': version });
    assert.equal(refused.status, 400, version);
    assert.equal(refused.json.error.code, -32022, version);
    assert.deepEqual(refused.json.error.data.supported, ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26']);
  }
  const later = await post(http, [{ jsonrpc: '2.0', id: 3, method: 'ping' }],
    { ...session, 'mcp-protocol-version': '2025-11-25' });
  assert.equal(later.status, 400);
  assert.equal(later.json.error.code, -32600);
});
