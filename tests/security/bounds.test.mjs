// Judging a line costs little whatever the line (docs/security.md): a brace
// bomb through MCP execute asks (builtin.too-complex, the bound named) and
// runs nothing before a person decides; a line over the size bound is
// refused before it is parsed; the headless lane refuses both with
// PM_TERM_INVALID_PAYLOAD naming the bound. Through all of it the broker's
// and the agent's peak memory (VmHWM) stays within 200 MB of where it was.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { terminal } from '../lib/harness.mjs';
import {
  assertAbsent, assertAsked, attempt, cleanupList, setup, show,
} from './lib.mjs';

const cleanups = cleanupList();
const MB = 1024 * 1024;

// VmRSS and VmHWM (peak) of `pid`, in bytes.
function memory(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name) => Number(status.match(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm'))[1]) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

function report(what, before, after, ms) {
  console.log(`# ${what}: ${ms.toFixed(0)} ms; RSS ${(before.rss / MB).toFixed(1)} -> `
    + `${(after.rss / MB).toFixed(1)} MB, peak ${(after.hwm / MB).toFixed(1)} MB`);
}

function braceBomb(prefix, bytes = 65000) {
  let line = prefix;
  while (line.length + 5 <= bytes) line += '{a,b}';
  return line;
}

async function headless(client, args) {
  const result = await client.callTool({ name: 'memory_terminal', arguments: args }, undefined,
    { timeout: 60000 });
  return { ...result.structuredContent, isError: result.isError === true };
}

let shared = null;
async function ctx() {
  shared ??= await setup(cleanups);
  return shared;
}

test('a 65 KB brace bomb asks naming the bound, runs nothing, and the broker stays small', async () => {
  const c = await ctx();
  const pid = c.broker.child.pid;
  const before = memory(pid);
  const canary = path.join(c.work, 'bomb-ran');
  const command = braceBomb(`touch ${canary}; echo `);
  assert.ok(command.length > 60000 && command.length < 65536);
  const started = performance.now();
  const o = await attempt(c, { execution: { command } }, { canaries: [canary] });
  const ms = performance.now() - started;
  assertAsked(o, 'brace bomb');
  assert.match(o.request.reason, /builtin\.too-complex/, show(o));
  assert.match(o.request.reason, /brace expansion would (produce|build) more than/, show(o));
  assertAbsent(canary, 'brace bomb');
  // Again, to show nothing is kept from one judgement to the next.
  for (let i = 0; i < 3; ++i) {
    assertAsked(await attempt(c, { execution: { command } }, { canaries: [canary] }), `bomb ${i}`);
  }
  const after = memory(pid);
  report('broker, 4 brace bombs judged', before, after, ms);
  assert.ok(after.hwm - before.rss < 200 * MB,
    `the broker's peak grew by ${((after.hwm - before.rss) / MB).toFixed(0)} MB`);
  assert.ok(after.rss - before.rss < 100 * MB,
    `the broker kept ${((after.rss - before.rss) / MB).toFixed(0)} MB`);
});

test('a line over the size bound is refused before it is parsed, with the limit named', async () => {
  const c = await ctx();
  const canary = path.join(c.work, 'long-ran');
  const command = `touch ${canary}; echo ${'a'.repeat(70000)}`;
  const r = await terminal(c.client, { action: 'execute', execution: { command } });
  assert.equal(r.success, false, JSON.stringify(r).slice(0, 400));
  assert.equal(r.error.code, 'PM_TERM_INVALID_PAYLOAD', JSON.stringify(r.error));
  assert.equal(r.error.details.limit, 'max_input_bytes', JSON.stringify(r.error));
  assert.equal(c.approvals.requests.filter((q) => q.command?.includes('long-ran')).length, 0);
  assertAbsent(canary, 'oversized line');
});

test('the headless lane refuses an oversized command and a brace bomb, naming the bound', async () => {
  const c = await ctx();
  const pid = c.agent.transport.pid;
  assert.ok(pid, 'the agent has a pid');
  const before = memory(pid);
  const canary = path.join(c.work, 'headless-ran');
  let started = performance.now();
  const long = await headless(c.client, {
    action: 'run', command: 'echo', args: ['a'.repeat(70000)],
  });
  const longMs = performance.now() - started;
  assert.equal(long.isError, true, JSON.stringify(long).slice(0, 400));
  assert.equal(long.error.code, 'PM_TERM_INVALID_PAYLOAD', JSON.stringify(long.error));
  assert.equal(long.error.details.limit, 'line_bytes', JSON.stringify(long.error));

  started = performance.now();
  const bomb = await headless(c.client, {
    action: 'run', command: 'sh', args: ['-c', braceBomb(`touch ${canary}; echo `)],
  });
  const bombMs = performance.now() - started;
  assert.equal(bomb.isError, true, JSON.stringify(bomb).slice(0, 400));
  assert.equal(bomb.error.code, 'PM_TERM_INVALID_PAYLOAD', JSON.stringify(bomb.error).slice(0, 400));
  assert.equal(bomb.error.details.rule, 'builtin.too-complex');
  assert.equal(bomb.error.details.limit, 'brace_bytes');
  assert.match(bomb.error.message, /brace expansion would build more than/);
  assertAbsent(canary, 'headless brace bomb');

  // A brace bomb in the argv itself (no shell) is no bomb: words are literal.
  const literal = await headless(c.client, { action: 'run', command: 'echo', args: ['{a,b}{a,b}'] });
  assert.equal(literal.isError, false, JSON.stringify(literal));

  const after = memory(pid);
  report('agent, headless oversized command', before, after, longMs);
  report('agent, headless brace bomb', before, after, bombMs);
  assert.ok(after.hwm - before.rss < 200 * MB,
    `the agent's peak grew by ${((after.hwm - before.rss) / MB).toFixed(0)} MB`);
});
