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

const views = ['loading', 'login', 'servers', 'form', 'tools', 'toolsets', 'import'];
let current = 'loading';

function show(view, {focus = true} = {}) {
  for (const v of views) $('view-' + v).hidden = v !== view;
  for (const b of document.querySelectorAll('#nav button')) {
    if (b.dataset.view === view) b.setAttribute('aria-current', 'page');
    else b.removeAttribute('aria-current');
  }
  if (current === 'tools' && view !== 'tools') stopCall();
  current = view;
  if (view === 'tools') loadTools();
  if (view === 'toolsets') loadToolsets(); // toolsets.js
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
  for (const s of servers.values()) stopLogs(s);
  $('nav').hidden = true;
  $('logout').hidden = true;
  $('live').hidden = true;
  document.body.dataset.state = 'login';
  show('login');
}

// ---- Servers ------------------------------------------------------------

// servers maps a name to {view, li, parts, logsTimer}.
const servers = new Map();

async function loadServers() {
  const body = await api('GET', '/api/v1/servers');
  const seen = new Set();
  for (const v of body.servers) {
    seen.add(v.name);
    upsert(v);
  }
  for (const name of [...servers.keys()]) if (!seen.has(name)) removeServer(name);
  sortCards();
}

function sortCards() {
  const ul = $('servers');
  const names = [...servers.keys()].sort();
  for (const n of names) ul.append(servers.get(n).li);
  $('servers-empty').hidden = names.length > 0;
}

function upsert(v) {
  let s = servers.get(v.name);
  if (!s) {
    s = makeCard(v.name);
    servers.set(v.name, s);
    $('servers').append(s.li);
    $('servers-empty').hidden = true;
  }
  const before = s.view && s.view.runtime.status;
  s.view = v;
  renderCard(s);
  if (before && before !== v.runtime.status) announce(v.name + ' is ' + v.runtime.status);
  refreshToolServers();
}

function removeServer(name) {
  const s = servers.get(name);
  if (!s) return;
  stopLogs(s);
  s.li.remove();
  servers.delete(name);
  $('servers-empty').hidden = servers.size > 0;
  refreshToolServers();
}

function makeCard(name) {
  const p = {};
  const id = 'srv-' + name;
  const li = el('li', {class: 'card', 'data-server': name, 'aria-labelledby': id + '-name'});
  p.status = el('span', {class: 'badge', 'data-role': 'status'});
  li.append(el('div', {class: 'card-head'}, el('h3', {id: id + '-name', text: name}), p.status));
  const facts = el('dl', {class: 'facts'});
  const fact = (label, role) => {
    const dd = el('dd', {'data-role': role});
    facts.append(el('dt', {text: label}), dd);
    return dd;
  };
  p.transport = fact('Transport', 'transport');
  p.tools = fact('Tools', 'tool-count');
  p.reconnects = fact('Reconnects', 'reconnects');
  p.sandbox = fact('Sandbox', 'sandbox');
  p.pid = fact('Process', 'pid');
  p.retry = fact('Next retry', 'next-retry');
  li.append(facts);
  p.error = el('p', {class: 'problem', 'data-role': 'error', hidden: true});
  p.drop = el('p', {class: 'drop', 'data-role': 'last-drop', hidden: true});
  li.append(p.error, p.drop);

  const s = {li, parts: p, view: null, logsTimer: 0};
  const act = (label, fn, extra) => el('button', Object.assign({type: 'button', onclick: () => fn(s)}, extra || {}), label);
  p.toggle = act('Disable', toggleEnabled, {'data-action': 'toggle'});
  p.restart = act('Restart', restartServer, {'data-action': 'restart'});
  p.authorize = act('Authorize', authorizeServer, {'data-action': 'authorize', hidden: true});
  p.test = act('Test', testStored, {'data-action': 'test'});
  p.toolsBtn = act('Tools', (s) => { $('tool-server').value = s.view.name; show('tools'); }, {'data-action': 'tools'});
  p.logs = act('Logs', toggleLogs, {'data-action': 'logs', 'aria-expanded': 'false'});
  p.edit = act('Edit', (s) => openForm(s.view), {'data-action': 'edit'});
  p.del = act('Delete', deleteServer, {'data-action': 'delete', class: 'danger'});
  for (const b of [p.toggle, p.restart, p.authorize, p.test, p.toolsBtn, p.logs, p.edit, p.del]) {
    b.setAttribute('aria-describedby', id + '-name');
  }
  li.append(el('div', {class: 'actions'}, p.toggle, p.restart, p.authorize, p.test, p.toolsBtn, p.logs, p.edit, p.del));
  p.panel = el('div', {class: 'panel', 'data-role': 'panel', 'aria-live': 'polite', hidden: true});
  li.append(p.panel);
  return s;
}

