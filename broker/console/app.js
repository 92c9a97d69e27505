// The termbridge web console in the browser. It follows the broker's
// terminals and approvals over /ws/events, opens one tab per terminal, and
// attaches each tab over /ws/attach (the broker counts it as a viewer):
// output is written to xterm.js and acknowledged from xterm's write callback
// so the server can pace a fast producer; input, resize and Ctrl-C go back.
// A dropped connection reconnects and resumes from the last offset this page
// rendered. Plain ES module, no framework; xterm.js and the fit addon are
// the UMD builds loaded before it (globals Terminal and FitAddon).
// Authentication is the HttpOnly cookie set by the /?token= link, sent by
// the browser with every request, so this script never sees the token.

const { Terminal } = globalThis;
const { FitAddon } = globalThis.FitAddon;

const MIN_RETRY_MS = 250;
const MAX_RETRY_MS = 5000;
const GAP_NOTICE_MS = 10000;

const $ = (id) => document.getElementById(id);
const encoder = new TextEncoder();

const state = {
  terminals: new Map(),  // terminal_id -> TerminalTab
  active: null,          // TerminalTab
  approvals: new Map(),  // approval_id -> {approval, element}
};

function socketUrl(path) {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${location.host}${path}`;
}

function nextRetry(ms) {
  return Math.min(MAX_RETRY_MS, ms * 2);
}

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

function exitText(exit) {
  if (!exit || exit.running) return 'running';
  if (exit.signal !== undefined) return `exited (signal ${exit.signal})`;
  if (exit.exit_code !== undefined) return `exited (${exit.exit_code})`;
  return exit.closed_reason ? `closed (${exit.closed_reason})` : 'exited';
}

// One terminal: its tab, its pane with an xterm.js instance, and its attach socket.
class TerminalTab {
  constructor(info) {
    this.id = info.terminal_id;
    this.info = info;
    this.rendered = null;  // offset just past the last byte xterm has rendered
    this.exited = false;
    this.gone = false;     // the broker no longer has this terminal
    this.socket = null;
    this.retryMs = MIN_RETRY_MS;
    this.retryTimer = null;
    this.gapTimer = null;

    this.badge = element('span', { class: 'badge running', text: 'running' });
    this.label = element('span', { class: 'label', text: this.title() });
    this.tab = element('button', {
      class: 'tab', type: 'button', role: 'tab', 'aria-selected': 'false',
      'data-terminal-id': this.id,
    }, this.label, this.badge);
    this.tab.addEventListener('click', () => activate(this));
    this.pane = element('div', { class: 'pane', role: 'tabpanel', 'data-terminal-id': this.id });
    this.gapNotice = element('div', { class: 'gap-notice' });
    this.gapNotice.hidden = true;
    this.pane.append(this.gapNotice);
    $('tabs').append(this.tab);
    $('panes').append(this.pane);

    this.term = new Terminal({
      cursorBlink: true,
      scrollback: 5000,
      fontFamily: 'ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace',
      fontSize: 14,
      theme: { background: '#000000' },
    });
    this.fit = new FitAddon();
    this.term.loadAddon(this.fit);
    this.term.open(this.pane);
    this.term.onData((data) => this.sendInput(encoder.encode(data)));
    this.term.onBinary((data) => this.sendInput(Uint8Array.from(data, (c) => c.charCodeAt(0))));
    this.term.onResize(() => this.sendResize());
    this.fitToPane();
  }

  title() {
    const agent = this.info.agent_id ? `${this.info.agent_id} · ` : '';
    return `${agent}${this.id}`;
  }

  update(info) {
    this.info = { ...this.info, ...info };
    this.label.textContent = this.title();
    if (info.exit && !info.exit.running) this.markExited(info.exit);
    if (state.active === this) showToolbar(this);
  }

  fitToPane() {
    try {
      this.fit.fit();
    } catch {
      // The pane has no size yet (not laid out); the next resize fits it.
    }
  }

  connect() {
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (this.exited || this.gone || this.socket) return;
    const resume = this.rendered === null ? '' : `&offset=${this.rendered}`;
    const ws = new WebSocket(socketUrl(`/ws/attach?terminal=${encodeURIComponent(this.id)}${resume}`));
    ws.binaryType = 'arraybuffer';
    this.socket = ws;
    ws.onopen = () => {
      this.setLink(true);
      this.sendResize();
    };
    ws.onmessage = (event) => {
      this.retryMs = MIN_RETRY_MS;
      if (typeof event.data === 'string') this.onControl(JSON.parse(event.data), ws);
      else this.onOutput(event.data, ws);
    };
    ws.onclose = () => {
      if (this.socket !== ws) return;
      this.socket = null;
      if (this.exited || this.gone) return;
      this.setLink(false);
      this.retryTimer = setTimeout(() => this.connect(), this.retryMs);
      this.retryMs = nextRetry(this.retryMs);
    };
  }

  // A binary frame: 8-byte big-endian offset, then output bytes.
  onOutput(buffer, ws) {
    const view = new DataView(buffer);
    const offset = view.getUint32(0) * 2 ** 32 + view.getUint32(4);
    const data = new Uint8Array(buffer, 8);
    const end = offset + data.length;
    // After a reconnect the broker resumes at `rendered`; never draw a byte twice.
    const skip = this.rendered !== null && offset < this.rendered
      ? Math.min(data.length, this.rendered - offset) : 0;
    this.term.write(data.subarray(skip), () => {
      if (this.rendered === null || end > this.rendered) this.rendered = end;
      // Ack on the socket that delivered the bytes: its server counts them.
      if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'ack', bytes: data.length }));
    });
  }

  onControl(message, ws) {
    switch (message.type) {
      case 'gap':
        this.term.write(`\r\n\x1b[33m[termbridge: ${message.to - message.from} bytes skipped, the console fell behind]\x1b[0m\r\n`, () => {
          if (this.rendered === null || message.to > this.rendered) this.rendered = message.to;
        });
        this.showGap(message.to - message.from);
        break;
      case 'notice':
        this.term.write(`\r\n\x1b[36mtermbridge > ${message.text}\x1b[0m\r\n`);
        break;
      case 'exited':
        this.markExited(message.exit);
        break;
      case 'end':
        this.onEnd(message);
        break;
      case 'error':
        console.warn(`termbridge: terminal ${this.id}: ${message.message}`);
        break;
      default:
        break;
    }
  }

  onEnd(message) {
    if (message.status === 'OK') return;  // exited; the frame before said how
    if (message.status === 'NOT_FOUND') {
      this.gone = true;
      this.markExited({ running: false, closed_reason: 'gone' });
      return;
    }
    if (message.status !== 'UNAVAILABLE' && message.status !== 'CANCELLED') {
      this.term.write(`\r\n\x1b[31m[termbridge: attach failed: ${message.status} ${message.message || ''}]\x1b[0m\r\n`);
      this.retryMs = MAX_RETRY_MS;  // not a blip: retry slowly
    }
  }

  showGap(bytes) {
    this.gapNotice.textContent = `Output skipped: ${bytes} bytes (the terminal produced faster than this page could draw)`;
    this.gapNotice.hidden = false;
    clearTimeout(this.gapTimer);
    this.gapTimer = setTimeout(() => { this.gapNotice.hidden = true; }, GAP_NOTICE_MS);
  }

  markExited(exit) {
    this.exited = true;
    this.info.exit = exit;
    this.badge.className = 'badge exited';
    this.badge.textContent = 'exited';
    this.badge.title = exitText(exit);
    this.term.options.cursorBlink = false;
    if (state.active === this) showToolbar(this);
  }

  setLink(up) {
    if (this.exited) return;
    this.badge.className = up ? 'badge running' : 'badge offline';
    this.badge.textContent = up ? 'running' : 'reconnecting';
  }

  send(message) {
    if (this.socket && this.socket.readyState === WebSocket.OPEN) {
      this.socket.send(message);
      return true;
    }
    return false;
  }

  sendInput(bytes) {
    if (!this.exited) this.send(bytes);
  }

  sendResize() {
    if (this.term.cols > 0 && this.term.rows > 0) {
      this.send(JSON.stringify({ type: 'resize', cols: this.term.cols, rows: this.term.rows }));
    }
  }

  interrupt() {
    this.send(JSON.stringify({ type: 'signal', signal: 'SIGINT' }));
    this.term.focus();
  }
}

function showToolbar(tab) {
  $('ctrl-c').disabled = !tab || tab.exited;
  $('close-terminal').disabled = !tab || tab.exited;
  $('replay-terminal').disabled = !tab;
  if (!tab) {
    $('terminal-info').textContent = '';
    return;
  }
  const info = tab.info;
  const parts = [tab.id, exitText(info.exit)];
  if (info.agent_id) parts.push(`agent ${info.agent_id}`);
  if (info.cwd) parts.push(info.cwd);
  $('terminal-info').textContent = parts.join(' · ');
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
  showToolbar(tab);
}

function openTerminal(info) {
  let tab = state.terminals.get(info.terminal_id);
  if (tab) {
    tab.update(info);
  } else {
    tab = new TerminalTab(info);
    state.terminals.set(tab.id, tab);
    $('no-terminals').hidden = true;
    if (info.exit && !info.exit.running) tab.markExited(info.exit);
    if (!state.active) activate(tab);
  }
  tab.connect();
}

function onTerminalEvent(message) {
  const info = message.terminal;
  if (!info || !info.terminal_id || info.session_id) return;  // sessions show in their terminal
  if (message.kind === 'opened') openTerminal(info);
  else if (message.kind === 'closed') state.terminals.get(info.terminal_id)?.update(info);
}

// ---- approvals ----

function updateApprovalCount() {
  const count = state.approvals.size;
  $('approval-count').textContent = String(count);
  $('approval-count').classList.toggle('pending', count > 0);
  $('no-approvals').hidden = count > 0;
  document.title = count > 0 ? `(${count}) termbridge console` : 'termbridge console';
}

// Text an agent wrote, with control characters made visible the way the CLI
// and the terminal notices show them (common/text/visible.h): "\r", "\n",
// "\t", "\e", "\x07", "\u009b". A command holding "\r\e[2K" must not read
// as the harmless text after it.
const NAMED_CONTROLS = { '\r': '\\r', '\n': '\\n', '\t': '\\t', '\x1b': '\\e' };
function visible(text) {
  return String(text ?? '').replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => {
    if (NAMED_CONTROLS[c]) return NAMED_CONTROLS[c];
    const code = c.charCodeAt(0);
    return code < 0x80 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

function detail(term, value) {
  return [element('dt', { text: term }), element('dd', { text: visible(value) || '—' })];
}

// Everything that will run: the command, where (cwd, environment, terminal),
// who asked (agent) and what asked (the rule and its reason).
function approvalCard(approval) {
  const rule = approval.state?.rule || 'default action';
  const kind = approval.kind || 'command';
  const terminalText = approval.terminal_id || (kind === 'command' ? 'new terminal' : '');
  const list = element('dl', {},
    ...detail('cwd', approval.cwd),
    ...detail('env', Object.entries(approval.env || {}).map(([k, v]) => `${k}=${v}`).join(' ')),
    ...detail('reads', (approval.reads || []).join('  ')),
    ...detail('read scope', (approval.read_scope || []).join('  ')),
    ...detail('agent', approval.agent_id),
    ...detail('terminal', terminalText),
    ...detail('rule', rule),
    ...detail('reason', approval.state?.reason));
  const error = element('p', { class: 'error' });
  error.hidden = true;
  const note = element('input', { type: 'text', placeholder: 'note for the agent (with deny)', 'aria-label': 'Denial note', maxlength: '1000' });
  const buttons = [
    element('button', { type: 'button', class: 'approve', 'data-decision': 'once', text: 'Approve once' }),
    element('button', { type: 'button', class: 'approve', 'data-decision': 'terminal', text: 'For this terminal' }),
    element('button', { type: 'button', class: 'approve', 'data-decision': 'always', text: 'Always' }),
  ];
  const deny = element('button', { type: 'button', class: 'deny', 'data-decision': 'deny', text: 'Deny' });
  const card = element('li', { class: 'approval', 'data-approval-id': approval.approval_id },
    element('div', { class: 'kind', text: `${kind} request` }),
    element('pre', { class: 'command', text: visible(approval.command) }),
    list,
    element('div', { class: 'actions' }, ...buttons, element('div', { class: 'deny-row' }, note, deny)),
    error);
  for (const button of [...buttons, deny]) {
    button.addEventListener('click', () => decide(approval.approval_id, button.dataset.decision, note.value, card, error));
  }
  return card;
}

async function decide(approvalId, decision, note, card, error) {
  const buttons = card.querySelectorAll('button');
  buttons.forEach((b) => { b.disabled = true; });
  error.hidden = true;
  try {
    const response = await fetch('/api/approvals/decide', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ approval_id: approvalId, decision, note: decision === 'deny' ? note : '' }),
    });
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      throw new Error(body.error?.message || `HTTP ${response.status}`);
    }
    removeApproval(approvalId);
  } catch (e) {
    error.textContent = `Not decided: ${e.message}`;
    error.hidden = false;
    buttons.forEach((b) => { b.disabled = false; });
  }
}

function addApproval(approval) {
  if (state.approvals.has(approval.approval_id)) return;
  const card = approvalCard(approval);
  state.approvals.set(approval.approval_id, { approval, card });
  $('approval-list').append(card);
  updateApprovalCount();
}

function removeApproval(approvalId) {
  const entry = state.approvals.get(approvalId);
  if (!entry) return;
  entry.card.remove();
  state.approvals.delete(approvalId);
  updateApprovalCount();
}

function onApprovalEvent(message) {
  const approval = message.approval;
  if (message.kind === 'snapshot_done') state.approvalsLive = true;
  if (message.kind === 'snapshot_done' || !approval) return;
  const pending = !approval.state?.state || approval.state.state === 'pending';
  if (message.kind === 'requested' && pending) {
    const fresh = !state.approvals.has(approval.approval_id);
    addApproval(approval);
    if (fresh && state.approvalsLive) notifyPerson(approval);
  } else {
    removeApproval(approval.approval_id);
  }
}

// ---- telling the person: the tab title (updateApprovalCount) and, when
// they switched it on, a browser notification for each new request ----

const NOTIFY_KEY = 'termbridge.notify';

function notificationsOn() {
  return 'Notification' in globalThis && Notification.permission === 'granted' &&
    localStorage.getItem(NOTIFY_KEY) === 'on';
}

function showNotifyButton() {
  const button = $('notify-toggle');
  if (!('Notification' in globalThis)) {
    button.hidden = true;
    return;
  }
  const on = notificationsOn();
  button.textContent = on ? 'Notifications on' : 'Notify me';
  button.setAttribute('aria-pressed', on ? 'true' : 'false');
  button.title = Notification.permission === 'denied'
    ? 'The browser blocks notifications for this page' : 'Tell me when a request waits for me';
}

async function toggleNotifications() {
  if (notificationsOn()) {
    localStorage.setItem(NOTIFY_KEY, 'off');
  } else {
    if (Notification.permission === 'default') await Notification.requestPermission();
    localStorage.setItem(NOTIFY_KEY, Notification.permission === 'granted' ? 'on' : 'off');
  }
  showNotifyButton();
}

function notifyPerson(approval) {
  state.notified = (state.notified ?? 0) + 1;
  if (!notificationsOn()) return;
  const where = approval.terminal_id ? `terminal ${approval.terminal_id}` : 'a new terminal';
  const notice = new Notification('termbridge: approval needed', {
    body: `${visible(approval.command ?? '')}\n${approval.agent_id ?? ''} · ${where}`,
    tag: approval.approval_id,
    requireInteraction: true,
  });
  notice.onclick = () => { globalThis.focus(); notice.close(); };
}

function clearApprovals() {
  state.approvalsLive = false;
  for (const id of [...state.approvals.keys()]) removeApproval(id);
}

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
  if (!tab || !window.confirm(`Close terminal ${tab.id} and kill its processes?`)) return;
  const response = await fetch('/api/terminals/close', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ terminal_id: tab.id }),
  });
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    tab.term.write(`\r\n\x1b[31m[termbridge: close failed: ${body.error?.message || response.status}]\x1b[0m\r\n`);
  }
}

// ---- recordings and replay ----

// Plays one recording (asciicast v2 from /api/recordings/cast) in its own
// xterm: output events at their times (divided by the speed, pauses capped
// at MAX_REPLAY_PAUSE_MS), resizes, and markers for what was not recorded.
const MAX_REPLAY_PAUSE_MS = 2000;
const replay = {
  term: null,
  events: [],
  index: 0,
  timer: null,
  done: false,
  terminalId: null,
  markers: [],
};

function replayStatus(text) {
  $('replay-status').textContent = text;
}

async function openReplay(terminalId) {
  closeReplay();
  $('replay').hidden = false;
  $('replay-title').textContent = `Replay of ${terminalId}`;
  replay.terminalId = terminalId;
  replayStatus('loading…');
  let body;
  try {
    const response = await fetch(`/api/recordings/cast?terminal_id=${encodeURIComponent(terminalId)}`);
    body = await response.json();
    if (!response.ok) throw new Error(body.error?.message || response.statusText);
  } catch (e) {
    replayStatus(`cannot replay: ${e.message}`);
    return;
  }
  const lines = body.asciicast.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
  const header = lines[0] ?? { width: 80, height: 24 };
  replay.events = lines.slice(1);
  replay.truncated = body.truncated;
  replay.term = new Terminal({
    cols: header.width, rows: header.height, scrollback: 10000, disableStdin: true,
    fontFamily: 'ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace', fontSize: 14,
  });
  replay.term.open($('replay-screen'));
  playReplay();
}

function playReplay() {
  clearTimeout(replay.timer);
  if (!replay.term) return;
  replay.term.reset();
  replay.index = 0;
  replay.done = false;
  replay.markers = [];
  replay.last = 0;
  replayStatus('playing');
  stepReplay();
}

function stepReplay() {
  const speed = Number($('replay-speed').value);
  while (replay.index < replay.events.length) {
    const [time, code, data] = replay.events[replay.index];
    const wait = speed > 0 ? Math.min(MAX_REPLAY_PAUSE_MS, ((time - replay.last) * 1000) / speed) : 0;
    if (wait > 4) {
      replay.last = time;
      replay.timer = setTimeout(stepReplay, wait);
      return;
    }
    replay.last = Math.max(replay.last, time);
    replay.index += 1;
    if (code === 'o') replay.term.write(data);
    else if (code === 'r') {
      const [cols, rows] = data.split('x').map(Number);
      if (cols > 0 && rows > 0) replay.term.resize(cols, rows);
    } else if (code === 'm') {
      replay.markers.push(data);
      replay.term.write(`\r\n\x1b[33m${data}\x1b[0m\r\n`);
    }
  }
  // Done once xterm has drawn everything written.
  replay.term.write('', () => {
    replay.done = true;
    replayStatus(`replayed ${replay.events.length} events${replay.truncated ? ' (the start only: export it for all)' : ''}`);
  });
}

function closeReplay() {
  clearTimeout(replay.timer);
  replay.term?.dispose();
  replay.term = null;
  replay.events = [];
  replay.done = false;
  $('replay').hidden = true;
}

function recordingText(r) {
  const when = r.opened_at_unix_ms ? new Date(r.opened_at_unix_ms).toLocaleString() : '';
  const how = r.state === 'finished'
    ? (r.signal > 0 ? `signal ${r.signal}` : `exit ${r.exit_code}`) : r.state;
  return [r.terminal_id, when, how, `${r.end_offset} bytes`, r.agent_id, r.cwd].filter(Boolean).join(' · ');
}

async function showRecordings() {
  $('recordings').hidden = false;
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
  $('replay-restart').addEventListener('click', playReplay);
  // A new speed applies from the next event on.
  $('replay-speed').addEventListener('change', () => {
    if (!replay.term || replay.done) return;
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
}

// For people debugging in the browser's console, and for tests.
globalThis.termbridgeConsole = {
  terminals: state.terminals,
  approvals: state.approvals,
  replay,
  notified: () => state.notified ?? 0,
  replayText() {
    if (!replay.term) return '';
    const buffer = replay.term.buffer.active;
    const lines = [];
    for (let i = 0; i < buffer.length; i += 1) lines.push(buffer.getLine(i)?.translateToString(true) ?? '');
    return lines.join('\n');
  },
  text(terminalId) {
    const tab = state.terminals.get(terminalId) ?? state.active;
    if (!tab) return '';
    const buffer = tab.term.buffer.active;
    const lines = [];
    for (let i = 0; i < buffer.length; i += 1) lines.push(buffer.getLine(i)?.translateToString(true) ?? '');
    return lines.join('\n');
  },
};

start();
