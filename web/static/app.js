// Switchboard's web page: a client of the HTTP API (see README.md, "HTTP
// API"), nothing more. Everything a server sends (names, descriptions,
// results, logs) is put in the page as text, never as HTML.
'use strict';

const CSRF_KEY = 'switchboard.csrf';
const CSRF_HEADER = 'X-Switchboard-CSRF';

const $ = (id) => document.getElementById(id);

// el builds an element: el('p', {class: 'x'}, 'text', child, ...).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v === true) e.setAttribute(k, '');
    else e.setAttribute(k, String(v));
  }
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// ---- The session and the API ----------------------------------------

let csrf = '';

// takeCSRF reads the token the login link left in the fragment (never
// sent anywhere), keeps it in this origin's storage, and clears the URL.
function takeCSRF() {
  const m = /(?:^#|&)csrf=([0-9a-f]+)/.exec(location.hash);
  if (m) {
    csrf = m[1];
    try { localStorage.setItem(CSRF_KEY, csrf); } catch (e) { /* private mode: this tab only */ }
    history.replaceState(null, '', location.pathname);
  } else {
    try { csrf = localStorage.getItem(CSRF_KEY) || ''; } catch (e) { csrf = ''; }
  }
}

class APIError extends Error {
  constructor(status, info) {
    super((info && info.message) || ('HTTP ' + status));
    this.status = status;
    this.info = info || {code: 'http_' + status, message: 'HTTP ' + status};
  }
}

// api sends one request to the API with the session's CSRF token and
// returns the decoded answer; a 401 shows the login view.
async function api(method, path, body, opts = {}) {
  const headers = {Accept: opts.accept || 'application/json'};
  if (csrf) headers[CSRF_HEADER] = csrf;
  const init = {method, headers, credentials: 'same-origin', cache: 'no-store', signal: opts.signal};
  if (body !== undefined && body !== null) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  if (!resp.ok) {
    let info = null;
    try { info = (await resp.json()).error; } catch (e) { /* not JSON */ }
    const err = new APIError(resp.status, info);
    if (resp.status === 401) loggedOut();
    throw err;
  }
  if (opts.stream) return resp;
  if (resp.status === 204) return null;
  const type = resp.headers.get('Content-Type') || '';
  return type.includes('json') ? resp.json() : resp.text();
}

// sseEvents yields the server-sent events of a response body.
async function* sseEvents(body) {
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = '', name = '', data = [];
  try {
    for (;;) {
      const {value, done} = await reader.read();
      if (done) return;
      buf += dec.decode(value, {stream: true});
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i).replace(/\r$/, '');
        buf = buf.slice(i + 1);
        if (line === '') {
          if (data.length) yield {event: name || 'message', data: data.join('\n')};
          name = ''; data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const c = line.indexOf(':');
        const field = c < 0 ? line : line.slice(0, c);
        let value = c < 0 ? '' : line.slice(c + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'event') name = value;
        else if (field === 'data') data.push(value);
      }
    }
  } finally {
    reader.releaseLock();
  }
}

function describe(info) {
  if (!info) return 'failed';
  let s = info.code || 'error';
  if (info.phase) s += ' in phase ' + info.phase;
  return s + ': ' + (info.message || '');
}

function notice(msg) {
  const n = $('notice');
  n.textContent = msg;
  n.hidden = !msg;
}

function announce(msg) { $('announce').textContent = msg; }

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- Views --------------------------------------------------------------

// The views are the sections of <main> named view-NAME; a nav button with
// data-view=NAME shows one. onView(name, fn) runs fn each time the view
// is shown (another script of the page adds its views so).
const viewHooks = new Map();
function onView(name, fn) { viewHooks.set(name, fn); }
let current = 'loading';

// navOf is the nav button that stands for a view: a server's detail view
// and the form editing a stored server belong to Servers.
function navOf(view) {
  if (view === 'server') return 'servers';
  if (view === 'form' && editing) return 'servers';
  return view;
}

function show(view, {focus = true} = {}) {
  for (const sec of document.querySelectorAll('main > section[id^="view-"]')) sec.hidden = sec.id !== 'view-' + view;
  const nav = navOf(view);
  for (const b of document.querySelectorAll('#nav button')) {
    if (b.dataset.view === nav) b.setAttribute('aria-current', 'page');
    else b.removeAttribute('aria-current');
  }
  if (current === 'tools' && view !== 'tools') stopCall();
  if (current === 'server' && view !== 'server') closeDetail();
  current = view;
  if (view === 'tools') loadTools();
  if (view === 'servers') loadStats();
  const hook = viewHooks.get(view);
  if (hook) hook();
  if (focus) {
    const h = document.querySelector('#view-' + view + ' h2');
    if (h) h.focus();
  }
}

let started = false;
let eventsAbort = null;

function loggedOut() {
  started = false;
  if (eventsAbort) eventsAbort.abort();
  closeDetail();
  $('nav').hidden = true;
  $('logout').hidden = true;
  $('live').hidden = true;
  document.body.dataset.state = 'login';
  show('login');
}

// ---- Servers: the overview --------------------------------------------------

// servers maps a name to {view, tr, parts, stats}: stats is the server's
// line of GET /api/v1/stats (the hour's calls, errors, p50).
const servers = new Map();

// The columns of the overview: key, heading, and the value it sorts by.
const columns = [
  ['name', 'Server', (s) => s.view.name],
  ['status', 'Status', (s) => statusRank(shownStatus(s))],
  ['target', 'Runs', (s) => s.view.transport + ' ' + target(s.view)],
  ['tools', 'Tools', (s) => s.view.runtime.tool_count || 0],
  ['calls', 'Calls 1 h', (s) => (s.stats && s.stats.calls) || 0],
  ['errors', 'Errors 1 h', (s) => (s.stats && s.stats.errors) || 0],
  ['p50', 'p50', (s) => (s.stats && s.stats.p50_ms) || 0],
  ['drop', 'Last drop', (s) => (s.view.runtime.last_drop ? s.view.runtime.last_drop.at : '')],
  ['reconnects', 'Reconnects', (s) => s.view.runtime.reconnects || 0],
  ['retry', 'Next retry', (s) => s.view.runtime.next_retry_at || '~'],
];
let sortKey = 'name', sortDir = 1;

// live is false while the event stream is down: every status is then
// unknown, since liveLost.
let live = false, liveLost = null;

const statusRank = (st) => ({error: 0, connecting: 1, unknown: 2, connected: 3, disabled: 4})[st] ?? 5;

// shownStatus is what the page can vouch for: the last status it was
// told, or unknown while it is not being told.
function shownStatus(s) { return live ? s.view.runtime.status : 'unknown'; }

// target is what a server runs: its command line, or its URL.
function target(v) {
  if (v.transport === 'stdio') return [v.command || '', ...(v.args || [])].join(' ');
  return v.url || '';
}

async function loadServers() {
  const body = await api('GET', '/api/v1/servers');
  const seen = new Set();
  for (const v of body.servers) {
    seen.add(v.name);
    upsert(v);
  }
  for (const name of [...servers.keys()]) if (!seen.has(name)) removeServer(name);
  sortRows();
}

