// The tool bench of Switchboard's web page: the tool list on the left, the
// call form on the right, and a history of this browser's calls with the
// JSON-RPC request and response of each, which can be copied as a
// "switchboard call" or a curl command. It loads before app.js and uses
// its helpers (el, api, sseEvents, schemaForm, ...) only once the page
// runs; app.js wires the search box and the call form to it.
'use strict';

// ---- Tools -----------------------------------------------------------------

let tools = [];
let toolsStale = true;

// The daemon's ranked search (GET /api/v1/tools?search=Q&limit=N answers
// {"tools": [{server, name, description, score}]}) is used when its answer
// has scores; a daemon that ignores the parameter answers every tool
// without one, and the list is then filtered here, as it is while the
// answer is on its way.
const SEARCH_LIMIT = 50;
let searchSeq = 0, searchTimer = 0;
let ranked = null; // {q, hits} of the last scored answer
let searchUnsupported = false;

function refreshToolServers() {
  const sel = $('tool-server');
  const keep = sel.value;
  const names = [...servers.values()].filter((s) => s.view.runtime.status === 'connected').map((s) => s.view.name).sort();
  sel.replaceChildren(el('option', {value: ''}, 'Every connected server'), ...names.map((n) => el('option', {value: n}, n)));
  if (keep && !names.includes(keep)) sel.append(el('option', {value: keep}, keep + ' (not connected)'));
  sel.value = keep;
}

async function loadTools() {
  toolsStale = false;
  try {
    tools = (await api('GET', '/api/v1/tools')).tools;
  } catch (e) {
    tools = [];
    $('tools-count').textContent = describe(e.info);
    return;
  }
  ranked = null;
  renderTools();
}

function renderTools() {
  const q = $('tool-search').value.trim();
  const server = $('tool-server').value;
  let shown, how = '';
  if (q && ranked && ranked.q === q) {
    const byKey = new Map(tools.map((t) => [t.server + '\n' + t.name, t]));
    shown = ranked.hits.map((h) => byKey.get(h.server + '\n' + h.name)).filter((t) => t && (!server || t.server === server));
    how = ', best first';
  } else {
    const lq = q.toLowerCase();
    shown = tools.filter((t) => (!server || t.server === server) &&
      (!lq || t.name.toLowerCase().includes(lq) || (t.description || '').toLowerCase().includes(lq) || t.address.toLowerCase().includes(lq)));
    if (q && !searchUnsupported) {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(() => searchTools(q), 150);
    }
  }
  $('tools-count').textContent = shown.length + ' of ' + tools.length + ' tools' + how;
  const open = callTool && callTool.address;
  $('tools').replaceChildren(...shown.map((t) => el('li', {},
    el('button', {type: 'button', 'data-tool': t.address, 'aria-current': t.address === open ? 'true' : null, onclick: () => openCall(t)}, t.address),
    t.description ? el('p', {class: 'desc', text: t.description}) : null)));
}

async function searchTools(q) {
  const seq = ++searchSeq;
  let hits;
  try {
    hits = (await api('GET', '/api/v1/tools?search=' + encodeURIComponent(q) + '&limit=' + SEARCH_LIMIT)).tools || [];
  } catch (e) {
    return; // the local filter stands
  }
  if (seq !== searchSeq || $('tool-search').value.trim() !== q) return;
  if (hits.length && hits.every((h) => typeof h.score === 'number')) {
    ranked = {q, hits};
    renderTools();
  } else if (hits.length) {
    searchUnsupported = true;
  }
}

// ---- Calls --------------------------------------------------------------------

let callTool = null, readArgs = null, callAbort = null;

function openCall(t) {
  stopCall();
  callTool = t;
  $('bench-empty').hidden = true;
  $('call-panel').hidden = false;
  $('call-title').textContent = 'Call ' + t.address;
  $('call-desc').textContent = t.description || '';
  const args = $('call-args');
  args.replaceChildren(el('legend', {text: 'Arguments'}));
  let schema = t.input_schema;
  if (typeof schema === 'string') { try { schema = JSON.parse(schema); } catch (e) { schema = {}; } }
  readArgs = schemaForm(schema, args);
  $('call-progress').hidden = true;
  $('call-elicit').hidden = true;
  $('call-result').replaceChildren();
  $('copy-out').hidden = true;
  for (const b of document.querySelectorAll('#tools button[data-tool]')) {
    if (b.dataset.tool === t.address) b.setAttribute('aria-current', 'true');
    else b.removeAttribute('aria-current');
  }
  $('call-title').focus();
}

function stopCall() {
  if (callAbort) callAbort.abort();
}

