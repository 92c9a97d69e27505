// One host terminal in the console: its tab (name, owner, state, lock, last
// exit code and the secret-prompt badge; the id in the tooltip), its pane
// with an xterm.js instance, and its /ws/attach socket (the broker counts
// it as a viewer). Output is written to xterm.js and acknowledged from
// xterm's write callback so the server can pace a fast producer; input,
// resize and Ctrl-C go back. A dropped connection reconnects and resumes
// from the last offset this page rendered. The tab also remembers where
// each output offset landed in xterm's buffer (OutputMap), so a command of
// the timeline or a match of the whole-history search can be shown from
// its output offsets, and searches its scrollback with @xterm/addon-search.
// The replay (app.js) keeps an OutputMap of its own.
import {
  element, exitText, lastExitText, lockLabel, shownPath, socketUrl, terminalName, terminalOwner, visible,
} from './format.js';

const { Terminal } = globalThis;
const { FitAddon } = globalThis.FitAddon;
const { SearchAddon } = globalThis.SearchAddon;

const MIN_RETRY_MS = 250;
const MAX_RETRY_MS = 5000;
const GAP_NOTICE_MS = 10000;
const MAX_OUTPUT_MARKS = 20000;
// The broker's own secret-prompt notice begins so; agent text (a terminal
// name, a command) only ever appears inside other notices.
const SECRET_TEXT = /^waiting for a person to type a secret/;

const encoder = new TextEncoder();

// What the pane says while a program reads a secret: the broker's notice
// (which names the programs asking), or the plain fact without it.
function secretBannerText(notice) {
  const said = notice ? visible(notice) : 'waiting for a person to type a secret: terminal echo is off and the agent\'s input is refused';
  return `${said.charAt(0).toUpperCase()}${said.slice(1)}. Click in the terminal to type it.`;
}

// Output offset -> buffer line. Each chunk of output written is one mark:
// its first offset, xterm markers on the lines where it began and where it
// ended (markers follow the lines as scrollback is trimmed and die with
// them) and where its newlines are. A line for an offset is the mark's
// first line plus the rows of the newlines before it (wrapped rows
// skipped), or, once that line left the scrollback, its last line less the
// newlines after it.
export class OutputMap {
  constructor(term) {
    this.term = term;
    this.marks = [];  // {start, end, marker, endMarker, newlines: Uint32Array}, by start
    this.pins = new Map();  // offset -> {marker, below}
    this.next = term.registerMarker(0);
  }

  // Places output byte `offset` exactly, for a writer that knows the offset
  // before writing it (the replay): called once the bytes before it are
  // parsed, it marks the cursor's line, or the line below when the row is
  // full and the byte is text (it wraps). Counting newlines can miss by a
  // row: an erase from the first column (a shell redrawing its prompt)
  // clears the wrap flag of a row that output had filled.
  pin(offset, isText) {
    const buffer = this.term.buffer.active;
    const below = isText && buffer.cursorX >= this.term.cols;
    this.pins.set(offset, { marker: this.term.registerMarker(0), below });
  }

  // After `data` (which began at `start`) is parsed: the cursor is where the
  // next chunk begins. A chunk longer than the scrollback has lost the line
  // it began on by now; the line where it ended places it.
  written(start, data) {
    const newlines = [];
    for (let i = 0; i < data.length; i += 1) if (data[i] === 10) newlines.push(i);
    const marker = this.next;
    this.moved();
    this.marks.push({
      start, end: start + data.length, marker, endMarker: this.next, newlines: Uint32Array.from(newlines),
    });
    if (this.marks.length > MAX_OUTPUT_MARKS) this.marks.splice(0, this.marks.length - MAX_OUTPUT_MARKS);
  }

  // Text the page wrote itself (notices): the next chunk begins below it.
  // A marker is only made when the cursor left the line of the last one.
  moved() {
    const cursor = this.term.buffer.active.baseY + this.term.buffer.active.cursorY;
    if (this.next && !this.next.isDisposed && this.next.line === cursor) return;
    this.next = this.term.registerMarker(0);
  }

