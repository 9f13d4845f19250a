// The operator console's script (docs/console.md). One shell page serves every route; this file
// renders the route from the JSON API.
//
// Rules it keeps:
// - The CSP allows scripts and styles from this origin only: no inline script or style, no eval.
//   Looks are CSS classes; nothing here sets a style attribute.
// - Everything the API returns is untrusted (tenant names, URLs, error texts and payloads come
//   from applications and endpoints). The DOM is built with createElement and textContent only.
// - Every POST carries the session's CSRF token in X-CSRF-Token.
'use strict';

const session = { role: '', csrf: '' };
let renderSeq = 0;      // bumped on each navigation; a late answer for an older page is dropped
let refreshTimer = 0;   // the overview's 2 s refresh

// ---------------------------------------------------------------------------------------------
// DOM helpers.
// ---------------------------------------------------------------------------------------------

// el('a', {href: '/x', class: 'y', 'data-test': 'z'}, child, 'text', …): an element with the
// attributes set through setAttribute and the children appended (strings become text nodes).
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'onclick' || name === 'onsubmit' || name === 'onchange') {
      node.addEventListener(name.slice(2), value);
    } else {
      node.setAttribute(name, value === true ? '' : String(value));
    }
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// A link inside the console: navigates with pushState (see the click handler at the end).
function link(path, text, attrs) {
  return el('a', Object.assign({ href: path }, attrs || {}), text);
}

function badge(state) {
  return el('span', { class: 'badge ' + String(state).replace(/[^a-z_]/g, '') }, String(state));
}

// table(['Id', {text: 'Jobs', num: true}], rows, rowFn): rowFn(row) returns a <tr>.
function table(columns, rows, rowFn, emptyText) {
  const head = el('tr', {}, columns.map((c) =>
    typeof c === 'string' ? el('th', {}, c) : el('th', { class: c.num ? 'num' : '' }, c.text)));
  const body = el('tbody', {}, rows.map(rowFn));
  if (rows.length === 0) {
    body.append(el('tr', {}, el('td', { colspan: columns.length, class: 'empty' },
      emptyText || 'None.')));
  }
  return el('table', {}, el('thead', {}, head), body);
}

const num = (v) => el('td', { class: 'num' }, v === undefined || v === null ? '' : String(v));

function fields(pairs) {
  return el('dl', { class: 'fields' }, pairs.flatMap(([k, v, test]) =>
    [el('dt', {}, k), el('dd', { 'data-test': test }, v === '' || v == null ? '—' : v)]));
}

// "2026-01-02T03:04:05.123Z" → "2026-01-02 03:04:05Z": the API's times stay UTC on screen. An
// attempt log's times are PostgreSQL's ("…+00:00"), and read the same.
function when(iso) {
  if (!iso) return '—';
  return String(iso).replace('T', ' ').replace(/\.\d+/, '').replace(/\+00(:?00)?$/, 'Z');
}

function seconds(s) {
  if (s === undefined || s === null) return '—';
  if (s < 60) return s.toFixed(1) + ' s';
  if (s < 3600) return (s / 60).toFixed(1) + ' min';
  return (s / 3600).toFixed(1) + ' h';
}

// When an open breaker lets its probe go (the API says 0 for a closed one).
function probeIn(b) {
  if (!b.state || b.state === 'closed' || b.probe_in_s == null) return '—';
  if (b.probe_in_s <= 0) return b.state === 'open' ? 'due now' : 'probe overdue';
  return 'in ' + seconds(b.probe_in_s);
}

const rate = (v) => (v === undefined || v === null ? '—' : Number(v).toFixed(1));
const percent = (v) => (v === undefined || v === null ? '—' : (v * 100).toFixed(2) + ' %');
const capped = (n, isCapped) => (isCapped ? n + '+' : String(n));
const isAdmin = () => session.role === 'admin';

function setMain(...children) {
  const main = document.getElementById('main');
  main.replaceChildren(...children);
}

