// The MCP client configuration deploy/up.sh prints, read the way each host
// reads its own file: Claude Code / Claude Desktop / Cursor (JSON,
// "mcpServers"), VS Code (JSON, "servers" with a "type") and Codex (TOML,
// [mcp_servers.NAME]). parseClientBlocks finds the printed blocks;
// serverFromBlock applies the host's rules to one; connectServer makes the
// official SDK's transport from it (stdio: command, args and env on top of
// the SDK's default environment, as hosts do; HTTP: url and headers).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

// Blocks printed as "<host and file> (HTTP|stdio):" followed by the file's
// text up to a blank line. Returns [{ title, transport, text }].
export function parseClientBlocks(out) {
  const blocks = [];
  const re = /^(\S[^\n]*?) \((HTTP|stdio)\):\n([^]*?)\n\n/gm;
  for (const m of out.matchAll(re)) blocks.push({ title: m[1], transport: m[2], text: m[3] });
  return blocks;
}

// TOML, parsed by Python's tomllib (the standard library's TOML 1.0 reader).
export function parseToml(text) {
  const python = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
  const json = execFileSync(python, ['-c',
    'import json, sys, tomllib; print(json.dumps(tomllib.loads(sys.stdin.read())))'], { input: text });
  return JSON.parse(json);
}

// What the host named in `block.title` would start or connect to, for the
// server named `name`: { kind: 'http', url, headers } or
// { kind: 'stdio', command, args, env }. Throws on a shape the host refuses.
export function serverFromBlock(block, name = 'termbridge') {
  if (/Codex/.test(block.title)) {
    const server = parseToml(block.text).mcp_servers?.[name];
    if (!server) throw new Error(`no [mcp_servers.${name}] in:\n${block.text}`);
    if (server.url) {
      if (server.command || server.env) throw new Error('Codex refuses url with command or env');
      const headers = { ...(server.http_headers ?? {}) };
      if (server.bearer_token_env_var) {
        headers.Authorization = `Bearer ${process.env[server.bearer_token_env_var]}`;
      }
      return { kind: 'http', url: server.url, headers };
    }
    return { kind: 'stdio', command: server.command, args: server.args ?? [], env: server.env ?? {} };
  }
  const file = JSON.parse(block.text);
  if (/VS Code/.test(block.title)) {
    const server = file.servers?.[name];
    if (!server) throw new Error(`no servers.${name} in:\n${block.text}`);
    if (server.type === 'http') return { kind: 'http', url: server.url, headers: server.headers ?? {} };
    if (server.type === 'stdio') {
      return { kind: 'stdio', command: server.command, args: server.args ?? [], env: server.env ?? {} };
    }
    throw new Error(`VS Code needs type http or stdio, got ${server.type}`);
  }
  const server = file.mcpServers?.[name];
  if (!server) throw new Error(`no mcpServers.${name} in:\n${block.text}`);
  if (server.command) {
    return { kind: 'stdio', command: server.command, args: server.args ?? [], env: server.env ?? {} };
  }
  // Claude Code needs "type": "http" for a URL; Cursor takes a url alone.
  if (/Claude/.test(block.title) && server.type !== 'http') throw new Error('Claude Code needs "type": "http"');
  return { kind: 'http', url: server.url, headers: server.headers ?? {} };
}

// An SDK client connected to `server`; `onStderr` gets a stdio server's stderr.
export async function connectServer(server, onStderr = () => {}) {
  const transport = server.kind === 'http'
    ? new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: server.headers } })
    : new StdioClientTransport({ command: server.command, args: server.args, env: server.env, stderr: 'pipe' });
  if (server.kind === 'stdio') transport.stderr?.on('data', onStderr);
  const client = new Client({ name: 'termbridge-client-config', version: '0.0.0' });
  await client.connect(transport);
  return client;
}

// The blocks every up.sh run prints: one per host and transport.
export const EXPECTED_BLOCKS = [
  ['Claude Code, .mcp.json in the project', 'HTTP'],
  ['Claude Code .mcp.json, Claude Desktop claude_desktop_config.json, Cursor ~/.cursor/mcp.json', 'stdio'],
  ['Cursor, ~/.cursor/mcp.json or .cursor/mcp.json', 'HTTP'],
  ['VS Code, .vscode/mcp.json', 'HTTP'],
  ['VS Code, .vscode/mcp.json', 'stdio'],
  ['Codex, ~/.codex/config.toml', 'HTTP'],
  ['Codex, ~/.codex/config.toml', 'stdio'],
];

// Feeds every block of up.sh's output `out` to an SDK client as its host
// would: tools/list must name both terminal tools and an execute of `echo`
// must return its line. `execute(client, command)` runs one command and
// returns the tool's result. Returns the servers, in EXPECTED_BLOCKS order.
export async function exerciseEveryClient(out, execute, assert) {
  const blocks = parseClientBlocks(out);
  assert.deepEqual(blocks.map((b) => [b.title, b.transport]), EXPECTED_BLOCKS,
    `up.sh printed one block per host and transport:\n${out}`);
  const servers = [];
  for (const [i, block] of blocks.entries()) {
    const server = serverFromBlock(block);
    assert.equal(server.kind, block.transport === 'HTTP' ? 'http' : 'stdio', block.title);
    let stderr = '';
    const client = await connectServer(server, (d) => { stderr += d; }).catch((e) => {
      throw new Error(`${block.title} (${block.transport}): ${e.message}\n${stderr}`);
    });
    try {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name).sort();
      assert.deepEqual(names, ['memory_terminal', 'memory_terminal_interactive'], block.title);
      const r = await execute(client, `echo client-config-${i}`);
      assert.equal(r.success, true, `${block.title} (${block.transport}): ${JSON.stringify(r.error)}\n${stderr}`);
      assert.equal(r.result.stdout, `client-config-${i}\n`);
    } finally {
      await client.close();
    }
    servers.push(server);
  }
  return servers;
}