// sortRows orders the rows by the chosen column (then by name), and
// applies the filter.
function sortRows() {
  const col = columns.find((c) => c[0] === sortKey) || columns[0];
  const list = [...servers.values()].sort((a, b) => {
    const x = col[2](a), y = col[2](b);
    const c = x < y ? -1 : x > y ? 1 : 0;
    return c * sortDir || (a.view.name < b.view.name ? -1 : 1);
  });
  // Rows move only if the order changed: a moved row loses its focus and
  // a click in flight.
  const body = $('servers-body');
  if (list.some((s, i) => body.children[i] !== s.tr)) for (const s of list) body.append(s.tr);
  for (const th of document.querySelectorAll('#servers th[data-sort]')) {
    if (th.dataset.sort === sortKey) th.setAttribute('aria-sort', sortDir > 0 ? 'ascending' : 'descending');
    else th.removeAttribute('aria-sort');
  }
  filterRows();
}

function filterRows() {
  const q = $('server-filter').value.trim().toLowerCase();
  const st = $('server-status').value;
  let shown = 0;
  for (const s of servers.values()) {
    const v = s.view, rt = v.runtime;
    const hay = [v.name, v.transport, target(v), shownStatus(s), rt.error ? rt.error.code + ' ' + rt.error.phase : ''].join(' ').toLowerCase();
    const ok = (!q || hay.includes(q)) && (!st || shownStatus(s) === st);
    s.tr.hidden = !ok;
    if (ok) shown++;
  }
  $('servers-empty').hidden = servers.size > 0;
  $('servers').hidden = servers.size === 0;
  $('servers-count').textContent = servers.size ? shown + ' of ' + servers.size + ' servers' : '';
}

function upsert(v) {
  let s = servers.get(v.name);
  if (!s) {
    s = makeRow(v.name);
    servers.set(v.name, s);
    $('servers-body').append(s.tr);
  }
  const before = s.view && s.view.runtime.status;
  s.view = v;
  renderRow(s);
  if (detail && detail.name === v.name) renderDetail();
  if (before && before !== v.runtime.status) announce(v.name + ' is ' + v.runtime.status);
  refreshToolServers();
}

function removeServer(name) {
  const s = servers.get(name);
  if (!s) return;
  s.tr.remove();
  servers.delete(name);
  if (detail && detail.name === name) show('servers');
  filterRows();
  refreshToolServers();
}

// act runs an action on a server by name, as the menu and the detail view
// offer them.
const actions = {
  open: (s) => openServer(s.view.name),
  toggle: toggleEnabled,
  restart: restartServer,
  authorize: authorizeServer,
  test: (s) => { if (!detail || detail.name !== s.view.name) openServer(s.view.name); testStored(s); },
  tools: (s) => { $('tool-server').value = s.view.name; show('tools'); },
  edit: (s) => openForm(s.view),
  audit: (s) => openAudit({server: s.view.name}), // audit.js
  delete: deleteServer,
};

// actionButtons makes the buttons of a server's actions; labelled is the
// id of the element that names the server, for screen readers.
function actionButtons(s, labelled) {
  const b = {};
  const mk = (key, label, extra) => {
    b[key] = el('button', Object.assign({type: 'button', 'data-action': key, 'aria-describedby': labelled,
      onclick: () => { closeMenus(); actions[key](s, b[key]); }}, extra || {}), label);
    return b[key];
  };
  mk('toggle', 'Disable');
  mk('restart', 'Restart');
  mk('authorize', 'Authorize', {hidden: true});
  mk('test', 'Test');
  mk('tools', 'Tools');
  mk('edit', 'Edit');
  mk('audit', 'Audit log');
  mk('delete', 'Delete', {class: 'danger'});
  return b;
}

function renderActions(s, b) {
  const v = s.view, rt = v.runtime;
  const enabled = v.enabled === undefined || v.enabled;
  b.toggle.textContent = enabled ? 'Disable' : 'Enable';
  b.restart.disabled = !enabled;
  // A person authorizes a server of grant authorization_code (the default).
  b.authorize.hidden = !v.oauth || v.oauth.grant === 'client_credentials';
  b.authorize.disabled = !enabled;
  b.tools.disabled = rt.status !== 'connected';
}

function makeRow(name) {
  const p = {};
  const id = 'srv-' + name;
  const tr = el('tr', {'data-server': name});
  const s = {tr, parts: p, view: null, stats: null};
  const cell = (key, label, ...children) => {
    const td = el('td', {'data-label': label, 'data-col': key}, ...children);
    tr.append(td);
    return td;
  };
  p.open = el('button', {type: 'button', class: 'link', id: id + '-name', 'data-action': 'open', onclick: () => openServer(name)}, name);
  cell('name', 'Server', p.open);
  p.status = el('span', {class: 'badge', 'data-role': 'status'});
  p.since = el('span', {class: 'since', 'data-role': 'since'});
  p.problem = el('span', {class: 'problem-short', 'data-role': 'error'});
  cell('status', 'Status', p.status, p.since, p.problem);
  p.transport = el('span', {class: 'transport', 'data-role': 'transport'});
  p.target = el('code', {class: 'target', 'data-role': 'target'});
  cell('target', 'Runs', p.transport, ' ', p.target);
  p.tools = cell('tools', 'Tools');
  p.tools.dataset.role = 'tool-count';
  p.calls = cell('calls', 'Calls 1 h');
  p.calls.dataset.role = 'calls';
  p.errors = cell('errors', 'Errors 1 h');
  p.errors.dataset.role = 'errors';
  p.p50 = cell('p50', 'p50');
  p.p50.dataset.role = 'p50';
  p.drop = cell('drop', 'Last drop');
  p.drop.dataset.role = 'last-drop';
  p.reconnects = cell('reconnects', 'Reconnects');
  p.reconnects.dataset.role = 'reconnects';
  p.retry = cell('retry', 'Next retry');
  p.retry.dataset.role = 'next-retry';
  p.buttons = actionButtons(s, id + '-name');
  const menu = el('details', {class: 'menu'},
    el('summary', {'aria-label': 'Actions of ' + name, 'data-role': 'menu'}, 'Actions'),
    el('div', {class: 'menu-items'}, el('button', {type: 'button', 'data-action': 'open', onclick: () => { closeMenus(); openServer(name); }}, 'Details'),
      ...Object.values(p.buttons)));
  menu.addEventListener('toggle', () => { if (menu.open) closeMenus(menu); });
  cell('actions', 'Actions', menu);
  return s;
}

// closeMenus closes every open row menu but keep.
function closeMenus(keep) {
  for (const m of document.querySelectorAll('details.menu[open]')) if (m !== keep) m.open = false;
}

