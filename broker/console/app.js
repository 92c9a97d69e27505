// The termbridge web console in the browser. It follows the broker's
// terminals and approvals over /ws/events and opens one tab per terminal
// (terminal_tab.js: its xterm.js view over /ws/attach). Around the tabs:
// the toolbar of the active terminal (Ctrl-C, close, replay, timeline,
// lock, rename and hand-over, search in the scrollback and in the whole
// recorded history), the terminal list, a person's own New terminal, the
// history of decisions and the timeline (history.js), the grants
// (desk_controls.js), the recordings and their replay (which also opens at
// an output offset, for a timeline command or a search match the view no
// longer holds), and the approvals panel. What the events
// feed does not carry (a lock set from the CLI, a secret prompt, a finished
// command's exit code) comes from GET /api/terminals, asked at once after a
// notice from the broker and every few seconds otherwise.
// Plain ES modules, no framework; xterm.js and its addons are the UMD
// builds loaded before them. Authentication is the HttpOnly cookie set by
// the /?token= link, sent by the browser with every request, so this script
// never sees the token. docs/console.md describes what a person sees.
import {
  $, element, exitText, getJson, lastExitText, LOCK_MODES, postJson, setHome, showOverlay, shownPath,
  socketUrl, terminalOwner, visible,
} from './format.js';
import {
  approvalEntries, clearApprovals, notifiedCount, onApprovalEvent, setTerminalNames,
  showNotifyButton, toggleNotifications, updateApprovalCount,
} from './approvals.js';
import { DeskControls } from './desk_controls.js';
import { DecisionsView, TimelinePanel } from './history.js';
import { HistorySearch } from './history_search.js';
import { OutputMap, TerminalTab, writeRecorded } from './terminal_tab.js';

const { Terminal } = globalThis;

const MIN_RETRY_MS = 250;
const MAX_RETRY_MS = 5000;
const REFRESH_MS = 3000;

const state = {
  terminals: new Map(),  // terminal_id -> TerminalTab
  active: null,          // TerminalTab
};

function nextRetry(ms) {
  return Math.min(MAX_RETRY_MS, ms * 2);
}

// ---- terminals ----

const tabHooks = {
  select: (tab) => activate(tab),
  changed: (tab, significant) => {
    if (state.active === tab) showToolbar(tab);
    if (!$('terminal-list').hidden) renderTerminalList();
    // A command finished or the lock moved: the timeline has more to say.
    if (significant && state.active === tab && timeline.open) timeline.refresh();
  },
  notice: () => scheduleRefresh(50),
};

function showToolbar(tab) {
  for (const id of ['ctrl-c', 'close-terminal', 'lock-select', 'hand-terminal']) $(id).disabled = !tab || tab.exited;
  for (const id of ['replay-terminal', 'timeline-toggle', 'search-input', 'search-prev', 'search-next',
    'search-history', 'rename-terminal']) {
    $(id).disabled = !tab;
  }
  if (!tab) {
    $('terminal-info').textContent = '';
    $('terminal-info').title = '';
    return;
  }
  const info = tab.info;
  $('lock-select').value = info.lock || 'shared';
  const parts = [tab.displayName(), terminalOwner(info), info.cwd && shownPath(info.cwd), exitText(info.exit),
    lastExitText(info)];
  $('terminal-info').textContent = parts.filter(Boolean).join(' · ');
  $('terminal-info').title = tab.details();
}

function activate(tab) {
  if (state.active) {
    state.active.tab.setAttribute('aria-selected', 'false');
    state.active.pane.classList.remove('active');
  }
  state.active = tab;
  tab.tab.setAttribute('aria-selected', 'true');
  tab.pane.classList.add('active');
  tab.fitToPane();
  tab.sendResize();
  tab.term.focus();
  $('search-status').textContent = '';
  showToolbar(tab);
  timeline.follow(tab);
}

