// Output sized for a model (docs/CONTRACT.md, 'Output budget'), end to end:
// the official MCP SDK client drives a real termbridge-agent over stdio. A
// command that prints about 200 KB comes back as its head and its tail within
// the budget, with omitted_bytes and the cursor to read the middle; reading it
// reconstructs the output byte for byte (sha256), in the interactive lane (a
// real PTY on a real broker) and in the headless lane alike. The text content
// is the output and one status line, not a copy of the JSON.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  Broker, connectAgent, terminal, textAgrees, tempDir, removeDir,
} from '../lib/harness.mjs';

const DEFAULT_BUDGET = 16384;  // docs/CONTRACT.md: max_bytes absent or 0

// Nothing asks in the interactive lane; the headless lane needs an allow rule.
const POLICY = `version = 1
default = "allow"

[[rule]]
id = "base64"
action = "allow"
prefix = ["base64"]

[[rule]]
id = "echo"
action = "allow"
prefix = ["echo"]
`;

const cleanups = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

let client;
let dir;
let expected;  // what `base64 -w 76 data.bin` prints
before(async () => {
  dir = tempDir('tb-budget-');
  cleanups.push(() => removeDir(dir));
  // 150000 random bytes: about 200 KB of base64 lines, no two alike.
  const data = crypto.randomBytes(150000);
  fs.writeFileSync(path.join(dir, 'data.bin'), data);
  expected = `${data.toString('base64').match(/.{1,76}/g).join('\n')}\n`;
  const broker = await Broker.start({ policy: POLICY });
  cleanups.push(() => broker.stop());
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => agent.client.close());
  client = agent.client;
});

const sha256 = (text) => crypto.createHash('sha256').update(text).digest('hex');
const bytes = (text) => Buffer.byteLength(text, 'utf8');

async function headless(args) {
  const result = await client.callTool({ name: 'memory_terminal', arguments: args }, undefined,
    { timeout: 120000 });
  const text = result.content[0].text;
  return { ...result.structuredContent, isError: result.isError === true, text,
    textMatches: textAgrees(result.structuredContent, text) };
}

// Checks a shaped result: head and tail within `budget`, the omitted bytes
// between the cursor and the tail, and the model's text naming that cursor.
function assertShaped(r, budget) {
  assert.equal(r.success, true, JSON.stringify(r.error));
  const out = r.result;
  assert.ok(out.tail, `the output was cut: ${JSON.stringify({ ...out, stdout: undefined })}`);
  assert.ok(bytes(out.stdout) + bytes(out.tail.stdout) <= budget,
    `head ${bytes(out.stdout)} + tail ${bytes(out.tail.stdout)} bytes within ${budget}`);
  assert.ok(bytes(out.stdout) > 0 && bytes(out.tail.stdout) > 0);
  assert.equal(out.omitted_bytes, out.tail.start - out.cursor);
  assert.ok(out.omitted_bytes > 150000, `omitted ${out.omitted_bytes}`);
  assert.equal(out.more, true);
  assert.ok(r.textMatches, r.text);
  assert.ok(r.text.includes(`\n[… ${out.omitted_bytes} bytes omitted here; read_output cursor=${out.cursor} tail=false reads them …]\n`),
    r.text.slice(0, 300));
  assert.ok(bytes(r.text) < budget + 400, `the text content is ${bytes(r.text)} bytes`);
}

// Reads the omitted bytes [from, to) with read_output, page by page (`read`
// makes the call for a cursor and a budget); every page continues exactly
// where the last one ended. The budget never reaches past `to`, so no page
// runs into the tail (already shown). With tail: false each page is a plain
// page of the budget; with the default each is cut again into head and tail,
// and the head alone moves on.
async function readMiddle(read, from, to) {
  let text = '';
  let cursor = from;
  while (cursor < to) {
    const page = await read(cursor, Math.min(65536, to - cursor));
    assert.equal(page.success, true, JSON.stringify(page.error));
    assert.equal(page.result.output_start, cursor);
    assert.equal(page.result.gap_bytes, 0);
    assert.ok(page.result.cursor > cursor && page.result.cursor <= to,
      `page from ${cursor} ended at ${page.result.cursor} (middle ends at ${to})`);
    text += page.result.stdout;
    cursor = page.result.cursor;
  }
  return text;
}

