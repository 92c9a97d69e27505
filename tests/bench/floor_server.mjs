// The "MCP floor" for tests/bench/throughput.mjs (issue 24, "Throughput"): the
// least an MCP server over stdio can do to hand a command's output to a
// client. It uses the official SDK server (low-level Server, StdioServerTransport),
// spawns the command with `/bin/sh -c` on pipes (no PTY, no policy, no
// shell integration), keeps everything it printed in memory and pages it
// out as tool results of up to 4 MiB of text. What the same SDK client gets
// from it is the speed of MCP itself on this machine; termbridge is
// measured against it in the same run. Not a test on its own:
//
//   node tests/bench/floor_server.mjs      (speaks MCP on stdin/stdout)
//
// Tools: `run {command, pty?}` -> {id} (with pty true the command runs in a
// PTY, under util-linux `script`, whose output arrives as the terminal's
// bytes: "\r\n" line ends); `read {id, cursor, max_bytes?, wait_ms?,
// structured?}` -> content [{type: text, text: output from cursor}] and
// structuredContent {cursor, more, running, exit_code}, with `stdout` (the
// same text again) when `structured` is true: the shape the MCP spec asks of
// a tool with structured output ("SHOULD also return the serialized JSON in a
// TextContent block"), and termbridge's (docs/CONTRACT.md, 'MCP wrapping').
// `read` waits up to wait_ms (default 10000) for output past the cursor or
// the exit.
import { spawn } from 'node:child_process';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const PAGE_BYTES = 4 * 1024 * 1024;

// One command's output, all of it, in the chunks the pipe delivered.
class Run {
  constructor(command, pty) {
    this.chunks = [];
    this.bytes = 0;
    this.running = true;
    this.exitCode = null;
    this.waiters = [];
    this.child = pty
      ? spawn('script', ['-qfec', command, '/dev/null'], { stdio: ['ignore', 'pipe', 'inherit'] })
      : spawn('/bin/sh', ['-c', command], { stdio: ['ignore', 'pipe', 'inherit'] });
    this.child.stdout.on('data', (chunk) => {
      this.chunks.push(chunk);
      this.bytes += chunk.length;
      this.wake();
    });
    // 'close': the exit and the end of its stdout, so every byte is in.
    this.child.on('close', (code) => {
      this.running = false;
      this.exitCode = code;
      this.wake();
    });
  }

  wake() {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }

  // Resolves once there is output past `cursor`, the command has ended, or `ms` passed.
  async waitPast(cursor, ms) {
    if (this.bytes > cursor || !this.running) return;
    let timer;
    await new Promise((resolve) => {
      this.waiters.push(resolve);
      timer = setTimeout(resolve, ms);
    });
    clearTimeout(timer);
  }

  // The bytes from `cursor` to at most `cursor + max`.
  slice(cursor, max) {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks)];
    const all = this.chunks[0] ?? Buffer.alloc(0);
    return all.subarray(cursor, Math.min(all.length, cursor + max));
  }
}

const runs = new Map();
let nextId = 1;

const server = new Server({ name: 'termbridge-floor', version: '0.0.0' },
  { capabilities: { tools: {} } });

server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: 'run',
      description: 'Start a shell command; its output is read with read',
      inputSchema: {
        type: 'object', properties: { command: { type: 'string' }, pty: { type: 'boolean' } }, required: ['command'],
      },
    },
    {
      name: 'read',
      description: 'Read a command\'s output from a cursor, up to 4 MiB a call',
      inputSchema: {
        type: 'object',
        properties: {
          id: { type: 'integer' }, cursor: { type: 'integer' },
          max_bytes: { type: 'integer' }, wait_ms: { type: 'integer' }, structured: { type: 'boolean' },
        },
        required: ['id'],
      },
    },
  ],
}));

server.setRequestHandler(CallToolRequestSchema, async (request) => {
  const args = request.params.arguments ?? {};
  if (request.params.name === 'run') {
    const id = nextId++;
    runs.set(id, new Run(String(args.command), args.pty === true));
    return { content: [{ type: 'text', text: `started ${id}` }], structuredContent: { id } };
  }
  if (request.params.name === 'read') {
    const run = runs.get(args.id);
    if (!run) return { content: [{ type: 'text', text: `no run ${args.id}` }], isError: true };
    const cursor = args.cursor ?? 0;
    await run.waitPast(cursor, args.wait_ms ?? 10000);
    const page = run.slice(cursor, Math.min(args.max_bytes ?? PAGE_BYTES, PAGE_BYTES));
    const next = cursor + page.length;
    const text = page.toString('utf8');
    const status = { cursor: next, more: next < run.bytes, running: run.running, exit_code: run.exitCode };
    return {
      content: [{ type: 'text', text }],
      structuredContent: args.structured ? { stdout: text, ...status } : status,
    };
  }
  return { content: [{ type: 'text', text: `unknown tool ${request.params.name}` }], isError: true };
});

await server.connect(new StdioServerTransport());