function showError(message) {
  const box = document.getElementById('error');
  box.textContent = message;
  box.classList.toggle('hidden', !message);
}

function showNotice(message) {
  const box = document.getElementById('notice');
  box.textContent = message;
  box.classList.toggle('hidden', !message);
}

// ---------------------------------------------------------------------------------------------
// The API.
// ---------------------------------------------------------------------------------------------

// api('GET', '/api/x') → the parsed JSON, or throws an Error with the API's {"error"} text.
// A 401 means the session ended (expired or logged out elsewhere): back to the login form.
async function api(method, path, body) {
  const headers = { Accept: 'application/json' };
  const init = { method, headers, credentials: 'same-origin', cache: 'no-store' };
  if (method !== 'GET') {
    headers['X-CSRF-Token'] = session.csrf;
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
  }
  const response = await fetch(path, init);
  if (response.status === 401) {
    location.assign('/login');
    throw new Error('Not logged in.');
  }
  let data = null;
  try {
    data = await response.json();
  } catch (e) {
    data = null;
  }
  if (!response.ok) {
    const reason = data && typeof data.error === 'string' ? data.error : response.statusText;
    throw new Error(method + ' ' + path + ': ' + response.status + ' ' + reason);
  }
  return data;
}

// The query string of a filter object, leaving out empty values.
function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== '' && v != null) q.set(k, v);
  const s = q.toString();
  return s ? '?' + s : '';
}

// An admin action behind a confirm(): runs it, shows the outcome, re-renders the page.
async function act(question, method, path, body, describe) {
  if (!window.confirm(question)) return;
  showError('');
  try {
    const answer = await api(method, path, body);
    showNotice(describe(answer));
  } catch (e) {
    showError(e.message);
  }
  await render();
}

// ---------------------------------------------------------------------------------------------
// Pages. Each takes the route's match and the render sequence number, and calls setMain once
// its data is in (unless a newer navigation started meanwhile).
// ---------------------------------------------------------------------------------------------

async function overviewPage(match, seq) {
  const o = await api('GET', '/api/overview');
  if (seq !== renderSeq) return;
  const tiers = table(['Tier', { text: 'Available', num: true }, { text: 'Scheduled', num: true },
    { text: 'Executing', num: true }, { text: 'Parked', num: true }, { text: 'Lag', num: true },
    { text: 'Completed/s', num: true }, { text: 'Discarded/s', num: true },
    { text: 'Failure rate', num: true }], o.tiers, (t) =>
    el('tr', { 'data-test': 'tier-row', 'data-queue': t.queue },
      el('td', {}, t.queue), num(capped(t.available, t.available_capped)),
      num(capped(t.scheduled, t.scheduled_capped)),
      num(t.executing), num(capped(t.parked, t.parked_capped)), num(seconds(t.lag_s)),
      num(rate(t.completed_per_s)), num(rate(t.discarded_per_s)), num(percent(t.failure_rate))),
  'No tiers.');
  const nodes = table(['Node', 'Host', 'Version', 'Tiers', { text: 'Heartbeat age', num: true },
    { text: 'Lease left', num: true }, { text: 'Executing', num: true }, ''], o.nodes, (n) =>
    el('tr', { 'data-test': 'node-row', 'data-node': n.name, 'data-leader': n.leader ? 'true' : 'false' },
      el('td', {}, n.name), el('td', {}, n.host || ''), el('td', {}, n.version || ''),
      el('td', {}, n.tiers || ''), num(seconds(n.heartbeat_age_s)), num(seconds(n.lease_left_s)),
      num(n.executing), el('td', {}, n.leader ? badge('leader') : '')),
  'No node is registered.');
  const breakers = table(['Channel', 'Tenant', 'Tier', 'State', 'Since', 'Trips', 'Reason',
    { text: 'Next probe', num: true }, { text: 'Parked', num: true }], o.breakers, (b) =>
    el('tr', { 'data-test': 'breaker-row', 'data-channel': b.channel },
      el('td', {}, link('/channels/' + b.channel, '#' + b.channel)), el('td', {}, b.tenant),
      el('td', {}, b.tier), el('td', {}, badge(b.state), b.paused ? [' ', badge('paused')] : ''),
      el('td', { title: when(b.since) }, seconds(b.since_s) + ' ago'), num(b.trips),
      el('td', { class: 'error-text' }, b.reason || ''),
      num(probeIn(b)), num(capped(b.parked, b.parked_capped))),
  'Every breaker is closed.');
  const window_s = o.tiers.length ? o.tiers[0].window_s : 0;
  setMain(
    el('div', { class: 'page-head' }, el('h1', {}, 'Overview'),
      el('span', { class: 'muted', id: 'sampled-at', 'data-sampled': o.sampled_at },
        'sampled ' + when(o.sampled_at) + (window_s ? ', rates over ' + seconds(window_s) : ''))),
    el('h2', {}, 'Tiers'), tiers,
    el('h2', {}, 'Nodes'), nodes,
    el('h2', {}, 'Breakers not closed'), breakers);
  scheduleRefresh(match, seq);
}