test('interactive: 200 KB comes back as head and tail within the budget, and the cursor reads the middle exactly', async () => {
  // Raw output: PTY bytes, one byte per offset, so omitted_bytes is checked byte for byte.
  const r = await terminal(client, {
    action: 'execute', execution: { command: 'base64 -w 76 data.bin' }, runtime: { cwd: dir },
    format: 'raw',
  });
  assert.equal(r.status, 'completed', JSON.stringify(r.result?.approval ?? r.error));
  assert.equal(r.result.exit_code, 0);
  assertShaped(r, DEFAULT_BUDGET);
  const raw = expected.replaceAll('\n', '\r\n');  // the terminal's line discipline
  assert.equal(r.result.tail.cursor - r.result.output_start, bytes(raw));
  const middle = await readMiddle((cursor, budget) => terminal(client, {
    action: 'read_output', target: { session_id: r.identity.session_id }, cursor, format: 'raw',
    max_bytes: budget, tail: false,
  }), r.result.cursor, r.result.tail.start);
  assert.equal(bytes(middle), r.result.omitted_bytes);
  assert.equal(sha256(r.result.stdout + middle + r.result.tail.stdout), sha256(raw));

  // The clean text (the default format) of the same session, read from its
  // start: shaped the same way, and its middle, read with the default (head
  // and tail) reads, comes back to the exact output.
  const clean = await terminal(client, {
    action: 'read_output', target: { session_id: r.identity.session_id },
  });
  assertShaped(clean, DEFAULT_BUDGET);
  const cleanMiddle = await readMiddle((cursor, budget) => terminal(client, {
    action: 'read_output', target: { session_id: r.identity.session_id }, cursor, max_bytes: budget,
  }), clean.result.cursor, clean.result.tail.start);
  assert.equal(sha256(clean.result.stdout + cleanMiddle + clean.result.tail.stdout), sha256(expected));

  // A larger explicit budget is let through: all of it in one read.
  const whole = await terminal(client, {
    action: 'read_output', target: { session_id: r.identity.session_id }, max_bytes: 1048576,
  });
  assert.equal(whole.result.omitted_bytes, 0);
  assert.equal(whole.result.tail, undefined);
  assert.equal(whole.result.more, false);
  assert.equal(sha256(whole.result.stdout), sha256(expected));
});

test('headless: the same output is shaped the same way, and its cursor reads every byte', async () => {
  const r = await headless({ action: 'run', command: 'base64', args: ['-w', '76', 'data.bin'], cwd: dir,
    wait_ms: 20000 });
  assert.equal(r.status, 'completed', JSON.stringify(r.error ?? r.result));
  assert.equal(r.result.exit_code, 0);
  assertShaped(r, DEFAULT_BUDGET);
  assert.equal(r.result.tail.cursor, bytes(expected));
  const middle = await readMiddle((cursor, budget) => headless({
    action: 'read_output', session_id: r.identity.session_id, cursor, max_bytes: budget, tail: false,
  }), r.result.cursor, r.result.tail.start);
  assert.equal(bytes(middle), r.result.omitted_bytes);
  assert.equal(sha256(r.result.stdout + middle + r.result.tail.stdout), sha256(expected));
});

test('a two-byte output is the output and a short status line, with the full result in structuredContent', async () => {
  const r = await terminal(client, { action: 'execute', execution: { command: 'printf hi' }, runtime: { cwd: dir } });
  assert.equal(r.success, true, JSON.stringify(r.error));
  assert.equal(r.result.stdout, 'hi');
  assert.equal(r.result.exit_code, 0);
  assert.equal(r.result.omitted_bytes, 0);
  assert.equal(r.correlation.request_id.startsWith('req_'), true, 'structuredContent keeps every field');
  assert.match(r.text, /^hi\n\[exit 0 · 2 bytes · session s_\S+ · terminal t_\S+ · cursor \d+\]$/);
  assert.ok(r.text.length < 120, r.text);
  assert.ok(r.textMatches);

  const h = await headless({ action: 'run', command: 'echo', args: ['hi'], cwd: dir, wait_ms: 20000 });
  assert.equal(h.success, true, JSON.stringify(h.error));
  assert.equal(h.result.stdout, 'hi\n');
  assert.match(h.text, /^hi\n\[exit 0 · 3 bytes · headless · session \S+ · cursor 3\]$/);

  // A failure is its code, message and what to do next: not JSON either.
  const missing = await terminal(client, { action: 'read_output', target: { session_id: 's_nope' } });
  assert.equal(missing.isError, true);
  assert.match(missing.text, /^PM_TERM_NOT_FOUND: /);
  assert.match(missing.text, /\[next: list\]$/);
});

test('text_output false keeps a page of output out of the text content: the status line stays, structuredContent has the bytes', async () => {
  const r = await terminal(client, {
    action: 'execute', execution: { command: 'base64 -w 76 data.bin' }, runtime: { cwd: dir },
    max_bytes: 65536, tail: false, text_output: false,
  });
  assert.equal(r.success, true, JSON.stringify(r.error));
  const shown = bytes(r.result.stdout);
  assert.ok(shown > 60000 && shown <= 65536, `a plain page of the budget: ${shown} bytes`);
  assert.equal(expected.startsWith(r.result.stdout.replaceAll('\r\n', '\n').replace(/\r$/, '')), true);
  assert.match(r.text, new RegExp(`^\\[exit 0 · ${shown} bytes in structuredContent · session s_\\S+ · terminal t_\\S+ · cursor \\d+ \\(more to read\\)\\]$`));

  const h = await headless({ action: 'run', command: 'echo', args: ['hi'], cwd: dir, wait_ms: 20000, text_output: false });
  assert.equal(h.result.stdout, 'hi\n');
  assert.match(h.text, /^\[exit 0 · 3 bytes in structuredContent · headless · session \S+ · cursor 3\]$/);

  const bad = await terminal(client, { action: 'read_output', target: { session_id: r.identity.session_id }, text_output: 'no' });
  assert.equal(bad.isError, true);
  assert.equal(bad.error.code, 'PM_TERM_INVALID_PAYLOAD');
  assert.equal(bad.error.details.field, 'text_output');
});
