// The web console in a real headless Firefox (Debian's firefox-esr, driven
// over WebDriver BiDi by puppeteer-core): the page logs in with the console
// link, opens a tab for the agent's terminal and shows its output, typing
// reaches the PTY, and an approval clicked in the page lets the command run.
// Then the person's desk (tests/lib/console_desk.mjs, the same steps as
// e2e.console_desk in Chromium): names, lock, a secret prompt, the
// timeline and search, the history of decisions.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';
import { Broker, connectAgent, tempDir, terminal } from '../lib/harness.mjs';
import {
  approvalCards, decisionsHistory, lockControl, namesAndList, noPageErrors, ownTerminal,
  puppeteerDriver, secretPrompt, startDesk, timelineAndSearch,
} from '../lib/console_desk.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ARTIFACTS = path.resolve(ROOT, process.env.TB_ARTIFACT_DIR || 'build/artifacts');
const FIREFOX = process.env.TB_FIREFOX || '/usr/bin/firefox-esr';
const skip = !fs.existsSync(FIREFOX) && `${FIREFOX} is not installed (deploy/setup.sh installs firefox-esr)`;

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function rowsOf(page, terminalId) {
  return page.$eval(`.pane[data-terminal-id="${terminalId}"] .xterm-rows`, (n) => n.innerText)
    .catch(() => '');
}

// Resolves once the terminal's rows match: a DOM wait in the page.
async function screenMatches(page, terminalId, pattern) {
  await page.waitForFunction(
    (id, source) => new RegExp(source, 'm').test(
      document.querySelector(`.pane[data-terminal-id="${id}"] .xterm-rows`)?.innerText ?? ''),
    { timeout: 15000, polling: 'mutation' }, terminalId, pattern.source,
  ).catch(async (e) => {
    throw new Error(`no ${pattern} in the console (${e.message}):\n${await rowsOf(page, terminalId)}`);
  });
}

test('the console works in Firefox: output, typing and an approval clicked in the page', { skip }, async () => {
  const broker = await Broker.start({
    policy: null,  // the default policy: printf asks
    viewer: 'required',
    extraArgs: ['--console', '127.0.0.1:0', '--spawn-timeout-ms', '20000'],
  });
  cleanups.push(() => broker.stop());
  const agent = await connectAgent({ port: broker.port, tokenFile: broker.tokenFile });
  cleanups.push(() => agent.client.close());

  const browser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: FIREFOX,
    headless: true,
    userDataDir: tempDir('tb-firefox-'),
    extraPrefsFirefox: { 'network.proxy.type': 0, 'app.update.enabled': false },
  });
  cleanups.push(() => browser.close());
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  const problems = [];
  page.on('pageerror', (e) => problems.push(String(e)));
  await page.goto(broker.ready.console_url);
  assert.equal(new URL(page.url()).search, '', 'the token left the address bar');
  await page.waitForFunction(() => document.querySelector('#connection')?.textContent === 'connected',
    { timeout: 15000 });

  // Output: a read-only command runs once the page (the only viewer) shows its terminal.
  const r = await terminal(agent.client, {
    action: 'execute', execution: { command: 'basename /from/firefox/console-output-9' },
  });
  assert.equal(r.success, true, JSON.stringify(r.error));
  const t = r.identity.terminal_id;
  await page.waitForSelector(`.tab[data-terminal-id="${t}"]`);
  await screenMatches(page, t, /^console-output-9\s*$/m);

  // Typing reaches the PTY.
  await page.click(`.pane[data-terminal-id="${t}"] .xterm`);
  await page.keyboard.type("printf 'typed-%s\\n' in-firefox");
  await page.keyboard.press('Enter');
  await screenMatches(page, t, /^typed-in-firefox\s*$/m);
  const read = await terminal(agent.client, { action: 'read_output', target: { terminal_id: t }, wait_ms: 0 });
  assert.match(read.result.stdout, /^typed-in-firefox$/m);

  // An approval clicked in the page.
  const call = terminal(agent.client, {
    action: 'execute', target: { terminal_id: t },
    execution: { command: "printf 'approved-%s\\n' in-firefox" }, timeout_ms: 60000,
  });
  const card = await page.waitForSelector('li.approval');
  assert.match(await card.evaluate((n) => n.innerText), /approved-%s/);
  await card.$eval('button[data-decision="once"]', (b) => b.click());
  const done = await call;
  assert.equal(done.success, true, JSON.stringify(done.error));
  assert.equal(done.result.stdout, 'approved-in-firefox\n');
  await screenMatches(page, t, /^approved-in-firefox\s*$/m);

  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, 'console-firefox.png') });
  assert.deepEqual(problems, []);
});

// ---- the person's desk ----

let desk;
async function theDesk() {
  if (desk) return desk;
  desk = await startDesk(async (url) => {
    const browser = await puppeteer.launch({
      browser: 'firefox',
      executablePath: FIREFOX,
      headless: true,
      userDataDir: tempDir('tb-firefox-'),
      extraPrefsFirefox: { 'network.proxy.type': 0, 'app.update.enabled': false },
    });
    cleanups.push(() => browser.close());
    const page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 850 });
    await page.goto(url);
    return puppeteerDriver(page);
  }, cleanups);
  return desk;
}

test('Firefox: terminals show name, owner, cwd, state, lock and last exit', { skip }, async () => namesAndList(await theDesk()));
test('Firefox: the lock is set from the page and follows the CLI', { skip }, async () => lockControl(await theDesk()));
test('Firefox: a real read -s shows as waiting for a person\'s secret', { skip }, async () => secretPrompt(await theDesk()));
test('Firefox: the timeline jumps to a command\'s output; search', { skip }, async () => timelineAndSearch(await theDesk()));
test('Firefox: the history of decisions and its filters', { skip }, async () => decisionsHistory(await theDesk()));
test('Firefox: an approval card\'s narrowed, time-boxed rule', { skip }, async () => approvalCards(await theDesk()));
test('Firefox: New terminal opens a terminal of the person\'s own', { skip }, async () => ownTerminal(await theDesk()));
test('Firefox: no script error in the desk\'s page', { skip }, async () => noPageErrors(await theDesk()));
