// The web console as a person's desk (issue 26), driven the same way in
// Chromium (playwright-core) and Firefox (puppeteer-core): terminals told
// apart by name, owner, cwd, state, lock and last exit code; the lock set
// from the page and from the CLI; a real `read -s` shown as waiting for a
// person's secret, which the person types in the page; a terminal's
// timeline whose commands jump to their output; scrollback search; the
// history of decisions with its filters; a terminal of the person's own;
// and approval cards with the rule "always" would write and a time box.
// Each step is a function of a Desk (one broker, one agent, one page) that
// asserts what a person would notice. A driver hides the two libraries'
// differences: evaluate, wait, click, type, press, screenshot.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  Broker, connectAgent, removeDir, runCli, tempDir, terminal,
} from './harness.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ARTIFACTS = path.resolve(ROOT, process.env.TB_ARTIFACT_DIR || 'build/artifacts');
// TB_UPDATE_DOCS_IMAGES=1: the screenshots docs/console.md shows are
// written to docs/images too (Chromium only).
const DOCS_IMAGES = path.join(ROOT, 'docs/images');

export const CANARY = 'tb-console-secret-5c1e';

export const CHROMIUM = process.env.TB_CHROMIUM || '/usr/bin/chromium';
// A test's `skip` when Chromium is missing (false when it is there).
export const chromiumSkip = !fs.existsSync(CHROMIUM)
  && `${CHROMIUM} is not installed (deploy/setup.sh installs chromium)`;

// A new page of Debian's Chromium (headless, driven by playwright-core) at
// `url`, its script errors from the first one on in `page.problems`;
// `cleanups` closes the browser.
export async function chromiumPage(url, cleanups, viewport = { width: 1400, height: 850 }) {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  cleanups.push(() => browser.close());
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.problems = [];
  page.on('pageerror', (e) => page.problems.push(String(e)));
  await page.goto(url);
  return page;
}

// The built-in rules allow what reads (seq, echo); false runs too, shred is
// denied, and anything else (touch) asks a person.
export const DESK_POLICY = `version = 1
default = "ask"

[[rule]]
id = "desk-false"
action = "allow"
exact = ["false"]

[[rule]]
id = "desk-no-shred"
action = "deny"
prefix = ["shred"]
reason = "never shred on this desk"
`;

const WAIT_MS = 15000;

export function playwrightDriver(page) {
  return {
    name: 'chromium',
    page,
    evaluate: (fn, arg) => page.evaluate(fn, arg),
    waitFor: (fn, arg, what, timeout = WAIT_MS) => page.waitForFunction(fn, arg, { timeout })
      .catch((e) => { throw new Error(`${what}: ${e.message.split('\n')[0]}`); }),
    click: (selector) => page.click(selector),
    type: (text) => page.keyboard.type(text),
    press: (key) => page.keyboard.press(key),
    screenshot: (file) => page.screenshot({ path: file }),
    acceptDialogs: () => page.on('dialog', (dialog) => dialog.accept()),
  };
}

export function puppeteerDriver(page) {
  return {
    name: 'firefox',
    page,
    evaluate: (fn, arg) => page.evaluate(fn, arg),
    waitFor: (fn, arg, what, timeout = WAIT_MS) => page.waitForFunction(fn, { timeout, polling: 100 }, arg)
      .catch((e) => { throw new Error(`${what}: ${e.message.split('\n')[0]}`); }),
    click: (selector) => page.click(selector),
    type: (text) => page.keyboard.type(text),
    press: (key) => page.keyboard.press(key),
    screenshot: (file) => page.screenshot({ path: file }),
    acceptDialogs: () => page.on('dialog', (dialog) => dialog.accept()),
  };
}

// A broker with the console (the page is the only viewer), an agent, the
// project directories, and the page logged in through `openPage(url)`,
// which returns a driver. The directories are in the broker's HOME, so the
// page (and its screenshots) shows them as ~/proj-alpha, not a temp path.
export async function startDesk(openPage, cleanups, {
  policy = DESK_POLICY, projects = ['proj-alpha', 'proj-beta', 'scratch'],
} = {}) {
  const work = tempDir('tb-desk-');
  cleanups.push(async () => removeDir(work));
  for (const dir of projects) fs.mkdirSync(path.join(work, dir));
  const broker = await Broker.start({
    policy,
    viewer: 'required',
    env: { HOME: work },
    extraArgs: ['--console', '127.0.0.1:0', '--spawn-timeout-ms', '20000'],
  });
  cleanups.push(() => broker.stop());
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => agent.client.close());
  const d = await openPage(broker.ready.console_url);
  if (!d.page.problems) {
    d.page.problems = [];
    d.page.on('pageerror', (e) => d.page.problems.push(String(e)));
  }
  d.problems = d.page.problems;
  await d.waitFor(() => document.querySelector('#connection')?.textContent === 'connected', null,
    'the page connects');
  return { broker, agent, work, d, terminals: {} };
}

