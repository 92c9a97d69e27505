// Terminals people tell apart, and a person's own terminals: an agent names
// the terminal it opens (cleaned of control characters), an unnamed one is
// named from its directory and first command, and every listing shows the
// name, lock and last exit code. `termbridge open` gives a person a terminal
// no agent reaches (canary files prove nothing ran) until `termbridge hand`
// gives it to the agent, which then works in it by its id under the lock;
// `hand -` takes it back. A real broker, agent (MCP) and CLI.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import grpc from '@grpc/grpc-js';
import {
  Broker, brokerProto, connectAgent, removeDir, runCli, tempDir, terminal, withDeadline,
} from '../lib/harness.mjs';

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const broker = await Broker.start();
cleanups.push(() => broker.stop());
const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
cleanups.push(() => agent.client.close());
const work = tempDir('tb-own-');
cleanups.push(async () => removeDir(work));

const cli = async (...args) => {
  const r = await runCli(broker.stateDir, ...args);
  return r;
};
const execute = (args) => terminal(agent.client, {
  action: 'execute', runtime: { timeout_ms: 20000 }, ...args,
});
const list = async () => {
  const r = await terminal(agent.client, { action: 'list', invocation: { mode: 'interactive' } });
  assert.equal(r.success, true, JSON.stringify(r));
  return r.result.terminals;
};

