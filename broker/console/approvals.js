// The approvals panel: one card per request waiting for a person, from the
// events feed. A card shows everything that will run (command, cwd,
// environment, terminal, agent, the rule that asked and why) and the exact
// rule "always" would write (Approval.always_rules_toml), which the person
// may narrow in place before writing it, or why it cannot be written
// (always_refusal). "For this terminal" and "Always" take a time limit
// (DecideApproval expires_in_seconds); the broker refuses a rule broader
// than the one shown and the card says why. Also the tab title's count and,
// when switched on, a browser notification per new request.
import { $, element, postJson, visible } from './format.js';

const approvals = new Map();  // approval_id -> {approval, card, update}
let live = false;             // the snapshot is done: new requests notify
let notified = 0;
let terminalName = () => '';

// `name(terminalId)`: what the page calls a terminal ('' if it knows none).
export function setTerminalNames(name) {
  terminalName = name;
}

export function approvalEntries() {
  return approvals;
}

export function notifiedCount() {
  return notified;
}

export function updateApprovalCount() {
  const count = approvals.size;
  $('approval-count').textContent = String(count);
  $('approval-count').classList.toggle('pending', count > 0);
  $('no-approvals').hidden = count > 0;
  document.title = count > 0 ? `(${count}) termbridge console` : 'termbridge console';
}

function detail(term, value) {
  return [element('dt', { text: term }), element('dd', { text: visible(value) || '—' })];
}

const TIME_LIMITS = [
  ['0', 'no time limit'],
  ['900', 'for 15 minutes'],
  ['3600', 'for 1 hour'],
  ['28800', 'for 8 hours'],
  ['86400', 'for 1 day'],
];

function terminalText(approval) {
  const kind = approval.kind || 'command';
  if (!approval.terminal_id) return kind === 'command' ? 'new terminal' : '';
  const name = terminalName(approval.terminal_id);
  return name ? `${name} (${approval.terminal_id})` : approval.terminal_id;
}

// Everything that will run: the command, where (cwd, environment, terminal),
// who asked (agent) and what asked (the rule and its reason); then the
// choices.
function approvalCard(approval) {
  const rule = approval.state?.rule || 'default action';
  const kind = approval.kind || 'command';
  const list = element('dl', {},
    ...detail('cwd', approval.cwd),
    ...detail('env', Object.entries(approval.env || {}).map(([k, v]) => `${k}=${v}`).join(' ')),
    ...detail('reads', (approval.reads || []).join('  ')),
    ...detail('read scope', (approval.read_scope || []).join('  ')),
    ...detail('agent', approval.agent_id),
    ...detail('terminal', terminalText(approval)),
    ...detail('rule', rule),
    ...detail('reason', approval.state?.reason));
  const error = element('p', { class: 'error', role: 'alert' });
  error.hidden = true;
  const note = element('input', { type: 'text', placeholder: 'note for the agent (with deny)', 'aria-label': 'Denial note', maxlength: '1000' });
  const once = element('button', { type: 'button', class: 'approve', 'data-decision': 'once', text: 'Approve once' });
  const forTerminal = element('button', {
    type: 'button', class: 'approve', 'data-decision': 'terminal', text: 'For this terminal',
    title: 'Later commands in this terminal run without asking, until it closes (or the time limit ends)',
  });
  const limit = element('select', { class: 'time-limit', 'aria-label': 'Time limit' },
    ...TIME_LIMITS.map(([value, label]) => element('option', { value, text: label })));
  const deny = element('button', { type: 'button', class: 'deny', 'data-decision': 'deny', text: 'Deny' });

  // "Always": the rule it writes, editable, or why there is none.
  const rules = element('textarea', {
    class: 'always-rules', 'aria-label': 'The rule "always" writes', spellcheck: 'false', rows: '5',
  });
  const always = element('button', {
    type: 'button', class: 'approve', 'data-decision': 'always', text: 'Always, with this rule',
    title: 'Write the rule above to the policy file (narrow it first if you like: a longer prefix, a cwd, fewer read paths)',
  });
  const refusal = element('p', { class: 'always-refusal muted' });
  const alwaysBox = element('details', { class: 'always' },
    element('summary', { text: 'Always: the rule it writes' }),
    refusal, rules,
    element('div', { class: 'always-actions' }, always,
      element('button', { type: 'button', class: 'reset-rule', text: 'Undo my edits' })));
  let shown = '';  // the rules as the broker proposed them
  const update = (next) => {
    const edited = rules.value !== shown;
    shown = next.always_rules_toml || '';
    if (!edited) rules.value = shown;
    const can = shown !== '';
    rules.hidden = !can;
    always.disabled = !can;
    alwaysBox.querySelector('.reset-rule').hidden = !can;
    refusal.hidden = can;
    refusal.textContent = can ? '' : `Cannot allow this always: ${visible(next.always_refusal || 'nothing to write')}.`;
    alwaysBox.open = can;
    rules.rows = String(Math.min(14, Math.max(4, shown.split('\n').length + 2)));
  };
  update(approval);
  alwaysBox.querySelector('.reset-rule').addEventListener('click', () => { rules.value = shown; });

  const card = element('li', { class: 'approval', 'data-approval-id': approval.approval_id },
    element('div', { class: 'kind', text: `${kind} request` }),
    element('pre', { class: 'command', text: visible(approval.command) }),
    list,
    element('div', { class: 'actions' }, once, forTerminal,
      element('label', { class: 'time-limit-label', title: 'How long "for this terminal" and "always" last' },
        'Time limit ', limit)),
    alwaysBox,
    element('div', { class: 'deny-row' }, note, deny),
    error);
  const choose = (decision) => decide(approval.approval_id, {
    decision,
    note: decision === 'deny' ? note.value : '',
    // Only what the person changed: the broker checks the shown rule itself.
    rules_toml: decision === 'always' && rules.value !== shown ? rules.value : '',
    expires_in_seconds: decision === 'terminal' || decision === 'always' ? Number(limit.value) : 0,
  }, card, error);
  for (const button of [once, forTerminal, always, deny]) {
    button.addEventListener('click', () => choose(button.dataset.decision));
  }
  return { card, update };
}

