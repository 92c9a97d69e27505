// The web console as a person's desk in a real headless Chromium (Debian's,
// driven by playwright-core): the steps of tests/lib/console_desk.mjs, one
// broker and one page for all of them. TB_UPDATE_DOCS_IMAGES=1 writes the
// screenshots docs/console.md shows.
import { test, after, before } from 'node:test';
import {
  approvalCards, chromiumPage, chromiumSkip as skip, decisionsHistory, lockControl, namesAndList, noPageErrors,
  ownTerminal, playwrightDriver, secretPrompt, startDesk, terminalListPicture, timelineAndSearch,
} from '../lib/console_desk.mjs';

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

let desk;
before(async () => {
  if (skip) return;
  desk = await startDesk(async (url) => playwrightDriver(await chromiumPage(url, cleanups)), cleanups);
});

test('terminals show name, owner, cwd, state, lock and last exit; the id in the tooltip', { skip }, () => namesAndList(desk));
test('the lock is set from the page and follows the CLI', { skip }, () => lockControl(desk));
test('a real read -s shows as waiting for a person\'s secret, typed in the page', { skip }, () => secretPrompt(desk));
test('a terminal\'s timeline jumps to a command\'s output; search finds in the scrollback', { skip }, () => timelineAndSearch(desk));
test('the history of decisions, filtered by decision, terminal, agent and time', { skip }, () => decisionsHistory(desk));
test('an approval card shows the rule "always" writes, narrowed and time-boxed', { skip }, () => approvalCards(desk));
test('New terminal opens a terminal of the person\'s own', { skip }, () => ownTerminal(desk));
test('the terminal list of a busy desk', { skip }, () => terminalListPicture(desk));
test('no script error in the page', { skip }, () => noPageErrors(desk));
