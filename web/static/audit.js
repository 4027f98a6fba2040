// The audit log on Switchboard's web page: the entries of GET
// /api/v1/audit (docs/audit.md), newest first, narrowed by the API's
// filters, and, while "Follow" is on and the view is shown, the entries
// after the newest one shown, polled every second as "switchboard audit
// -f" does. It loads before app.js and uses its helpers (el, api,
// describe, announce, show, current) only once the page runs.
'use strict';

// auditMaxRows bounds the rows the table keeps: a followed log drops its
// oldest rows beyond it. It is also the most one request asks for.
const auditMaxRows = 500;
const auditPollMs = 1000;

// auditFilters names the filter inputs after the API's query parameters.
const auditFilters = {server: 'au-server', tool: 'au-tool', principal: 'au-principal', outcome: 'au-outcome', since: 'au-since', until: 'au-until'};

let auditLastID = 0; // the newest entry's id shown, which follow asks after
let auditShown = ''; // the filters of the rows shown, which follow keeps to
let auditRound = 0; // bumped by each load, so that an older poll stops
let auditTimer = 0;

// openAudit shows the audit view with the filters given (the others
// cleared): a server's detail view opens it so, filtered to the server.
function openAudit(filters) {
  for (const [k, id] of Object.entries(auditFilters)) $(id).value = (filters && filters[k]) || '';
  show('audit');
}

function auditQuery() {
  const q = new URLSearchParams();
  for (const [k, id] of Object.entries(auditFilters)) {
    const v = $(id).value.trim();
    if (v) q.set(k, v);
  }
  return q;
}

// loadAudit reads the newest entries the filters select and, if following,
// starts the polls after them.
async function loadAudit() {
  const round = ++auditRound;
  clearTimeout(auditTimer);
  $('au-servers').replaceChildren(...[...servers.keys()].sort().map((n) => el('option', {value: n})));
  $('audit-error').hidden = true;
  const q = auditQuery();
  auditShown = q.toString();
  q.set('limit', String(auditMaxRows));
  let list;
  try {
    list = await api('GET', '/api/v1/audit?' + q);
  } catch (e) {
    if (round !== auditRound || e.status === 401) return;
    // The route is absent when serve keeps no log.
    $('audit-error').textContent = e.status === 404 || e.status === 405
      ? 'serve runs with --audit=false: it records nothing (docs/audit.md).' : describe(e.info);
    $('audit-error').hidden = false;
    $('audit-body').replaceChildren();
    auditLastID = 0;
    $('audit-empty').hidden = true;
    $('audit-count').textContent = '';
    $('view-audit').dataset.following = 'off';
    return;
  }
  if (round !== auditRound) return;
  const entries = list.entries || []; // oldest first
  auditLastID = entries.length ? entries[entries.length - 1].id : 0;
  $('audit-body').replaceChildren(...entries.reverse().map(auditRow));
  auditCount();
  auditFollow(round);
}

// auditFollow schedules the next poll while the view is shown, "Follow" is
// on and no newer load has begun; else it stops.
function auditFollow(round) {
  if (round !== auditRound) return; // a newer load follows, or nothing does
  const on = current === 'audit' && $('au-follow').checked;
  $('view-audit').dataset.following = on ? 'on' : 'off';
  if (on) auditTimer = setTimeout(() => auditPoll(round), auditPollMs);
}