test('an agent names its terminal; an unnamed one is named from its directory and command', async () => {
  const named = await execute({
    execution: { command: 'true', terminal_name: 'builder\u001b[31m \u202eevil' },
  });
  assert.equal(named.success, true, JSON.stringify(named));
  assert.equal(named.result.terminal_name, 'builder[31m evil');
  assert.equal(named.result.lock, 'shared');

  const unnamed = await execute({
    execution: { command: "printf '%s\\n' hello" }, runtime: { cwd: work, timeout_ms: 20000 },
    target: {},
  });
  assert.equal(unnamed.success, true, JSON.stringify(unnamed));
  assert.equal(unnamed.result.terminal_name, `${path.basename(work)}: printf`);

  const sessions = await cli('sessions');
  assert.equal(sessions.code, 0, sessions.stderr);
  assert.match(sessions.stdout, /NAME\s+TERMINAL/);
  assert.match(sessions.stdout, /builder\[31m evil/);
  assert.doesNotMatch(sessions.stdout, /\u001b|\u202e/, 'no control or bidi character reaches the screen');
  const json = JSON.parse((await cli('--json', 'sessions')).stdout);
  const entry = json.terminals.find((t) => t.terminal_id === unnamed.identity.terminal_id);
  assert.equal(entry.name, `${path.basename(work)}: printf`);
  assert.equal(entry.last_exit_code, 0);
});

test('a person\'s terminal is reached by an agent only while handed over, under its lock', async () => {
  const opened = await cli('--json', 'open', '--name', 'scratch', '--cwd', work);
  assert.equal(opened.code, 0, opened.stderr);
  const mine = JSON.parse(opened.stdout);
  assert.equal(mine.name, 'scratch');
  assert.ok(mine.person, 'the person who opened it is named');
  assert.equal(mine.agent_id, '');
  const id = mine.terminal_id;

  // Not the agent's: it does not list it and cannot run anything there.
  assert.ok(!(await list()).some((t) => t.terminal_id === id));
  const before = path.join(work, 'canary-before');
  const refused = await execute({ target: { terminal_id: id }, execution: { command: `touch ${before}` } });
  assert.equal(refused.success, false);
  assert.equal(refused.error.code, 'PM_TERM_NOT_FOUND', JSON.stringify(refused.error));

  const handed = await cli('hand', id, 'agent');
  assert.equal(handed.code, 0, handed.stderr);
  assert.match(handed.stdout, /handed scratch/);
  const listed = (await list()).find((t) => t.terminal_id === id);
  assert.ok(listed, 'the agent lists the terminal handed to it');
  assert.equal(listed.terminal_name, 'scratch');
  assert.equal(listed.handed_over_by, mine.person);
  const ran = await execute({
    target: { terminal_id: id }, execution: { command: "printf 'handed-%s\\n' two" },
  });
  assert.equal(ran.success, true, JSON.stringify(ran));
  assert.match(ran.result.stdout, /handed-two/, JSON.stringify(ran));
  assert.equal(ran.identity.terminal_id, id);
  assert.equal(ran.result.terminal_name, 'scratch');

  // The lock holds there as anywhere, and the agent sees it.
  assert.equal((await cli('lock', id, 'user_only')).code, 0);
  const locked = path.join(work, 'canary-locked');
  const held = await execute({ target: { terminal_id: id }, execution: { command: `touch ${locked}` } });
  assert.equal(held.success, false);
  assert.equal(held.error.code, 'PM_TERM_DECLINED', JSON.stringify(held.error));
  const read = await terminal(agent.client, {
    action: 'read_output', target: { session_id: ran.identity.session_id },
  });
  assert.equal(read.result.lock, 'user_only');
  assert.equal((await cli('lock', id, 'shared')).code, 0);

  // A rename shows everywhere, the agent's results included.
  assert.equal((await cli('rename', id, 'renamed\u0007')).code, 0);
  const again = await terminal(agent.client, {
    action: 'read_output', target: { session_id: ran.identity.session_id },
  });
  assert.equal(again.result.terminal_name, 'renamed');

  // An agent's Attach stream on it, open while it is handed over.
  const proto = brokerProto();
  const auth = new grpc.Metadata();
  auth.set('authorization', `Bearer ${fs.readFileSync(broker.tokenFile, 'utf8').trim()}`);
  const agentBroker = new proto.TerminalBroker(`127.0.0.1:${broker.port}`, grpc.credentials.createInsecure());
  cleanups.push(() => agentBroker.close());
  const attach = agentBroker.Attach(auth);
  const attachEnded = new Promise((resolve) => {
    attach.on('error', resolve);
    attach.on('end', () => resolve(null));
  });
  const attachData = [];
  attach.on('data', (frame) => attachData.push(frame));
  attach.write({ resume: { terminal_id: id, offset: 0, from_start: true } });
  await withDeadline(new Promise((resolve) => {
    const check = () => (attachData.length > 0 ? resolve() : setTimeout(check, 10));
    check();
  }), 10000, () => 'the agent\'s Attach stream showed nothing');

  // Taken back: the agent reaches it no more.
  const back = await cli('hand', id, '-');
  assert.equal(back.code, 0, back.stderr);
  const after = path.join(work, 'canary-after');
  const gone = await execute({ target: { terminal_id: id }, execution: { command: `touch ${after}` } });
  assert.equal(gone.success, false);
  assert.equal(gone.error.code, 'PM_TERM_NOT_FOUND', JSON.stringify(gone.error));
  assert.ok(!(await list()).some((t) => t.terminal_id === id));
  // Nor through what it had: its session there, its Attach stream.
  for (const format of ['clean', 'screen']) {
    const old = await terminal(agent.client, {
      action: 'read_output', target: { session_id: ran.identity.session_id }, format,
    });
    assert.equal(old.success, false, `read_output ${format} after the take-back: ${JSON.stringify(old)}`);
    assert.equal(old.error.code, 'PM_TERM_NOT_FOUND');
  }
  const listed2 = await terminal(agent.client, { action: 'list', invocation: { mode: 'interactive' } });
  assert.ok(!listed2.result.items.some((i) => i.session_id === ran.identity.session_id));
  const attachError = await withDeadline(attachEnded, 10000, () => 'the Attach stream outlived the take-back');
  assert.equal(attachError?.code, grpc.status.NOT_FOUND, String(attachError));
  for (const canary of [before, locked, after]) {
    assert.ok(!fs.existsSync(canary), `${canary} was created: a command ran where it must not`);
  }
  // The audit says who gave what to whom.
  const audit = fs.readFileSync(path.join(broker.stateDir, 'audit.jsonl'), 'utf8');
  assert.match(audit, /"event":"terminal_handed_over"[^\n]*"agent_id":"agent"/);
  assert.match(audit, /"event":"terminal_handed_over"[^\n]*"agent_id":""/);
});

test('an agent\'s terminal never changes hands, and bad names are refused', async () => {
  const own = await execute({ execution: { command: 'true' } });
  assert.equal(own.success, true, JSON.stringify(own));
  const refused = await cli('hand', own.identity.terminal_id, 'other');
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /only a terminal a person opened is handed over/);
  const opened = JSON.parse((await cli('--json', 'open')).stdout);
  const badAgent = await cli('hand', opened.terminal_id, '../x');
  assert.equal(badAgent.code, 1);
  assert.match(badAgent.stderr, /agent names are/);
  const badName = await cli('rename', opened.terminal_id, '\u0001\u0002');
  assert.equal(badName.code, 1);
  assert.match(badName.stderr, /nothing printable/);
  const unknown = await cli('hand', 't_nope', 'agent');
  assert.equal(unknown.code, 1);
});

