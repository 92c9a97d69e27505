// The console's whole-history search and replay at an output offset, and a
// person's controls over terminals and grants (issue 26), in a real
// headless Chromium (Debian's, driven by playwright-core): after 2000 bytes
// that are not UTF-8 (offsets count the terminal's bytes, as the live view
// and the audit log do), a marker (and one split by a colour change) leaves
// the terminal's 5000-line scrollback under 12000 lines; the scrollback search no longer finds it, the
// whole-history search does and shows it in the replay at its output; a
// match the view still holds shows there; an old command of the timeline
// opens the replay at its output; matched text that looks like markup stays
// text; rename and hand-over from the page change what `termbridge
// sessions` shows and what the agent reaches (nothing is chosen until the
// person chooses, and a revoked agent is not offered), and the broker's
// refusals show in the page; the grants view lists a grant made with the CLI, with
// its expiry. TB_UPDATE_DOCS_IMAGES=1 writes console-search.png for
// docs/console.md.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { runCli, terminal } from '../lib/harness.mjs';
import {
  chromiumPage, chromiumSkip as skip, keepScreenshot, playwrightDriver, startDesk,
} from '../lib/console_desk.mjs';

// printf and seq run; anything else (touch) asks a person.
const POLICY = `version = 1
default = "ask"

[[rule]]
id = "search-printf"
action = "allow"
prefix = ["printf"]
`;

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

let desk;
before(async () => {
  if (skip) return;
  // The project is in the broker's HOME: the page shows ~/webshop.
  desk = await startDesk(async (url) => playwrightDriver(await chromiumPage(url, cleanups)), cleanups,
    { policy: POLICY, projects: ['webshop'] });
  desk.d.acceptDialogs();
});

function run(command, { terminalId, cwd, timeoutMs } = {}) {
  return terminal(desk.agent.client, {
    action: 'execute',
    execution: { command },
    ...(terminalId ? { target: { terminal_id: terminalId } } : {}),
    ...(cwd || timeoutMs ? { runtime: { ...(cwd ? { cwd } : {}), ...(timeoutMs ? { timeout_ms: timeoutMs } : {}) } } : {}),
  });
}

async function ran(command, options) {
  const r = await run(command, options);
  assert.equal(r.success, true, `${command}: ${JSON.stringify(r.error)}`);
  assert.equal(r.result.running, false, `${command} finished: ${JSON.stringify(r.result)}`);
  return r;
}