// The overview refreshes in place every 2 s; a navigation clears the timer (render()), and a
// failed refresh shows its error and tries again.
function scheduleRefresh(match, seq) {
  window.clearTimeout(refreshTimer);
  refreshTimer = window.setTimeout(() => {
    if (seq !== renderSeq) return;
    overviewPage(match, seq).then(() => showError(''), (e) => {
      showError(e.message);
      scheduleRefresh(match, seq);
    });
  }, 2000);
}

async function channelsPage(match, seq) {
  const params = new URLSearchParams(location.search);
  const q = params.get('q') || '';
  const after = params.get('after') || '';
  const limit = 100;
  const rows = await api('GET', '/api/channels' + query({ q, after, limit }));
  if (seq !== renderSeq) return;
  const search = el('input', { type: 'search', name: 'q', id: 'channel-search', value: q,
    placeholder: 'tenant, URL or id' });
  const form = el('form', { class: 'filters', id: 'channel-filter', onsubmit: (e) => {
    e.preventDefault();
    navigate('/channels' + query({ q: search.value.trim() }));
  } }, el('label', {}, 'Search', search), el('button', { type: 'submit' }, 'Search'));
  const list = table(['Id', 'Tenant', 'Tier', 'URL', 'State', { text: 'Available', num: true },
    { text: 'Executing', num: true }, { text: 'Parked', num: true }], rows, (c) =>
    el('tr', { 'data-test': 'channel-row', 'data-channel': c.id },
      el('td', {}, link('/channels/' + c.id, '#' + c.id)),
      el('td', {}, c.tenant, el('span', { class: 'muted' }, ' (' + c.tenant_id + ')')),
      el('td', {}, c.tier), el('td', { class: 'url' }, c.url),
      el('td', {}, badge(c.breaker_state), c.paused ? [' ', badge('paused')] : '',
        c.enabled ? '' : [' ', badge('disabled')]),
      num(c.available), num(c.executing), num(capped(c.parked, c.capped))),
  'No channel matches.');
  // Paging by id: the next page starts after the last id shown.
  const pager = el('div', { class: 'pager' },
    after ? link('/channels' + query({ q }), 'First page', { id: 'channels-first' }) : '',
    rows.length === limit ? link('/channels' + query({ q, after: rows[rows.length - 1].id }),
      'Next page', { id: 'channels-next' }) : '');
  setMain(el('h1', {}, 'Channels'), form, list, pager);
}

