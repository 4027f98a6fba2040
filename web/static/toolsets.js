// Toolsets and tokens on Switchboard's web page: a toolset made or edited
// by picking tools of the connected servers (each with the name and the
// description it is shown under), and the API tokens: made with their
// secret shown once, and revoked. It loads before app.js and uses its
// helpers (el, api, describe, announce) only once the page runs.
'use strict';

let toolsetList = [];
let tokenList = [];
let toolsetTools = []; // the tools offered to pick, of the connected servers
let toolsetEditing = null; // the ToolsetView being edited, or null for a new one
let keptSelectors = []; // selectors of the edited toolset that no row shows

const toolsetURL = (name) => location.origin + '/toolsets/' + encodeURIComponent(name) + '/mcp';
const isExact = (s) => !String(s).includes('*');

async function loadToolsets() {
  $('toolsets-error').hidden = true;
  hideSecret(); // shown once: not again when the view is opened again
  try {
    const [ts, tk, tl] = await Promise.all([
      api('GET', '/api/v1/toolsets'), api('GET', '/api/v1/tokens'), api('GET', '/api/v1/tools')]);
    toolsetList = ts.toolsets || [];
    tokenList = tk.tokens || [];
    toolsetTools = tl.tools || [];
  } catch (e) {
    if (e.status === 401) return;
    $('toolsets-error').textContent = describe(e.info);
    $('toolsets-error').hidden = false;
    return;
  }
  renderToolsets();
  renderTokens();
}

// ---- Toolsets -------------------------------------------------------------------

function selectorText(s) {
  let t = s.server + '/' + s.tool;
  if (s.as) t += ' as ' + s.as;
  return t;
}

function renderToolsets() {
  $('toolsets-empty').hidden = toolsetList.length > 0;
  $('toolsets').replaceChildren(...toolsetList.map((ts) => {
    const id = 'ts-' + ts.name;
    const del = el('button', {type: 'button', class: 'danger', 'data-action': 'delete', 'aria-describedby': id + '-name'}, 'Delete');
    del.addEventListener('click', () => deleteToolset(ts, del));
    const picks = ts.tools || [];
    return el('li', {'data-toolset': ts.name, 'aria-labelledby': id + '-name'},
      el('h3', {id: id + '-name', text: ts.name}),
      ts.description ? el('p', {class: 'desc', text: ts.description}) : null,
      el('p', {class: 'hint'}, 'Endpoint ', el('code', {'data-role': 'endpoint', text: toolsetURL(ts.name)})),
      el('p', {'data-role': 'toolset-tools'}, picks.length ? picks.length + (picks.length === 1 ? ' tool: ' : ' tools: ') + picks.map(selectorText).join(', ') : 'No tools.'),
      (ts.prompts || []).length || (ts.resources || []).length
        ? el('p', {class: 'hint', text: (ts.prompts || []).length + ' prompt and ' + (ts.resources || []).length + ' resource selectors (kept when edited here)'}) : null,
      el('div', {class: 'actions'},
        el('button', {type: 'button', 'data-action': 'edit', 'aria-describedby': id + '-name', onclick: () => openToolsetForm(ts)}, 'Edit'),
        el('button', {type: 'button', 'data-action': 'token', 'aria-describedby': id + '-name', onclick: () => tokenFor(ts.name)}, 'Make a token'),
        del));
  }));
  renderScopes();
}

function deleteToolset(ts, b) {
  if (!b.classList.contains('confirm')) {
    b.classList.add('confirm');
    b.textContent = 'Really delete?';
    setTimeout(() => { b.classList.remove('confirm'); b.textContent = 'Delete'; }, 5000);
    return;
  }
  return toolsetAction(async () => {
    await api('DELETE', '/api/v1/toolsets/' + encodeURIComponent(ts.name) + '?version=' + ts.version);
    announce('Toolset ' + ts.name + ' deleted');
    await loadToolsets();
  });
}

async function toolsetAction(fn) {
  $('toolsets-error').hidden = true;
  try {
    await fn();
  } catch (e) {
    if (e.status === 401) return;
    $('toolsets-error').textContent = describe(e.info);
    $('toolsets-error').hidden = false;
  }
}