async function auditPoll(round) {
  if (round !== auditRound || current !== 'audit' || !$('au-follow').checked) {
    auditFollow(round);
    return;
  }
  const q = new URLSearchParams(auditShown);
  q.set('limit', String(auditMaxRows));
  if (auditLastID) q.set('after', String(auditLastID));
  try {
    const list = await api('GET', '/api/v1/audit?' + q);
    if (round !== auditRound) return;
    $('audit-error').hidden = true;
    const entries = list.entries || [];
    if (entries.length) {
      auditLastID = entries[entries.length - 1].id;
      $('audit-body').prepend(...entries.reverse().map(auditRow));
      const body = $('audit-body');
      while (body.children.length > auditMaxRows) body.lastElementChild.remove();
      auditCount();
      announce(entries.length + (entries.length === 1 ? ' new audit entry' : ' new audit entries'));
    }
  } catch (e) {
    if (round !== auditRound) return;
    if (e.status === 401) { $('view-audit').dataset.following = 'off'; return; }
    $('audit-error').textContent = 'Following: ' + describe(e.info);
    $('audit-error').hidden = false;
  }
  auditFollow(round);
}

function auditCount() {
  const n = $('audit-body').children.length;
  $('audit-empty').hidden = n > 0;
  $('audit-count').textContent = n === 0 ? '' : n >= auditMaxRows
    ? 'The newest ' + n + ' entries; the filters find older ones.'
    : n + (n === 1 ? ' entry' : ' entries');
}

// auditWhat is what an entry names, by its kind.
function auditWhat(e) {
  if (e.kind === 'api') return e.request || '';
  return e.tool || e.resource || e.prompt || e.task || '';
}

function auditBytes(n) {
  if (!n) return '0 B';
  if (n < 1024) return n + ' B';
  if (n < 1024 * 1024) return (n / 1024).toFixed(1) + ' kB';
  return (n / 1024 / 1024).toFixed(1) + ' MB';
}

function auditDuration(ms) {
  if (ms < 1) return ms.toFixed(2) + ' ms';
  if (ms < 1000) return ms.toFixed(ms < 10 ? 1 : 0) + ' ms';
  return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
}

// auditTime writes a local time as logs -f does, with the date when it
// is not today's.
function auditTime(t) {
  const d = new Date(t);
  if (isNaN(d)) return String(t);
  const z = (n) => String(n).padStart(2, '0');
  const day = d.toDateString() === new Date().toDateString() ? '' : d.getFullYear() + '-' + z(d.getMonth() + 1) + '-' + z(d.getDate()) + ' ';
  return day + stamp(d);
}

function auditRow(e) {
  const cell = (col, label, ...children) => el('td', {'data-col': col, 'data-label': label}, ...children);
  const failed = e.outcome !== 'ok';
  const tr = el('tr', {'data-id': e.id, 'data-outcome': e.outcome, 'data-server': e.server || '', 'data-kind': e.kind},
    cell('time', 'Time', el('time', {datetime: e.time, title: e.time, text: auditTime(e.time)})),
    cell('principal', 'Principal', e.principal),
    cell('surface', 'Surface', e.surface + (e.toolset ? ' ' + e.toolset : '')),
    cell('kind', 'Kind', e.kind),
    cell('server', 'Server', e.server || '–'),
    cell('what', 'Tool, resource or request', el('span', {class: 'what', title: auditWhat(e), text: auditWhat(e)})),
    cell('outcome', 'Outcome', el('span', {class: 'outcome' + (failed ? ' bad' : ''), text: e.outcome})),
    cell('duration', 'Duration', auditDuration(e.duration_ms || 0)),
    cell('bytes', 'Request → result', auditBytes(e.request_bytes) + ' → ' + auditBytes(e.result_bytes)));
  if (e.args_sha256) tr.title = 'arguments SHA-256 ' + e.args_sha256;
  return tr;
}

document.addEventListener('DOMContentLoaded', () => {
  if (typeof onView === 'function') onView('audit', loadAudit);
  $('audit-form').addEventListener('submit', (ev) => { ev.preventDefault(); loadAudit(); });
  $('au-clear').addEventListener('click', () => openAudit({}));
  $('au-follow').addEventListener('change', () => {
    if ($('au-follow').checked) loadAudit(); // from the newest again: what came meanwhile
    else { clearTimeout(auditTimer); auditRound++; $('view-audit').dataset.following = 'off'; }
  });
});