function openTerminal(info) {
  let tab = state.terminals.get(info.terminal_id);
  if (tab) {
    tab.update(info);
  } else {
    tab = new TerminalTab(info, tabHooks);
    state.terminals.set(tab.id, tab);
    $('no-terminals').hidden = true;
    if (info.exit && !info.exit.running) tab.markExited(info.exit);
    if (!state.active) activate(tab);
    if (!$('terminal-list').hidden) renderTerminalList();
  }
  tab.connect();
  return tab;
}

function onTerminalEvent(message) {
  const info = message.terminal;
  if (!info || !info.terminal_id || info.session_id) return;  // sessions show in their terminal
  if (message.kind === 'opened') openTerminal(info);
  else state.terminals.get(info.terminal_id)?.update(info);  // closed, or changed
}

// GET /api/terminals: names, locks, secret prompts and exit codes as they
// are now. A terminal's secret prompt may also show only on the command
// running in it (ExitInfo.secret_prompt of its session).
let refreshTimer = null;
let refreshing = false;

async function refreshTerminals() {
  if (refreshing) return;
  refreshing = true;
  try {
    const body = await getJson('/api/terminals');
    if (setHome(body.home)) {
      for (const tab of state.terminals.values()) tab.render();
      if (state.active) showToolbar(state.active);
    }
    const waiting = new Set((body.sessions ?? []).filter((s) => s.exit?.secret_prompt && s.exit?.running)
      .map((s) => s.terminal_id));
    for (const info of body.terminals ?? []) {
      const tab = state.terminals.get(info.terminal_id);
      if (!tab) continue;
      tab.update({ ...info, secret_prompt: Boolean(info.secret_prompt || waiting.has(info.terminal_id)) });
    }
  } catch {
    // The events feed says when the broker is away; the next tick retries.
  } finally {
    refreshing = false;
  }
}

function scheduleRefresh(ms = REFRESH_MS) {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(async () => {
    await refreshTerminals();
    scheduleRefresh();
  }, ms);
}

function showToolbarError(text) {
  $('toolbar-error').textContent = text;
  $('toolbar-error').hidden = !text;
}

// SetLock from the console; the lock shows once the broker took it.
async function setLock(tab, mode, errorNode = $('toolbar-error')) {
  errorNode.hidden = true;
  try {
    const body = await postJson('/api/terminals/lock', { terminal_id: tab.id, mode });
    tab.update({ lock: body.mode });
  } catch (e) {
    errorNode.textContent = `Lock not changed: ${e.message}`;
    errorNode.hidden = false;
    tab.update({});  // back to the lock in force
  }
}

// ---- the terminal list ----

function lockSelect(tab) {
  const select = element('select', { 'aria-label': `Lock of ${tab.displayName()}`, class: 'lock-select' },
    ...LOCK_MODES.map(([value, label, meaning]) => element('option', { value, text: label, title: meaning })));
  select.value = tab.info.lock || 'shared';
  select.disabled = tab.exited;
  select.addEventListener('change', () => setLock(tab, select.value, $('terminal-list-error')));
  return select;
}

function renderTerminalList() {
  const rows = [...state.terminals.values()].map((tab) => {
    const info = tab.info;
    const name = element('button', { type: 'button', class: 'link-button', text: tab.displayName() });
    name.addEventListener('click', () => {
      $('terminal-list').hidden = true;
      activate(tab);
    });
    const stateText = tab.secret() ? 'waiting for a person to type a secret' : exitText(info.exit);
    return element('tr', { 'data-terminal-id': tab.id, title: tab.details() },
      element('td', { class: 'name' }, name),
      element('td', { text: terminalOwner(info) || '—' }),
      element('td', { class: 'cwd', text: shownPath(info.cwd) || '—', title: visible(info.cwd) || undefined }),
      element('td', { class: tab.secret() ? 'state secret' : 'state', text: stateText }),
      element('td', { class: 'lock' }, lockSelect(tab)),
      element('td', { class: 'last-exit', text: info.last_exit_code === undefined ? '—' : String(info.last_exit_code) }));
  });
  $('terminal-rows').replaceChildren(...rows);
  $('terminal-list-empty').hidden = rows.length > 0;
}