  // The buffer line holding output byte `offset`, or a reason it has none.
  lineOf(offset) {
    const pin = this.pins.get(offset);
    if (pin && !pin.marker.isDisposed) return { line: pin.marker.line + (pin.below ? 1 : 0) };
    let lo = 0;
    let hi = this.marks.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.marks[mid].start <= offset) {
        found = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    if (found < 0) {
      return { reason: this.marks.length ? 'older than what this terminal view still holds (Replay shows it)' : 'not shown in this view yet' };
    }
    const mark = this.marks[found];
    if (offset > mark.end) return { reason: 'not shown in this view yet' };
    let count = 0;
    while (count < mark.newlines.length && mark.newlines[count] < offset - mark.start) count += 1;
    const buffer = this.term.buffer.active;
    if (!mark.marker || mark.marker.isDisposed) return this.lineFromEnd(mark, mark.newlines.length - count);
    let line = mark.marker.line;
    while (count > 0 && line < buffer.length - 1) {
      line += 1;
      if (!buffer.getLine(line)?.isWrapped) count -= 1;
    }
    return { line };
  }

  // The line `after` logical lines above where `mark` ended.
  lineFromEnd(mark, after) {
    const gone = { reason: 'scrolled out of this view\'s scrollback (Replay shows it)' };
    if (!mark.endMarker || mark.endMarker.isDisposed) return gone;
    const buffer = this.term.buffer.active;
    const startOf = (row) => {
      let r = row;
      while (r > 0 && buffer.getLine(r)?.isWrapped) r -= 1;
      return r;
    };
    let line = startOf(mark.endMarker.line);
    for (let i = 0; i < after; i += 1) {
      if (line === 0) return gone;
      line = startOf(line - 1);
    }
    return { line };
  }
}

// Stream bytes of recorded text: a U+FFFD stands for one byte of output
// that was not UTF-8 (docs/operating.md, "Recordings").
function streamBytes(codePoint) {
  if (codePoint < 0x80 || codePoint === 0xfffd) return 1;
  if (codePoint < 0x800) return 2;
  return codePoint < 0x10000 ? 3 : 4;
}

// Writes one recorded output event (asciicast text) that began at stream
// byte `offset` to `term`, and maps it in `map`; each offset of `pins`
// (ascending) that falls inside it is pinned exactly (OutputMap.pin).
export function writeRecorded(term, map, data, offset, pins = []) {
  const encoder = new TextEncoder();
  const write = (text, start) => {
    if (!text) return;
    const bytes = encoder.encode(text);
    const stream = text.includes('\uFFFD') ? encoder.encode(text.replaceAll('\uFFFD', '?')) : bytes;
    term.write(bytes, () => map.written(start, stream));
  };
  let index = 0;  // in `data`, where the stream is at byte `at`
  let at = offset;
  for (const pin of pins) {
    if (pin < at) continue;
    while (index < data.length && at < pin) {
      const codePoint = data.codePointAt(index);
      at += streamBytes(codePoint);
      index += codePoint > 0xffff ? 2 : 1;
    }
    if (at > pin) continue;  // inside a character: it is placed by counting
    const next = data.codePointAt(index);
    if (at < pin || next === undefined) break;  // past this event (the next one may begin there)
    write(data.slice(0, index), offset);
    term.write('', () => map.pin(pin, next >= 0x20 && next !== 0x7f));
    data = data.slice(index);
    offset = pin;
    index = 0;
  }
  write(data, offset);
}

