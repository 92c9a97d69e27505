// A person's controls over terminals and grants (docs/console.md): rename
// any terminal (POST /api/terminals/rename), hand a person's own terminal
// to an agent the broker lists as active or take it back (GET /api/agents,
// POST /api/terminals/hand: nothing is chosen until the person chooses),
// and the grants in force with their expiry (GET
// /api/grants: "for this terminal" grants and time-boxed "always" rules).
// The broker decides what is allowed; its refusal is shown as it said it.
// Names, agents and commands are shown as text with control characters
// made visible.
import {
  $, durationText, element, getJson, localTime, postJson, showOverlay, terminalOwner, visible,
} from './format.js';

// The hand-over choice that takes a terminal back.
const NOBODY = ':nobody';

export class DeskControls {
  // `activeTab()`: the tab shown; `tabOf(id)`: the tab of a terminal, or
  // null; `changed(tab, info)`: the broker answered a new SessionInfo.
  constructor({ activeTab, tabOf, changed }) {
    this.activeTab = activeTab;
    this.tabOf = tabOf;
    this.changed = changed;
    this.target = null;
    $('rename-terminal').addEventListener('click', () => this.openRename());
    $('rename-form').addEventListener('submit', (event) => this.rename(event));
    $('rename-cancel').addEventListener('click', () => $('rename-dialog').close());
    $('hand-terminal').addEventListener('click', () => this.openHand());
    $('hand-form').addEventListener('submit', (event) => this.hand(event));
    $('hand-agent').addEventListener('change', () => {
      $('hand-submit').disabled = $('hand-agent').value === '';
    });
    $('hand-cancel').addEventListener('click', () => $('hand-dialog').close());
    $('show-grants').addEventListener('click', () => this.showGrants());
    $('grants-refresh').addEventListener('click', () => this.loadGrants());
    $('hide-grants').addEventListener('click', () => { $('grants').hidden = true; });
  }

  // ---- rename ----

  openRename() {
    const tab = this.activeTab();
    if (!tab) return;
    this.target = tab;
    $('rename-form').reset();
    $('rename-error').hidden = true;
    $('rename-current').textContent = tab.displayName();
    $('rename-form').elements.name.value = tab.info.name ?? '';
    $('rename-dialog').showModal();
  }

  async rename(event) {
    event.preventDefault();
    const tab = this.target;
    const name = $('rename-form').elements.name.value.trim();
    await this.submit('rename', async () => {
      const body = await postJson('/api/terminals/rename', { terminal_id: tab.id, name });
      this.changed(tab, body.terminal);
    }, 'Not renamed');
  }

  // ---- hand over ----

  async openHand() {
    const tab = this.activeTab();
    if (!tab) return;
    this.target = tab;
    $('hand-error').hidden = true;
    $('hand-current').textContent = tab.displayName();
    $('hand-owner').textContent = `Now: ${terminalOwner(tab.info) || 'nobody'}`;
    // Nothing is chosen: one Enter hands nothing over. ":nobody" (no agent
    // name holds a colon) takes it back; the agents are those the broker
    // lists as active (not revoked ones, whatever terminals they still hold).
    const select = $('hand-agent');
    select.replaceChildren(
      element('option', { value: '', text: 'choose…', disabled: '', selected: '' }),
      element('option', { value: NOBODY, text: 'nobody: take it back (yours)' }));
    select.value = '';
    $('hand-submit').disabled = true;
    $('hand-dialog').showModal();
    const opening = {};
    this.handOpening = opening;
    try {
      const body = await getJson('/api/agents');
      if (this.handOpening !== opening) return;  // opened again meanwhile
      for (const agent of body.agents) {
        const seen = agent.open_calls > 0 ? 'connected'
          : agent.last_seen_unix_ms ? `last seen ${localTime(agent.last_seen_unix_ms)}` : 'not seen since the broker started';
        select.append(element('option', { value: agent.name, text: `agent ${visible(agent.name)} (${seen})` }));
      }
    } catch (e) {
      this.error('hand', `Cannot list the agents: ${e.message}`);
    }
  }

  async hand(event) {
    event.preventDefault();
    const tab = this.target;
    const choice = $('hand-agent').value;
    if (choice === '') return;  // nobody chosen yet
    const agent = choice === NOBODY ? '' : choice;
    await this.submit('hand', async () => {
      const body = await postJson('/api/terminals/hand', { terminal_id: tab.id, agent_id: agent });
      this.changed(tab, body.terminal);
    }, agent ? 'Not handed over' : 'Not taken back');
  }

  // Runs a change from dialog `kind`: closes it when the broker took it,
  // else shows the broker's refusal in it.
  async submit(kind, change, failed) {
    $(`${kind}-submit`).disabled = true;
    $(`${kind}-error`).hidden = true;
    try {
      await change();
      $(`${kind}-dialog`).close();
    } catch (e) {
      this.error(kind, `${failed}: ${e.message}`);
    } finally {
      $(`${kind}-submit`).disabled = false;
    }
  }

  error(kind, text) {
    $(`${kind}-error`).textContent = visible(text);
    $(`${kind}-error`).hidden = false;
  }

  // ---- grants ----

  showGrants() {
    showOverlay('grants');
    this.loadGrants();
  }

  async loadGrants() {
    const status = $('grants-status');
    status.classList.remove('error');
    status.textContent = 'loading…';
    let body;
    try {
      body = await getJson('/api/grants');
    } catch (e) {
      status.textContent = `Cannot list the grants: ${e.message}`;
      status.classList.add('error');
      $('grant-rows').replaceChildren();
      return;
    }
    const now = Date.now();
    $('grant-rows').replaceChildren(...body.grants.map((g) => this.grantRow(g, now)));
    const n = body.grants.length;
    status.textContent = n === 0 ? 'No grant is in force: every command the policy asks about asks a person.'
      : `${n} grant${n === 1 ? '' : 's'} in force`;
  }

  grantRow(g, now) {
    const tab = g.terminal_id ? this.tabOf(g.terminal_id) : null;
    const terminal = g.terminal_id ? (tab ? tab.displayName() : g.terminal_id) : '—';
    const expires = Number(g.expires_at_unix_ms);
    const expiry = expires > 0
      ? `${localTime(expires)} (${expires > now ? `in ${durationText(expires - now)}` : 'expired'})`
      : (g.kind === 'terminal' ? 'when the terminal closes' : 'no time limit');
    return element('tr', { 'data-kind': g.kind, 'data-terminal-id': g.terminal_id || undefined },
      element('td', { text: g.kind === 'terminal' ? 'for this terminal' : `rule ${visible(g.rule_id)}` }),
      element('td', { class: 'command', text: String(g.command ?? '').split('\n').map(visible).join('\n') }),
      element('td', { text: visible(terminal), title: g.terminal_id ? `terminal ${g.terminal_id}` : undefined }),
      element('td', { text: visible(g.agent_id) || 'any' }),
      element('td', { text: [visible(g.granted_by), g.surface && `via ${visible(g.surface)}`].filter(Boolean).join(' ') }),
      element('td', { class: 'when', text: localTime(Number(g.granted_at_unix_ms)) }),
      element('td', { class: 'expires', text: expiry }));
  }
}