async function decide(approvalId, choice, card, error) {
  const buttons = [...card.querySelectorAll('button')];
  const wasDisabled = buttons.map((b) => b.disabled);
  buttons.forEach((b) => { b.disabled = true; });
  error.hidden = true;
  try {
    const body = { approval_id: approvalId, decision: choice.decision, note: choice.note };
    if (choice.rules_toml) body.rules_toml = choice.rules_toml;
    if (choice.expires_in_seconds > 0) body.expires_in_seconds = choice.expires_in_seconds;
    await postJson('/api/approvals/decide', body);
    removeApproval(approvalId);
  } catch (e) {
    error.textContent = `Not decided: ${e.message}`;
    error.hidden = false;
    buttons.forEach((b, i) => { b.disabled = wasDisabled[i]; });
  }
}

function addApproval(approval) {
  const known = approvals.get(approval.approval_id);
  if (known) {
    known.update(approval);  // e.g. what "always" writes changed
    return false;
  }
  const { card, update } = approvalCard(approval);
  approvals.set(approval.approval_id, { approval, card, update });
  $('approval-list').append(card);
  updateApprovalCount();
  return true;
}

function removeApproval(approvalId) {
  const entry = approvals.get(approvalId);
  if (!entry) return;
  entry.card.remove();
  approvals.delete(approvalId);
  updateApprovalCount();
}

export function onApprovalEvent(message) {
  const approval = message.approval;
  if (message.kind === 'snapshot_done') live = true;
  if (message.kind === 'snapshot_done' || !approval) return;
  const pending = !approval.state?.state || approval.state.state === 'pending';
  if (message.kind === 'requested' && pending) {
    if (addApproval(approval) && live) notifyPerson(approval);
  } else {
    removeApproval(approval.approval_id);
  }
}

export function clearApprovals() {
  live = false;
  for (const id of [...approvals.keys()]) removeApproval(id);
}

// ---- telling the person: the tab title (updateApprovalCount) and, when
// they switched it on, a browser notification for each new request ----

const NOTIFY_KEY = 'termbridge.notify';

function notificationsOn() {
  return 'Notification' in globalThis && Notification.permission === 'granted' &&
    localStorage.getItem(NOTIFY_KEY) === 'on';
}

export function showNotifyButton() {
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

export async function toggleNotifications() {
  if (notificationsOn()) {
    localStorage.setItem(NOTIFY_KEY, 'off');
  } else {
    if (Notification.permission === 'default') await Notification.requestPermission();
    localStorage.setItem(NOTIFY_KEY, Notification.permission === 'granted' ? 'on' : 'off');
  }
  showNotifyButton();
}

function notifyPerson(approval) {
  notified += 1;
  if (!notificationsOn()) return;
  const where = approval.terminal_id ? `terminal ${terminalName(approval.terminal_id) || approval.terminal_id}` : 'a new terminal';
  const notice = new Notification('termbridge: approval needed', {
    body: `${visible(approval.command ?? '')}\n${approval.agent_id ?? ''} · ${where}`,
    tag: approval.approval_id,
    requireInteraction: true,
  });
  notice.onclick = () => { globalThis.focus(); notice.close(); };
}