function optInt(id) {
  const raw = $(id).value.trim();
  if (raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) {
    $(id).setAttribute('aria-invalid', 'true');
    throw new FieldProblem($(id), 'a timeout is a whole, positive number of milliseconds');
  }
  $(id).removeAttribute('aria-invalid');
  return n;
}

// readCall returns the body of POST /api/v1/call that the form describes,
// or shows why there is none and returns null.
function readCall() {
  try {
    const options = {};
    const t = optInt('o-timeout'), total = optInt('o-total');
    if (t) options.timeout_ms = t;
    if (total) options.max_total_timeout_ms = total;
    if ($('o-reset').checked) options.reset_timeout_on_progress = true;
    return {tool: callTool.address, arguments: readArgs(), options};
  } catch (e) {
    if (!(e instanceof FieldProblem)) throw e;
    $('call-result').replaceChildren(el('p', {class: 'problem', role: 'alert', text: 'Not sent: ' + e.message}));
    if (e.field && e.field.focus) e.field.focus();
    return null;
  }
}

async function runCall(ev) {
  ev.preventDefault();
  if (!callTool || callAbort) return;
  const out = $('call-result');
  const body = readCall();
  if (!body) return;
  out.replaceChildren(el('p', {'data-role': 'call-state', text: 'Calling ' + callTool.address + '…'}));
  const bar = $('call-bar');
  bar.max = 1; bar.value = 0;
  $('call-pct').textContent = '';
  $('call-msg').textContent = '';
  delete $('call-progress').dataset.pct;
  // The bar shows with the first progress report: a call that reports
  // none has no bar.
  $('call-progress').hidden = true;
  $('call-elicit').hidden = true;
  callAbort = new AbortController();
  $('call-run').disabled = true;
  $('call-run').setAttribute('aria-busy', 'true');
  $('call-cancel').disabled = false;
  const address = callTool.address;
  const h = historyStart(callTool, body);
  let ended = false;
  try {
    const resp = await api('POST', '/api/v1/call', body, {stream: true, accept: 'text/event-stream', signal: callAbort.signal});
    const type = resp.headers.get('Content-Type') || '';
    if (!type.includes('text/event-stream')) {
      const b = await resp.json();
      if (b.error) { renderCallError(b.error); historyEnd(h, 'failed', {error: b.error}); } else { renderResult(b.result); historyEnd(h, resultStatus(b.result), {result: JSON.stringify(b.result)}); }
      ended = true;
    } else {
      for await (const e of sseEvents(resp.body)) {
        const data = JSON.parse(e.data);
        if (e.event === 'progress') { showProgress(data); historyProgress(h, data); }
        else if (e.event === 'elicitation') showElicitation(data);
        else if (e.event === 'result') { renderResult(data); ended = true; historyEnd(h, resultStatus(data), {result: e.data}); }
        else if (e.event === 'error') { renderCallError(data); ended = true; historyEnd(h, 'failed', {error: data}); }
      }
      if (!ended) {
        const info = {code: 'connection_lost', message: 'the stream ended before the call did'};
        renderCallError(info);
        historyEnd(h, 'failed', {error: info});
      }
    }
  } catch (e) {
    if (e.name === 'AbortError') {
      out.replaceChildren(el('p', {class: 'problem', 'data-role': 'call-state', 'data-outcome': 'cancelled',
        text: 'Cancelled: ' + address + ' was stopped, and its server was told.'}));
      announce('call cancelled');
      historyEnd(h, 'cancelled', {});
    } else {
      const info = e.info || {code: 'network', message: String(e.message || e)};
      if (e.status !== 401) renderCallError(info);
      historyEnd(h, 'failed', {error: info});
    }
  } finally {
    callAbort = null;
    $('call-run').disabled = false;
    $('call-run').removeAttribute('aria-busy');
    $('call-cancel').disabled = true;
    $('call-elicit').hidden = true;
  }
}

function resultStatus(res) { return res && res.isError ? 'tool_error' : 'ok'; }

function showProgress(p) {
  const bar = $('call-bar');
  $('call-progress').hidden = false;
  if (p.total > 0) {
    bar.max = p.total;
    bar.value = Math.min(p.progress, p.total);
    const pct = Math.round(100 * Math.min(p.progress, p.total) / p.total);
    $('call-pct').textContent = pct + '%';
    $('call-progress').dataset.pct = String(pct);
  } else {
    bar.removeAttribute('value');
    $('call-pct').textContent = String(p.progress);
  }
  $('call-msg').textContent = p.message || '';
}