// openToolsetForm shows the form for a new toolset (ts null) or for ts:
// a tool its selectors name exactly is a picked row, with its name and
// description; any other selector is kept as it is, and can be removed.
function openToolsetForm(ts) {
  toolsetEditing = ts || null;
  const f = $('toolset-form');
  f.hidden = false;
  $('ts-error').hidden = true;
  $('toolset-form-title').textContent = ts ? 'Edit toolset ' + ts.name : 'New toolset';
  $('ts-save').textContent = ts ? 'Save changes' : 'Create';
  $('ts-name').value = ts ? ts.name : '';
  $('ts-name').readOnly = !!ts;
  $('ts-desc').value = ts ? ts.description || '' : '';
  $('ts-filter').value = '';
  const picked = new Map();
  keptSelectors = [];
  for (const s of (ts && ts.tools) || []) {
    const known = isExact(s.server) && isExact(s.tool) && toolsetTools.some((t) => t.server === s.server && t.name === s.tool);
    if (known && !picked.has(s.server + '/' + s.tool)) picked.set(s.server + '/' + s.tool, s);
    else keptSelectors.push(s);
  }
  $('ts-tools').replaceChildren(...toolsetTools.map((t, i) => pickRow(t, i, picked.get(t.server + '/' + t.name))));
  if (!toolsetTools.length) $('ts-tools').append(el('li', {class: 'hint', text: 'No server is connected: there are no tools to pick.'}));
  renderKept();
  filterPicks();
  $('toolset-form-title').focus();
}

function pickRow(t, i, sel) {
  const id = 'pick-' + i;
  const box = el('input', {type: 'checkbox', id, 'data-role': 'pick'});
  box.checked = !!sel;
  const as = el('input', {id: id + '-as', 'data-role': 'as', autocomplete: 'off', spellcheck: 'false', placeholder: t.server + '__' + t.name, value: (sel && sel.as) || ''});
  const desc = el('input', {id: id + '-desc', 'data-role': 'description', autocomplete: 'off', placeholder: t.description || '', value: (sel && sel.description) || ''});
  const err = el('p', {class: 'field-error', 'data-role': 'pick-error', hidden: true});
  const more = el('div', {class: 'pick-more', hidden: !sel},
    el('div', {class: 'field'}, el('label', {for: id + '-as', text: 'Shown as'}), as),
    el('div', {class: 'field'}, el('label', {for: id + '-desc', text: 'Description'}), desc), err);
  box.addEventListener('change', () => { more.hidden = !box.checked; });
  const li = el('li', {'data-pick': t.address},
    el('div', {class: 'field check'}, box, el('label', {for: id}, el('strong', {text: t.address}),
      t.description ? el('span', {class: 'desc', text: ' ' + t.description}) : null)), more);
  // The selector it was made from: annotations the page does not edit
  // stay as they were.
  li.selector = sel || null;
  li.tool = t;
  return li;
}

function renderKept() {
  $('ts-kept').hidden = keptSelectors.length === 0;
  $('ts-kept-list').replaceChildren(...keptSelectors.map((s, i) => el('li', {'data-kept': String(i)},
    el('code', {text: selectorText(s)}), ' ',
    el('button', {type: 'button', class: 'quiet', onclick: () => { keptSelectors.splice(i, 1); renderKept(); }}, 'Remove'))));
}

function filterPicks() {
  const q = $('ts-filter').value.trim().toLowerCase();
  let n = 0;
  for (const li of $('ts-tools').querySelectorAll('li[data-pick]')) {
    const t = li.tool;
    const show = !q || t.address.toLowerCase().includes(q) || (t.description || '').toLowerCase().includes(q) ||
      li.querySelector('[data-role="pick"]').checked;
    li.hidden = !show;
    if (show) n++;
  }
  const picked = $('ts-tools').querySelectorAll('[data-role="pick"]:checked').length;
  $('ts-count').textContent = picked + ' picked; ' + n + ' of ' + toolsetTools.length + ' tools shown';
}