export class TerminalTab {
  // hooks: select(tab) when its tab is clicked; changed(tab) when what it
  // shows changed; notice(tab, text) for a notice from the broker.
  constructor(info, hooks) {
    this.id = info.terminal_id;
    this.info = info;
    this.hooks = hooks;
    this.rendered = null;  // offset just past the last byte xterm has rendered
    this.exited = false;
    this.gone = false;     // the broker no longer has this terminal
    this.socket = null;
    this.retryMs = MIN_RETRY_MS;
    this.retryTimer = null;
    this.gapTimer = null;
    this.secretNotice = '';  // the broker's notice while a secret is wanted

    this.badge = element('span', { class: 'badge running', text: 'running' });
    this.label = element('span', { class: 'label' });
    this.owner = element('span', { class: 'owner' });
    this.lockBadge = element('span', { class: 'badge lock' });
    this.exitBadge = element('span', { class: 'badge last-exit' });
    this.secretBadge = element('span', { class: 'badge secret', text: 'secret wanted' });
    this.tab = element('button', {
      class: 'tab', type: 'button', role: 'tab', 'aria-selected': 'false',
      'data-terminal-id': this.id,
    }, element('span', { class: 'names' }, this.label, this.owner),
    this.badge, this.lockBadge, this.exitBadge, this.secretBadge);
    this.tab.addEventListener('click', () => this.hooks.select(this));
    this.pane = element('div', { class: 'pane', role: 'tabpanel', 'data-terminal-id': this.id });
    this.gapNotice = element('div', { class: 'gap-notice' });
    this.gapNotice.hidden = true;
    this.secretBanner = element('div', { class: 'secret-banner', role: 'alert' });
    this.secretBanner.hidden = true;
    this.pane.append(this.gapNotice, this.secretBanner);
    document.getElementById('tabs').append(this.tab);
    document.getElementById('panes').append(this.pane);

    this.term = new Terminal({
      cursorBlink: true,
      scrollback: 5000,
      fontFamily: 'ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace',
      fontSize: 14,
      theme: { background: '#000000', selectionBackground: '#5fa8f5aa' },
    });
    this.fit = new FitAddon();
    this.term.loadAddon(this.fit);
    this.search = new SearchAddon();
    this.term.loadAddon(this.search);
    this.term.open(this.pane);
    this.output = new OutputMap(this.term);
    this.term.onData((data) => this.sendInput(encoder.encode(data)));
    this.term.onBinary((data) => this.sendInput(Uint8Array.from(data, (c) => c.charCodeAt(0))));
    this.term.onResize(() => this.sendResize());
    this.fitToPane();
    this.render();
  }

  displayName() {
    return terminalName(this.info);
  }

  // The details a person reads in the tooltip, the id among them.
  details() {
    const info = this.info;
    return [
      this.displayName(),
      terminalOwner(info) || 'no agent yet',
      info.cwd && `cwd ${shownPath(info.cwd)}`,
      exitText(info.exit),
      `lock: ${lockLabel(info.lock)}`,
      lastExitText(info),
      this.secret() && 'waiting for a person to type a secret',
      `id ${this.id}`,
    ].filter(Boolean).join('\n');
  }

  // Whether a program in the terminal waits for a person's secret.
  secret() {
    if (this.exited) return false;
    // Only the broker's flag (read from the PTY's settings) says a secret is
    // wanted; a notice's text gives the wording, never the fact.
    return Boolean(this.info.secret_prompt || this.info.exit?.secret_prompt);
  }

  render() {
    this.label.textContent = this.displayName();
    this.owner.textContent = terminalOwner(this.info);
    const lock = this.info.lock || 'shared';
    this.lockBadge.textContent = lockLabel(lock);
    this.lockBadge.hidden = lock === 'shared';
    this.lockBadge.dataset.lock = lock;
    this.exitBadge.textContent = this.info.last_exit_code === undefined ? '' : `exit ${this.info.last_exit_code}`;
    this.exitBadge.hidden = this.info.last_exit_code === undefined;
    this.exitBadge.classList.toggle('failed', (this.info.last_exit_code ?? 0) !== 0);
    const secret = this.secret();
    this.secretBadge.hidden = !secret;
    this.tab.classList.toggle('secret', secret);
    this.secretBanner.hidden = !secret;
    this.secretBanner.textContent = secret ? secretBannerText(this.secretNotice) : '';
    this.tab.title = this.details();
  }