function renderRow(s) {
  const v = s.view, rt = v.runtime, p = s.parts;
  const st = shownStatus(s);
  s.tr.dataset.status = st;
  s.tr.dataset.known = rt.status;
  p.status.textContent = st;
  p.status.className = 'badge ' + st;
  p.since.textContent = !live && liveLost ? 'since ' + clock(liveLost) : '';
  p.since.hidden = live;
  const err = live && rt.error;
  p.problem.hidden = !err;
  p.problem.textContent = err ? rt.error.phase + ' · ' + rt.error.code : '';
  if (err) p.problem.title = rt.error.message;
  p.transport.textContent = v.transport;
  p.target.textContent = target(v);
  p.target.title = target(v);
  p.tools.textContent = String(rt.tool_count || 0);
  renderStatsCells(s);
  p.drop.textContent = rt.last_drop ? clock(rt.last_drop.at) + ' ' + rt.last_drop.code : '–';
  p.drop.title = rt.last_drop ? rt.last_drop.message : '';
  p.reconnects.textContent = String(rt.reconnects || 0);
  if (rt.next_retry_at && live) p.retry.dataset.at = rt.next_retry_at;
  else delete p.retry.dataset.at;
  tickRetry(p.retry);
  renderActions(s, p.buttons);
}

function renderStatsCells(s) {
  const st = s.stats || {}, p = s.parts;
  p.calls.textContent = String(st.calls || 0);
  p.errors.textContent = String(st.errors || 0);
  p.errors.classList.toggle('bad', (st.errors || 0) > 0);
  p.p50.textContent = fmtMS(st.p50_ms);
}

// sandboxSummary is the sandbox in one line: what matters first.
function sandboxSummary(sb) {
  if (!sb || typeof sb !== 'object') return 'no sandbox';
  if (!sb.enabled) return 'not sandboxed' + (sb.reason ? ' (' + sb.reason + ')' : '');
  const parts = ['sandboxed'];
  if (sb.user) parts.push('as ' + sb.user);
  parts.push(sb.network ? (sb.network_allow && sb.network_allow.length ? 'network: ' + sb.network_allow.length + ' allowed' : 'network') : 'no network');
  if (sb.workspace_mode) parts.push(sb.workspace_mode + ' workspace');
  if (sb.limits) parts.push('limits: ' + sb.limits);
  if (sb.unenforced && sb.unenforced.length) parts.push('not enforced: ' + sb.unenforced.join(', '));
  return parts.join(' · ');
}

function when(t) {
  if (!t) return '';
  const d = new Date(t);
  return isNaN(d) ? String(t) : d.toLocaleTimeString();
}

// clock writes a time as HH:MM:SS, in 24 hours.
function clock(t) {
  const d = t instanceof Date ? t : new Date(t);
  if (isNaN(d)) return String(t);
  const z = (n) => String(n).padStart(2, '0');
  return z(d.getHours()) + ':' + z(d.getMinutes()) + ':' + z(d.getSeconds());
}

// stamp writes a time as logs -f does, to the millisecond.
function stamp(t) {
  const d = new Date(t);
  return clock(d) + '.' + String(d.getMilliseconds()).padStart(3, '0');
}

// tickRetry shows the time left until a retry; a one-second timer redraws
// the countdowns (no request is made for them).
function tickRetry(dd) {
  const at = dd.dataset.at;
  if (!at) { dd.textContent = '–'; return; }
  const left = Math.round((new Date(at) - Date.now()) / 1000);
  dd.textContent = left > 0 ? 'in ' + left + ' s' : 'now';
}
setInterval(() => {
  for (const s of servers.values()) tickRetry(s.parts.retry);
  if (detail) tickRetry(detail.parts.retry);
}, 1000);

// ---- Stats: GET /api/v1/stats, drawn ----------------------------------------

// Stats are read when the overview or a detail view is shown, then every
// statsInterval while it stays shown and the page is live.
const statsInterval = 5000;
let statsTimer = 0, statsRound = 0;

// loadStats reads and draws the stats of the view shown, then schedules
// the next read; a call while a read is in flight supersedes it (one
// loop, never two).
async function loadStats() {
  clearTimeout(statsTimer);
  statsTimer = 0;
  const round = ++statsRound;
  if (!started || (current !== 'servers' && current !== 'server')) return;
  try {
    if (current === 'servers') {
      const st = await api('GET', '/api/v1/stats');
      if (round !== statsRound) return;
      for (const line of st.servers || []) {
        const s = servers.get(line.server);
        if (s) { s.stats = line; renderStatsCells(s); }
      }
      renderPlots($('daemon-plots'), st, '');
      $('daemon-summary').textContent = st.calls + ' calls in the last hour, ' + st.errors + ' failed' +
        (st.calls ? '; p50 ' + fmtMS(st.p50_ms) + ', p99 ' + fmtMS(st.p99_ms) : '');
      if (sortKey === 'calls' || sortKey === 'errors' || sortKey === 'p50') sortRows();
    } else if (detail) {
      const name = detail.name;
      const st = await api('GET', '/api/v1/servers/' + encodeURIComponent(name) + '/stats');
      if (round !== statsRound) return;
      if (detail && detail.name === name) renderPlots(detail.parts.plots, st, '');
    }
  } catch (e) {
    // The stream's state says whether the daemon is there; try again.
    if (round !== statsRound) return;
  }
  if (started) statsTimer = setTimeout(loadStats, statsInterval);
}

// ---- A server's detail view -------------------------------------------------

// detail is the server shown in the detail view: {name, parts, logsAbort}.
let detail = null;

function openServer(name) {
  const s = servers.get(name);
  if (!s) return;
  closeDetail();
  const p = {};
  detail = {name, parts: p, logsAbort: null};
  $('server-title').textContent = name;
  p.status = el('span', {class: 'badge', 'data-role': 'status'});
  p.since = el('span', {class: 'since', 'data-role': 'since'});
  p.error = el('div', {class: 'error-box', 'data-role': 'error', hidden: true});
  p.drop = el('p', {class: 'drop', 'data-role': 'last-drop', hidden: true});
  const facts = el('dl', {class: 'facts'});
  const fact = (label, role) => {
    const dd = el('dd', {'data-role': role});
    facts.append(el('dt', {text: label}), dd);
    return dd;
  };
  p.transport = fact('Transport', 'transport');
  p.target = fact(s.view.transport === 'stdio' ? 'Command' : 'URL', 'target');
  p.info = fact('Server', 'server-info');
  p.pid = fact('Process', 'pid');
  p.since2 = fact('Connected since', 'connected-since');
  p.tools = fact('Tools, resources, prompts', 'tool-count');
  p.reconnects = fact('Reconnects', 'reconnects');
  p.attempt = fact('Failed attempts', 'attempt');
  p.retry = fact('Next retry', 'next-retry');
  p.scope = fact('Session scope', 'scope');
  p.sandbox = el('details', {class: 'sandbox', 'data-role': 'sandbox'});
  p.buttons = actionButtons(s, 'server-title');
  p.panel = el('div', {class: 'panel', 'data-role': 'panel', 'aria-live': 'polite', hidden: true});
  p.plots = el('div', {class: 'plots', 'data-role': 'plots'});
  p.logs = el('pre', {class: 'logs', 'data-role': 'logs', tabindex: '0', 'aria-label': 'stderr of ' + name});
  p.logsBox = el('section', {class: 'logs-box', 'aria-label': 'Logs'}, el('h3', {text: 'stderr, with the times and attempts of logs -f'}), p.logs);
  $('server-detail').replaceChildren(
    el('p', {class: 'status-line'}, p.status, ' ', p.since),
    p.error, p.drop,
    el('div', {class: 'actions'}, ...Object.values(p.buttons)),
    p.panel,
    p.plots,
    el('div', {class: 'detail-grid'}, el('div', {}, facts, p.sandbox), p.logsBox));
  renderDetail();
  show('server');
  loadStats();
  if (s.view.transport === 'stdio') followLogs(name);
  else p.logsBox.hidden = true;
}