// renderResult shows an MCP CallToolResult: each content as what it is,
// the structured content as JSON; a result with isError as an error.
function renderResult(res) {
  res = res || {};
  const box = el('div', {class: 'result' + (res.isError ? ' is-error' : ''), 'data-role': 'result', 'data-is-error': res.isError ? 'true' : 'false'});
  box.append(el('h4', {text: res.isError ? 'The tool reported an error' : 'Result'}));
  for (const c of res.content || []) box.append(renderContent(c));
  if (res.structuredContent !== undefined) {
    box.append(el('details', {open: true}, el('summary', {}, 'Structured content'),
      el('pre', {'data-role': 'structured', text: JSON.stringify(res.structuredContent, null, 2)})));
  }
  $('call-result').replaceChildren(box);
  announce(res.isError ? 'The tool reported an error' : 'Call finished');
}

function renderContent(c) {
  switch (c.type) {
    case 'text':
      return el('pre', {'data-role': 'text', text: c.text});
    case 'image':
      if (/^image\/[\w.+-]+$/.test(c.mimeType || '')) {
        return el('img', {src: 'data:' + c.mimeType + ';base64,' + c.data, alt: 'an image the tool returned (' + c.mimeType + ')'});
      }
      break;
    case 'audio':
      if (/^audio\/[\w.+-]+$/.test(c.mimeType || '')) {
        return el('audio', {controls: true, src: 'data:' + c.mimeType + ';base64,' + c.data, 'aria-label': 'audio the tool returned'});
      }
      break;
    case 'resource': {
      const r = c.resource || {};
      const fig = el('figure', {'data-role': 'resource'}, el('figcaption', {}, 'Resource ', el('code', {text: r.uri || ''}), r.mimeType ? ' (' + r.mimeType + ')' : ''));
      if (typeof r.text === 'string') fig.append(el('pre', {text: r.text}));
      else if (typeof r.blob === 'string') fig.append(el('p', {text: 'binary, ' + Math.floor(r.blob.length * 3 / 4) + ' bytes'}));
      return fig;
    }
    case 'resource_link':
      return el('p', {'data-role': 'resource-link'}, 'Link to resource ', el('code', {text: c.uri || ''}), c.name ? ' (' + c.name + ')' : '');
  }
  return el('pre', {text: JSON.stringify(c, null, 2)});
}

function renderCallError(info) {
  $('call-result').replaceChildren(el('div', {class: 'result is-error', 'data-role': 'call-error'},
    el('h4', {text: 'The call failed'}), el('p', {text: describe(info)})));
  announce('The call failed');
}

// showElicitation asks the person what the server asks, with a form made
// from its schema, and posts the answer.
function showElicitation(req) {
  const box = $('call-elicit');
  box.hidden = false;
  const form = el('form', {novalidate: true, 'aria-labelledby': 'elicit-title'});
  form.append(el('h4', {id: 'elicit-title', text: 'The server asks'}), el('p', {'data-role': 'elicit-message', text: req.message || ''}));
  let read = () => undefined;
  if (req.mode === 'url') {
    form.append(el('p', {}, 'It asks you to open ', el('a', {href: req.url, target: '_blank', rel: 'noopener noreferrer', text: req.url})));
  } else {
    let schema = req.requested_schema;
    if (typeof schema === 'string') { try { schema = JSON.parse(schema); } catch (e) { schema = {}; } }
    read = schemaForm(schema || {}, form);
  }
  const status = el('p', {class: 'problem', role: 'alert', hidden: true});
  const answer = async (action) => {
    let content;
    if (action === 'accept') {
      try { content = read(); } catch (e) {
        if (!(e instanceof FieldProblem)) throw e;
        if (e.field && e.field.focus) e.field.focus();
        return;
      }
    }
    for (const b of form.querySelectorAll('button')) b.disabled = true;
    try {
      await api('POST', '/api/v1/elicitations/' + encodeURIComponent(req.id), {action, content});
      box.hidden = true;
      box.replaceChildren();
      // The result may have come before this answer's response did.
      if (!$('call-result').querySelector('.result')) {
        $('call-result').replaceChildren(el('p', {'data-role': 'call-state', text: 'Answered (' + action + '); waiting for the result…'}));
      }
    } catch (e) {
      status.textContent = describe(e.info);
      status.hidden = false;
      for (const b of form.querySelectorAll('button')) b.disabled = false;
    }
  };
  form.addEventListener('submit', (ev) => { ev.preventDefault(); answer('accept'); });
  form.append(status, el('div', {class: 'actions'},
    el('button', {type: 'submit', class: 'primary', 'data-answer': 'accept'}, 'Accept'),
    el('button', {type: 'button', 'data-answer': 'decline', onclick: () => answer('decline')}, 'Decline'),
    el('button', {type: 'button', 'data-answer': 'cancel', onclick: () => answer('cancel')}, 'Cancel')));
  box.replaceChildren(form);
  const first = form.querySelector('input, select, textarea, button');
  if (first) first.focus();
  announce('The server asks: ' + (req.message || 'a question'));
}