  // A newer view of the terminal from the broker (events, the terminal list).
  update(info) {
    const before = JSON.stringify([this.info.last_exit_code, this.info.lock, this.info.name, this.secret()]);
    this.info = { ...this.info, ...info };
    // A whole SessionInfo without last_exit_code: no command has finished.
    if ('terminal_id' in info && !('last_exit_code' in info)) delete this.info.last_exit_code;
    // What the broker says replaces what a notice suggested.
    if ('secret_prompt' in info && !info.secret_prompt && !info.exit?.secret_prompt) this.secretNotice = '';
    if (info.exit && !info.exit.running) this.markExited(info.exit);
    this.render();
    const after = JSON.stringify([this.info.last_exit_code, this.info.lock, this.info.name, this.secret()]);
    this.hooks.changed(this, before !== after);
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
      this.retryMs = Math.min(MAX_RETRY_MS, this.retryMs * 2);
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
    const drawn = data.subarray(skip);
    this.term.write(drawn, () => {
      if (drawn.length > 0) this.output.written(offset + skip, drawn);
      if (this.rendered === null || end > this.rendered) this.rendered = end;
      // Ack on the socket that delivered the bytes: its server counts them.
      if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'ack', bytes: data.length }));
    });
  }

  // Text of the page's own between output chunks.
  writeAside(text, then) {
    this.term.write(text, () => {
      this.output.moved();
      then?.();
    });
  }

  onControl(message, ws) {
    switch (message.type) {
      case 'gap':
        this.writeAside(`\r\n\x1b[33m[termbridge: ${message.to - message.from} bytes skipped, the console fell behind]\x1b[0m\r\n`, () => {
          if (this.rendered === null || message.to > this.rendered) this.rendered = message.to;
        });
        this.showGap(message.to - message.from);
        break;
      case 'notice':
        this.writeAside(`\r\n\x1b[36mtermbridge > ${message.text}\x1b[0m\r\n`);
        if (SECRET_TEXT.test(message.text)) {
          this.secretNotice = message.text;
          this.render();
        }
        this.hooks.notice(this, message.text);
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
      this.writeAside(`\r\n\x1b[31m[termbridge: attach failed: ${message.status} ${message.message || ''}]\x1b[0m\r\n`);
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
    const first = !this.exited;
    this.exited = true;
    this.info.exit = exit;
    this.secretNotice = '';
    this.badge.className = 'badge exited';
    this.badge.textContent = 'exited';
    this.badge.title = exitText(exit);
    this.term.options.cursorBlink = false;
    this.render();
    if (first) this.hooks.changed(this, true);
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

  // Scrolls to the output bytes [from, to) and selects their lines; returns
  // a sentence when this view does not hold them.
  showOutput(from, to) {
    const start = this.output.lineOf(from);
    if (start.line === undefined) return `Its output is ${start.reason}.`;
    const last = to !== null && to !== undefined && to > from ? this.output.lineOf(to - 1) : start;
    const end = last.line === undefined ? this.term.buffer.active.length - 1 : last.line;
    this.term.scrollToLine(start.line);
    this.term.selectLines(start.line, Math.max(start.line, end));
    return '';
  }

  // The next (or previous) match of `text` in the scrollback, selected and
  // scrolled to; false when there is none.
  find(text, backwards = false) {
    if (!text) {
      this.search.clearDecorations();
      this.term.clearSelection();
      return false;
    }
    const options = { caseSensitive: false, incremental: false };
    return backwards ? this.search.findPrevious(text, options) : this.search.findNext(text, options);
  }

  // The terminal's text, row by row (for tests and people debugging).
  text() {
    const buffer = this.term.buffer.active;
    const lines = [];
    for (let i = 0; i < buffer.length; i += 1) lines.push(buffer.getLine(i)?.translateToString(true) ?? '');
    return lines.join('\n');
  }
}