async function channelPage(match, seq) {
  const id = match[1];
  const c = await api('GET', '/api/channels/' + id);
  if (seq !== renderSeq) return;
  const b = c.breaker || {};
  const state = [badge(b.state || 'closed')];
  if (c.paused) state.push(' ', badge('paused'));
  if (!c.enabled) state.push(' ', badge('disabled'));
  if (c.gone) state.push(' ', badge('gone'));
  if (c.snoozed_until) state.push(' ', badge('snoozed'));

  const actions = el('div', { class: 'actions', id: 'channel-actions' });
  if (isAdmin()) {
    const button = (action, label, question, cls) => el('button', {
      type: 'button', id: 'action-' + action, 'data-action': action, class: cls || '',
      onclick: () => act(question, 'POST', '/api/channels/' + id + '/' + action, undefined,
        (r) => label + ' channel ' + id + ': was ' + r.before + ', ' + r.jobs + ' jobs moved'),
    }, label);
    if (c.paused) actions.append(button('resume', 'Resume', 'Resume channel ' + id + '?'));
    else actions.append(button('pause', 'Pause', 'Pause channel ' + id + '? Its waiting deliveries are parked.', 'danger'));
    if (b.state && b.state !== 'closed') {
      actions.append(button('reset', 'Reset breaker', 'Close the breaker of channel ' + id + ' and unpark its deliveries?'));
    }
    if (!c.enabled) actions.append(button('enable', 'Enable', 'Let channel ' + id + ' accept deliveries again?'));
  }
  actions.append(link('/deliveries' + query({ channel: id }), 'Deliveries of this channel'));

  const history = table(['At', 'From', 'To', 'Reason'], b.history || [], (h) =>
    el('tr', { 'data-test': 'history-row' }, el('td', {}, when(h.at)), el('td', {}, badge(h.from)),
      el('td', {}, badge(h.to)), el('td', { class: 'error-text' }, h.reason || '')),
  'No transitions recorded.');
  const counts = el('div', { class: 'cards' }, ['available', 'scheduled', 'executing', 'parked']
    .map((k) => el('div', { class: 'card', 'data-test': 'count-' + k },
      el('div', { class: 'value' }, capped(c[k], c.capped && k !== 'executing')),
      el('div', { class: 'label' }, k))));
  const inFlight = table(['Node', { text: 'Executing', num: true }], c.in_flight_by_node || [],
    (n) => el('tr', { 'data-test': 'in-flight-row' }, el('td', {}, n.node), num(n.executing)),
    'Nothing in flight.');
  const errors = table(['Job', 'At', { text: 'Attempt', num: true }, 'Error'], c.last_errors || [],
    (e) => el('tr', { 'data-test': 'error-row' }, el('td', {}, link('/deliveries/' + e.job, '#' + e.job)),
      el('td', {}, when(e.at)), num(e.attempt), el('td', { class: 'error-text' }, e.error)),
  'No recent errors.');

  setMain(
    el('div', { class: 'page-head' }, el('h1', {}, 'Channel #' + c.id),
      el('span', { 'data-test': 'channel-state' }, state)),
    fields([
      ['Tenant', [c.tenant, el('span', { class: 'muted' }, ' (' + c.tenant_id + ')')]],
      ['Tier', c.tier], ['URL', c.url], ['Created', when(c.created_at)],
      ['Enabled', c.enabled ? 'yes' : 'no — ' + (c.disabled_reason || ''), 'enabled'],
      ['Paused', c.paused ? 'paused' : 'no', 'paused'],
      ['Gone (410)', c.gone ? 'yes: disabled after a 410' : 'no', 'gone'],
      ['Snoozed until (429)', c.snoozed_until ? when(c.snoozed_until) : 'not snoozed', 'snoozed'],
    ]),
    actions,
    el('h2', {}, 'Breaker'),
    fields([
      ['State', badge(b.state || 'closed'), 'breaker-state'], ['Since', when(b.since)],
      ['Trips', String(b.trips ?? 0)], ['Reason', b.reason || ''],
      ['Next probe', probeIn(b)],
      ['Probe job', b.probe_job ? link('/deliveries/' + b.probe_job, '#' + b.probe_job) : ''],
    ]),
    el('h3', {}, 'History'), history,
    el('h2', {}, 'Backlog'), counts,
    el('h2', {}, 'In flight by node'), inFlight,
    el('h2', {}, 'Last errors'), errors);
}