function closeDetail() {
  if (!detail) return;
  if (detail.logsAbort) detail.logsAbort.abort();
  detail = null;
}

function renderDetail() {
  const s = servers.get(detail.name);
  if (!s) return;
  const v = s.view, rt = v.runtime, p = detail.parts;
  const st = shownStatus(s);
  $('view-server').dataset.status = st;
  p.status.textContent = st;
  p.status.className = 'badge ' + st;
  p.since.textContent = !live && liveLost ? 'since ' + clock(liveLost) + ': the page is not receiving events' : '';
  p.error.hidden = !rt.error;
  if (rt.error) {
    p.error.replaceChildren(el('strong', {}, 'Error in phase ', el('span', {class: 'phase', text: rt.error.phase}), ' (',
      el('code', {text: rt.error.code}), ')', rt.error.at ? ' at ' + clock(rt.error.at) : ''), el('pre', {text: rt.error.message}));
  }
  p.drop.hidden = !rt.last_drop;
  if (rt.last_drop) p.drop.textContent = 'Last drop ' + when(rt.last_drop.at) + ' (' + rt.last_drop.code + '): ' + rt.last_drop.message;
  p.transport.textContent = v.transport + (rt.protocol_version ? ' · protocol ' + rt.protocol_version : '');
  p.target.textContent = target(v);
  p.info.textContent = rt.server_info ? rt.server_info.name + ' ' + rt.server_info.version : '–';
  p.pid.textContent = rt.pid ? 'pid ' + rt.pid : '–';
  p.pid.dataset.pid = rt.pid || '';
  p.since2.textContent = rt.connected_since ? when(rt.connected_since) : '–';
  p.tools.textContent = (rt.tool_count || 0) + ', ' + (rt.resource_count || 0) + ', ' + (rt.prompt_count || 0);
  p.reconnects.textContent = String(rt.reconnects || 0);
  p.attempt.textContent = String(rt.attempt || 0);
  if (rt.next_retry_at && live) p.retry.dataset.at = rt.next_retry_at;
  else delete p.retry.dataset.at;
  tickRetry(p.retry);
  p.scope.textContent = v.session_scope || 'shared';
  const box = rt.sandbox;
  const full = el('dl', {class: 'facts'});
  for (const [k, val] of Object.entries(box || {})) {
    full.append(el('dt', {text: k}), el('dd', {text: typeof val === 'object' ? JSON.stringify(val) : String(val)}));
  }
  const open = p.sandbox.open;
  p.sandbox.replaceChildren(el('summary', {'data-role': 'sandbox-summary'}, 'Sandbox: ' + sandboxSummary(box)), full);
  p.sandbox.open = open;
  renderActions(s, p.buttons);
}

// followLogs shows the server's stderr as "switchboard server logs -f"
// does: the kept lines, then each new line after the time it was read,
// and a marker line for each change of state (a new attempt, a drop).
async function followLogs(name) {
  const d = detail;
  const pre = d.parts.logs;
  d.logsAbort = new AbortController();
  let wait = 1000;
  while (detail === d && started) {
    try {
      const resp = await api('GET', '/api/v1/servers/' + encodeURIComponent(name) + '/logs?follow=true&tail=200', null,
        {stream: true, accept: 'text/event-stream', signal: d.logsAbort.signal});
      pre.replaceChildren();
      wait = 1000;
      for await (const ev of sseEvents(resp.body)) {
        let data;
        try { data = JSON.parse(ev.data); } catch (e) { continue; }
        const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        if (ev.event === 'log') {
          pre.append(el('span', {class: 'line'}, data.at ? el('time', {datetime: data.at, text: stamp(data.at) + ' '}) : null, data.line), '\n');
        } else if (ev.event === 'status') {
          pre.append(el('span', {class: 'marker', 'data-reason': data.reason},
            el('time', {datetime: data.at, text: stamp(data.at) + ' '}), '--- ' + describeEvent(data)), '\n');
        }
        while (pre.childNodes.length > 2000) { pre.firstChild.remove(); pre.firstChild.remove(); }
        if (atEnd) pre.scrollTop = pre.scrollHeight;
      }
    } catch (e) {
      if (e.name === 'AbortError' || e.status === 401) return;
      if (e.status === 404) return;
    }
    await sleep(wait);
    wait = Math.min(wait * 2, 10000);
  }
}

// describeEvent reads "attempt_failed (attempt 1, status connecting):
// spawn: command_not_found: ./x: command not found", as logs -f prints it.
function describeEvent(ev) {
  let s = ev.reason || '';
  if (ev.reason === 'starting') s += ' (attempt ' + ((ev.attempt || 0) + 1) + ')';
  else if (ev.reason === 'attempt_failed') s += ' (attempt ' + (ev.attempt || 0) + ', status ' + ev.status + ')';
  else if (ev.previous && ev.status !== ev.previous) s += ' (status ' + ev.previous + ' -> ' + ev.status + ')';
  else s += ' (status ' + ev.status + ')';
  const e = ev.error;
  if (e && (ev.reason === 'attempt_failed' || ev.reason === 'dropped')) s += ': ' + e.phase + ': ' + e.code + ': ' + e.message;
  return s;
}

// ---- Actions ----------------------------------------------------------------

async function action(s, fn) {
  notice('');
  try {
    await fn();
  } catch (e) {
    if (e.status !== 401) notice(s.view.name + ': ' + describe(e.info));
  }
}

function toggleEnabled(s) {
  const enabled = s.view.enabled === undefined || s.view.enabled;
  return action(s, async () => upsert(await api('POST', '/api/v1/servers/' + encodeURIComponent(s.view.name) + (enabled ? '/disable' : '/enable'))));
}

function restartServer(s) {
  return action(s, async () => {
    await api('POST', '/api/v1/servers/' + encodeURIComponent(s.view.name) + '/restart');
    announce(s.view.name + ' is restarting');
  });
}

