// Search in a terminal's whole recorded history (docs/console.md), beside
// the scrollback search: GET /api/recordings/search scans the terminal's
// recording on the broker (escape sequences removed, the text taken
// literally, case ignored) and answers the matches with the line around
// each. The panel lists them; clicking one shows it in the terminal's view
// when the scrollback still holds it, else in the replay at that output
// (the `show` hook). A search a limit stopped says so and can go on.
// Matched lines come from the terminal: shown as text, never as markup,
// with control and bidi characters made visible.
import { $, element, getJson, localTime, visible } from './format.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// Terminal output may hold bidi controls that would reorder the line as
// shown: visible() escapes them like control characters.
const shown = visible;

// The line split around the match (column and length count UTF-8 bytes).
function lineParts(match) {
  const bytes = encoder.encode(match.line);
  const at = Math.min(bytes.length, match.column);
  const end = Math.min(bytes.length, at + match.length);
  return [bytes.subarray(0, at), bytes.subarray(at, end), bytes.subarray(end)]
    .map((part) => shown(decoder.decode(part)));
}

function mib(bytes) {
  return `${(bytes / 1048576).toFixed(bytes < 10485760 ? 1 : 0)} MiB`;
}

export class HistorySearch {
  // `activeTab()`: the tab shown; `show(tab, match)`: shows a match
  // ({offset, end}) and returns a sentence saying where.
  constructor({ activeTab, show }) {
    this.activeTab = activeTab;
    this.show = show;
    this.tab = null;
    this.query = '';
    this.next = null;  // the offset a "search on" starts from
    this.running = null;
    $('search-history').addEventListener('click', () => this.start($('search-input').value));
    $('search-panel-close').addEventListener('click', () => this.close());
    $('search-more').addEventListener('click', () => this.run(this.next, true));
  }

  get open() {
    return !$('search-panel').hidden;
  }

  close() {
    this.running = null;
    $('search-panel').hidden = true;
    globalThis.dispatchEvent(new Event('resize'));
  }

  start(text) {
    const tab = this.activeTab();
    if (!tab) return;
    if (!text) {
      $('search-status').textContent = 'type what to search for';
      return;
    }
    this.tab = tab;
    this.query = text;
    $('search-panel').hidden = false;
    $('search-panel-title').textContent = `“${visible(text)}” in ${tab.displayName()}`;
    $('search-results').replaceChildren();
    globalThis.dispatchEvent(new Event('resize'));  // the panes changed width
    this.run(0, false);
  }

  async run(from, more) {
    const { tab, query } = this;
    const status = $('search-panel-status');
    status.classList.remove('error');
    status.textContent = more ? 'searching on…' : 'searching the whole history…';
    $('search-more').hidden = true;
    const params = new URLSearchParams({ terminal_id: tab.id, q: query });
    if (from) params.set('from', String(from));
    const token = {};
    this.running = token;
    let body;
    try {
      body = await getJson(`/api/recordings/search?${params}`);
    } catch (e) {
      if (this.running !== token) return;
      status.textContent = `Cannot search the history: ${e.message}`;
      status.classList.add('error');
      return;
    }
    if (this.running !== token) return;  // closed, or a newer search
    this.running = null;
    const list = $('search-results');
    list.append(...body.matches.map((m) => this.item(tab, m)));
    const count = list.children.length;
    let said = count === 0 ? 'No match in the recorded history.'
      : `${count} match${count === 1 ? '' : 'es'}, oldest first; click one to see it`;
    this.next = body.scanned_to;
    if (body.stopped === 'matches') {
      said += `. Stopped at ${body.matches.length} matches (a limit): Search on finds more`;
    } else if (body.stopped === 'bytes') {
      said += `. Stopped after ${mib(body.scanned_bytes)} of output (a limit), at byte ${body.scanned_to}: ` +
        'Search on goes on from there';
    } else if (body.stopped === 'time') {
      said += `. Stopped after a minute (a limit), at byte ${body.scanned_to}: Search on goes on from there`;
    }
    status.textContent = said;
    $('search-more').hidden = !body.stopped;
  }

  item(tab, m) {
    const [before, match, after] = lineParts(m);
    const when = m.time_unix_ms ? localTime(m.time_unix_ms) : '';
    const item = element('li', {
      class: 'search-match', tabindex: '0', role: 'button', 'data-offset': String(m.offset),
      title: `output byte ${m.offset}`,
    },
    element('div', { class: 'meta' },
      element('span', { class: 'when', text: when }),
      element('span', { class: 'offset', text: `byte ${m.offset}` })),
    element('div', { class: 'line' }, before, element('mark', { text: match }), after));
    const go = () => {
      for (const other of $('search-results').querySelectorAll('.selected')) other.classList.remove('selected');
      item.classList.add('selected');
      $('search-panel-status').textContent = this.show(tab, m);
    };
    item.addEventListener('click', go);
    item.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        go();
      }
    });
    return item;
  }
}