async function showTerminalList() {
  showOverlay('terminal-list');
  $('terminal-list-error').hidden = true;
  renderTerminalList();
  await refreshTerminals();
  renderTerminalList();
}

// ---- a terminal of the person's own ----

function showOpenDialog() {
  const dialog = $('open-dialog');
  $('open-error').hidden = true;
  $('open-form').reset();
  dialog.showModal();
}

async function openOwnTerminal(event) {
  event.preventDefault();
  const form = $('open-form').elements;
  $('open-submit').disabled = true;
  $('open-error').hidden = true;
  try {
    const body = await postJson('/api/terminals/open', { name: form.name.value.trim(), cwd: form.cwd.value.trim() });
    $('open-dialog').close();
    activate(openTerminal(body.terminal));
  } catch (e) {
    $('open-error').textContent = `Not opened: ${e.message}`;
    $('open-error').hidden = false;
  } finally {
    $('open-submit').disabled = false;
  }
}

// ---- scrollback search ----

function search(backwards) {
  const tab = state.active;
  if (!tab) return;
  const text = $('search-input').value;
  const found = tab.find(text, backwards);
  $('search-status').textContent = !text || found ? '' : 'no match';
}

// ---- the timeline and the decisions ----

// Output bytes [from, to) of a terminal: in its view when the scrollback
// still holds them, else in the replay opened at them.
function showOutputAnywhere(tab, from, to, what) {
  const problem = tab.showOutput(from, to);
  if (!problem) {
    if (!$('replay').hidden) closeReplay();
    return `Showing ${what} in the terminal.`;
  }
  openReplay(tab.id, { from, to });
  return `${what.charAt(0).toUpperCase()}${what.slice(1)} is no longer in the terminal's view: shown in the replay of its recording.`;
}

const timeline = new TimelinePanel({
  activeTab: () => state.active,
  jump: (tab, output) => showOutputAnywhere(tab, output.from, output.to ?? output.from + 1, 'its output'),
});

const historySearch = new HistorySearch({
  activeTab: () => state.active,
  show: (tab, match) => showOutputAnywhere(tab, match.offset, match.end, 'the match'),
});

// ---- the events feed ----

let eventsRetryMs = MIN_RETRY_MS;

function setConnection(kind, text) {
  const node = $('connection');
  node.className = `link ${kind}`;
  node.textContent = text;
}

// A WebSocket that failed may have been refused (no cookie): say so.
async function checkLogin() {
  try {
    const response = await fetch('/style.css', { method: 'HEAD', cache: 'no-store' });
    if (response.status === 401) {
      setConnection('offline', 'not logged in: open the console link with its token');
      return false;
    }
  } catch {
    // The broker is down; keep retrying.
  }
  return true;
}

function connectEvents() {
  const ws = new WebSocket(socketUrl('/ws/events'));
  let opened = false;
  ws.onopen = () => {
    opened = true;
    eventsRetryMs = MIN_RETRY_MS;
    setConnection('connected', 'connected');
    $('approvals-error').hidden = true;
    clearApprovals();  // the snapshot that follows lists what is pending now
  };
  ws.onmessage = (event) => {
    const message = JSON.parse(event.data);
    if (message.type === 'terminal') onTerminalEvent(message);
    else if (message.type === 'approval') onApprovalEvent(message);
    else if (message.type === 'end' && message.status !== 'OK' && message.status !== 'CANCELLED') {
      if (message.stream === 'approvals') {
        $('approvals-error').textContent = `Approvals unavailable: ${message.status} ${message.message || ''}`;
        $('approvals-error').hidden = false;
      } else {
        setConnection('offline', `terminals unavailable: ${message.status}`);
      }
    }
  };
  ws.onclose = async () => {
    if (!opened && !(await checkLogin())) {
      setTimeout(connectEvents, MAX_RETRY_MS);
      return;
    }
    setConnection('connecting', 'reconnecting');
    setTimeout(connectEvents, eventsRetryMs);
    eventsRetryMs = nextRetry(eventsRetryMs);
  };
}