// authorizeServer opens the server's authorization page in a new window;
// the authorization server sends that window back to the daemon, which
// then connects the server (the row turns connected by itself). The window
// is opened at once, in the click: one opened after an await is a popup
// that browsers block.
function authorizeServer(s) {
  const w = window.open('', '_blank');
  return action(s, async () => {
    try {
      const start = await api('POST', '/api/v1/servers/' + encodeURIComponent(s.view.name) + '/oauth/start');
      if (w) {
        w.opener = null; // the authorization server's page gets no handle on this one
        w.location = start.authorization_url;
      } else {
        notice('Open this link to authorize ' + s.view.name + ': ' + start.authorization_url);
      }
      announce('Approve ' + s.view.name + ' in the new window');
    } catch (e) {
      if (w) w.close();
      throw e;
    }
  });
}

// deleteServer asks once more on the button that was clicked.
function deleteServer(s, b) {
  if (!b.classList.contains('confirm')) {
    b.classList.add('confirm');
    b.textContent = 'Really delete?';
    // The menu stays open on the question.
    const menu = b.closest('details.menu');
    if (menu) menu.open = true;
    setTimeout(() => { b.classList.remove('confirm'); b.textContent = 'Delete'; }, 5000);
    return;
  }
  return action(s, async () => {
    await api('DELETE', '/api/v1/servers/' + encodeURIComponent(s.view.name) + '?version=' + s.view.version);
    removeServer(s.view.name);
    announce(s.view.name + ' deleted');
  });
}

// testStored tests a stored server in a fresh session; the result shows
// in its detail view.
function testStored(s) {
  if (!detail || detail.name !== s.view.name) return;
  const panel = detail.parts.panel, btn = detail.parts.buttons.test;
  panel.hidden = false;
  panel.replaceChildren(el('p', {text: 'Testing ' + s.view.name + ' in a fresh session…'}));
  btn.disabled = true;
  return action(s, async () => {
    try {
      const res = await api('POST', '/api/v1/servers/' + encodeURIComponent(s.view.name) + '/test');
      renderTest(res, panel, s.view.name);
    } catch (e) {
      panel.replaceChildren(el('p', {class: 'problem', text: describe(e.info)}));
    } finally {
      btn.disabled = false;
    }
  });
}


// renderTest shows what a test session found: the tools, or the error
// with its phase and the tail of the server's stderr.
function renderTest(res, panel, name) {
  const rt = res.runtime;
  const out = [el('h4', {text: 'Test of ' + name})];
  if (rt.status === 'connected') {
    const info = rt.server_info ? rt.server_info.name + ' ' + rt.server_info.version : 'the server';
    out.push(el('p', {'data-role': 'test-ok'}, 'Connected to ', info, ' (', rt.protocol_version || '', '): ',
      String((rt.tools || []).length), ' tools.'));
    const ul = el('ul', {'data-role': 'test-tools'});
    for (const t of rt.tools || []) ul.append(el('li', {}, el('strong', {text: t.name}), t.description ? ': ' + t.description : ''));
    out.push(ul);
  } else if (rt.error) {
    out.push(el('p', {class: 'problem', 'data-role': 'test-error'}, 'Failed in phase ',
      el('span', {class: 'phase', 'data-role': 'phase', text: rt.error.phase}), ' (',
      el('code', {'data-role': 'code', text: rt.error.code}), '): ', rt.error.message));
  } else {
    out.push(el('p', {text: 'Status ' + rt.status}));
  }
  if (res.logs && res.logs.length) {
    out.push(el('p', {text: 'Its stderr, last ' + res.logs.length + ' lines:'}));
    out.push(el('pre', {class: 'logs', 'data-role': 'stderr', text: res.logs.join('\n')}));
  }
  panel.replaceChildren(...out);
}


// ---- Live status: GET /api/v1/events -------------------------------------

const pending = new Map(); // name -> timer: one refresh per burst of events

function onStatus(ev) {
  const s = servers.get(ev.server);
  if (ev.reason === 'deleted') { removeServer(ev.server); return; }
  if (s) {
    // Show the event at once, then read the full view (last drop, next
    // retry, tools), which the event does not carry.
    const rt = Object.assign({}, s.view.runtime, {status: ev.status, reconnects: ev.reconnects, attempt: ev.attempt});
    if (ev.error) rt.error = ev.error;
    else if (ev.status === 'connected') rt.error = null;
    upsert(Object.assign({}, s.view, {runtime: rt}));
  }
  clearTimeout(pending.get(ev.server));
  pending.set(ev.server, setTimeout(() => refreshServer(ev.server), 60));
  if (ev.reason === 'tools_changed' || ev.status === 'connected' || ev.previous === 'connected') toolsStale = true;
  if (current === 'tools' && toolsStale) loadTools();
}

async function refreshServer(name) {
  pending.delete(name);
  try {
    upsert(await api('GET', '/api/v1/servers/' + encodeURIComponent(name)));
    sortRows();
  } catch (e) {
    if (e.status === 404) removeServer(name);
  }
}

// setLive says whether the page is being told of changes. While it is
// not, no status can be vouched for: every one shows as unknown, since the
// moment the stream was lost, until it is back and every server re-read.
function setLive(on, text) {
  const l = $('live');
  l.textContent = text;
  l.className = 'live ' + (on ? 'on' : 'off');
  document.body.dataset.live = on ? 'on' : 'off';
  const was = live;
  live = on;
  if (on) liveLost = null;
  else if (!liveLost) liveLost = new Date();
  for (const s of servers.values()) renderRow(s);
  if (detail) renderDetail();
  filterRows();
  if (!on && was) announce('Not receiving events since ' + clock(liveLost) + ': every status is unknown');
}

// followEvents keeps one subscription to the status events, subscribing
// again (and re-reading every server) when it ends.
async function followEvents() {
  let wait = 1000;
  while (started) {
    eventsAbort = new AbortController();
    try {
      const resp = await api('GET', '/api/v1/events', null, {stream: true, accept: 'text/event-stream', signal: eventsAbort.signal});
      await loadServers(); // after subscribing: nothing falls in between
      setLive(true, 'live');
      loadStats();
      wait = 1000;
      for await (const ev of sseEvents(resp.body)) {
        if (ev.event === 'status') {
          try { onStatus(JSON.parse(ev.data)); } catch (e) { /* a bad event */ }
        }
      }
    } catch (e) {
      if (e.status === 401 || !started) return;
    }
    setLive(false, 'reconnecting…');
    $('live').textContent = 'no events since ' + clock(liveLost) + '; reconnecting…';
    await sleep(wait);
    wait = Math.min(wait * 2, 10000);
  }
}

// ---- The server form --------------------------------------------------------

let editing = null; // the view being edited, or null for a new server

function kvRow(container, kind, key, value) {
  const n = container.children.length + 1;
  const what = kind === 'env' ? 'Variable' : 'Header';
  const k = el('input', {class: 'kv-key', autocomplete: 'off', spellcheck: 'false', value: key || '', 'aria-label': what + ' ' + n + ' name'});
  const v = el('input', {class: 'kv-val', type: 'password', autocomplete: 'off', spellcheck: 'false', value: value || '', 'aria-label': what + ' ' + n + ' value'});
  const row = el('div', {class: 'kv-row'},
    el('label', {}, 'Name', k), el('label', {}, 'Value', v),
    el('button', {type: 'button', class: 'quiet', 'aria-label': 'Remove ' + what.toLowerCase() + ' ' + n, onclick: () => row.remove()}, 'Remove'));
  container.append(row);
  return k;
}

