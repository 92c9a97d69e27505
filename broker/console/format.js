// What the console's views share: building DOM nodes, showing text an agent
// wrote with its control characters visible, and the words a person reads
// for a terminal (its name, owner, state, lock), a time and a duration.
// Plain ES module, no DOM state of its own.

export const $ = (id) => document.getElementById(id);

// Shows one of the views over the terminal panes (terminal list,
// decisions, recordings), hiding the others.
export function showOverlay(id) {
  for (const node of document.querySelectorAll('.overlay')) node.hidden = node.id !== id;
}

// A WebSocket address on this console's own host.
export function socketUrl(path) {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${location.host}${path}`;
}

export function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

// Characters that change how the text around them shows without being
// seen (common/text/visible.h, Invisible): bidi controls (a command could
// read as commented out while the shell runs all of it), zero-width and
// format characters, blank letters, variation selectors, tag characters,
// private use, noncharacters; and, in a JS string, lone surrogates.
function invisible(cp) {
  return (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e)
    || (cp >= 0x2060 && cp <= 0x206f) || cp === 0xfeff || cp === 0x061c || cp === 0x00ad
    || cp === 0x180e || cp === 0x034f || cp === 0x115f || cp === 0x1160 || cp === 0x3164
    || cp === 0xffa0 || cp === 0x2800 || (cp >= 0xfe00 && cp <= 0xfe0f)
    || (cp >= 0xfff0 && cp <= 0xfffb) || (cp >= 0xe0000 && cp <= 0xe0fff)
    || (cp >= 0xe000 && cp <= 0xf8ff) || cp >= 0xf0000 || (cp & 0xfffe) === 0xfffe
    || (cp >= 0xfdd0 && cp <= 0xfdef) || (cp >= 0xd800 && cp <= 0xdfff);
}

// Text an agent wrote, with control and invisible characters made visible
// the way the CLI and the terminal notices show them
// (common/text/visible.h): "\r", "\n", "\t", "\e", "\x07", "\u009b",
// "\u202e", "\U000e0041". A command holding "\r\e[2K" or a bidi override
// must not read as the harmless text around it.
const NAMED_CONTROLS = { '\r': '\\r', '\n': '\\n', '\t': '\\t', '\x1b': '\\e' };
const hex = (cp, width) => cp.toString(16).padStart(width, '0');
export function visible(text) {
  let out = '';
  for (const ch of String(text ?? '')) {
    const cp = ch.codePointAt(0);
    if (cp < 0x20 || cp === 0x7f) out += NAMED_CONTROLS[ch] ?? `\\x${hex(cp, 2)}`;
    else if (cp >= 0x80 && cp <= 0x9f) out += `\\u${hex(cp, 4)}`;
    else if (invisible(cp)) out += cp > 0xffff ? `\\U${hex(cp, 8)}` : `\\u${hex(cp, 4)}`;
    else out += ch;
  }
  return out;
}

// The person's home directory (the broker's HOME, from GET /api/terminals):
// paths under it are shown as ~/... ('' until known, or when it is "/").
let home = '';
export function setHome(dir) {
  const before = home;
  home = typeof dir === 'string' && dir.length > 1 && dir.startsWith('/') && !dir.endsWith('/') ? dir : '';
  return home !== before;
}

// A path for people: ~/... under the home directory, control characters visible.
export function shownPath(path) {
  const text = String(path ?? '');
  if (home && (text === home || text.startsWith(`${home}/`))) return visible(`~${text.slice(home.length)}`);
  return visible(text);
}

// Text that names paths (an audit detail): the home directory as ~.
export function withHome(text) {
  const shown = visible(text);
  return home ? shown.split(`${home}/`).join('~/') : shown;
}

export function exitText(exit) {
  if (!exit || exit.running) return 'running';
  if (exit.signal !== undefined) return `exited (signal ${exit.signal})`;
  if (exit.exit_code !== undefined) return `exited (${exit.exit_code})`;
  return exit.closed_reason ? `closed (${exit.closed_reason})` : 'exited';
}

function lastComponent(path) {
  const parts = String(path ?? '').split('/').filter(Boolean);
  return parts.length ? parts[parts.length - 1] : (path ? '/' : '');
}

// What people call a terminal: its name, else (a broker that names none)
// the last component of its cwd and its command, else its id.
export function terminalName(info) {
  if (info.name) return visible(info.name);
  const derived = [lastComponent(info.cwd), visible(info.command ?? '').slice(0, 40)]
    .filter(Boolean).join(': ');
  return derived || info.terminal_id;
}

// Who the terminal works for: its agent, or the person who opened it.
export function terminalOwner(info) {
  if (info.agent_id) return `agent ${visible(info.agent_id)}`;
  if (info.person) return `${visible(info.person)} (person)`;
  return '';
}

export const LOCK_MODES = [
  ['shared', 'shared', 'the agent and people type here'],
  ['user_only', 'people only', 'only people type here; the agent is refused'],
  ['agent_only', 'agent only', 'only the agent types here; people watch'],
];

export function lockLabel(mode) {
  return (LOCK_MODES.find(([value]) => value === mode) ?? [mode, mode || 'shared'])[1];
}

export function lastExitText(info) {
  return info.last_exit_code === undefined ? '' : `last exit ${info.last_exit_code}`;
}

// A point in time for people: "2026-05-01 14:03:07" in the page's time zone.
export function localTime(value) {
  if (value === undefined || value === null || value === '') return '';
  const date = typeof value === 'number' ? new Date(value) : new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  const pad = (n) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

// A duration for people: "850 ms", "4.2 s", "3 min 5 s", "2 h 10 min".
export function durationText(ms) {
  if (ms === undefined || ms === null) return '';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

// The error a failed console API call answered, as one line.
export async function apiError(response) {
  const body = await response.json().catch(() => ({}));
  return new Error(body.error?.message || `HTTP ${response.status}`);
}

export async function getJson(path) {
  const response = await fetch(path, { cache: 'no-store' });
  if (!response.ok) throw await apiError(response);
  return response.json();
}

export async function postJson(path, body) {
  const response = await fetch(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw await apiError(response);
  return response.json();
}