// readToolset is the toolset the form describes, and rows[i], the row of
// tools[i] (for the API's field errors, "tools[1].as").
function readToolset() {
  const base = toolsetEditing ? Object.assign({}, toolsetEditing) : {};
  delete base.created_at;
  delete base.updated_at;
  const ts = Object.assign(base, {name: $('ts-name').value.trim(), description: $('ts-desc').value.trim()});
  if (!ts.description) delete ts.description;
  const rows = [];
  const list = [];
  for (const li of $('ts-tools').querySelectorAll('li[data-pick]')) {
    if (!li.querySelector('[data-role="pick"]').checked) continue;
    const s = Object.assign({}, li.selector || {}, {server: li.tool.server, tool: li.tool.name});
    const as = li.querySelector('[data-role="as"]').value.trim();
    const desc = li.querySelector('[data-role="description"]').value.trim();
    if (as) s.as = as; else delete s.as;
    if (desc) s.description = desc; else delete s.description;
    list.push(s);
    rows.push(li);
  }
  for (const s of keptSelectors) { list.push(s); rows.push(null); }
  ts.tools = list;
  return {ts, rows};
}

async function saveToolset(ev) {
  ev.preventDefault();
  const {ts, rows} = readToolset();
  for (const p of $('ts-tools').querySelectorAll('[data-role="pick-error"]')) { p.hidden = true; p.textContent = ''; }
  for (const i of $('toolset-form').querySelectorAll('[aria-invalid]')) i.removeAttribute('aria-invalid');
  $('ts-error').hidden = true;
  $('ts-save').disabled = true;
  try {
    if (toolsetEditing) await api('PUT', '/api/v1/toolsets/' + encodeURIComponent(toolsetEditing.name), ts);
    else await api('POST', '/api/v1/toolsets', ts);
    announce((toolsetEditing ? 'Saved toolset ' : 'Created toolset ') + ts.name);
    $('toolset-form').hidden = true;
    toolsetEditing = null;
    await loadToolsets();
  } catch (e) {
    if (e.status === 401) return;
    showToolsetErrors(e.info || {}, rows);
  } finally {
    $('ts-save').disabled = false;
  }
}

// showToolsetErrors puts an error of tools[i] beside its row, one of the
// name beside the name, and the rest above the form.
function showToolsetErrors(info, rows) {
  const loose = [];
  let first = null;
  for (const f of info.fields || []) {
    const m = /^tools\[(\d+)\](?:\.(as|description))?/.exec(f.field);
    const row = m ? rows[Number(m[1])] : null;
    if (row) {
      const p = row.querySelector('[data-role="pick-error"]');
      p.textContent = (p.textContent ? p.textContent + '; ' : '') + f.field + ' ' + f.message;
      p.hidden = false;
      const input = row.querySelector(m[2] === 'description' ? '[data-role="description"]' : '[data-role="as"]');
      input.setAttribute('aria-invalid', 'true');
      first = first || input;
    } else if (f.field === 'name') {
      $('ts-name').setAttribute('aria-invalid', 'true');
      loose.push('name: ' + f.message);
      first = first || $('ts-name');
    } else {
      loose.push(f.field + ': ' + f.message);
    }
  }
  if (loose.length || !(info.fields || []).length) {
    $('ts-error').textContent = loose.length ? loose.join('; ') : describe(info);
    $('ts-error').hidden = false;
  }
  if (first) first.focus();
}

// ---- Tokens -------------------------------------------------------------------------

function renderTokens() {
  $('tokens-empty').hidden = tokenList.length > 0;
  $('tokens').replaceChildren(...tokenList.map((tk) => {
    const b = el('button', {type: 'button', class: 'danger', 'data-action': 'revoke', 'aria-label': 'Revoke ' + tk.name}, 'Revoke');
    b.addEventListener('click', () => revokeToken(tk, b));
    return el('li', {'data-token': tk.name},
      el('strong', {text: tk.name}), ' ',
      el('span', {'data-role': 'scopes', text: (tk.scopes || []).join(', ')}), ' ',
      el('span', {class: 'hint-inline', text: 'made ' + new Date(tk.created_at).toLocaleString() +
        (tk.last_used_at ? ', last used ' + new Date(tk.last_used_at).toLocaleString() : ', never used')}), ' ', b);
  }));
}

