// The console's two views of the audit log (docs/console.md): the history
// of decisions (every request the policy or a person judged, filterable by
// agent, terminal, decision and time; GET /api/history/decisions) and one
// terminal's timeline (each command with who sent it, the decision, start,
// duration and exit code; GET /api/history/timeline). Clicking a command of
// the timeline shows its output: in the terminal's view while its
// scrollback holds it, else in the replay of its recording opened at that
// output (the `jump` hook). Both read what
// `termbridge approvals history` and `termbridge history <terminal>` print.
import {
  $, durationText, element, getJson, localTime, showOverlay, visible, withHome,
} from './format.js';

// ---- the history of decisions ----

const DECISION_WORDS = {
  allow: 'allowed by policy',
  deny: 'denied by policy',
  approved: 'approved',
  denied: 'denied',
  timed_out: 'timed out',
  cancelled: 'cancelled',
  pending: 'pending',
};

export class DecisionsView {
  // `terminalName(id)`: the name of a terminal the page knows, or ''.
  constructor({ terminalName }) {
    this.terminalName = terminalName;
    this.loading = null;
    $('show-history').addEventListener('click', () => this.open());
    $('hide-history').addEventListener('click', () => { $('history').hidden = true; });
    $('history-filter').addEventListener('submit', (event) => {
      event.preventDefault();
      this.load();
    });
    $('history-filter').elements.decision.addEventListener('change', () => this.load());
  }

  open() {
    showOverlay('history');
    this.load();
  }

  // Filters from the form, as the query the console's API takes.
  query() {
    const form = $('history-filter').elements;
    const params = new URLSearchParams();
    for (const name of ['agent', 'terminal', 'decision', 'since', 'until']) {
      const value = form[name].value.trim();
      if (value) params.set(name, value);
    }
    params.set('limit', '500');
    return params.toString();
  }

  async load() {
    const status = $('history-status');
    status.classList.remove('error');
    status.textContent = 'loading…';
    const query = this.query();
    this.loading = query;
    let body;
    try {
      body = await getJson(`/api/history/decisions?${query}`);
    } catch (e) {
      if (this.loading !== query) return;
      status.textContent = `Cannot show the history: ${e.message}`;
      status.classList.add('error');
      $('history-rows').replaceChildren();
      return;
    }
    if (this.loading !== query) return;  // a newer filter is on its way
    this.render(body);
  }

  render(body) {
    const names = body.terminal_names ?? {};
    const nameOf = (id) => this.terminalName(id) || names[id] || '';
    const rows = body.decisions.slice().reverse().map((d) => this.row(d, nameOf));
    $('history-rows').replaceChildren(...rows);
    const shown = body.decisions.length;
    $('history-status').textContent = shown === 0 ? 'No decision in the audit log matches.'
      : `${shown === body.matched ? shown : `newest ${shown} of ${body.matched}`} decision${body.matched === 1 ? '' : 's'}, newest first` +
        (body.skipped_lines ? ` (${body.skipped_lines} unreadable audit lines skipped)` : '');
    // Offer what the log holds as filter values.
    const agents = new Set(body.decisions.map((d) => d.agent_id).filter(Boolean));
    $('history-agents').replaceChildren(...[...agents].map((a) => element('option', { value: a })));
    const terminals = new Map(body.decisions.filter((d) => d.terminal_id)
      .map((d) => [d.terminal_id, nameOf(d.terminal_id)]));
    $('history-terminals').replaceChildren(...[...terminals].map(([id, name]) =>
      element('option', { value: id, label: name || id })));
  }

  row(d, nameOf) {
    const name = d.terminal_id ? (nameOf(d.terminal_id) || d.terminal_id) : 'new terminal';
    const decided = element('td', { class: `decision ${d.decision}`, text: DECISION_WORDS[d.decision] ?? d.decision });
    const by = [d.decided_by, d.note && (d.asked || d.decision !== 'allow') ? `“${visible(d.note)}”` : '']
      .filter(Boolean).join(' · ');
    return element('tr', {
      'data-decision': d.decision, 'data-agent': d.agent_id, 'data-terminal-id': d.terminal_id,
    },
    element('td', { class: 'when', text: localTime(d.time) }),
    element('td', { text: visible(d.agent_id) || '—' }),
    element('td', { text: visible(name), title: d.terminal_id ? `terminal ${d.terminal_id}` : undefined }),
    element('td', { class: 'command', text: visible(d.command) + (d.kind !== 'command' ? ` [${d.kind}]` : '') }),
    decided,
    element('td', { text: visible(by) }));
  }
}

// ---- one terminal's timeline ----