function kvRead(container) {
  const out = {};
  for (const row of container.querySelectorAll('.kv-row')) {
    const k = row.querySelector('.kv-key').value.trim();
    if (k) out[k] = row.querySelector('.kv-val').value;
  }
  return out;
}

function syncTransport() {
  const stdio = $('f-transport').value === 'stdio';
  $('fs-stdio').hidden = !stdio;
  $('fs-remote').hidden = stdio;
}

function openForm(view) {
  editing = view || null;
  const f = $('server-form');
  f.reset();
  clearFieldErrors();
  $('draft-result').hidden = true;
  $('f-env').replaceChildren();
  $('f-headers').replaceChildren();
  $('form-title').textContent = view ? 'Edit ' + view.name : 'Add a server';
  $('f-name').readOnly = !!view;
  const v = view || {transport: 'stdio'};
  $('f-name').value = v.name || '';
  $('f-enabled').checked = v.enabled === undefined || v.enabled;
  $('f-transport').value = v.transport || 'stdio';
  $('f-command').value = v.command || '';
  $('f-args').value = (v.args || []).join('\n');
  $('f-cwd').value = v.cwd || '';
  $('f-url').value = v.url || '';
  for (const [k, val] of Object.entries(v.env || {})) kvRow($('f-env'), 'env', k, val);
  for (const [k, val] of Object.entries(v.headers || {})) kvRow($('f-headers'), 'headers', k, val);
  const num = (x) => (x ? String(x) : '');
  $('f-startup').value = num(v.startup_timeout_ms);
  $('f-call').value = num(v.call_timeout_ms);
  $('f-total').value = num(v.max_total_timeout_ms);
  $('f-protocol').value = v.protocol_version || '';
  $('f-scope').value = v.session_scope === 'per-client' ? 'per-client' : '';
  const r = v.retry || {};
  $('f-attempts').value = num(r.max_attempts);
  $('f-delays').value = (r.delays_ms || []).join(', ');
  $('f-slow').value = num(r.slow_retry_ms);
  const hasSandbox = view && Object.prototype.hasOwnProperty.call(view, 'sandbox');
  $('sandbox-field').hidden = !hasSandbox;
  $('f-sandbox').value = hasSandbox ? JSON.stringify(view.sandbox, null, 2) : '';
  $('save').textContent = view ? 'Save changes' : 'Create';
  syncTransport();
  show('form');
}

class FieldProblem extends Error {
  constructor(field, message) { super(message); this.field = field; }
}

// readForm returns the config the form describes, as the API takes it.
function readForm() {
  const cfg = {name: $('f-name').value.trim(), enabled: $('f-enabled').checked, transport: $('f-transport').value};
  const int = (id, field) => {
    const raw = $(id).value.trim();
    if (raw === '') return undefined;
    const n = Number(raw);
    if (!Number.isInteger(n)) throw new FieldProblem(field, 'must be a whole number of milliseconds');
    return n;
  };
  if (cfg.transport === 'stdio') {
    cfg.command = $('f-command').value.trim();
    const args = $('f-args').value.split('\n').map((a) => a.replace(/\r$/, '')).filter((a) => a !== '');
    if (args.length) cfg.args = args;
    if ($('f-cwd').value.trim()) cfg.cwd = $('f-cwd').value.trim();
    const env = kvRead($('f-env'));
    if (Object.keys(env).length) cfg.env = env;
  } else {
    cfg.url = $('f-url').value.trim();
    const h = kvRead($('f-headers'));
    if (Object.keys(h).length) cfg.headers = h;
  }
  for (const [id, field] of [['f-startup', 'startup_timeout_ms'], ['f-call', 'call_timeout_ms'], ['f-total', 'max_total_timeout_ms']]) {
    const n = int(id, field);
    if (n !== undefined) cfg[field] = n;
  }
  if ($('f-protocol').value.trim()) cfg.protocol_version = $('f-protocol').value.trim();
  if ($('f-scope').value) cfg.session_scope = $('f-scope').value;
  const retry = {};
  const attempts = int('f-attempts', 'retry.max_attempts');
  if (attempts !== undefined) retry.max_attempts = attempts;
  const delays = $('f-delays').value.split(',').map((d) => d.trim()).filter((d) => d !== '');
  if (delays.length) {
    retry.delays_ms = delays.map((d) => {
      const n = Number(d);
      if (!Number.isInteger(n)) throw new FieldProblem('retry.delays_ms', 'must be whole numbers of milliseconds, separated by commas');
      return n;
    });
  }
  const slow = int('f-slow', 'retry.slow_retry_ms');
  if (slow !== undefined) retry.slow_retry_ms = slow;
  if (Object.keys(retry).length) cfg.retry = retry;
  if (!$('sandbox-field').hidden && $('f-sandbox').value.trim()) {
    try { cfg.sandbox = JSON.parse($('f-sandbox').value); } catch (e) { throw new FieldProblem('sandbox', 'is not valid JSON: ' + e.message); }
  }
  return cfg;
}

function clearFieldErrors() {
  $('form-error').hidden = true;
  for (const p of document.querySelectorAll('#server-form .field-error')) { p.hidden = true; p.textContent = ''; }
  for (const i of document.querySelectorAll('#server-form [aria-invalid]')) i.removeAttribute('aria-invalid');
}

// showFieldErrors puts each message beside its field ("retry.delays_ms[1]"
// beside the delays); those without a field go above the form.
function showFieldErrors(fields, fallback) {
  clearFieldErrors();
  const loose = [];
  let first = null;
  for (const f of fields) {
    const key = f.field.replace(/\[\d+\]$/, '');
    const p = document.getElementById('err-' + key);
    if (!p) { loose.push(f.field + ': ' + f.message); continue; }
    p.textContent = (p.textContent ? p.textContent + '; ' : '') + f.message;
    p.hidden = false;
    const wrap = p.closest('.field');
    const input = wrap.querySelector('input, select, textarea, .kv');
    if (input) {
      input.setAttribute('aria-invalid', 'true');
      first = first || input;
    }
  }
  if (loose.length || (!fields.length && fallback)) {
    $('form-error').textContent = loose.length ? loose.join('; ') : fallback;
    $('form-error').hidden = false;
  }
  const target = first && first.matches('.kv') ? first.querySelector('input') || first : first;
  if (target) target.focus();
  else if (!$('form-error').hidden) $('form-error').scrollIntoView({block: 'nearest'});
}