const STATES = ['available', 'executing', 'parked', 'completed', 'discarded', 'cancelled'];
const WAITING = ['available', 'parked'];

// datetime-local ("2026-01-02T03:04", the browser's local time) ↔ ISO UTC for the API.
function toIso(local) {
  if (!local) return '';
  const d = new Date(local);
  return isNaN(d) ? '' : d.toISOString();
}
function toLocal(iso) {
  const d = new Date(iso);
  if (!iso || isNaN(d)) return '';
  const p = (n) => String(n).padStart(2, '0');
  return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + 'T' +
    p(d.getHours()) + ':' + p(d.getMinutes());
}

async function deliveriesPage(match, seq) {
  const params = new URLSearchParams(location.search);
  const f = {};
  for (const k of ['state', 'channel', 'tenant', 'since', 'until']) f[k] = params.get(k) || '';
  const found = await api('GET', '/api/deliveries' + query(Object.assign({ limit: 100 }, f)));
  if (seq !== renderSeq) return;

  const input = (name, attrs) => el('input', Object.assign({ name, id: 'filter-' + name }, attrs));
  const stateSelect = el('select', { name: 'state', id: 'filter-state' },
    el('option', { value: '' }, 'any'),
    STATES.map((s) => el('option', { value: s, selected: s === f.state }, s)));
  const channel = input('channel', { type: 'number', min: 1, value: f.channel, class: 'short' });
  const tenant = input('tenant', { type: 'number', min: 1, value: f.tenant, class: 'short' });
  const since = input('since', { type: 'datetime-local', value: toLocal(f.since) });
  const until = input('until', { type: 'datetime-local', value: toLocal(f.until) });
  const form = el('form', { class: 'filters', id: 'delivery-filter', onsubmit: (e) => {
    e.preventDefault();
    navigate('/deliveries' + query({ state: stateSelect.value, channel: channel.value.trim(),
      tenant: tenant.value.trim(), since: toIso(since.value), until: toIso(until.value) }));
  } }, el('label', {}, 'State', stateSelect), el('label', {}, 'Channel', channel),
  el('label', {}, 'Tenant', tenant), el('label', {}, 'Since', since),
  el('label', {}, 'Until', until), el('button', { type: 'submit', id: 'filter-apply' }, 'Filter'));

  // Bulk actions need a channel or a tenant (the API refuses a filter of neither).
  const bulk = el('div', { class: 'actions', id: 'bulk-actions' });
  const scoped = f.channel !== '' || f.tenant !== '';
  const target = { channel: f.channel ? Number(f.channel) : undefined,
    tenant: f.tenant ? Number(f.tenant) : undefined };
  if (isAdmin() && scoped && f.state === 'discarded') {
    bulk.append(el('button', { type: 'button', id: 'replay-matching', class: 'primary',
      onclick: () => bulkAction('replay', f, Object.assign({}, target,
        { since: f.since || undefined, until: f.until || undefined })) }, 'Replay matching…'));
  }
  // Cancel takes no time range, so it is offered only for a filter without one: the count shown
  // must be what the cancel takes.
  if (isAdmin() && scoped && WAITING.includes(f.state) && !f.since && !f.until) {
    bulk.append(el('button', { type: 'button', id: 'cancel-matching', class: 'danger',
      onclick: () => bulkAction('cancel', f, target) }, 'Cancel matching…'));
  }

  const list = table(['Id', 'State', 'Tier', 'Tenant', 'Channel', { text: 'Attempt', num: true },
    'Created', 'Finished', { text: 'Bytes', num: true }, 'Last error'], found.deliveries, (d) =>
    el('tr', { 'data-test': 'delivery-row', 'data-delivery': d.id, 'data-state': d.state },
      el('td', {}, link('/deliveries/' + d.id, '#' + d.id)), el('td', {}, badge(d.state)),
      el('td', {}, d.queue), el('td', {}, d.tenant),
      el('td', {}, link('/channels/' + d.channel, '#' + d.channel)),
      num(d.attempt + '/' + d.max_attempts), el('td', {}, when(d.created_at)),
      el('td', {}, when(d.finished_at)), num(d.payload_bytes),
      el('td', { class: 'error-text' }, d.last_error || '')),
  'No delivery matches.');
  const note = el('p', { class: 'muted', id: 'deliveries-examined' },
    found.deliveries.length + ' shown; ' + found.examined + ' rows examined' +
    (found.exhaustive ? '.' : ' — the search stopped there; narrow the time range to see the rest.'));
  setMain(el('h1', {}, 'Deliveries'), form, bulk, list, note);
}