// ---- History: this browser's last calls, in localStorage ------------------------

// HISTORY_MAX bounds the calls kept; HISTORY_RESPONSE_CHARS the response
// kept of each (the rest is cut, and the entry says so), so that a few big
// results cannot fill the origin's storage.
const HISTORY_KEY = 'switchboard.calls';
const HISTORY_MAX = 50;
const HISTORY_RESPONSE_CHARS = 64 * 1024;

let history_ = null; // newest first

function historyLoad() {
  if (history_) return history_;
  try { history_ = JSON.parse(localStorage.getItem(HISTORY_KEY) || '[]'); } catch (e) { history_ = []; }
  if (!Array.isArray(history_)) history_ = [];
  // A call that was running when the page went away has no end to show.
  for (const h of history_) if (h.status === 'running') h.status = 'interrupted';
  return history_;
}

function historySave() {
  const list = historyLoad();
  list.splice(HISTORY_MAX);
  for (;;) {
    try {
      localStorage.setItem(HISTORY_KEY, JSON.stringify(list));
      return;
    } catch (e) {
      if (!list.length) return; // no storage: this tab only
      list.pop(); // over the quota: drop the oldest
    }
  }
}

// rpcRequest is the JSON-RPC request Switchboard sends the tool's server
// for a call: the tool's name on its server and the arguments. The id and
// the _meta (progress token) are the upstream session's own and not shown.
function rpcRequest(t, body) {
  const params = {name: t.name};
  if (body.arguments !== undefined) params.arguments = body.arguments;
  return JSON.stringify({jsonrpc: '2.0', method: 'tools/call', params}, null, 2);
}

// rpcResponse is the JSON-RPC response the server sent: its result as the
// server wrote it (the API passes it through), indented. A call that
// failed has the API's error instead, which says why there is no result.
function rpcResponse(end) {
  if (end.result !== undefined) {
    let result;
    try { result = JSON.parse(end.result); } catch (e) { return end.result; }
    return JSON.stringify({jsonrpc: '2.0', result}, null, 2);
  }
  if (end.error) return JSON.stringify({error: end.error}, null, 2);
  return '';
}

function historyStart(t, body) {
  const h = {
    id: Date.now().toString(36) + Math.random().toString(36).slice(2, 6),
    at: new Date().toISOString(), tool: t.address, body, status: 'running', ms: null,
    progress: null, request: rpcRequest(t, body), response: '', truncated: false,
    t0: performance.now(),
  };
  historyLoad().unshift(h);
  historySave();
  renderHistory(h.id);
  return h;
}

function historyProgress(h, p) {
  h.progress = {count: ((h.progress && h.progress.count) || 0) + 1, progress: p.progress, total: p.total || 0, message: p.message || ''};
  const li = document.querySelector('#history li[data-call="' + h.id + '"] [data-role="call-progress"]');
  if (li) li.textContent = progressText(h.progress);
}

function historyEnd(h, status, end) {
  h.status = status;
  h.ms = Math.round(performance.now() - h.t0);
  let resp = rpcResponse(end);
  if (resp.length > HISTORY_RESPONSE_CHARS) {
    resp = resp.slice(0, HISTORY_RESPONSE_CHARS);
    h.truncated = true;
  }
  h.response = resp;
  historySave();
  renderHistory(h.id);
}

function progressText(p) {
  if (!p) return 'no progress reported';
  const last = p.total > 0 ? Math.round(100 * Math.min(p.progress, p.total) / p.total) + '%' : String(p.progress);
  return p.count + ' progress report' + (p.count === 1 ? '' : 's') + ', the last ' + last + (p.message ? ': ' + p.message : '');
}

const STATUS_TEXT = {running: 'running', ok: 'ok', tool_error: 'tool error', failed: 'failed', cancelled: 'cancelled', interrupted: 'interrupted'};

