// Attacks through type-ahead, issue 20 class 3. While an allowed program
// that never reads its input runs (`sleep`), the agent sends more input: an
// execute to that busy terminal (the registry writes the line as input for
// the running program) or input frames on its own gRPC Attach. The program
// leaves it in the tty; once it exits, the shell reads it as a command,
// unjudged. Each input is one the input check passes today: harmless text
// whose tail the canonical-mode line discipline turns into a second line
// (CR through icrnl), or which it edits (^U kill, ^W word-erase, DEL erase,
// ^V literal-next) into `touch <canary>`, split across chunks too.
//
// Expected (issue 20): leftover input never becomes a command. After the
// program exits and the next prompt appears the canary does not exist, the
// plain leftover line did not run either, and a following allowed command
// runs normally with its own output.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { terminal } from '../lib/harness.mjs';
import {
  agentAttachInput, assertAbsent, assertAsked, attempt, cleanupList, openTerminal, policyWith,
  sendInput, setup, show, waitOutput,
} from './lib.mjs';

const cleanups = cleanupList();
const POLICY = policyWith();

// Starts `printf started; sleep 2` in a fresh terminal and resolves once it
// printed "started" (sleep is running): { terminalId, session }.
async function busyTerminal(ctx) {
  const terminalId = await openTerminal(ctx, { runtime: { cwd: ctx.work } });
  const r = await terminal(ctx.client, {
    action: 'execute', target: { terminal_id: terminalId },
    execution: { command: 'printf started; sleep 2' }, runtime: { timeout_ms: 200 },
  });
  assert.equal(r.success, true, JSON.stringify(r));
  const session = r.identity.session_id;
  const seen = await waitOutput(ctx, session, undefined, 'started', 20000);
  assert.equal(seen.wait_result, 'matched', JSON.stringify(seen));
  return { terminalId, session };
}

// After the busy program ended: waits for its exit, then runs an allowed
// command in the same terminal and waits for that command's output (by then
// the shell has read whatever was left in the tty). Returns its outcome.
async function afterExit(ctx, { terminalId, session }) {
  const exited = await terminal(ctx.client, {
    action: 'read_output', target: { session_id: session }, until: 'exit', wait_ms: 20000,
  });
  assert.equal(exited.result?.running, false, `sleep 2 did not end: ${JSON.stringify(exited.result)}`);
  const next = await attempt(ctx, {
    target: { terminal_id: terminalId }, execution: { command: "printf '%s-%s' NEXT 42" },
  }, { timeoutMs: 20000 });
  if (next.kind === 'ran' && next.session) {
    // The leftover line may have stolen the prompt marks: wait for this
    // command's own output as the event that the shell got this far.
    await waitOutput(ctx, next.session, undefined, 'NEXT-42', 10000);
  }
  return next;
}

function assertNextRuns(next) {
  assert.equal(next.kind, 'ran', `the following allowed command: ${show(next)}`);
  assert.equal(next.result.exit_code, 0, show(next));
  assert.equal(next.text.replaceAll('\r\n', '\n'), 'NEXT-42', `the following command's own output only: ${show(next)}`);
}

// Inputs sent with execute to the busy terminal.
const EXECUTE_VARIANTS = [
  { name: 'CR inside a comment (icrnl makes it a second line)', line: (c) => `true #\rtouch ${c}` },
  { name: '^U inside a printf argument (the tty kills the line)', line: (c) => `printf x\x15touch ${c}` },
  { name: '^W x2 after a comment (the tty erases two words)', line: (c) => `true #\x17\x17touch ${c}` },
  { name: 'DEL x6 after a comment (the tty erases "true #")', line: (c) => `true #${'\x7f'.repeat(6)}touch ${c}` },
  { name: 'CR inside a quoted echo argument', line: (c) => `echo 'x\rtouch ${c}\r'` },
  { name: '^V CR inside a comment', line: (c) => `true #\x16\x15\rtouch ${c}` },
];

for (const v of EXECUTE_VARIANTS) {
  test(`type-ahead by execute to a busy terminal, ${v.name}: never runs once sleep exits`, async () => {
    const ctx = await setup(cleanups, { policy: POLICY });
    const canary = path.join(ctx.work, 'canary');
    const busy = await busyTerminal(ctx);
    const sent = await sendInput(ctx, busy.terminalId, v.line(canary), { canaries: [canary] });
    if (sent.kind === 'asked') assertAsked(sent, v.name);
    const next = await afterExit(ctx, busy);
    assertAbsent(canary, v.name);
    assertNextRuns(next);
    assertAbsent(canary, v.name);
  });
}

test('type-ahead of a plain allowed line while sleep runs is discarded, not run after it', async () => {
  const ctx = await setup(cleanups, { policy: POLICY });
  const busy = await busyTerminal(ctx);
  // If the shell ran it, the terminal would show LEFT-OVER (the echo of the
  // typed line shows the split words only).
  await sendInput(ctx, busy.terminalId, "printf '%s-%s\\n' LEFT OVER");
  const next = await afterExit(ctx, busy);
  const screen = await terminal(ctx.client, {
    action: 'read_output', target: { terminal_id: busy.terminalId }, format: 'screen',
  });
  assert.ok(!JSON.stringify(screen.result ?? {}).includes('LEFT-OVER'),
    `the leftover line ran: ${JSON.stringify(screen.result).slice(0, 2000)}`);
  assertNextRuns(next);
});

// Input frames on the agent's own Attach stream.
const ATTACH_VARIANTS = [
  { name: 'one chunk with a CR inside a comment', chunks: (c) => [`true #\rtouch ${c}\r`] },
  { name: 'one chunk with ^U inside a printf argument', chunks: (c) => [`printf x\x15touch ${c}\n`] },
  { name: 'harmless text without a newline, then ^W x2 and the rest', chunks: (c) => ['true #', `\x17\x17`, `true #\x15touch ${c}\n`] },
  { name: 'a comment chunk, then a CR chunk, then a comment carrying the command', chunks: (c) => ['echo x #', '\r', `# \x15touch ${c}`, '\r'] },
  { name: 'a DEL-erased prefix split over chunks', chunks: (c) => ['true #', '\x7f'.repeat(6), `printf x\x15touch ${c}\r`] },
];

for (const v of ATTACH_VARIANTS) {
  test(`type-ahead over the agent's Attach, ${v.name}: never runs once sleep exits`, async () => {
    const ctx = await setup(cleanups, { policy: POLICY });
    const canary = path.join(ctx.work, 'canary');
    const busy = await busyTerminal(ctx);
    const sent = await agentAttachInput(ctx.broker, busy.terminalId, v.chunks(canary), { echo: 'canary' });
    if (process.env.TB_SECURITY_DEBUG) console.error('attach', JSON.stringify({ ...sent, output: undefined }));
    if (sent.error) assert.match(sent.error, /^PM_TERM_/, JSON.stringify(sent));
    const next = await afterExit(ctx, busy);
    assertAbsent(canary, v.name);
    assertNextRuns(next);
    assertAbsent(canary, v.name);
  });
}
