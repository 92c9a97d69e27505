// Secrets only a person types (docs/security.md, "Secrets only a person
// types"), end to end: an agent runs a command that asks for a password with
// terminal echo off (bash's `read -s`, Python's getpass: the way sudo, ssh
// and gpg ask). The agent's input to it is refused with a typed error and
// nobody is asked to approve it; the person watching (`termbridge attach`)
// is told a secret is wanted and types it; the command goes on. The typed
// canary is in none of what the agent reads, the recording or the audit log.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  Broker, CLI_BIN, connectAgent, readAll, runCli, terminal,
} from '../lib/harness.mjs';

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const CANARY = 'tb-secret-canary-7f3a';

function have(program) {
  try {
    execFileSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

async function start() {
  const broker = await Broker.start({});
  cleanups.push(() => broker.stop());
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => agent.client.close());
  return { broker, agent };
}

// `termbridge --json attach <terminal>` with the person's keyboard on stdin:
// its frames, and a wait for one that matches.
function attachAsPerson(broker, terminalId) {
  const child = spawn(CLI_BIN, ['--state-dir', broker.stateDir, '--json', 'attach', terminalId],
    { stdio: ['pipe', 'pipe', 'pipe'] });
  const attach = { child, frames: [], stderr: '', exited: once(child, 'exit') };
  const waiters = [];
  let partial = '';
  child.stdout.on('data', (d) => {
    const lines = (partial + d).split('\n');
    partial = lines.pop();
    for (const line of lines) {
      if (!line.startsWith('{')) continue;
      attach.frames.push(JSON.parse(line));
    }
    for (const w of [...waiters]) {
      const frame = attach.frames.find(w.match);
      if (frame) {
        waiters.splice(waiters.indexOf(w), 1);
        clearTimeout(w.timer);
        w.resolve(frame);
      }
    }
  });
  child.stderr.on('data', (d) => { attach.stderr += d; });
  attach.frame = (match, what, timeoutMs = 15000) => new Promise((resolve, reject) => {
    const found = attach.frames.find(match);
    if (found) return resolve(found);
    const w = { match, resolve };
    w.timer = setTimeout(() => reject(new Error(`attach showed no ${what} in ${timeoutMs} ms: ` +
      `${JSON.stringify(attach.frames.slice(-5))}\n${attach.stderr}`)), timeoutMs);
    waiters.push(w);
  });
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await attach.exited;
  });
  return attach;
}

// Runs `command` (which prompts with echo off and then prints what it got),
// checks the agent cannot answer, lets the person answer, and returns what
// the agent read of the whole command.
// `then`: { when, type }: once the person's screen shows `when`, they type `type`.
async function promptAnsweredByThePerson({ broker, agent }, command, prompt, then = null) {
  const r = await terminal(agent.client, {
    action: 'execute', execution: { command }, runtime: { timeout_ms: 1 },
  });
  assert.equal(r.success, true, JSON.stringify(r.error));
  const sessionId = r.identity.session_id;
  const terminalId = r.identity.terminal_id;
  const shown = await terminal(agent.client, {
    action: 'read_output', target: { session_id: sessionId }, cursor: r.result.output_start,
    wait_ms: 15000, until: 'match', match: prompt,
  });
  assert.equal(shown.result.wait_result, 'matched', JSON.stringify(shown.result));
  // The agent sees why its command waits (the reader notices within a poll).
  let state = shown;
  for (const deadline = Date.now() + 5000; !state.result.secret_prompt && Date.now() < deadline;) {
    state = await terminal(agent.client, {
      action: 'read_output', target: { session_id: sessionId }, cursor: shown.result.cursor,
      wait_ms: 100,
    });
  }
  assert.equal(state.result.secret_prompt, true, JSON.stringify(state.result));
  assert.match(state.text, /running, waiting for a person to type a secret/);

  const attach = attachAsPerson(broker, terminalId);
  const notice = await attach.frame(
    (f) => f.type === 'notice' && /waiting for a person to type a secret/.test(f.text),
    'the secret-prompt notice');
  assert.equal(notice.terminal_id, terminalId);

  // The agent's line for the prompt is refused at once, and nobody is asked.
  const refused = await terminal(agent.client, {
    action: 'execute', execution: { command: 'agent-guess' }, target: { terminal_id: terminalId },
  });
  assert.equal(refused.success, false);
  assert.equal(refused.error.code, 'PM_TERM_DECLINED', JSON.stringify(refused.error));
  assert.equal(refused.error.details.reason, 'secret_prompt');
  assert.match(refused.fallback.user_message, /only a person types it/);
  assert.match(refused.text, /^PM_TERM_DECLINED: .*secret/);
  const pending = JSON.parse((await runCli(broker.stateDir, '--json', 'approvals', 'list')).stdout);
  assert.deepEqual(pending.approvals, [], 'no approval was asked for');

  attach.child.stdin.write(`${CANARY}\n`);
  if (then) {
    const screen = () => attach.frames.filter((f) => f.type === 'output').map((f) => f.data).join('');
    await attach.frame(() => then.when.test(screen()), `${then.when} on the person's screen`);
    attach.child.stdin.write(then.type);
  }
  const { text } = await readAll(agent.client, sessionId, shown.result.cursor, shown.result.stdout);
  attach.child.kill('SIGTERM');
  await attach.exited;
  return { text, terminalId, attach };
}