// Keeps a screenshot as an artifact, and for the docs when asked.
export async function keepScreenshot(desk, name, { docs = false } = {}) {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `${desk.d.name}-${name}`);
  await desk.d.screenshot(file);
  const png = fs.readFileSync(file);
  assert.deepEqual([...png.subarray(1, 4)], [...Buffer.from('PNG')]);
  if (docs && process.env.TB_UPDATE_DOCS_IMAGES === '1' && desk.d.name === 'chromium') {
    fs.copyFileSync(file, path.join(DOCS_IMAGES, name));
  }
}

function run(desk, command, { terminalId, cwd, timeoutMs } = {}) {
  return terminal(desk.agent.client, {
    action: 'execute',
    execution: { command },
    ...(terminalId ? { target: { terminal_id: terminalId } } : {}),
    ...(cwd || timeoutMs ? { runtime: { ...(cwd ? { cwd } : {}), ...(timeoutMs ? { timeout_ms: timeoutMs } : {}) } } : {}),
  });
}

async function ran(desk, command, options) {
  const r = await run(desk, command, options);
  assert.equal(r.success, true, `${command}: ${JSON.stringify(r.error)}`);
  assert.equal(r.result.running, false, `${command} finished: ${JSON.stringify(r.result)}`);
  return r;
}

// Waits until the terminal's xterm (scrollback too) has a line matching.
async function screenShows(desk, terminalId, source, what) {
  await desk.d.waitFor(([id, src]) => new RegExp(src, 'm').test(globalThis.termbridgeConsole.text(id)),
    [terminalId, source], what);
}