async function saveForm(ev) {
  ev.preventDefault();
  let cfg;
  try { cfg = readForm(); } catch (e) {
    if (e instanceof FieldProblem) { showFieldErrors([{field: e.field, message: e.message}]); return; }
    throw e;
  }
  $('save').disabled = true;
  try {
    let v;
    if (editing) {
      cfg.version = editing.version;
      v = await api('PUT', '/api/v1/servers/' + encodeURIComponent(editing.name), cfg);
    } else {
      v = await api('POST', '/api/v1/servers', cfg);
    }
    upsert(v);
    sortRows();
    announce((editing ? 'Saved ' : 'Created ') + v.name);
    editing = null;
    show('servers');
    const s = servers.get(v.name);
    if (s) s.tr.scrollIntoView({block: 'nearest'});
  } catch (e) {
    if (e.status === 401) return;
    const info = e.info || {};
    showFieldErrors(info.fields || [], describe(info));
  } finally {
    $('save').disabled = false;
  }
}

async function testDraft() {
  let cfg;
  try { cfg = readForm(); } catch (e) {
    if (e instanceof FieldProblem) { showFieldErrors([{field: e.field, message: e.message}]); return; }
    throw e;
  }
  clearFieldErrors();
  const panel = $('draft-result');
  panel.hidden = false;
  panel.replaceChildren(el('p', {text: 'Testing the draft in a fresh session (one attempt)…'}));
  $('test-draft').disabled = true;
  try {
    renderTest(await api('POST', '/api/v1/test', cfg), panel, cfg.name || 'the draft');
  } catch (e) {
    if (e.status === 401) return;
    panel.hidden = true;
    const info = e.info || {};
    showFieldErrors(info.fields || [], describe(info));
  } finally {
    $('test-draft').disabled = false;
  }
}

// ---- Import ---------------------------------------------------------------

async function runImport(dry) {
  const out = $('import-result');
  out.hidden = false;
  out.replaceChildren(el('p', {text: dry ? 'Reading…' : 'Importing…'}));
  try {
    const rep = await api('POST', '/api/v1/import', {config: $('import-text').value, dry_run: dry, disabled: $('import-disabled').checked});
    const rows = [];
    for (const n of rep.imported) {
      rows.push(el('li', {}, el('strong', {text: n}), dry ? ': would be created' : ': created',
        rep.renamed[n] ? ' (renamed from “' + rep.renamed[n] + '”)' : ''));
    }
    for (const s of rep.skipped) {
      rows.push(el('li', {}, el('strong', {text: s.name}), ': skipped, ' + (s.reason === 'exists' ? 'a server of that name exists' : s.reason)));
    }
    for (const f of rep.failed) rows.push(el('li', {class: 'problem'}, el('strong', {text: f.name}), ': refused, ' + f.error));
    out.replaceChildren(el('h4', {text: (dry ? 'Preview of a ' : 'Imported a ') + rep.format + ' config'}), el('ul', {}, ...rows));
    if (!dry) await loadServers();
  } catch (e) {
    out.replaceChildren(el('p', {class: 'problem', text: describe(e.info)}));
  }
}

// The tool list and the calls (the tool bench) are in bench.js, toolsets
// and tokens in toolsets.js: both load before this file.

// ---- Forms from JSON schemas (tool arguments, elicitations) -------------------

let uid = 0;

// schemaField builds the input(s) for one value of the given schema and
// returns {node, read}: read() returns the value, undefined for "not
// given", or throws a FieldProblem naming the input.
function schemaField(schema, label, required, path) {
  schema = schema || {};
  const id = 'sf-' + (++uid);
  const hintId = id + '-hint', errId = id + '-err';
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  const title = (schema.title || label) + (required ? ' (required)' : '');
  const hint = schema.description ? el('small', {class: 'hint', id: hintId, text: schema.description}) : null;
  const err = el('p', {class: 'field-error', id: errId, hidden: true});
  const described = (hint ? hintId + ' ' : '') + errId;
  const fail = (input, msg) => {
    err.textContent = msg;
    err.hidden = false;
    input.setAttribute('aria-invalid', 'true');
    throw new FieldProblem(input, (path || label) + ': ' + msg);
  };
  const clear = (input) => { err.hidden = true; input.removeAttribute('aria-invalid'); };
  const has = Object.prototype.hasOwnProperty.call(schema, 'default');

  if (type === 'object' && schema.properties) {
    const fs = el('fieldset', {}, el('legend', {text: title}));
    if (hint) fs.append(hint);
    const readers = objectFields(schema, fs, path);
    return {node: fs, read: () => {
      const v = readers();
      return Object.keys(v).length || required ? v : undefined;
    }};
  }
  if (type === 'array' && schema.items && isSimple(schema.items)) {
    const wrap = el('div', {class: 'field', role: 'group', 'aria-labelledby': id + '-label', 'aria-describedby': described});
    const list = el('div', {});
    const items = [];
    const add = (val) => {
      const n = items.length + 1;
      const f = schemaField(Object.assign({}, schema.items, has ? {} : {}), label + ' ' + n, false, (path || label) + '[' + (n - 1) + ']');
      const item = {f};
      const rm = el('button', {type: 'button', class: 'quiet', onclick: () => { items.splice(items.indexOf(item), 1); row.remove(); }}, 'Remove ' + label + ' ' + n);
      const row = el('div', {class: 'array-item'}, f.node, rm);
      if (val !== undefined) setValue(f.node, val);
      items.push(item);
      list.append(row);
    };
    wrap.append(el('span', {class: 'label', id: id + '-label', text: title + ' (a list)'}), list,
      el('button', {type: 'button', onclick: () => add()}, 'Add to ' + label));
    if (hint) wrap.append(hint);
    wrap.append(err);
    for (const v of has && Array.isArray(schema.default) ? schema.default : []) add(v);
    return {node: wrap, read: () => {
      const out = [];
      for (const it of items) {
        const v = it.f.read();
        if (v !== undefined) out.push(v);
      }
      if (!out.length && !required) return undefined;
      return out;
    }};
  }
  if (type === 'boolean') {
    const input = el('input', {type: 'checkbox', id, 'aria-describedby': described});
    input.checked = has ? !!schema.default : false;
    let touched = false;
    input.addEventListener('change', () => { touched = true; });
    const node = el('div', {class: 'field check'}, input, el('label', {for: id, text: title}), hint, err);
    return {node, read: () => (touched || required || has ? input.checked : undefined)};
  }
  if (Array.isArray(schema.enum) || Array.isArray(schema.oneOf) && schema.oneOf.every((o) => 'const' in o)) {
    const opts = schema.enum ? schema.enum.map((v) => ({v, t: String(v)})) : schema.oneOf.map((o) => ({v: o.const, t: o.title || String(o.const)}));
    const sel = el('select', {id, 'aria-describedby': described, required: required || undefined},
      el('option', {value: ''}, required ? 'Choose…' : '(not given)'),
      ...opts.map((o, i) => el('option', {value: String(i)}, o.t)));
    if (has) {
      const i = opts.findIndex((o) => o.v === schema.default);
      if (i >= 0) sel.value = String(i);
    }
    const node = el('div', {class: 'field'}, el('label', {for: id, text: title}), sel, hint, err);
    return {node, read: () => {
      clear(sel);
      if (sel.value === '') {
        if (required) fail(sel, 'choose one');
        return undefined;
      }
      return opts[Number(sel.value)].v;
    }};
  }
  if (type === 'string' || type === 'number' || type === 'integer') {
    const numeric = type !== 'string';
    const attrs = {id, 'aria-describedby': described, autocomplete: 'off', required: required || undefined};
    if (numeric) {
      Object.assign(attrs, {type: 'number', step: type === 'integer' ? '1' : 'any', inputmode: 'decimal'});
      if (schema.minimum !== undefined) attrs.min = schema.minimum;
      if (schema.maximum !== undefined) attrs.max = schema.maximum;
    } else {
      const fmt = {email: 'email', uri: 'url', date: 'date', 'date-time': 'datetime-local'}[schema.format];
      attrs.type = fmt || 'text';
      if (schema.maxLength) attrs.maxlength = schema.maxLength;
    }
    const long = !numeric && !schema.format && (schema.maxLength || 0) > 200;
    const input = long ? el('textarea', Object.assign({rows: 3}, attrs)) : el('input', attrs);
    if (has && schema.default !== null) input.value = String(schema.default);
    const node = el('div', {class: 'field'}, el('label', {for: id, text: title}), input, hint, err);
    return {node, read: () => {
      clear(input);
      const raw = input.value;
      if (raw === '') {
        if (required) fail(input, 'is required');
        return undefined;
      }
      if (!numeric) return raw;
      const n = Number(raw);
      if (!Number.isFinite(n) || (type === 'integer' && !Number.isInteger(n))) fail(input, type === 'integer' ? 'must be a whole number' : 'must be a number');
      if (schema.minimum !== undefined && n < schema.minimum) fail(input, 'must be at least ' + schema.minimum);
      if (schema.maximum !== undefined && n > schema.maximum) fail(input, 'must be at most ' + schema.maximum);
      return n;
    }};
  }
  // Anything else (no type, unions, objects without properties, arrays of
  // objects): JSON, checked here.
  const input = el('textarea', {id, rows: 3, spellcheck: 'false', 'aria-describedby': described, class: 'mono'});
  if (has) input.value = JSON.stringify(schema.default, null, 2);
  const node = el('div', {class: 'field'}, el('label', {for: id, text: title + ' (JSON)'}), input, hint, err);
  return {node, read: () => {
    clear(input);
    if (input.value.trim() === '') {
      if (required) fail(input, 'is required');
      return undefined;
    }
    try { return JSON.parse(input.value); } catch (e) { return fail(input, 'is not valid JSON: ' + e.message); }
  }};
}