// Replay or cancel everything a filter matches: count first, confirm with the count, then act.
// The count is asked with the action's own filter (action=replay|cancel, the body's fields), so
// the number confirmed is what the action takes.
async function bulkAction(kind, f, body) {
  showError('');
  let n;
  try {
    n = await api('GET', '/api/deliveries/count' + query(Object.assign({ action: kind }, body)));
  } catch (e) {
    showError(e.message);
    return;
  }
  if (n.count === 0) {
    showNotice('No delivery matches: there is nothing to ' + kind + '.');
    return;
  }
  const count = capped(n.count, n.capped);
  const question = kind === 'replay'
    ? 'Replay ' + count + ' deliveries?' : 'Cancel ' + count + ' waiting deliveries?';
  await act(question, 'POST', '/api/deliveries/' + kind, body, (r) =>
    (kind === 'replay'
      ? 'Replayed ' + r.jobs + ' deliveries (' + r.available + ' available, ' + r.parked + ' parked).'
      : 'Cancelled ' + r.jobs + ' deliveries.') +
    (r.more ? ' More match: run it again for the rest.' : ''));
}

async function deliveryPage(match, seq) {
  const id = match[1];
  const d = await api('GET', '/api/deliveries/' + id);
  if (seq !== renderSeq) return;
  const actions = el('div', { class: 'actions', id: 'delivery-actions' });
  const payloadBox = el('pre', { class: 'payload hidden', id: 'payload' });
  if (isAdmin()) {
    actions.append(el('button', { type: 'button', id: 'show-payload', onclick: async (e) => {
      try {
        const p = await api('GET', '/api/deliveries/' + id + '/payload');
        payloadBox.textContent = JSON.stringify(p.payload, null, 2);
        payloadBox.classList.remove('hidden');
        e.target.disabled = true;
      } catch (err) {
        showError(err.message);
      }
    } }, 'Show payload'));
    if (d.state === 'discarded') {
      actions.append(el('button', { type: 'button', id: 'replay-one', class: 'primary',
        onclick: () => act('Replay delivery ' + id + '?', 'POST', '/api/deliveries/' + id + '/replay',
          undefined, (r) => 'Replayed: ' + r.available + ' available, ' + r.parked + ' parked.') },
      'Replay'));
    }
    if (WAITING.includes(d.state)) {
      actions.append(el('button', { type: 'button', id: 'cancel-one', class: 'danger',
        onclick: () => act('Cancel delivery ' + id + '?', 'POST', '/api/deliveries/' + id + '/cancel',
          undefined, () => 'Cancelled delivery ' + id + '.') }, 'Cancel'));
    }
  }
  const attempts = table([{ text: 'Attempt', num: true }, 'At', 'Node', { text: 'Duration', num: true },
    'Outcome'], d.attempts || [], (a) =>
    el('tr', { 'data-test': 'attempt-row' }, num(a.attempt), el('td', {}, when(a.at)),
      el('td', {}, a.node || ''), num(a.duration_ms == null ? '' : a.duration_ms + ' ms'),
      a.error ? el('td', { class: 'error-text' }, a.error) : el('td', {}, 'HTTP ' + a.status)),
  'No attempt yet.');
  setMain(
    el('div', { class: 'page-head' }, el('h1', {}, 'Delivery #' + d.id),
      el('span', { 'data-test': 'delivery-state' }, badge(d.state))),
    fields([
      ['Tier', d.queue], ['Tenant', d.tenant],
      ['Channel', link('/channels/' + d.channel, '#' + d.channel)],
      ['Priority', String(d.priority)], ['Attempt', d.attempt + ' of ' + d.max_attempts],
      ['Created', when(d.created_at)], ['Scheduled', when(d.scheduled_at)],
      ['Finished', when(d.finished_at)], ['Last tried by', d.attempted_by || ''],
      ['Idempotency key', d.idempotency_key || ''],
      ['Payload size', d.payload_bytes + ' bytes', 'payload-bytes'],
      ['Last error', d.last_error || ''],
    ]),
    actions, payloadBox,
    el('h2', {}, 'Attempts'), attempts);
}