function renderScopes() {
  const fs = $('tk-scopes');
  const keep = new Set([...fs.querySelectorAll('input:checked')].map((i) => i.value));
  const scopes = [['admin', 'admin: everything, the API included'], ['mcp', 'mcp: /mcp, every server']]
    .concat(toolsetList.map((ts) => ['toolset:' + ts.name, 'toolset:' + ts.name + ': ' + toolsetURL(ts.name)]));
  fs.replaceChildren(el('legend', {text: 'Scopes'}), ...scopes.map(([v, label], i) => {
    const box = el('input', {type: 'checkbox', id: 'scope-' + i, value: v, 'data-scope': v});
    box.checked = keep.has(v);
    return el('div', {class: 'field check'}, box, el('label', {for: 'scope-' + i, text: label}));
  }));
}

function tokenFor(name) {
  for (const i of $('tk-scopes').querySelectorAll('input')) i.checked = i.value === 'toolset:' + name;
  if (!$('tk-name').value) $('tk-name').value = name + '-client';
  $('tk-name').focus();
}

async function createToken(ev) {
  ev.preventDefault();
  const name = $('tk-name').value.trim();
  const scopes = [...$('tk-scopes').querySelectorAll('input:checked')].map((i) => i.value);
  $('tk-error').hidden = true;
  $('tk-create').disabled = true;
  try {
    const made = await api('POST', '/api/v1/tokens', {name, scopes});
    showSecret(made);
    $('tk-name').value = '';
    for (const i of $('tk-scopes').querySelectorAll('input')) i.checked = false;
    tokenList = (await api('GET', '/api/v1/tokens')).tokens || [];
    renderTokens();
  } catch (e) {
    if (e.status === 401) return;
    $('tk-error').textContent = describe(e.info);
    $('tk-error').hidden = false;
  } finally {
    $('tk-create').disabled = false;
  }
}

// showSecret shows a new token's secret, which the API returns this once;
// the page keeps it nowhere else and forgets it on "Done".
function showSecret(made) {
  $('token-secret-title').textContent = 'Token ' + made.name + ' (' + (made.scopes || []).join(', ') + ')';
  $('token-secret-value').textContent = made.token;
  const ts = (made.scopes || []).find((s) => s.startsWith('toolset:'));
  $('token-secret-use').textContent = ts
    ? 'An MCP client reaches ' + toolsetURL(ts.slice('toolset:'.length)) + ' with the header "Authorization: Bearer" and this secret.'
    : 'Send it as "Authorization: Bearer" and the secret.';
  $('token-secret').hidden = false;
  announce('Token ' + made.name + ' made; copy its secret now');
  $('token-secret-copy').focus();
}

function hideSecret() {
  $('token-secret-value').textContent = '';
  $('token-secret').hidden = true;
}

function revokeToken(tk, b) {
  if (!b.classList.contains('confirm')) {
    b.classList.add('confirm');
    b.textContent = 'Really revoke?';
    setTimeout(() => { b.classList.remove('confirm'); b.textContent = 'Revoke'; }, 5000);
    return;
  }
  return toolsetAction(async () => {
    await api('DELETE', '/api/v1/tokens/' + encodeURIComponent(tk.name));
    announce('Token ' + tk.name + ' revoked');
    tokenList = (await api('GET', '/api/v1/tokens')).tokens || [];
    renderTokens();
  });
}

document.addEventListener('DOMContentLoaded', () => {
  // A page whose app.js takes view hooks (onView) is told of the view so;
  // otherwise app.js's show() calls loadToolsets itself.
  if (typeof onView === 'function') onView('toolsets', loadToolsets);
  $('toolset-new').addEventListener('click', () => openToolsetForm(null));
  $('ts-cancel').addEventListener('click', () => { $('toolset-form').hidden = true; toolsetEditing = null; });
  $('ts-filter').addEventListener('input', filterPicks);
  $('ts-tools').addEventListener('change', filterPicks);
  $('toolset-form').addEventListener('submit', saveToolset);
  $('token-form').addEventListener('submit', createToken);
  $('token-secret-copy').addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText($('token-secret-value').textContent);
      announce('Copied');
    } catch (e) {
      announce('Select the secret and copy it');
    }
  });
  $('token-secret-done').addEventListener('click', hideSecret);
});