// ---- page wiring ----

async function closeActiveTerminal() {
  const tab = state.active;
  if (!tab || !window.confirm(`Close terminal ${tab.displayName()} (${tab.id}) and kill its processes?`)) return;
  try {
    await postJson('/api/terminals/close', { terminal_id: tab.id });
  } catch (e) {
    tab.writeAside(`\r\n\x1b[31m[termbridge: close failed: ${e.message}]\x1b[0m\r\n`);
  }
}

// ---- recordings and replay ----

// Plays one recording (asciicast v2 from /api/recordings/cast, with each
// event's output offset) in its own xterm over the panes: output events at
// their times (divided by the speed, pauses capped at MAX_REPLAY_PAUSE_MS),
// resizes, and markers for what was not recorded. Opened at output bytes
// [from, to) (a timeline command, a search match), it loads the window
// around them, plays instantly up to them, selects their lines and pauses
// there; Play on goes on. Its OutputMap places offsets as the live view's
// does, and the target's first and last byte exactly (OutputMap.pin).
const MAX_REPLAY_PAUSE_MS = 2000;
const replay = {
  term: null,
  output: null,
  events: [],
  offsets: [],
  index: 0,
  timer: null,
  done: false,
  paused: false,
  terminalId: null,
  target: null,  // {from, to}: the output it was opened at
  stopAt: null,  // the offset where playing pauses (the target's end)
  pins: [],  // offsets placed exactly
  loading: null,
  markers: [],
};

function replayStatus(text) {
  $('replay-status').textContent = text;
}

async function openReplay(terminalId, target = null) {
  closeReplay();
  showOverlay('');
  $('replay').hidden = false;
  const tab = state.terminals.get(terminalId);
  $('replay-title').textContent = `Replay of ${tab ? tab.displayName() : terminalId}`;
  $('replay-title').title = `terminal ${terminalId}`;
  replay.terminalId = terminalId;
  replay.target = target;
  const loading = {};
  replay.loading = loading;
  replayStatus(target ? `loading the recording at output byte ${target.from}…` : 'loading…');
  let body;
  try {
    const at = target ? `&at=${target.from}` : '';
    body = await getJson(`/api/recordings/cast?terminal_id=${encodeURIComponent(terminalId)}${at}`);
  } catch (e) {
    if (replay.loading === loading) replayStatus(`cannot replay: ${e.message}`);
    return;
  }
  if (replay.loading !== loading) return;  // closed or opened elsewhere meanwhile
  replay.loading = null;
  const lines = body.asciicast.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
  const header = lines[0] ?? { width: 80, height: 24 };
  replay.events = lines.slice(1);
  replay.offsets = body.offsets ?? [];
  replay.truncated = body.truncated;
  replay.term = new Terminal({
    cols: header.width, rows: header.height, scrollback: 10000, disableStdin: true,
    fontFamily: 'ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace', fontSize: 14,
    theme: { selectionBackground: '#5fa8f5aa' },
  });
  replay.term.open($('replay-screen'));
  playReplay();
}

function playReplay() {
  clearTimeout(replay.timer);
  if (!replay.term) return;
  replay.term.reset();
  replay.output = new OutputMap(replay.term);
  replay.index = 0;
  replay.done = false;
  replay.paused = false;
  replay.markers = [];
  replay.last = 0;
  replay.stopAt = replay.target ? Math.max(replay.target.to ?? 0, replay.target.from + 1) : null;
  // The first and last byte of the target are placed exactly.
  replay.pins = replay.target ? [...new Set([replay.target.from, replay.stopAt - 1])] : [];
  $('replay-continue').hidden = true;
  replayStatus(replay.target ? 'going to the output asked for…' : 'playing');
  stepReplay();
}