async function actionsPage(match, seq) {
  const rows = await api('GET', '/api/actions?limit=200');
  if (seq !== renderSeq) return;
  setMain(el('h1', {}, 'Actions'), table(['Id', 'At', 'Who', 'Action', 'Target', 'Filter',
    { text: 'Jobs', num: true }], rows, (a) =>
    el('tr', { 'data-test': 'action-row', 'data-action-name': a.action },
      num(a.id), el('td', {}, when(a.at)), el('td', { class: 'mono' }, a.who),
      el('td', {}, a.action), el('td', {}, a.target),
      el('td', { class: 'mono' }, a.filter && Object.keys(a.filter).length ? JSON.stringify(a.filter) : ''),
      num(a.jobs)),
  'No action has been taken.'));
}

function notFoundPage() {
  setMain(el('h1', {}, 'Not found'), el('p', {}, link('/', 'Back to the overview')));
}

// ---------------------------------------------------------------------------------------------
// Routing.
// ---------------------------------------------------------------------------------------------

const ROUTES = [
  // [path, page, nav link to mark, page name (body's data-page once rendered)]
  [/^\/$/, overviewPage, 'overview', 'overview'],
  [/^\/channels$/, channelsPage, 'channels', 'channels'],
  [/^\/channels\/(\d+)$/, channelPage, 'channels', 'channel'],
  [/^\/deliveries$/, deliveriesPage, 'deliveries', 'deliveries'],
  [/^\/deliveries\/(\d+)$/, deliveryPage, 'deliveries', 'delivery'],
  [/^\/actions$/, actionsPage, 'actions', 'actions'],
];

async function render() {
  const seq = ++renderSeq;
  window.clearTimeout(refreshTimer);
  const path = location.pathname;
  const route = ROUTES.find(([re]) => re.test(path));
  for (const a of document.querySelectorAll('nav a')) {
    a.classList.toggle('current', !!route && a.dataset.nav === route[2]);
  }
  delete document.body.dataset.page;
  if (!route) return notFoundPage();
  try {
    await route[1](path.match(route[0]), seq);
    // data-page says which page finished rendering (the browser test waits on it).
    if (seq === renderSeq) document.body.dataset.page = route[3];
  } catch (e) {
    if (seq === renderSeq) showError(e.message);
  }
}

function navigate(path) {
  showError('');
  showNotice('');
  history.pushState(null, '', path);
  render();
}

// Links inside the console navigate without a reload; a modified click (new tab) is left alone.
document.addEventListener('click', (e) => {
  const a = e.target.closest('a');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin) return;
  e.preventDefault();
  navigate(url.pathname + url.search);
});

window.addEventListener('popstate', () => {
  showError('');
  showNotice('');
  render();
});

async function logout() {
  try {
    await api('POST', '/logout');
  } catch (e) {
    // Logged out or not, the login form is where this ends.
  }
  location.assign('/login');
}

async function start() {
  document.getElementById('logout').addEventListener('click', logout);
  try {
    const s = await api('GET', '/api/session');
    session.role = s.role;
    session.csrf = s.csrf;
  } catch (e) {
    showError(e.message);
    return;
  }
  document.getElementById('role').textContent = session.role;
  document.body.dataset.role = session.role;
  await render();
}

start();