test('bash read -s: the agent is refused, the person types the secret, and it is nowhere the agent can read', async () => {
  const ctx = await start();
  const { text, terminalId, attach } = await promptAnsweredByThePerson(ctx,
    `bash --norc -c 'read -r -s -p "Password: " pw; echo; echo "got ${'$'}{#pw} characters"'`,
    'Password: ');
  assert.match(text, new RegExp(`got ${CANARY.length} characters`));
  assert.ok(!text.includes(CANARY), 'the agent never reads the secret');
  assert.ok(!text.includes('agent-guess'), 'the refused line reached nothing');
  const seen = attach.frames.filter((f) => f.type === 'output').map((f) => f.data).join('');
  assert.ok(!seen.includes(CANARY), 'echo off: not even the person\'s own screen shows it');

  const cast = (await runCli(ctx.broker.stateDir, 'recordings', 'export', terminalId)).stdout;
  assert.match(cast, /Password: /, 'the recording has the prompt');
  assert.ok(!cast.includes(CANARY), 'the recording does not have the secret');
  const audit = fs.readFileSync(ctx.broker.ready.audit_log, 'utf8');
  assert.ok(!audit.includes(CANARY), 'the audit log does not have the secret');
  assert.match(audit, /"reason":"secret_prompt"/, 'the refusal is audited');
});

test('Python getpass (a program other than the shell) is treated the same', { skip: !have('python3') && 'no python3' }, async () => {
  const ctx = await start();
  const { text } = await promptAnsweredByThePerson(ctx,
    `python3 -c 'import getpass; s = getpass.getpass("Passphrase: "); print("length", len(s))'`,
    'Passphrase: ');
  assert.match(text, new RegExp(`length ${CANARY.length}`));
  assert.ok(!text.includes(CANARY));
});

// A real sudo asks for a password: as this user, or, when the tests run as
// root (whom sudo never asks), as nobody through setpriv. Skipped only
// where sudo is missing or would not ask (a NOPASSWD rule, cached
// credentials).
const SUDO_AS = process.getuid() === 0 ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--'] : [];
function sudoAsks() {
  if (!have('sudo') || (SUDO_AS.length && !have('setpriv'))) return false;
  try {
    execFileSync(SUDO_AS[0] ?? 'sudo', [...SUDO_AS.slice(1), ...(SUDO_AS.length ? ['sudo'] : []), '-k', '-n', 'true'],
      { stdio: 'ignore' });
    return false;  // it ran without a password
  } catch {
    return true;
  }
}

test('sudo asks the person, not the agent', {
  skip: !sudoAsks() && 'no sudo here that asks for a password (none, or NOPASSWD)',
}, async () => {
  const ctx = await start();
  // The agent runs a script that calls sudo, as an install script would (the
  // policy refuses sudo itself in a command line: builtin.privilege).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tb-sudo-'));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const script = path.join(dir, 'install.sh');
  const body = 'sudo -k; sudo -p "pw-for-sudo: " true; echo "sudo exit $?"';
  fs.writeFileSync(script, `#!/bin/sh\nexec ${SUDO_AS.join(' ')} sh -c '${body}'\n`, { mode: 0o755 });
  fs.chmodSync(dir, 0o755);
  // The canary is a wrong password, so sudo asks again: the person's ^C ends
  // it. It is typed once sudo asks again: between its "Sorry" and the next
  // prompt sudo does not take SIGINT (a ^C there was lost under load, and
  // sudo waited for a password).
  const { text, terminalId } = await promptAnsweredByThePerson(ctx, script, 'pw-for-sudo: ',
    { when: /Sorry, try again\.[\s\S]*pw-for-sudo: /, type: '\x03' });
  assert.match(text, /Sorry, try again/, 'sudo read what the person typed');
  assert.ok(!text.includes(CANARY), 'the agent never reads the secret');
  const cast = (await runCli(ctx.broker.stateDir, 'recordings', 'export', terminalId)).stdout;
  assert.ok(!cast.includes(CANARY), 'the recording does not have the secret');
  assert.ok(!fs.readFileSync(ctx.broker.ready.audit_log, 'utf8').includes(CANARY));
});