async function sessions() {
  const r = await runCli(desk.broker.stateDir, '--json', 'sessions');
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

async function fill(selector, value) {
  await desk.d.evaluate(([sel, v]) => {
    const node = document.querySelector(sel);
    node.value = v;
    node.dispatchEvent(new Event('input', { bubbles: true }));
  }, [selector, value]);
}

// Chooses `value` in the hand-over dialog, as a person does.
async function chooseAgent(value) {
  await desk.d.evaluate((v) => {
    const select = document.querySelector('#hand-agent');
    select.value = v;
    select.dispatchEvent(new Event('change', { bubbles: true }));
  }, value);
}

const textOf = (selector) => desk.d.evaluate((sel) => document.querySelector(sel)?.innerText ?? '', selector);

// Runs the whole-history search for `query` in the active terminal and
// waits for its answer; returns the listed matches.
async function searchHistory(query) {
  await fill('#search-input', query);
  await desk.d.click('#search-history');
  await desk.d.waitFor(() => !/searching/.test(document.querySelector('#search-panel-status').textContent)
    && document.querySelector('#search-panel-status').textContent !== '', null, `the whole-history search for ${query}`);
  return desk.d.evaluate(() => [...document.querySelectorAll('#search-results li.search-match')].map((li) => ({
    offset: Number(li.dataset.offset), text: li.innerText, mark: li.querySelector('mark')?.textContent,
  })));
}

// Clicks the match at `offset` and waits until the replay has it selected.
async function showsInReplay(offset, expected) {
  await desk.d.click(`#search-results li[data-offset="${offset}"]`);
  try {
    await desk.d.waitFor((want) => globalThis.termbridgeConsole.replaySelection().includes(want), expected,
      `the replay shows ${expected} selected`);
  } catch (e) {
    // What the page showed instead, for the next reader of a failed run.
    const seen = await desk.d.evaluate(() => ({
      replayStatus: document.querySelector('#replay-status')?.textContent,
      searchStatus: document.querySelector('#search-panel-status')?.textContent,
      selection: globalThis.termbridgeConsole.replaySelection(),
      replayText: globalThis.termbridgeConsole.replayText?.().slice(-3000),
    }));
    e.message += `\nthe page at offset ${offset}: ${JSON.stringify(seen, null, 1)}`;
    throw e;
  }
  assert.equal(await desk.d.evaluate(() => document.querySelector('#replay').hidden), false);
  assert.match(await textOf('#search-panel-status'), /no longer in the terminal's view: shown in the replay/);
  assert.match(await textOf('#replay-status'), /at output byte \d+ \(selected\)/);
}

let t;  // the agent's terminal with the long history

test('the whole history is searched when the scrollback no longer holds a marker', { skip }, async () => {
  const { d, work } = desk;
  // 2000 bytes that are not UTF-8 first: every offset after them counts
  // terminal bytes (the export shows each as one U+FFFD).
  const binary = `printf '${'\\377'.repeat(20)}%.0s' ${Array(100).fill('x').join(' ')}`;
  const first = await ran(binary, { cwd: path.join(work, 'webshop') });
  t = first.identity.terminal_id;
  await ran("printf '\\nafter-binary-%s\\n' marker77", { terminalId: t });
  await ran("printf 'plain-%s\\n' marker42", { terminalId: t });
  await ran("printf 'split-\\033[31mmar\\033[0mker-9\\n'", { terminalId: t });
  // Markup and a right-to-left override (U+202E) in the output.
  await ran("printf '%s\\342\\200\\256evil\\n' '<img src=x onerror=globalThis.pwned=1>xss-probe'", { terminalId: t });
  await ran('seq 1 12000', { terminalId: t });
  await d.click(`.tab[data-terminal-id="${t}"]`);
  await d.waitFor((id) => /^12000\s*$/m.test(globalThis.termbridgeConsole.text(id)), t, 'the last output');

  // The scrollback lost the markers.
  await fill('#search-input', 'plain-marker42');
  await d.click('#search-next');
  await d.waitFor(() => document.querySelector('#search-status').textContent === 'no match', null,
    'the scrollback search finds no marker');

  // The whole history has it, case ignored; clicking shows it in the replay.
  const plain = await searchHistory('PLAIN-marker42');
  assert.equal(plain.length, 1, JSON.stringify(plain));
  assert.equal(plain[0].mark, 'plain-marker42');
  assert.match(await textOf('#search-panel-status'), /^1 match, oldest first/);
  await showsInReplay(plain[0].offset, 'plain-marker42');
  await keepScreenshot(desk, 'console-search.png', { docs: true });

  // Text right after the bytes that were not UTF-8 is where they put it.
  const afterBinary = await searchHistory('after-binary-marker77');
  assert.equal(afterBinary.length, 1, JSON.stringify(afterBinary));
  assert.ok(afterBinary[0].offset >= 2000 && afterBinary[0].offset < plain[0].offset, JSON.stringify(afterBinary));
  await showsInReplay(afterBinary[0].offset, 'after-binary-marker77');

  // A marker split by a colour change is found as the screen shows it.
  const split = await searchHistory('split-marker-9');
  assert.equal(split.length, 1, JSON.stringify(split));
  assert.match(split[0].text, /split-marker-9/);
  assert.ok(split[0].offset > plain[0].offset);
  await showsInReplay(split[0].offset, 'split-marker-9');

  // Text that looks like markup stays text (the command line and its
  // output), and a bidi override shows as an escape.
  const probe = await searchHistory('xss-probe');
  assert.equal(probe.length, 2, JSON.stringify(probe));
  assert.match(probe[1].text, /<img src=x onerror=globalThis\.pwned=1>xss-probe\\u202eevil/);
  assert.ok(!probe[1].text.includes('\u202e'), 'no raw bidi override in the page');
  assert.equal(await d.evaluate(() => document.querySelectorAll('#search-panel img').length), 0);
  assert.equal(await d.evaluate(() => globalThis.pwned), undefined);

  // A match the scrollback still holds shows in the terminal itself.
  const recent = await searchHistory('11999');
  assert.equal(recent.length, 1, JSON.stringify(recent));
  await d.click(`#search-results li[data-offset="${recent[0].offset}"]`);
  await d.waitFor(() => document.querySelector('#replay').hidden
    && /11999/.test(globalThis.termbridgeConsole.active().term.getSelection()), null,
  'the terminal view shows the recent match');
  assert.match(await textOf('#search-panel-status'), /Showing the match in the terminal/);

  // A query is literal text, never a pattern.
  assert.equal((await searchHistory('.*')).length, 0);
  assert.match(await textOf('#search-panel-status'), /No match in the recorded history/);
  await d.click('#search-panel-close');
});

// A clean-clone run once selected the row above a match: the recording had
// one event holding a command's output that ended mid-row (2000 bytes at
// 103 columns), the shell's prompt redraw (CR, erase line: it clears the
// wrap flag of the row the output had filled) and the next command with the
// match. However the events cut that stream, the replay places the target
// on its row.
test('the replay places its target on its row however the recording cut the output', { skip }, async () => {
  const misplaced = await desk.d.evaluate(async () => {
    const { OutputMap, writeRecorded } = await import('./terminal_tab.js');
    const prompt = '\x1b]133;A\x07$ \x1b]133;B\x07';
    const data = `${prompt}printf ${'y'.repeat(150)}\r\n\x1b]133;C\x07${'\uFFFD'.repeat(250)}`
      + `\x1b]133;D;0\x07${prompt}\r\x1b[K\r${prompt}printf '\\nafter-%s\\n' marker77\r\n`
      + `\x1b]133;C\x07\r\nafter-marker77\r\n\x1b]133;D;0\x07${prompt}`;
    // Every character is one stream byte (a U+FFFD stands for one).
    const from = data.indexOf('after-marker77\r');
    const to = from + 'after-marker77'.length;
    const host = document.createElement('div');
    document.body.append(host);
    const term = new globalThis.Terminal({ cols: 103, rows: 33, scrollback: 1000 });
    term.open(host);
    const wrong = [];
    for (let cut = 1; cut < data.length; cut += 1) {
      term.reset();
      const map = new OutputMap(term);
      writeRecorded(term, map, data.slice(0, cut), 0, [from, to - 1]);
      writeRecorded(term, map, data.slice(cut), cut, [from, to - 1]);
      await new Promise((resolve) => { term.write('', resolve); });
      const rows = [map.lineOf(from), map.lineOf(to - 1)]
        .map((at) => term.buffer.active.getLine(at.line)?.translateToString(true));
      if (rows.some((row) => row !== 'after-marker77')) wrong.push({ cut, rows });
    }
    term.dispose();
    host.remove();
    return wrong;
  });
  assert.deepEqual(misplaced.slice(0, 5), []);
});

test('an old command of the timeline opens the replay at its output', { skip }, async () => {
  const { d } = desk;
  await d.click(`.tab[data-terminal-id="${t}"]`);
  await d.click('#timeline-toggle');
  await d.waitFor(() => [...document.querySelectorAll('#timeline-list .timeline-command')]
    .some((li) => /plain-%s/.test(li.innerText)), null, 'the timeline lists the first command');
  await d.evaluate(() => [...document.querySelectorAll('#timeline-list .timeline-command')]
    .find((li) => /plain-%s/.test(li.innerText)).click());
  await d.waitFor(() => /plain-marker42/.test(globalThis.termbridgeConsole.replaySelection()), null,
    'the replay selects the command\'s output');
  const selected = await d.evaluate(() => globalThis.termbridgeConsole.replaySelection());
  assert.ok(!/split-marker-9/.test(selected), `only that command's output: ${selected}`);
  assert.match(await textOf('#timeline-status'), /no longer in the terminal's view: shown in the replay/);
  // Play on goes on to the end.
  await d.evaluate(() => {
    const speed = document.querySelector('#replay-speed');
    speed.value = '0';
    speed.dispatchEvent(new Event('change', { bubbles: true }));
  });
  await d.click('#replay-continue');
  await d.waitFor(() => globalThis.termbridgeConsole.replay.done, null, 'the replay plays on to the end', 30000);
  assert.match(await d.evaluate(() => globalThis.termbridgeConsole.replayText()), /^12000\s*$/m);
  await d.click('#replay-close');
  await d.click('#timeline-toggle');
});

test('rename and hand-over from the page; the broker\'s refusals show there', { skip }, async () => {
  const { d, broker, work } = desk;
  const agentId = (await sessions()).terminals.find((x) => x.terminal_id === t).agent_id;
  assert.ok(agentId);
  const opened = await runCli(broker.stateDir, '--json', 'open', '--name', 'mine', '--cwd', path.join(work, 'webshop'));
  assert.equal(opened.code, 0, opened.stderr);
  const mine = JSON.parse(opened.stdout).terminal_id;
  await d.waitFor((id) => document.querySelector(`.tab[data-terminal-id="${id}"]`), mine, 'the person\'s terminal shows');
  await d.click(`.tab[data-terminal-id="${mine}"]`);

  // Rename: a name with nothing printable is refused with the broker's words.
  await d.click('#rename-terminal');
  await fill('#rename-form input[name="name"]', '\u0007\u0007');
  await d.click('#rename-submit');
  await d.waitFor(() => document.querySelector('#rename-error').hidden === false, null, 'the refusal shows');
  assert.match(await textOf('#rename-error'), /^Not renamed: .*nothing printable/);
  await fill('#rename-form input[name="name"]', 'webshop deploy');
  await d.click('#rename-submit');
  await d.waitFor((id) => document.querySelector('#rename-dialog').open === false
    && /webshop deploy/.test(document.querySelector(`.tab[data-terminal-id="${id}"] .label`).textContent), mine,
  'the tab shows the new name');
  assert.equal((await sessions()).terminals.find((x) => x.terminal_id === mine).name, 'webshop deploy');

  // Not the agent's yet.
  const before = await run("printf 'reached-%s\\n' before", { terminalId: mine });
  assert.equal(before.success, false);
  assert.equal(before.error.code, 'PM_TERM_NOT_FOUND', JSON.stringify(before.error));

  // A revoked agent that still holds a terminal here is not offered.
  const gone = 'gone-agent';
  assert.equal((await runCli(broker.stateDir, 'agents', 'add', gone, '--token-file', path.join(work, 'gone.token'))).code, 0);
  const other = await runCli(broker.stateDir, '--json', 'open', '--name', 'other');
  assert.equal(other.code, 0, other.stderr);
  const otherId = JSON.parse(other.stdout).terminal_id;
  assert.equal((await runCli(broker.stateDir, 'hand', otherId, gone)).code, 0);
  const revoked = await runCli(broker.stateDir, 'agents', 'revoke', gone);
  assert.equal(revoked.code, 0, revoked.stderr);
  await d.waitFor(([id, a]) => new RegExp(`agent ${a}`).test(document.querySelector(`.tab[data-terminal-id="${id}"] .owner`)?.textContent ?? ''),
    [otherId, gone], 'the page shows the revoked agent\'s terminal');
  await d.click(`.tab[data-terminal-id="${mine}"]`);

  // Hand it to the agent, chosen from the agents the broker lists; nothing
  // is chosen until the person chooses, so a stray Enter hands nothing.
  await d.click('#hand-terminal');
  await d.waitFor((a) => [...document.querySelectorAll('#hand-agent option')].some((o) => o.value === a), agentId,
    'the agent is offered');
  const offered = await d.evaluate(() => ({
    values: [...document.querySelectorAll('#hand-agent option')].map((o) => o.value),
    chosen: document.querySelector('#hand-agent').value,
    disabled: document.querySelector('#hand-submit').disabled,
  }));
  assert.ok(!offered.values.includes(gone), `a revoked agent is not offered: ${offered.values}`);
  assert.equal(offered.chosen, '', 'nothing is chosen');
  assert.equal(offered.disabled, true, 'Hand over waits for a choice');
  await d.evaluate(() => document.querySelector('#hand-form').requestSubmit());
  assert.equal(await d.evaluate(() => document.querySelector('#hand-dialog').open), true);
  assert.equal((await sessions()).terminals.find((x) => x.terminal_id === mine).agent_id, '');
  await chooseAgent(agentId);
  await d.click('#hand-submit');
  await d.waitFor(([id, a]) => document.querySelector('#hand-dialog').open === false
    && new RegExp(`agent ${a}`).test(document.querySelector(`.tab[data-terminal-id="${id}"] .owner`).textContent),
  [mine, agentId], 'the tab shows the agent');
  assert.equal((await sessions()).terminals.find((x) => x.terminal_id === mine).agent_id, agentId);
  const handed = await ran("printf 'reached-%s\\n' handed", { terminalId: mine });
  assert.match(handed.result.stdout, /reached-handed/);

  // Taken back: the agent reaches it no more.
  await d.click('#hand-terminal');
  await d.waitFor(() => document.querySelector('#hand-agent').value === ''
    && document.querySelector('#hand-submit').disabled, null, 'nothing is chosen');
  await chooseAgent(':nobody');
  await d.click('#hand-submit');
  await d.waitFor((id) => document.querySelector('#hand-dialog').open === false
    && /\(person\)/.test(document.querySelector(`.tab[data-terminal-id="${id}"] .owner`).textContent), mine,
  'the tab shows the person again');
  assert.equal((await sessions()).terminals.find((x) => x.terminal_id === mine).agent_id, '');
  const back = await run("printf 'reached-%s\\n' after", { terminalId: mine });
  assert.equal(back.error?.code, 'PM_TERM_NOT_FOUND', JSON.stringify(back));

  // An agent's terminal is not handed: the broker says why, in the dialog.
  await d.click(`.tab[data-terminal-id="${t}"]`);
  await d.click('#hand-terminal');
  await d.waitFor((a) => [...document.querySelectorAll('#hand-agent option')].some((o) => o.value === a), agentId,
    'the agents are listed');
  await chooseAgent(agentId);
  await d.click('#hand-submit');
  await d.waitFor(() => document.querySelector('#hand-error').hidden === false, null, 'the refusal shows');
  assert.match(await textOf('#hand-error'), /only a terminal a person opened is handed over/);
  await d.click('#hand-cancel');
  const audit = fs.readFileSync(broker.ready.audit_log, 'utf8');
  assert.match(audit, /"event":"terminal_renamed"[^\n]*"surface":"console"/);
  assert.match(audit, /"event":"terminal_handed_over"[^\n]*"surface":"console"/);
});

test('the grants view lists a grant made with the CLI, with its expiry', { skip }, async () => {
  const { d, broker, work } = desk;
  assert.match(await textOf('#terminal-info'), /~\/webshop/, 'the cwd under HOME shows as ~/webshop');
  await d.click('#show-grants');
  await d.waitFor(() => /No grant is in force/.test(document.querySelector('#grants-status').textContent), null,
    'no grant yet');
  await d.click('#hide-grants');
  const asking = run('touch granted', { terminalId: t, timeoutMs: 30000 });
  const id = await d.waitFor(() => [...globalThis.termbridgeConsole.approvals.keys()][0], null, 'the request')
    .then((h) => h.jsonValue());
  const granted = Date.now();
  const approved = await runCli(broker.stateDir, 'approvals', 'approve', id, '--scope', 'terminal', '--for', '1h');
  assert.equal(approved.code, 0, approved.stderr);
  assert.equal((await asking).success, true);
  assert.ok(fs.existsSync(path.join(work, 'webshop', 'granted')));
  await d.click('#show-grants');
  await d.waitFor(() => document.querySelectorAll('#grant-rows tr[data-kind="terminal"]').length === 1, null,
    'the grant is listed');
  const row = await d.evaluate(() => {
    const tr = document.querySelector('#grant-rows tr[data-kind="terminal"]');
    return { id: tr.dataset.terminalId, cells: [...tr.cells].map((c) => c.innerText.trim()) };
  });
  assert.equal(row.id, t);
  assert.equal(row.cells[0], 'for this terminal');
  assert.match(row.cells[1], /touch .*granted/);
  assert.match(row.cells[2], /webshop/, 'the terminal by name');
  assert.match(row.cells[4], /via cli/);
  assert.match(row.cells[6], /\(in (59 min|1 h 0 min)/, `expires in an hour: ${row.cells[6]}`);
  const expires = new Date(row.cells[6].replace(/ \(.*$/, '').replace(' ', 'T')).getTime();
  assert.ok(Math.abs(expires - (granted + 3600e3)) < 120e3, row.cells[6]);
  await keepScreenshot(desk, 'console-grants.png', { docs: true });
  await d.click('#hide-grants');
});

test('no script error in the page', { skip }, () => {
  assert.deepEqual(desk.d.problems, []);
});