function isSimple(s) {
  const t = Array.isArray(s.type) ? s.type.find((x) => x !== 'null') : s.type;
  return ['string', 'number', 'integer', 'boolean'].includes(t) || (t === 'object' && s.properties);
}

// setValue fills a generated scalar input (for array defaults).
function setValue(node, v) {
  const input = node.querySelector('input, select, textarea');
  if (!input) return;
  if (input.type === 'checkbox') input.checked = !!v;
  else if (input.tagName !== 'SELECT') input.value = typeof v === 'object' ? JSON.stringify(v) : String(v);
}

// objectFields adds one input per property of an object schema to parent
// and returns the reader of the whole object.
function objectFields(schema, parent, path) {
  const req = new Set(schema.required || []);
  const readers = [];
  for (const [name, prop] of Object.entries(schema.properties || {})) {
    const f = schemaField(prop, name, req.has(name), path ? path + '.' + name : name);
    parent.append(f.node);
    readers.push([name, f.read]);
  }
  return () => {
    const out = {};
    let problem = null;
    for (const [name, read] of readers) {
      try {
        const v = read();
        if (v !== undefined) out[name] = v;
      } catch (e) {
        if (!(e instanceof FieldProblem)) throw e;
        problem = problem || e;
      }
    }
    if (problem) throw problem;
    return out;
  };
}

// schemaForm fills container with the inputs of an object schema and
// returns its reader.
function schemaForm(schema, container) {
  if (!schema || typeof schema !== 'object') schema = {};
  if (schema.type === 'object' || schema.properties) {
    if (!schema.properties || !Object.keys(schema.properties).length) {
      container.append(el('p', {class: 'hint', text: 'No arguments.'}));
      return () => ({});
    }
    return objectFields(schema, container, '');
  }
  const f = schemaField(schema, 'arguments', true, 'arguments');
  container.append(f.node);
  return f.read;
}

// ---- Start -------------------------------------------------------------------------

async function logout() {
  try { await fetch('/ui/logout', {method: 'POST', headers: {[CSRF_HEADER]: csrf}, credentials: 'same-origin'}); } catch (e) { /* gone anyway */ }
  try { localStorage.removeItem(CSRF_KEY); } catch (e) { /* nothing kept */ }
  csrf = '';
  loggedOut();
}

function wire() {
  for (const b of document.querySelectorAll('#nav button')) {
    b.addEventListener('click', () => (b.dataset.view === 'form' ? openForm(null) : show(b.dataset.view)));
  }
  $('empty-add').addEventListener('click', () => openForm(null));
  $('empty-import').addEventListener('click', () => show('import'));
  $('logout').addEventListener('click', logout);
  $('f-transport').addEventListener('change', syncTransport);
  $('add-env').addEventListener('click', () => kvRow($('f-env'), 'env').focus());
  $('add-header').addEventListener('click', () => kvRow($('f-headers'), 'headers').focus());
  $('server-form').addEventListener('submit', saveForm);
  $('test-draft').addEventListener('click', testDraft);
  $('cancel-form').addEventListener('click', () => { editing = null; show('servers'); });
  $('server-filter').addEventListener('input', filterRows);
  $('server-status').addEventListener('change', filterRows);
  for (const th of document.querySelectorAll('#servers th[data-sort]')) {
    th.querySelector('button').addEventListener('click', () => {
      const key = th.dataset.sort;
      sortDir = key === sortKey ? -sortDir : 1;
      sortKey = key;
      sortRows();
    });
  }
  $('server-back').addEventListener('click', () => show('servers'));
  document.addEventListener('click', (ev) => { if (!ev.target.closest('details.menu')) closeMenus(); });
  $('import-form').addEventListener('submit', (ev) => { ev.preventDefault(); runImport(false); });
  $('import-preview').addEventListener('click', () => runImport(true));
  $('tool-search').addEventListener('input', renderTools);
  $('tool-server').addEventListener('change', renderTools);
  $('call-form').addEventListener('submit', runCall);
  $('call-cancel').addEventListener('click', stopCall);
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && callAbort) stopCall();
    if (ev.key === 'Escape') closeMenus();
  });
}

async function start() {
  wire();
  takeCSRF();
  try {
    await loadServers();
  } catch (e) {
    if (e.status !== 401) {
      notice('Cannot reach switchboard: ' + describe(e.info));
      show('login');
    }
    return;
  }
  started = true;
  $('nav').hidden = false;
  $('logout').hidden = !csrf;
  $('live').hidden = false;
  document.body.dataset.state = 'app';
  show('servers', {focus: false});
  followEvents();
}

start();