function renderCard(s) {
  const v = s.view, rt = v.runtime, p = s.parts;
  p.status.textContent = rt.status;
  p.status.className = 'badge ' + rt.status;
  s.li.dataset.status = rt.status;
  p.transport.textContent = v.transport + (rt.protocol_version ? ' · ' + rt.protocol_version : '');
  p.tools.textContent = String(rt.tool_count || 0);
  p.reconnects.textContent = String(rt.reconnects || 0);
  p.sandbox.textContent = rt.sandbox ? sandboxText(rt.sandbox) : 'no';
  p.pid.textContent = rt.pid ? 'pid ' + rt.pid : '–';
  p.pid.dataset.pid = rt.pid || '';
  if (rt.next_retry_at) {
    p.retry.dataset.at = rt.next_retry_at;
  } else {
    delete p.retry.dataset.at;
  }
  tickRetry(p.retry);
  p.error.hidden = !rt.error;
  if (rt.error) {
    p.error.textContent = 'Error in phase ' + rt.error.phase + ' (' + rt.error.code + '): ' + rt.error.message;
  }
  p.drop.hidden = !rt.last_drop;
  if (rt.last_drop) {
    p.drop.textContent = 'Last drop ' + when(rt.last_drop.at) + ' (' + rt.last_drop.code + '): ' + rt.last_drop.message;
  }
  const enabled = v.enabled === undefined || v.enabled;
  p.toggle.textContent = enabled ? 'Disable' : 'Enable';
  p.restart.disabled = !enabled;
  // A person authorizes a server of grant authorization_code (the default).
  p.authorize.hidden = !v.oauth || v.oauth.grant === 'client_credentials';
  p.authorize.disabled = !enabled;
  p.toolsBtn.disabled = rt.status !== 'connected';
  p.logs.hidden = v.transport !== 'stdio';
}

function sandboxText(sb) {
  if (typeof sb !== 'object') return String(sb);
  const parts = [];
  for (const [k, val] of Object.entries(sb)) {
    parts.push(k + ': ' + (typeof val === 'object' ? JSON.stringify(val) : String(val)));
  }
  return parts.join(', ') || 'yes';
}

function when(t) {
  if (!t) return '';
  const d = new Date(t);
  return isNaN(d) ? String(t) : d.toLocaleTimeString();
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
}, 1000);

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
// then connects the server (the card turns connected by itself). The window
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

function deleteServer(s) {
  const b = s.parts.del;
  if (!b.classList.contains('confirm')) {
    b.classList.add('confirm');
    b.textContent = 'Really delete?';
    setTimeout(() => { b.classList.remove('confirm'); b.textContent = 'Delete'; }, 5000);
    return;
  }
  return action(s, async () => {
    await api('DELETE', '/api/v1/servers/' + encodeURIComponent(s.view.name) + '?version=' + s.view.version);
    removeServer(s.view.name);
    announce(s.view.name + ' deleted');
  });
}

function testStored(s) {
  const panel = s.parts.panel;
  stopLogs(s);
  panel.hidden = false;
  panel.replaceChildren(el('p', {text: 'Testing ' + s.view.name + ' in a fresh session…'}));
  s.parts.test.disabled = true;
  return action(s, async () => {
    try {
      const res = await api('POST', '/api/v1/servers/' + encodeURIComponent(s.view.name) + '/test');
      renderTest(res, panel, s.view.name);
    } catch (e) {
      panel.replaceChildren(el('p', {class: 'problem', text: describe(e.info)}));
    } finally {
      s.parts.test.disabled = false;
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

function toggleLogs(s) {
  if (s.logsTimer) {
    stopLogs(s);
    s.parts.panel.hidden = true;
    return;
  }
  const pre = el('pre', {class: 'logs', 'data-role': 'logs', tabindex: '0', 'aria-label': 'stderr of ' + s.view.name});
  s.parts.panel.replaceChildren(el('h4', {text: 'stderr of ' + s.view.name + ', following'}), pre);
  s.parts.panel.hidden = false;
  s.parts.logs.setAttribute('aria-expanded', 'true');
  s.parts.logs.textContent = 'Hide logs';
  const name = s.view.name;
  // The logs route has no follow mode here: read it once a second while
  // the panel is open.
  const poll = async () => {
    try {
      const body = await api('GET', '/api/v1/servers/' + encodeURIComponent(name) + '/logs');
      const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      pre.textContent = body.lines.length ? body.lines.join('\n') : '(nothing yet)';
      if (atEnd) pre.scrollTop = pre.scrollHeight;
    } catch (e) {
      pre.textContent = describe(e.info);
    }
  };
  poll();
  s.logsTimer = setInterval(poll, 1000);
}

function stopLogs(s) {
  if (!s.logsTimer) return;
  clearInterval(s.logsTimer);
  s.logsTimer = 0;
  s.parts.logs.setAttribute('aria-expanded', 'false');
  s.parts.logs.textContent = 'Logs';
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
    sortCards();
  } catch (e) {
    if (e.status === 404) removeServer(name);
  }
}

function setLive(on, text) {
  const l = $('live');
  l.textContent = text;
  l.className = 'live ' + (on ? 'on' : 'off');
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
    sortCards();
    announce((editing ? 'Saved ' : 'Created ') + v.name);
    editing = null;
    show('servers');
    const s = servers.get(v.name);
    if (s) s.li.scrollIntoView({block: 'nearest'});
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
  $('import-form').addEventListener('submit', (ev) => { ev.preventDefault(); runImport(false); });
  $('import-preview').addEventListener('click', () => runImport(true));
  $('tool-search').addEventListener('input', renderTools);
  $('tool-server').addEventListener('change', renderTools);
  $('call-form').addEventListener('submit', runCall);
  $('call-cancel').addEventListener('click', stopCall);
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && callAbort) stopCall();
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