// renderHistory redraws the history, the entry open (if any) unfolded.
function renderHistory(open) {
  const list = historyLoad();
  $('history-empty').hidden = list.length > 0;
  $('history-clear').hidden = list.length === 0;
  $('history').replaceChildren(...list.map((h) => {
    const d = el('details', {open: h.id === open || undefined},
      el('summary', {},
        el('span', {class: 'call-status ' + h.status, 'data-role': 'call-status', text: STATUS_TEXT[h.status] || h.status}), ' ',
        el('code', {text: h.tool}), ' ',
        el('span', {class: 'hint-inline', 'data-role': 'call-duration', text: h.ms === null ? '…' : h.ms + ' ms'}), ' ',
        el('time', {class: 'hint-inline', datetime: h.at, text: new Date(h.at).toLocaleTimeString()})),
      el('p', {class: 'hint', 'data-role': 'call-progress', text: progressText(h.progress)}),
      el('h4', {text: 'JSON-RPC request'}),
      el('pre', {class: 'rpc', 'data-role': 'rpc-request', text: h.request}),
      el('h4', {text: 'JSON-RPC response' + (h.truncated ? ' (cut at ' + HISTORY_RESPONSE_CHARS / 1024 + ' KiB)' : '')}),
      el('pre', {class: 'rpc', 'data-role': 'rpc-response', text: h.response || (h.status === 'running' ? '(waiting)' : '(none)')}),
      el('div', {class: 'actions'},
        el('button', {type: 'button', 'data-copy': 'cli', onclick: (ev) => copyCommand(ev.target, cliCommand(h.body))}, 'Copy as switchboard call'),
        el('button', {type: 'button', 'data-copy': 'curl', onclick: (ev) => copyCommand(ev.target, curlCommand(h.body))}, 'Copy as curl')));
    return el('li', {'data-call': h.id, 'data-status': h.status}, d);
  }));
}

function clearHistory() {
  history_ = [];
  try { localStorage.removeItem(HISTORY_KEY); } catch (e) { /* nothing kept */ }
  renderHistory();
}

// ---- Copy as a command ----------------------------------------------------------

// sh quotes s for a POSIX shell when it needs quoting.
function sh(s) {
  s = String(s);
  return /^[\w@%+=:,./-]+$/.test(s) ? s : "'" + s.replace(/'/g, "'\\''") + "'";
}

// cliCommand is "switchboard call" for body; the CLI finds its
// credential itself (SWITCHBOARD_TOKEN, or the one serve generated).
function cliCommand(body) {
  const parts = ['switchboard', 'call', '--addr', sh(location.origin), sh(body.tool)];
  if (body.arguments !== undefined && (typeof body.arguments !== 'object' || Object.keys(body.arguments).length)) {
    parts.push(sh(JSON.stringify(body.arguments)));
  }
  const o = body.options || {};
  if (o.timeout_ms) parts.push('--timeout', o.timeout_ms + 'ms');
  if (o.max_total_timeout_ms) parts.push('--max-total', o.max_total_timeout_ms + 'ms');
  if (o.reset_timeout_on_progress) parts.push('--reset-on-progress');
  return parts.join(' ');
}

// curlCommand is the same call with curl against the API, its events as
// they come; the credential is a shell variable, never written out.
function curlCommand(body) {
  const b = {tool: body.tool};
  if (body.arguments !== undefined) b.arguments = body.arguments;
  if (body.options && Object.keys(body.options).length) b.options = body.options;
  return ['curl -sS -N ' + sh(location.origin + '/api/v1/call'),
    '  -H "Authorization: Bearer $SWITCHBOARD_TOKEN"',
    "  -H 'Content-Type: application/json' -H 'Accept: text/event-stream'",
    '  --data-raw ' + sh(JSON.stringify(b))].join(' \\\n');
}

// copyCommand puts text on the clipboard and shows it below the call
// form, where it can be selected if the browser refuses the clipboard.
async function copyCommand(button, text) {
  const out = $('copy-out');
  $('copy-text').textContent = text;
  out.hidden = false;
  let ok = false;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch (e) { /* no clipboard here: the text is shown */ }
  $('copy-state').textContent = ok ? 'Copied:' : 'Copy it from here:';
  announce(ok ? 'Copied' : 'The command is shown below the call form');
  if (button && button.focus) button.focus();
}

function copyForm(kind) {
  if (!callTool || !readArgs) return;
  const body = readCall();
  if (!body) return;
  copyCommand(null, kind === 'curl' ? curlCommand(body) : cliCommand(body));
}

// app.js has run by DOMContentLoaded: wire what is the bench's own.
document.addEventListener('DOMContentLoaded', () => {
  $('copy-cli').addEventListener('click', () => copyForm('cli'));
  $('copy-curl').addEventListener('click', () => copyForm('curl'));
  $('history-clear').addEventListener('click', clearHistory);
  renderHistory();
});