function writeReplayEvent([, code, data], offset) {
  const { term, output } = replay;
  if (code === 'o') {
    writeRecorded(term, output, data, offset, replay.pins);
  } else if (code === 'r') {
    const [cols, rows] = data.split('x').map(Number);
    if (cols > 0 && rows > 0) term.resize(cols, rows);
  } else if (code === 'm') {
    replay.markers.push(data);
    term.write(`\r\n\x1b[33m${visible(data)}\x1b[0m\r\n`, () => output.moved());
  }
}

// Selects the replay's lines of output bytes [from, to); a sentence when
// the replay does not hold them.
function showReplayOutput(from, to) {
  const { term, output } = replay;
  const first = output.lineOf(from);
  const last = to > from ? output.lineOf(to - 1) : first;
  if (first.line === undefined && last.line === undefined) {
    return 'The replay does not hold that output (the recording no longer keeps it, or it is past what was loaded).';
  }
  const start = first.line ?? 0;  // its beginning scrolled out of the replay's scrollback
  const end = last.line ?? term.buffer.active.length - 1;
  term.scrollToLine(start);
  term.selectLines(start, Math.max(start, end));
  return '';
}

function pauseAtTarget() {
  replay.stopAt = null;
  replay.paused = true;
  replay.term.write('', () => {
    const problem = showReplayOutput(replay.target.from, replay.target.to ?? replay.target.from + 1);
    replayStatus(problem || `at output byte ${replay.target.from} (selected); Play on goes on`);
    $('replay-continue').hidden = false;
    replay.atTarget = !problem;
  });
}

function stepReplay() {
  const speed = Number($('replay-speed').value);
  while (replay.index < replay.events.length) {
    if (replay.stopAt !== null && (replay.offsets[replay.index] ?? 0) >= replay.stopAt) {
      pauseAtTarget();
      return;
    }
    const [time] = replay.events[replay.index];
    const instant = speed === 0 || replay.stopAt !== null;
    const wait = instant ? 0 : Math.min(MAX_REPLAY_PAUSE_MS, ((time - replay.last) * 1000) / speed);
    if (wait > 4) {
      replay.last = time;
      replay.timer = setTimeout(stepReplay, wait);
      return;
    }
    replay.last = Math.max(replay.last, time);
    writeReplayEvent(replay.events[replay.index], replay.offsets[replay.index] ?? 0);
    replay.index += 1;
  }
  if (replay.stopAt !== null) {  // the target is at the very end (or past what was loaded)
    pauseAtTarget();
    return;
  }
  // Done once xterm has drawn everything written.
  replay.term.write('', () => {
    replay.done = true;
    replayStatus(`replayed ${replay.events.length} events${replay.truncated ? ' (the start only: export it for all)' : ''}`);
  });
}

function continueReplay() {
  if (!replay.term || !replay.paused) return;
  replay.paused = false;
  $('replay-continue').hidden = true;
  replayStatus('playing');
  stepReplay();
}

function closeReplay() {
  clearTimeout(replay.timer);
  replay.term?.dispose();
  replay.term = null;
  replay.output = null;
  replay.events = [];
  replay.offsets = [];
  replay.done = false;
  replay.paused = false;
  replay.atTarget = false;
  replay.loading = null;
  replay.target = null;
  $('replay-continue').hidden = true;
  $('replay').hidden = true;
}

function recordingText(r) {
  const when = r.opened_at_unix_ms ? new Date(r.opened_at_unix_ms).toLocaleString() : '';
  const how = r.state === 'finished'
    ? (r.signal > 0 ? `signal ${r.signal}` : `exit ${r.exit_code}`) : r.state;
  return [r.terminal_id, when, how, `${r.end_offset} bytes`, visible(r.agent_id), shownPath(r.cwd)].filter(Boolean).join(' · ');
}