function commandSummary(e) {
  const parts = [];
  if (e.decision) parts.push(`${DECISION_WORDS[e.decision.decision] ?? e.decision.decision}: ${e.decision.decided_by}`);
  else parts.push('no decision recorded');
  if (e.state === 'ran') {
    if (e.exit_code !== null && e.exit_code !== undefined) parts.push(`exit ${e.exit_code}`);
    else if (e.signal !== null && e.signal !== undefined) parts.push(`signal ${e.signal}`);
    else parts.push('ended');
    if (e.duration_ms !== null && e.duration_ms !== undefined) parts.push(durationText(e.duration_ms));
  } else if (e.state === 'running') {
    parts.push('running (no exit yet)');
  } else if (e.state === 'refused') {
    parts.push(e.refused_code ? `not run (${e.refused_code})` : 'not run');
  } else if (e.state) {
    parts.push(e.state);
  }
  return parts.join(' · ');
}

export class TimelinePanel {
  // `activeTab()`: the tab shown; `jump(tab, output)`: show a command's
  // output ({from, to} byte offsets), returning a sentence saying where.
  constructor({ activeTab, jump }) {
    this.activeTab = activeTab;
    this.jump = jump;
    this.terminalId = null;
    this.loading = null;
    $('timeline-toggle').addEventListener('click', () => this.toggle());
    $('timeline-refresh').addEventListener('click', () => this.refresh());
  }

  get open() {
    return !$('timeline').hidden;
  }

  toggle() {
    $('timeline').hidden = !$('timeline').hidden;
    $('timeline-toggle').setAttribute('aria-pressed', String(this.open));
    if (this.open) this.refresh();
    globalThis.dispatchEvent(new Event('resize'));  // the panes changed width
  }

  // The active tab changed (or its commands did): show its timeline.
  follow(tab) {
    if (!this.open) return;
    if (!tab || tab.id !== this.terminalId) this.refresh();
  }

  async refresh() {
    const tab = this.activeTab();
    const list = $('timeline-list');
    const status = $('timeline-status');
    status.classList.remove('error');
    if (!tab) {
      this.terminalId = null;
      list.replaceChildren();
      status.textContent = 'No terminal.';
      return;
    }
    this.terminalId = tab.id;
    $('timeline-title').textContent = tab.displayName();
    $('timeline-title').title = `terminal ${tab.id}`;
    status.textContent = 'loading…';
    const id = tab.id;
    this.loading = id;
    let body;
    try {
      body = await getJson(`/api/history/timeline?terminal_id=${encodeURIComponent(id)}`);
    } catch (e) {
      if (this.loading !== id) return;
      list.replaceChildren();
      status.textContent = /no terminal/.test(e.message) ? 'Nothing audited for this terminal yet.'
        : `Cannot show the timeline: ${e.message}`;
      if (!/no terminal/.test(e.message)) status.classList.add('error');
      return;
    }
    if (this.loading !== id) return;
    const commands = body.entries.filter((e) => e.kind === 'command').length;
    status.textContent = `${commands} command${commands === 1 ? '' : 's'}; click one to see its output` +
      (body.omitted ? ` (${body.omitted} older entries not shown)` : '');
    list.replaceChildren(...body.entries.map((e) => this.entry(tab, e)));
    list.lastElementChild?.scrollIntoView({ block: 'nearest' });
  }

  entry(tab, e) {
    if (e.kind !== 'command') {
      const what = e.kind === 'input' ? `typed ${e.bytes} bytes` : e.kind;
      return element('li', { class: 'timeline-event', 'data-kind': e.kind },
        element('span', { class: 'when', text: localTime(e.time) }),
        ` ${visible(e.from) || ''} ${what}${e.detail ? `: ${withHome(e.detail)}` : ''}`);
    }
    const item = element('li', {
      class: `timeline-command ${e.state}`, 'data-kind': 'command', 'data-session-id': e.session_id,
      tabindex: '0', role: 'button',
      title: e.output ? 'Show its output (in the terminal, or in the replay of its recording)' : 'No output recorded for it',
    },
    element('div', { class: 'meta' },
      element('span', { class: 'when', text: localTime(e.started || e.time) }),
      element('span', { class: 'from', text: visible(e.from) })),
    element('div', { class: 'command', text: `$ ${visible(e.command)}` }),
    element('div', { class: 'result', text: commandSummary(e) }));
    const go = () => {
      for (const other of $('timeline-list').querySelectorAll('.selected')) other.classList.remove('selected');
      item.classList.add('selected');
      $('timeline-status').textContent = e.output ? `${this.jump(tab, e.output)} $ ${visible(e.command)}`
        : 'No output was recorded for this command.';
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