async function sessions(desk) {
  const r = await runCli(desk.broker.stateDir, '--json', 'sessions');
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

async function select(desk, selector, value) {
  await desk.d.evaluate(([sel, v]) => {
    const node = document.querySelector(sel);
    node.value = v;
    node.dispatchEvent(new Event('change', { bubbles: true }));
  }, [selector, value]);
}

async function fill(desk, selector, value) {
  await desk.d.evaluate(([sel, v]) => {
    const node = document.querySelector(sel);
    node.value = v;
    node.dispatchEvent(new Event('input', { bubbles: true }));
  }, [selector, value]);
}

const text = (desk, selector) => desk.d.evaluate((sel) => document.querySelector(sel)?.innerText ?? '', selector);

// ---- 1. terminals people tell apart ----

export async function namesAndList(desk) {
  const { d, work } = desk;
  const alpha = await ran(desk, 'seq 1 3; false', { cwd: path.join(work, 'proj-alpha') });
  const beta = await ran(desk, 'echo beta-ready', { cwd: path.join(work, 'proj-beta') });
  const a = alpha.identity.terminal_id;
  const b = beta.identity.terminal_id;
  assert.notEqual(a, b);
  desk.terminals = { alpha: a, beta: b };
  await screenShows(desk, b, '^beta-ready\\s*$', 'beta\'s output');

  // Each tab: name, owner, state, the last exit code; the id only in the tooltip.
  await d.waitFor((id) => /exit 1/.test(document.querySelector(`.tab[data-terminal-id="${id}"]`)?.innerText ?? ''),
    a, 'alpha\'s tab shows its last exit code');
  for (const [id, dir] of [[a, 'proj-alpha'], [b, 'proj-beta']]) {
    const tab = await d.evaluate((tid) => {
      const node = document.querySelector(`.tab[data-terminal-id="${tid}"]`);
      return { text: node.innerText, title: node.title, label: node.querySelector('.label').textContent };
    }, id);
    assert.match(tab.label, new RegExp(dir), `the tab is named after ${dir}: ${tab.label}`);
    assert.ok(!tab.text.includes(id), `the id is not in front: ${tab.text}`);
    assert.match(tab.text, /agent \S+/);
    assert.match(tab.text, /running/i);
    assert.match(tab.title, new RegExp(`id ${id}`), 'the id is in the tooltip');
    assert.match(tab.title, new RegExp(`cwd .*${dir}`));
  }

  // The terminal list: both, with name, owner, cwd, state, lock and last exit.
  await d.click('#show-terminal-list');
  await d.waitFor((ids) => ids.every((id) => /exit|running/.test(
    document.querySelector(`#terminal-rows tr[data-terminal-id="${id}"]`)?.innerText ?? '')), [a, b],
  'both terminals are listed');
  const rows = await d.evaluate(() => [...document.querySelectorAll('#terminal-rows tr')].map((tr) => ({
    id: tr.dataset.terminalId,
    cells: [...tr.cells].map((c) => c.innerText.trim()),
    lock: tr.querySelector('select').value,
    title: tr.title,
  })));
  const row = Object.fromEntries(rows.map((r) => [r.id, r]));
  assert.match(row[a].cells[0], /proj-alpha/);
  assert.match(row[a].cells[1], /^agent \S+$/);
  assert.match(row[a].cells[2], /proj-alpha$/);
  assert.match(row[a].cells[3], /running/);
  assert.equal(row[a].lock, 'shared');
  assert.equal(row[a].cells[5], '1');
  assert.equal(row[b].cells[5], '0');
  assert.match(row[b].title, new RegExp(`id ${b}`));
  await keepScreenshot(desk, 'console-terminal-list.png');
  // A name leads to its terminal.
  await d.click(`#terminal-rows tr[data-terminal-id="${a}"] .link-button`);
  await d.waitFor((id) => document.querySelector(`.tab[data-terminal-id="${id}"]`)?.getAttribute('aria-selected') === 'true'
    && document.querySelector('#terminal-list').hidden, a, 'the list closes on the chosen terminal');
}

// ---- 2. the lock, from the page and from the CLI ----

export async function lockControl(desk) {
  const { d, broker } = desk;
  const a = desk.terminals.alpha;
  await d.click(`.tab[data-terminal-id="${a}"]`);
  await select(desk, '#lock-select', 'user_only');
  await d.waitFor((id) => document.querySelector(`.tab[data-terminal-id="${id}"] .badge.lock`)?.innerText.trim().toLowerCase() === 'people only',
    a, 'the tab shows the lock it set');
  const lockOf = async (id) => (await sessions(desk)).terminals.find((t) => t.terminal_id === id)?.lock;
  assert.equal(await lockOf(a), 'user_only', 'the broker took the lock from the console');
  // The agent's command is refused while only people may type.
  const refused = await run(desk, 'echo agent-typed', { terminalId: a });
  assert.equal(refused.success, false, JSON.stringify(refused));

  // Set elsewhere (the CLI): the page follows.
  const cli = await runCli(broker.stateDir, 'lock', a, 'agent_only');
  assert.equal(cli.code, 0, cli.stderr);
  await d.waitFor((id) => document.querySelector(`.tab[data-terminal-id="${id}"] .badge.lock`)?.innerText.trim().toLowerCase() === 'agent only'
    && document.querySelector('#lock-select').value === 'agent_only', a, 'the page shows the CLI\'s lock');

  // And back to shared from the terminal list.
  await d.click('#show-terminal-list');
  await select(desk, `#terminal-rows tr[data-terminal-id="${a}"] select`, 'shared');
  await d.waitFor((id) => document.querySelector(`.tab[data-terminal-id="${id}"] .badge.lock`)?.hidden === true, a,
    'the lock badge goes with shared');
  assert.equal(await lockOf(a), 'shared');
  await d.click('#hide-terminal-list');
  const audit = fs.readFileSync(broker.ready.audit_log, 'utf8');
  assert.match(audit, /"event":"lock_changed"[^\n]*"surface":"console"/, 'the console\'s lock change is audited');
}

// ---- 3. a secret only a person types (bash's read -s, as sudo asks) ----

export async function secretPrompt(desk) {
  const { d, work } = desk;
  // A terminal in scratch; the default policy asks about the command, and
  // the person lets it run from its card.
  const opened = await terminal(desk.agent.client, {
    action: 'execute', invocation: { intent: 'open_only' }, runtime: { cwd: path.join(work, 'scratch') },
  });
  assert.equal(opened.success, true, JSON.stringify(opened.error));
  const t = opened.identity.terminal_id;
  const call = run(desk,
    `bash --norc -c 'read -r -s -p "Password: " pw; echo; echo "got ${'$'}{#pw} characters"'`,
    { terminalId: t, timeoutMs: 1 });
  await d.waitFor(() => /Password/.test(document.querySelector('li.approval pre.command')?.textContent ?? ''), null,
    'the card for the command');
  await d.click('li.approval button[data-decision="once"]');
  const r = await call;
  assert.equal(r.success, true, JSON.stringify(r.error));
  desk.terminals.secret = t;
  await d.click(`.tab[data-terminal-id="${t}"]`);
  await screenShows(desk, t, 'Password: ', 'the prompt');
  await d.waitFor((id) => {
    const tab = document.querySelector(`.tab[data-terminal-id="${id}"]`);
    const banner = document.querySelector(`.pane[data-terminal-id="${id}"] .secret-banner`);
    return tab && !tab.querySelector('.badge.secret').hidden && banner && !banner.hidden
      && /waiting for a person to type a secret/i.test(banner.innerText);
  }, t, 'the tab and pane say a person must type a secret');
  assert.match(await text(desk, `.tab[data-terminal-id="${t}"]`), /secret/i);
  await keepScreenshot(desk, 'console-secret.png', { docs: true });

  // The agent cannot answer; the person types it in the page.
  const refused = await run(desk, 'agent-guess', { terminalId: t });
  assert.equal(refused.success, false);
  assert.equal(refused.error.details?.reason, 'secret_prompt', JSON.stringify(refused.error));
  await d.click(`.pane[data-terminal-id="${t}"] .xterm`);
  await d.type(CANARY);
  await d.press('Enter');
  await screenShows(desk, t, `^got ${CANARY.length} characters\\s*$`, 'the command got the secret');
  await d.waitFor((id) => document.querySelector(`.tab[data-terminal-id="${id}"] .badge.secret`)?.hidden === true,
    t, 'the badge goes once the secret is typed');
  const screen = await d.evaluate((id) => globalThis.termbridgeConsole.text(id), t);
  assert.ok(!screen.includes(CANARY), 'echo off: the page never shows the secret');
}

// ---- 5 and 6. a terminal's timeline, and search in its scrollback ----

export async function timelineAndSearch(desk) {
  const { d } = desk;
  const b = desk.terminals.beta;
  const seq = await ran(desk, 'seq 1 300', { terminalId: b });
  await ran(desk, 'echo second-command-output', { terminalId: b });
  await ran(desk, 'seq 1000 1400', { terminalId: b });
  await d.click(`.tab[data-terminal-id="${b}"]`);
  await screenShows(desk, b, '^1400\\s*$', 'the last command\'s output');

  await d.click('#timeline-toggle');
  await d.waitFor(() => document.querySelectorAll('#timeline-list .timeline-command').length >= 4, null,
    'the timeline lists the terminal\'s commands');
  const entries = await d.evaluate(() => [...document.querySelectorAll('#timeline-list .timeline-command')]
    .map((li) => li.innerText));
  const seqEntry = entries.findIndex((e) => /\$ seq 1 300/.test(e));
  assert.ok(seqEntry >= 0, entries.join('\n---\n'));
  assert.match(entries[seqEntry], /agent \S+/, 'who sent it');
  assert.match(entries[seqEntry], /allowed by policy/, 'the decision');
  assert.match(entries[seqEntry], /exit 0/, 'its exit code');
  assert.match(entries[seqEntry], /\d+(\.\d)? m?s/, 'its duration');
  assert.match(entries[0], /\$ echo beta-ready/);

  // Clicking it shows its output: scrolled to and selected.
  const before = await d.evaluate(() => globalThis.termbridgeConsole.active().term.buffer.active.viewportY);
  await d.click(`#timeline-list li[data-session-id="${seq.identity.session_id}"]`);
  await d.waitFor(() => globalThis.termbridgeConsole.active().term.hasSelection(), null, 'the output is selected');
  const shown = await d.evaluate(() => {
    const term = globalThis.termbridgeConsole.active().term;
    const rows = document.querySelector('.pane.active .xterm-rows').innerText;
    return { selection: term.getSelection(), viewportY: term.buffer.active.viewportY, rows };
  });
  const lines = shown.selection.split(/\r?\n/).map((l) => l.trim()).filter(Boolean);
  assert.equal(lines[0], '1', `the selection starts at the output: ${lines.slice(0, 3)}`);
  assert.ok(lines.includes('300') && !lines.includes('1000'), `only its output: ${lines.slice(-3)}`);
  assert.ok(shown.viewportY < before, 'the view scrolled up to it');
  assert.match(shown.rows, /^1\s*$/m, 'its first line is on screen');
  await keepScreenshot(desk, 'console-timeline.png', { docs: true });

  // Search: the match is selected and scrolled to; no match is said.
  await fill(desk, '#search-input', 'SECOND-command');
  await d.click('#search-next');
  await d.waitFor(() => globalThis.termbridgeConsole.active().term.getSelection().toLowerCase() === 'second-command',
    null, 'the match is selected');
  const row = await d.evaluate(() => {
    const term = globalThis.termbridgeConsole.active().term;
    const pos = term.getSelectionPosition();
    const top = term.buffer.active.viewportY;
    return { line: pos.start.y, top, bottom: top + term.rows };
  });
  assert.ok(row.line >= row.top && row.line < row.bottom, `the match is in view: ${JSON.stringify(row)}`);
  await fill(desk, '#search-input', 'no-such-text-anywhere');
  await d.click('#search-next');
  await d.waitFor(() => document.querySelector('#search-status').textContent === 'no match', null, '"no match"');
  await fill(desk, '#search-input', '');
  await d.waitFor(() => document.querySelector('#search-status').textContent === ''
    && !globalThis.termbridgeConsole.active().term.hasSelection(), null, 'an empty search clears');
  await d.click('#timeline-toggle');
}

// ---- 4. the history of decisions ----

export async function decisionsHistory(desk) {
  const { d } = desk;
  const a = desk.terminals.alpha;
  const denied = await run(desk, 'shred nothing', { terminalId: a });
  assert.equal(denied.success, false);
  // touch asks: the person approves it in the page.
  const asking = run(desk, 'touch asked', { terminalId: a, timeoutMs: 20000 });
  await d.waitFor(() => document.querySelector('li.approval button[data-decision="once"]'), null, 'the approval card');
  await d.click('li.approval button[data-decision="once"]');
  assert.equal((await asking).success, true);

  const rowsOf = () => d.evaluate(() => [...document.querySelectorAll('#history-rows tr')].map((tr) => ({
    decision: tr.dataset.decision, terminal: tr.dataset.terminalId, agent: tr.dataset.agent,
    cells: [...tr.cells].map((c) => c.innerText.trim()), title: tr.cells[2].title,
  })));
  const loaded = () => d.waitFor(() => !/loading/.test(document.querySelector('#history-status').textContent), null,
    'the history loads');
  await d.click('#show-history');
  await d.waitFor(() => [...document.querySelectorAll('#history-rows tr')].some((tr) => /touch/.test(tr.innerText)), null,
    'the decisions');
  const all = await rowsOf();
  assert.ok(all.some((r) => r.decision === 'deny' && /shred/.test(r.cells[3]) && /rule desk-no-shred/.test(r.cells[5])),
    JSON.stringify(all));
  const approved = all.find((r) => r.decision === 'approved' && /touch/.test(r.cells[3]));
  assert.ok(approved, JSON.stringify(all));
  assert.match(approved.cells[5], /via console, scope once/);
  assert.match(approved.cells[2], /proj-alpha/, 'the terminal by name');
  assert.match(approved.title, new RegExp(a), 'its id in the tooltip');
  await keepScreenshot(desk, 'console-decisions.png', { docs: true });

  // Filters: decision, terminal, agent, time.
  await select(desk, '#history-filter select[name="decision"]', 'deny');
  await d.waitFor(() => [...document.querySelectorAll('#history-rows tr')].every((tr) => tr.dataset.decision === 'deny')
    && document.querySelectorAll('#history-rows tr').length >= 1, null, 'only denials');
  assert.ok((await rowsOf()).every((r) => /shred/.test(r.cells[3])));
  await select(desk, '#history-filter select[name="decision"]', '');
  await fill(desk, '#history-filter input[name="terminal"]', desk.terminals.beta);
  await d.click('#history-filter button[type="submit"]');
  await d.waitFor((id) => {
    const rows = [...document.querySelectorAll('#history-rows tr')];
    return rows.length >= 3 && rows.every((tr) => tr.dataset.terminalId === id);
  }, desk.terminals.beta, 'only beta\'s decisions');
  await fill(desk, '#history-filter input[name="terminal"]', '');
  await fill(desk, '#history-filter input[name="agent"]', 'nobody-such');
  await d.click('#history-filter button[type="submit"]');
  await d.waitFor(() => document.querySelectorAll('#history-rows tr').length === 0
    && /No decision/.test(document.querySelector('#history-status').textContent), null, 'no such agent');
  await fill(desk, '#history-filter input[name="agent"]', '');
  await fill(desk, '#history-filter input[name="since"]', '1h');
  await fill(desk, '#history-filter input[name="until"]', '2020-01-01T00:00:00Z');
  await d.click('#history-filter button[type="submit"]');
  await d.waitFor(() => document.querySelectorAll('#history-rows tr').length === 0, null, 'nothing before 2020');
  await fill(desk, '#history-filter input[name="until"]', '');
  await d.click('#history-filter button[type="submit"]');
  await d.waitFor(() => document.querySelectorAll('#history-rows tr').length >= 5, null, 'the last hour: all of them');
  await fill(desk, '#history-filter input[name="since"]', 'yesterday-ish');
  await d.click('#history-filter button[type="submit"]');
  await loaded();
  assert.match(await text(desk, '#history-status'), /since/, 'a bad time is named');
  await fill(desk, '#history-filter input[name="since"]', '');
  await d.click('#hide-history');
}

// ---- 7. a terminal of the person's own ----

export async function ownTerminal(desk) {
  const { d, work } = desk;
  await d.click('#open-terminal');
  await fill(desk, '#open-form input[name="name"]', 'my-scratch');
  await fill(desk, '#open-form input[name="cwd"]', path.join(work, 'scratch'));
  await d.click('#open-submit');
  const id = await d.waitFor(() => {
    const active = globalThis.termbridgeConsole.active();
    return active && active.info.name === 'my-scratch' ? active.id : null;
  }, null, 'the new terminal opens in front').then((h) => h.jsonValue());
  const tab = await text(desk, `.tab[data-terminal-id="${id}"]`);
  assert.match(tab, /my-scratch/);
  assert.match(tab, /\(person\)/, 'a person owns it');
  assert.ok(!/agent /.test(tab), 'no agent has it');
  // Keys typed before the shell's first prompt are discarded at that prompt
  // (docs/security.md, type-ahead): type once it shows.
  await screenShows(desk, id, '^\\$\\s*$', 'the shell shows its prompt');
  await d.click(`.pane[data-terminal-id="${id}"] .xterm`);
  await d.type('pwd');
  await d.press('Enter');
  await screenShows(desk, id, `${path.join(work, 'scratch').replace(/[/.-]/g, '\\$&')}\\s*$`, 'it runs in the cwd asked for');
  const listed = (await sessions(desk)).terminals.find((t) => t.terminal_id === id);
  assert.equal(listed?.name, 'my-scratch', JSON.stringify(listed));
}

// ---- 8. approval cards: the rule "always" writes, narrowed; time boxes ----

const cardError = (desk) => text(desk, 'li.approval .error');

export async function approvalCards(desk) {
  const { d, work, broker } = desk;
  const scratch = path.join(work, 'scratch');
  const t = desk.terminals.secret;  // its shell runs in scratch
  const policyText = () => {
    const file = path.join(broker.stateDir, 'policy.toml');
    return fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  };

  await d.click(`.tab[data-terminal-id="${t}"]`);
  // The card shows the exact rule "always" would write.
  const always = run(desk, 'touch made-always', { terminalId: t, timeoutMs: 30000 });
  await d.waitFor(() => /made-always/.test(document.querySelector('li.approval textarea.always-rules')?.value ?? ''),
    null, 'the card shows the rule "always" writes');
  const proposed = await d.evaluate(() => document.querySelector('li.approval textarea.always-rules').value);
  assert.match(proposed, /^\[\[rule\]\]\nid = "always-touch-[0-9a-f]{8}"\naction = "allow"\nexact = \["touch", "made-always"\]\n/m);
  await keepScreenshot(desk, 'console-approval.png', { docs: true });

  // A broader rule is refused, nothing is written, the card stays.
  await fill(desk, 'li.approval textarea.always-rules', '[[rule]]\naction = "allow"\nprefix = ["touch"]\n');
  await d.click('li.approval button[data-decision="always"]');
  await d.waitFor(() => document.querySelector('li.approval .error')?.hidden === false, null, 'the broader rule is refused');
  assert.match(await cardError(desk), /allows more than "always" proposed/);
  assert.ok(!policyText().includes('prefix = ["touch"]'), 'nothing broader was written');

  // Narrowed to this directory, for 1 hour: written so, and the command runs.
  const narrow = `[[rule]]\nid = "touch-made-here"\naction = "allow"\nexact = ["touch", "made-always"]\nwrites = true\nwrite_paths = ["made-always"]\ncwd = ["${scratch}"]\n`;
  await fill(desk, 'li.approval textarea.always-rules', narrow);
  await select(desk, 'li.approval select.time-limit', '3600');
  const asked = Date.now();
  await d.click('li.approval button[data-decision="always"]');
  const ran1 = await always;
  assert.equal(ran1.success, true, JSON.stringify(ran1.error));
  assert.ok(fs.existsSync(path.join(scratch, 'made-always')));
  const written = policyText();
  assert.match(written, /id = "touch-made-here"/);
  assert.ok(written.includes(`cwd = ["${scratch}"]`), written);
  const expires = Date.parse(written.match(/expires = "?([0-9][0-9TZ:+.-]+)"?/)?.[1]);
  assert.ok(Math.abs(expires - (asked + 3600e3)) < 120e3, `expires about an hour from now: ${written}`);

  // A command "always" cannot cover says why, and offers no rule.
  const dynamic = run(desk, 'touch "made-$RANDOM"', { terminalId: t, timeoutMs: 30000 });
  await d.waitFor(() => /RANDOM/.test(document.querySelector('li.approval pre.command')?.textContent ?? ''),
    null, 'the card of a line with a variable');
  const refused = await d.evaluate(() => {
    const card = document.querySelector('li.approval');
    return {
      refusal: card.querySelector('.always-refusal').hidden ? '' : card.querySelector('.always-refusal').textContent,
      disabled: card.querySelector('button[data-decision="always"]').disabled,
      rules: card.querySelector('textarea.always-rules').hidden,
    };
  });
  assert.match(refused.refusal, /^Cannot allow this always: ./, JSON.stringify(refused));
  assert.equal(refused.disabled, true);
  assert.equal(refused.rules, true);
  await d.click('li.approval button[data-decision="deny"]');
  assert.equal((await dynamic).error?.code, 'PM_TERM_DECLINED');

  // For this terminal, for 1 hour: later commands there run without asking
  // until then.
  const forTerminal = run(desk, 'touch made-for-terminal', { terminalId: t, timeoutMs: 30000 });
  await d.waitFor(() => /made-for-terminal/.test(document.querySelector('li.approval pre.command')?.textContent ?? ''),
    null, 'the card for the terminal grant');
  await select(desk, 'li.approval select.time-limit', '3600');
  const granted = Date.now();
  await d.click('li.approval button[data-decision="terminal"]');
  const ran2 = await forTerminal;
  assert.equal(ran2.success, true, JSON.stringify(ran2.error));
  const grants = JSON.parse((await runCli(broker.stateDir, '--json', 'grants')).stdout).grants;
  const grant = grants.find((g) => g.kind === 'terminal' && /made-for-terminal/.test(g.command));
  assert.ok(grant, JSON.stringify(grants));
  assert.equal(grant.terminal_id, t);
  assert.ok(Math.abs(Number(grant.expires_at_unix_ms) - (granted + 3600e3)) < 120e3, JSON.stringify(grant));
  const later = await ran(desk, 'touch made-later', { terminalId: t });
  assert.equal(later.result.approval?.decided_by, 'terminal grant', JSON.stringify(later.result.approval));
}

// The terminal list once the desk is busy (a lock, a person's terminal):
// the picture docs/console.md shows.
export async function terminalListPicture(desk) {
  const { d, broker } = desk;
  const a = desk.terminals.alpha;
  assert.equal((await runCli(broker.stateDir, 'lock', a, 'user_only')).code, 0);
  await d.click('#show-terminal-list');
  await d.waitFor((id) => document.querySelector(`#terminal-rows tr[data-terminal-id="${id}"] select`)?.value === 'user_only',
    a, 'the list shows the lock');
  await keepScreenshot(desk, 'console-terminals.png', { docs: true });
  assert.equal((await runCli(broker.stateDir, 'lock', a, 'shared')).code, 0);
  await d.click('#hide-terminal-list');
}

export function noPageErrors(desk) {
  assert.deepEqual(desk.d.problems, []);
}