async function showRecordings() {
  showOverlay('recordings');
  const list = $('recording-list');
  list.replaceChildren();
  $('recordings-error').hidden = true;
  try {
    const response = await fetch('/api/recordings');
    const body = await response.json();
    if (!response.ok) throw new Error(body.error?.message || response.statusText);
    if (body.recordings.length === 0) list.append(element('li', { text: 'No recordings.' }));
    for (const r of body.recordings.slice().reverse()) {
      const button = element('button', { type: 'button', text: 'Replay' });
      button.addEventListener('click', () => openReplay(r.terminal_id));
      list.append(element('li', { 'data-terminal-id': r.terminal_id }, element('span', { text: recordingText(r) }), button));
    }
  } catch (e) {
    $('recordings-error').textContent = `cannot list recordings: ${e.message}`;
    $('recordings-error').hidden = false;
  }
}

function fitAll() {
  for (const tab of state.terminals.values()) tab.fitToPane();
}

function start() {
  $('ctrl-c').addEventListener('click', () => state.active?.interrupt());
  $('close-terminal').addEventListener('click', closeActiveTerminal);
  $('replay-terminal').addEventListener('click', () => state.active && openReplay(state.active.id));
  $('lock-select').addEventListener('change', () => state.active && setLock(state.active, $('lock-select').value));
  $('search-input').addEventListener('keydown', (event) => {
    if (event.key === 'Enter') {
      event.preventDefault();
      search(event.shiftKey);
    } else if (event.key === 'Escape') {
      $('search-input').value = '';
      search(false);
      state.active?.term.focus();
    }
  });
  $('search-input').addEventListener('input', () => { if (!$('search-input').value) search(false); });
  $('search-next').addEventListener('click', () => search(false));
  $('search-prev').addEventListener('click', () => search(true));
  $('open-terminal').addEventListener('click', showOpenDialog);
  $('open-form').addEventListener('submit', openOwnTerminal);
  $('open-cancel').addEventListener('click', () => $('open-dialog').close());
  $('show-terminal-list').addEventListener('click', showTerminalList);
  $('hide-terminal-list').addEventListener('click', () => { $('terminal-list').hidden = true; });
  $('replay-restart').addEventListener('click', playReplay);
  $('replay-continue').addEventListener('click', continueReplay);
  // A new speed applies from the next event on.
  $('replay-speed').addEventListener('change', () => {
    if (!replay.term || replay.done || replay.paused) return;
    clearTimeout(replay.timer);
    stepReplay();
  });
  $('replay-close').addEventListener('click', closeReplay);
  $('show-recordings').addEventListener('click', showRecordings);
  $('notify-toggle').addEventListener('click', toggleNotifications);
  showNotifyButton();
  $('hide-recordings').addEventListener('click', () => { $('recordings').hidden = true; });
  let pending = false;
  new ResizeObserver(() => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; fitAll(); });
  }).observe($('panes'));
  updateApprovalCount();
  connectEvents();
  scheduleRefresh(0);  // the home directory and what the events feed lacks, at once
}

function knownTerminalName(id) {
  const tab = state.terminals.get(id);
  return tab ? tab.displayName() : '';
}
setTerminalNames(knownTerminalName);
const decisions = new DecisionsView({ terminalName: knownTerminalName });
const desk = new DeskControls({
  activeTab: () => state.active,
  tabOf: (id) => state.terminals.get(id) ?? null,
  changed: (tab, info) => tab.update(info),
});

// For people debugging in the browser's console, and for tests.
globalThis.termbridgeConsole = {
  terminals: state.terminals,
  approvals: approvalEntries(),
  replay,
  decisions,
  timeline,
  historySearch,
  desk,
  notified: notifiedCount,
  active: () => state.active,
  replaySelection: () => replay.term?.getSelection() ?? '',
  replayText() {
    if (!replay.term) return '';
    const buffer = replay.term.buffer.active;
    const lines = [];
    for (let i = 0; i < buffer.length; i += 1) lines.push(buffer.getLine(i)?.translateToString(true) ?? '');
    return lines.join('\n');
  },
  text(terminalId) {
    const tab = state.terminals.get(terminalId) ?? state.active;
    return tab ? tab.text() : '';
  },
};

start();