test('terminal watchers hear of a rename, a hand-over and a lock change as they happen', async () => {
  const proto = brokerProto();
  const operator = new proto.TerminalOperator(`unix:${broker.ready.operator_socket}`,
    grpc.credentials.createInsecure());
  const stream = operator.WatchTerminals({});
  const events = [];
  let wake = () => {};
  stream.on('data', (event) => { events.push(event); wake(); });
  stream.on('error', () => {});
  const until = (predicate, what) => withDeadline(new Promise((resolve) => {
    const check = () => {
      const found = events.find(predicate);
      if (found) resolve(found); else wake = check;
    };
    check();
  }), 15000, () => `no ${what}; events: ${JSON.stringify(events.map((e) => [e.kind, e.terminal?.name]))}`);
  try {
    await until((e) => e.kind === 'snapshot_done', 'snapshot');
    const opened = JSON.parse((await cli('--json', 'open', '--name', 'watched')).stdout);
    const id = opened.terminal_id;
    await until((e) => e.kind === 'opened' && e.terminal.terminal_id === id, 'opened event');
    assert.equal((await cli('rename', id, 'watched-2')).code, 0);
    await until((e) => e.kind === 'changed' && e.terminal.name === 'watched-2', 'rename event');
    assert.equal((await cli('hand', id, 'agent')).code, 0);
    await until((e) => e.kind === 'changed' && e.terminal.terminal_id === id &&
      e.terminal.agent_id === 'agent', 'hand-over event');
    assert.equal((await cli('lock', id, 'user_only')).code, 0);
    await until((e) => e.kind === 'changed' && e.terminal.terminal_id === id &&
      e.terminal.lock === 'user_only', 'lock event');
  } finally {
    stream.cancel();
    operator.close();
  }
});

// End of input on an agent's Attach stream (stdin_close) is the terminal's
// EOF character typed by the agent: the lock, the checks and the audit of
// any other input hold it too.
test('an agent\'s end of input over Attach is held by a user_only lock like any input', async () => {
  const canary = path.join(work, 'canary-eof');
  const started = await execute({
    execution: { command: `printf 'cat-%s\\n' reading; cat; touch ${canary}` }, runtime: { timeout_ms: 1 },
  });
  const id = started.identity.terminal_id;
  const reading = await terminal(agent.client, {
    action: 'read_output', target: { session_id: started.identity.session_id }, until: 'match',
    match: 'cat-reading', wait_ms: 10000,
  });
  assert.equal(reading.result.wait_result, 'matched', JSON.stringify(reading));

  const proto = brokerProto();
  const auth = new grpc.Metadata();
  auth.set('authorization', `Bearer ${fs.readFileSync(broker.tokenFile, 'utf8').trim()}`);
  const agentBroker = new proto.TerminalBroker(`127.0.0.1:${broker.port}`, grpc.credentials.createInsecure());
  cleanups.push(() => agentBroker.close());
  // Sends stdin_close on a new Attach; resolves with the stream's error, or
  // null once `done()` holds (checked every 20 ms, 10 s at most).
  const closeInput = (done) => {
    const stream = agentBroker.Attach(auth);
    let settled = false;
    const ended = new Promise((resolve) => {
      const settle = (value) => { settled = true; resolve(value); };
      stream.on('error', settle);
      stream.on('end', () => settle(null));
      stream.on('data', () => {});
      const check = () => {
        if (settled) return;
        if (done()) settle(null); else setTimeout(check, 20);
      };
      check();
    });
    stream.write({ resume: { terminal_id: id, offset: 0 } });
    stream.write({ stdin_close: true });
    return withDeadline(ended, 10000, () => 'stdin_close neither failed nor took effect')
      .finally(() => { settled = true; stream.cancel(); });
  };

  assert.equal((await cli('lock', id, 'user_only')).code, 0);
  const refused = await closeInput(() => false);
  assert.equal(refused?.code, grpc.status.PERMISSION_DENIED, String(refused));
  assert.match(refused.details, /PM_TERM_DECLINED.*user_only|user_only/, refused.details);
  const still = await terminal(agent.client, {
    action: 'read_output', target: { session_id: started.identity.session_id }, wait_ms: 300,
  });
  assert.equal(still.result.running, true, 'cat still reads: the EOF never reached it');
  assert.ok(!fs.existsSync(canary), 'cat ended under the user_only lock');
  const audit = fs.readFileSync(path.join(broker.stateDir, 'audit.jsonl'), 'utf8');
  assert.match(audit, new RegExp(`"event":"input_refused"[^\\n]*"reason":"lock user_only"[^\\n]*"terminal_id":"${id}"|"event":"input_refused"[^\\n]*"terminal_id":"${id}"[^\\n]*"reason":"lock user_only"`));

  // Shared again: the same end of input ends cat (the check above could fail).
  assert.equal((await cli('lock', id, 'shared')).code, 0);
  assert.equal(await closeInput(() => fs.existsSync(canary)), null);
  assert.ok(fs.existsSync(canary));
});
