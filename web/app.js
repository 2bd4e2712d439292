/* silt dashboard: hash-routed pages over the public HTTP API (docs/api.md).
 * Every number shown comes from an API reply; nothing here computes state
 * the server does not publish. Rendering builds DOM nodes with textContent
 * only (never innerHTML), so queue names and payloads cannot inject markup.
 * Values keep the API's own text (offsets, names) so what a page shows
 * can be compared with what the API answers; each value cell carries
 * data-k="<API key>" and each row data-row="<name>" for that purpose.
 * Times and byte counts are the exception (readable(), below): their words
 * are "3 min ago" and "1.2 MB", and the API's own text is the cell's title. */
'use strict';

const REFRESH_MS = 2000;      /* live pages re-read the API this often */
const RATE_SAMPLES = 900;     /* live points kept on the overview's rate chart (half an hour), after its history */
const HISTORY_HOURS = 24;     /* what the charts show first: the server's per-minute history */
const DLQ_PAGE = 50;
const PARTITION_PAGE = 50;    /* a queue's partitions a page at a time: a queue may have 100,000 */
const LIST_PAGE = 50;         /* queues and consumer groups a page at a time */

/* ---- DOM helpers ---------------------------------------------------- */

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {   /* nested lists of nodes, e.g. [', ', link] per item */
    if (c === undefined || c === null || c === false) continue;
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function show(v) {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/* Times as the API writes them (ISO 8601) are said as how long ago (or
 * how soon) they are, byte counts (a key "bytes" or "...Bytes") in KB, MB
 * or GB; the exact value, the API's own text, is the title (on hover). */
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)$/;
const AGO_UNITS = [[86400, 'd'], [3600, 'h'], [60, 'min'], [1, 's']];

function relativeTime(iso, now) {
  const s = Math.round(((now === undefined ? Date.now() : now) - Date.parse(iso)) / 1000);
  if (Math.abs(s) < 5) return 'just now';
  const [unit, name] = AGO_UNITS.find(([u]) => Math.abs(s) >= u);
  const n = Math.floor(Math.abs(s) / unit) + ' ' + name;
  return s > 0 ? n + ' ago' : 'in ' + n;
}

function sizeText(bytes) {
  if (bytes < 1024) return bytes + ' B';
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = bytes / 1024, i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (v < 10 ? v.toFixed(1) : String(Math.round(v))) + ' ' + units[i];
}

/* A value's words, and its exact text as a title where the words are not it. */
function readable(key, v) {
  if (typeof v === 'string' && ISO_TIME.test(v)) return { text: relativeTime(v), title: v };
  if (typeof v === 'number' && /(^|\.)bytes$|Bytes$/.test(key)) return { text: sizeText(v), title: v + ' bytes' };
  return { text: show(v), title: null };
}

/* A value cell: numbers right-aligned, the API key in data-k. */
function cell(key, v, cls) {
  const num = typeof v === 'number';
  const r = readable(key, v);
  return h('td', { 'data-k': key, title: r.title, class: [num ? 'num' : '', cls || ''].join(' ').trim() || null }, r.text);
}

/* In a box that scrolls sideways on a narrow screen, so no page is wider
 * than the viewport. */
function table(headers, rows) {
  return h('div', { class: 'scroll' }, h('table', {},
    h('thead', {}, h('tr', {}, headers.map(([label, num]) => h('th', { class: num ? 'num' : null }, label)))),
    h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: headers.length, class: 'muted' }, 'none')))));
}

function card(label, key, v, cls) {
  const r = readable(key, v);
  return h('div', { class: 'card' }, h('div', { class: 'label' }, label),
    h('div', { class: cls ? 'value ' + cls : 'value', 'data-k': key, title: r.title }, r.text));
}

function queueLink(name) {
  return h('a', { href: '#/queues/' + encodeURIComponent(name) }, name);
}

/* ---- API ------------------------------------------------------------ */

/* "N things; showing a–b" with links to the pages before and after, for a
 * list paged by position (?limit=&offset=); hashFor(offset) is a page's hash. */
function offsetPager(total, noun, offset, shown, size, hashFor, back, forth) {
  return h('div', { class: 'pager' },
    h('span', {}, h('span', { 'data-k': 'total' }, String(total)),
      ' ' + noun + '; showing ' + (shown ? offset + 1 : 0) + '–' + (offset + shown)),
    offset > 0 ? h('a', { 'data-action': 'page-back', href: hashFor(Math.max(0, offset - size)) }, back) : null,
    offset + shown < total ? h('a', { 'data-action': 'page-forth', href: hashFor(offset + size) }, forth) : null);
}

/* The bearer token for a server with JWT_ENABLED: pasted once into the
 * prompt below, kept in this browser's localStorage, sent with every call. */
const TOKEN_KEY = 'silt.token';

/* Shown when the server answers 401: where to paste a token. Saving (or
 * clearing) it shows the current page again, read with it. */
function tokenPrompt(message) {
  if (document.getElementById('token-prompt')) return;
  const input = h('input', { type: 'password', id: 'token-input', autocomplete: 'off',
    placeholder: 'paste a bearer token (JWT)', size: 60, 'aria-label': 'bearer token' });
  const save = () => {
    const t = input.value.trim();
    if (t) localStorage.setItem(TOKEN_KEY, t); else localStorage.removeItem(TOKEN_KEY);
    who.token = undefined;   /* another token, perhaps another role */
    box.remove();
    route();
  };
  const box = h('form', { id: 'token-prompt', class: 'error', role: 'alert',
                          onsubmit: (e) => { e.preventDefault(); save(); } },
    h('span', {}, 'This server needs a token (' + message + '). '),
    input, ' ', h('button', { type: 'submit', 'data-action': 'save-token' }, 'use token'));
  document.body.insertBefore(box, document.body.firstChild);
  input.focus();
}

/* A read that failed: status 0 when no reply came (the server is down or
 * unreachable), else the HTTP status and the API's error. */
class ApiError extends Error {
  constructor(path, status, error) {
    super(path + ': ' + (status ? status + (error ? ' ' + error : '') : 'no reply'));
    this.status = status;
    this.error = error || '';
  }
}

/* The page's subject is gone (404 for the queue, group, task or
 * workflow the page shows): said once, and the page stops refreshing. */
class GoneError extends Error {}

/* GET or POST a route; resolves to { status, body } for any HTTP status
 * (a red coverage answers 503 with its report), rejects with an ApiError
 * when the server cannot be reached or does not answer JSON. A 401 also
 * asks for a token. */
async function api(path, options) {
  const headers = { Accept: 'application/json' };
  const token = localStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = 'Bearer ' + token;
  const opts = Object.assign({}, options || {});
  opts.headers = Object.assign(headers, opts.headers || {});   /* a caller's Content-Type joins them */
  let res, text;
  try {
    res = await fetch(path, opts);
    text = await res.text();
  } catch (e) {
    throw new ApiError(path, 0, '');
  }
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (e) {
    throw new ApiError(path, res.status, '(not JSON)');
  }
  /* a 401 for a token no longer kept (a request sent before one was pasted) asks nothing */
  if (res.status === 401 && token === localStorage.getItem(TOKEN_KEY))
    tokenPrompt((body && body.error) || 'authentication required');
  /* total: a list's whole size, where its body is only a page (X-Total-Count) */
  const total = res.headers.get('X-Total-Count');
  return { status: res.status, body, total: total === null ? null : Number(total) };
}

function failed(path, r) {
  return new ApiError(path, r.status, (r.body && r.body.error) || '');
}

async function apiOk(path) {
  const r = await api(path);
  if (r.status !== 200) throw failed(path, r);
  return r.body;
}

/* A failure in words, once: "database unavailable: database unavailable"
 * (the API's 503) reads as what it means. */
function describe(e) {
  if (!(e instanceof ApiError)) return e.message;
  if (e.status === 0) return 'the server does not answer';
  if (e.status === 503 && e.error.startsWith('database unavailable')) return 'the database is unavailable';
  if (e.status === 503) return 'the server is unavailable (' + (e.error || '503') + ')';
  return e.message;
}

/* The header's words for a failed refresh: the server may be up while
 * its database is not. */
function headerWords(e) {
  if (e instanceof ApiError && e.status === 0) return 'cannot reach the server';
  if (e instanceof ApiError && e.status === 503) return 'server up; database unavailable';
  return 'a request failed';
}

/* The token's role (GET /api/v1/whoami), read once per token: actions a
 * role may not take are not offered. */
const ROLES = ['read-only', 'read-write', 'admin'];
const who = { token: undefined, role: null };

async function readRole() {
  const token = localStorage.getItem(TOKEN_KEY);
  if (who.token === token) return who.role;
  const r = await api('/api/v1/whoami');
  if (r.status !== 200) return null;   /* asked again on the next refresh */
  who.token = token;
  who.role = r.body.role;
  return who.role;
}

/* Whether the page's token may take an action that needs role need. */
function may(state, need) {
  return ROLES.indexOf(state.role) >= ROLES.indexOf(need);
}

/* ---- page lifecycle ------------------------------------------------- */

const main = document.getElementById('main');
const statusEl = document.getElementById('status');
const staleEl = document.getElementById('stale');
let current = { token: 0, timer: null, teardown: null };

function setStatus(text, bad) {
  statusEl.textContent = text;
  statusEl.className = 'status' + (bad ? ' bad' : '');
}

/* What an action did (replay, seek, delete): stays until the next action,
 * unlike the status line, which each refresh rewrites. */
function notice(text, bad) {
  const el = document.getElementById('notice');
  el.textContent = text;
  el.className = bad ? 'error' : 'ok';
  el.hidden = false;
}

/* One notice while refreshes fail, over the page's last data: when it
 * was read and why the refresh failed, rewritten in place (never one
 * message per failure); gone with the next good read. */
function staleNotice(e, shownAt, failures) {
  if (!e) {
    staleEl.hidden = true;
    staleEl.textContent = '';
    delete staleEl.dataset.failures;
    return;
  }
  staleEl.textContent = 'Not current: showing what the API answered at ' + shownAt + '; ' + describe(e) +
    '. Retrying every ' + REFRESH_MS / 1000 + ' s.';
  staleEl.dataset.failures = String(failures);
  staleEl.hidden = false;
}

/* The page's subject is gone: said instead of the page, and no more
 * refreshes (404 would only repeat). */
function showGone(page, args, state, e) {
  const words = state.shownAt ? 'The ' + e.message + ' no longer exists (deleted while this page was open).'
    : 'There is no ' + e.message + '.';
  main.replaceChildren(h('h1', {}, page.title(args)), h('p', { class: 'error', id: 'page-gone', role: 'alert' }, words));
}

/* Runs a page's load function now and, when live, every REFRESH_MS; a
 * navigation cancels it (token), so a late reply never paints another page.
 * A refresh that fails keeps the page as it was, under one stale notice;
 * only a first load that fails shows the error instead of the page. The
 * body's data-polling says whether another refresh is scheduled. */
function runPage(page, args) {
  const token = ++current.token;
  clearTimeout(current.timer);
  if (current.teardown) current.teardown();
  current.teardown = null;
  staleNotice(null);
  const state = { failures: 0 };
  const tick = async () => {
    let again = page.live;
    try {
      state.role = await readRole();
      const view = await page.load(args, state);
      if (token !== current.token) return;
      const typing = document.activeElement && ['INPUT', 'SELECT'].includes(document.activeElement.tagName) &&
        main.contains(document.activeElement);
      if (!typing) main.replaceChildren(view);   /* never repaint over what someone is typing */
      if (page.after && !typing) page.after(state);
      state.shownAt = new Date().toLocaleTimeString();
      state.failures = 0;
      staleNotice(null);
      setStatus('updated ' + state.shownAt, false);
    } catch (e) {
      if (token !== current.token) return;
      if (e instanceof GoneError) {
        again = false;
        showGone(page, args, state, e);
        staleNotice(null);
      } else if (state.shownAt) {
        staleNotice(e, state.shownAt, ++state.failures);
      } else {
        main.replaceChildren(h('h1', {}, page.title(args)), h('p', { class: 'error', id: 'page-error' }, describe(e)));
      }
      if (!(e instanceof GoneError)) setStatus(headerWords(e), true);
    }
    if (token !== current.token) return;
    document.body.dataset.polling = again ? 'true' : 'false';
    if (again) current.timer = setTimeout(tick, REFRESH_MS);
  };
  current.teardown = () => { if (page.teardown) page.teardown(state); };
  document.title = page.title(args) + ' · silt';
  tick();
}

/* ---- overview ------------------------------------------------------- */

/* Messages in and out per second across every server on the database:
 * the overview route's counters (offsetsWritten, offsetsConsumed), read
 * on each refresh; a rate is the change between two reads over the time
 * between them. */
const rates = { last: null, labels: [], written: [], consumed: [] };

function sampleRates(ov) {
  const now = Date.now();
  const cur = { t: now, written: ov.offsetsWritten, consumed: ov.offsetsConsumed };
  const prev = rates.last;
  rates.last = cur;
  if (!prev) return;
  const dt = (cur.t - prev.t) / 1000;
  rates.labels.push(new Date(now).toLocaleTimeString());
  /* a deleted partition or cursor takes its counts with it: never a negative rate */
  for (const k of ['written', 'consumed']) rates[k].push(Math.max(0, (cur[k] - prev[k]) / dt));
  if (rates.labels.length > RATE_SAMPLES)
    for (const k of ['labels', 'written', 'consumed']) rates[k].shift();
}

function lastRate(k) {
  return rates[k].length ? Math.round(rates[k][rates[k].length - 1]) : null;
}

/* The server's history (GET /api/v1/stats/history): each rolled minute
 * of the last HISTORY_HOURS, every queue's or one queue's. Read once per
 * visit; with again, also once a minute has passed (a new minute is
 * rolled a little after it ends), for a chart that extends by the minute
 * rather than by live points. A server that cannot answer it leaves the
 * chart without history rather than failing the page. */
async function readHistory(state, queue, again) {
  if (state.history && (!again || Date.now() - state.historyAt < 60e3)) return;
  const q = new URLSearchParams({ hours: String(HISTORY_HOURS) });
  if (queue) q.set('queue', queue);
  const r = await api('/api/v1/stats/history?' + q.toString());
  state.history = r.status === 200 ? r.body.minutes : [];
  state.historyAt = Date.now();
}

/* A rolled minute's counts as rates per second over the span they cover. */
function historySeries(minutes) {
  const per = (m, k) => m.seconds > 0 ? m[k] / m.seconds : 0;
  return {
    labels: minutes.map((m) => new Date(m.minute).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })),
    written: minutes.map((m) => per(m, 'pushed')), consumed: minutes.map((m) => per(m, 'consumed')),
    dead: minutes.map((m) => per(m, 'deadLettered')),
  };
}

/* In and out per second on canvas id: the stored minutes, then live
 * points (labels, written, consumed) when given. data-history-points
 * says how many stored minutes it drew. */
function drawRateChart(state, id, live) {
  const canvas = document.getElementById(id);
  if (!canvas) return;
  const hist = historySeries(state.history || []);
  canvas.dataset.historyPoints = String(hist.labels.length);
  if (typeof Chart === 'undefined') return;
  const tail = live || { labels: [], written: [], consumed: [] };
  const data = {
    labels: hist.labels.concat(tail.labels),
    datasets: [
      { label: 'in (offsets written)/s', data: hist.written.concat(tail.written), borderColor: '#2d6cdf', pointRadius: 0 },
      { label: 'out (offsets consumed)/s', data: hist.consumed.concat(tail.consumed), borderColor: '#2e7d32',
        pointRadius: 0 },
      { label: 'dead-lettered/s', data: hist.dead, borderColor: '#c62828', pointRadius: 0 },
    ],
  };
  if (state.chart) state.chart.destroy();
  state.chart = new Chart(canvas, { type: 'line', data,
    options: { animation: false, responsive: true, maintainAspectRatio: false,
      scales: { y: { beginAtZero: true } } } });
}

function drawRates(state) {
  drawRateChart(state, 'rates', rates);
}

/* The maintenance switch, for an admin: asks, then POSTs the other state. */
function maintenanceSwitch(hr, state) {
  const b = hr.body || {};
  if (!may(state, 'admin') || typeof b.maintenanceMode !== 'boolean') return null;
  const on = b.maintenanceMode;
  return h('div', { class: 'pager' }, h('button', { 'data-action': on ? 'maintenance-off' : 'maintenance-on',
    onclick: () => confirmedPost(on
      ? 'Turn maintenance mode off? The pushes it held are delivered into the log, in order.'
      : 'Turn maintenance mode on? Every server then holds pushes in a buffer (accepted, not poppable) until it is turned off.',
    '/api/v1/system/maintenance', 'maintenance', (r) => 'maintenance mode is ' + (r.maintenanceMode ? 'on' : 'off'),
    { enabled: !on }) }, on ? 'turn maintenance mode off' : 'turn maintenance mode on'));
}

/* The smallest UUIDv7 of a moment: task ids are UUIDv7 of their send, so
 * the task list's cursor (id > cursor) starts there. */
function uuid7At(ms) {
  const hex = Math.floor(ms).toString(16).padStart(12, '0');
  return hex.slice(0, 8) + '-' + hex.slice(8, 12) + '-7000-8000-000000000000';
}

const HOUR_MS = 3600e3;

/* "1 task", "2 tasks"; n may be a word ("50 or more"). */
function count(n, noun) {
  return n + ' ' + noun + (n === 1 ? '' : 's');
}

/* What needs attention now, worst kind first (then the larger), each
 * linking to its page. Every figure is an API's: groups' state and lag,
 * workers' late flag, task-retention coverage, tasks sent in the last hour
 * that failed, dead letters of the last hour, maintenance mode. */
const ATTENTION_ORDER = ['dead-group', 'late-worker', 'coverage', 'failing-tasks', 'dead-letters', 'lagging-group',
  'maintenance'];

function attentionItems(r) {
  const items = [];
  const add = (kind, href, text, weight) => items.push({ kind, href, text, weight: weight || 0 });
  for (const g of r.groups) if (g.state === 'Dead' || g.state === 'Lagging')
    add(g.state === 'Dead' ? 'dead-group' : 'lagging-group', '#/groups/' + encodeURIComponent(g.name),
      'consumer group ' + g.name + ' is ' + g.state + ': ' + count(g.totalLag, 'message') + ' behind, the oldest ' +
      g.maxTimeLag + ' s old', Number(g.totalLag));
  for (const w of r.workers) if (w.late)
    add('late-worker', '#/workers', 'worker ' + w.workerId + ' holds ' + count(w.claimed + w.running, 'task') + ' and was last heard ' +
      Math.round(w.lastSeenAgeMs / 1000) + ' s ago (heartbeat every ' + w.heartbeatIntervalMs / 1000 + ' s)', w.lastSeenAgeMs);
  if (r.coverage && r.coverage.healthy === false)
    add('coverage', '#/task-retention', 'task retention coverage is red: ' + (r.coverage.problems || []).map(show).join('; '));
  if (r.failed.length)
    add('failing-tasks', '#/tasks?status=FAILED', count(r.failed.length === TASK_PAGE ? TASK_PAGE + ' or more' : r.failed.length,
      'task') + ' sent in the last hour failed', r.failed.length);
  const since = new Date(Date.now() - HOUR_MS).toISOString();
  const fresh = r.deadLetters.filter((m) => m.failedAt >= since).length;
  if (fresh) add('dead-letters', '#/dead-letters', count(fresh === DLQ_PAGE ? DLQ_PAGE + ' or more' : fresh, 'message') +
    ' dead-lettered in the last hour', fresh);
  if (r.health.maintenanceMode)
    add('maintenance', '#/', 'maintenance mode is on: pushes are held, ' + r.health.bufferedMessages + ' buffered');
  return items.sort((a, b) => ATTENTION_ORDER.indexOf(a.kind) - ATTENTION_ORDER.indexOf(b.kind) || b.weight - a.weight);
}

function attentionList(items) {
  return h('section', { id: 'attention', 'aria-labelledby': 'attention-title' },
    h('h2', { id: 'attention-title' }, 'Needs attention'),
    items.length ? h('ol', { class: 'attention' }, items.map((it) => h('li', { 'data-attention': it.kind, class: 'bad' },
      h('a', { href: it.href }, it.text))))
      : h('p', { class: 'muted', id: 'attention-none' }, 'nothing needs attention'));
}

function healthCard(hr) {
  const b = hr.body || {};
  const good = hr.status === 200 && b.status === 'healthy';
  return h('div', { class: 'cards', id: 'health' },
    h('div', { class: 'card ' + (good ? 'ok' : 'bad') }, h('div', { class: 'label' }, 'server'),
      h('div', { class: 'value', 'data-k': 'status' }, show(b.status))),
    h('div', { class: 'card ' + (b.database === 'connected' ? 'ok' : 'bad') }, h('div', { class: 'label' }, 'database'),
      h('div', { class: 'value', 'data-k': 'database' }, show(b.database))),
    card('version', 'version', b.version),
    card('maintenance mode', 'maintenanceMode', b.maintenanceMode),
    card('buffered messages', 'bufferedMessages', b.bufferedMessages));
}

function queueRow(q) {
  const pending = Object.entries(q.messages.pending || {});
  return h('tr', { 'data-row': q.name },
    h('td', { 'data-k': 'name' }, queueLink(q.name)),
    cell('namespace', q.namespace), cell('task', q.task), cell('partitions', q.partitions),
    cell('messages.total', q.messages.total),
    h('td', { 'data-k': 'messages.pending' }, pending.length
      ? pending.map(([g, n]) => h('div', { 'data-group': g }, g + ': ' + n)) : '—'),
    cell('messages.deadLetters', q.messages.deadLetters, q.messages.deadLetters ? 'bad' : ''),
    cell('createdAt', q.createdAt));
}

const overviewPage = {
  live: true,
  title: () => 'Overview',
  async load(args, state) {
    const first = '?limit=' + LIST_PAGE;
    const failedSince = new URLSearchParams({ status: 'FAILED', cursor: uuid7At(Date.now() - HOUR_MS), limit: String(TASK_PAGE) });
    const [ov, queues, groups, hr, dlq, failed, workers, cov] = await Promise.all([
      apiOk('/api/v1/resources/overview'), apiOk('/api/v1/resources/queues' + first),
      apiOk('/api/v1/consumer-groups' + first), api('/health'), apiOk('/api/v1/dlq?limit=' + DLQ_PAGE),
      apiOk('/api/v1/tasks?' + failedSince), apiOk('/api/v1/workers'), api('/api/v1/task-retention/coverage')]);
    if (cov.status !== 200 && !(cov.status === 503 && cov.body && 'healthy' in cov.body))
      throw failed('/api/v1/task-retention/coverage', cov);
    sampleRates(ov);
    await readHistory(state, null, false);
    return h('div', { id: 'page-overview' },
      h('h1', {}, 'Overview'),
      attentionList(attentionItems({ groups, workers: workers.workers, coverage: cov.body, failed: failed.tasks,
        deadLetters: dlq.messages, health: hr.body || {} })),
      h('div', { class: 'cards', id: 'totals' },
        card('queues', 'queues', ov.queues), card('partitions', 'partitions', ov.partitions),
        card('messages retained', 'messages', ov.messages), card('segments', 'segments', ov.segments),
        card('consumer groups', 'consumerGroups', ov.consumerGroups),
        card('total lag', 'totalLag', ov.totalLag),
        card('in per second', 'writtenPerSecond', lastRate('written')),
        card('out per second', 'consumedPerSecond', lastRate('consumed')),
        card('active leases', 'activeLeases', ov.activeLeases),
        card('dead letters', 'deadLetters', ov.deadLetters), card('last write', 'lastWriteAt', ov.lastWriteAt)),
      h('h2', {}, 'Health'), healthCard(hr), maintenanceSwitch(hr, state),
      h('h2', {}, 'Messages per second (every server): the last ' + HISTORY_HOURS + ' hours, then live'),
      h('div', { class: 'chart' }, h('canvas', { id: 'rates' })),
      h('h2', {}, 'Queues'), queueTable(queues),
      ov.queues > queues.length ? h('p', {}, h('a', { id: 'all-queues', href: '#/queues' }, 'all ' + ov.queues + ' queues ›')) : null,
      h('h2', {}, 'Consumer groups'), groupTable(groups),
      ov.consumerGroups > groups.length
        ? h('p', {}, h('a', { id: 'all-groups', href: '#/groups' }, 'all ' + ov.consumerGroups + ' consumer groups ›')) : null);
  },
  after: drawRates,
  /* back later, the first read starts again: no rate averaged over the time away */
  teardown(state) { if (state.chart) state.chart.destroy(); rates.last = null; },
};

function queueTable(queues) {
  return table([['queue'], ['namespace'], ['task'], ['partitions', 1], ['messages', 1], ['pending by group'],
    ['dead letters', 1], ['created']], queues.map(queueRow));
}

function groupTable(groups) {
  return table([['group'], ['state'], ['queues'], ['members', 1], ['total lag', 1], ['max time lag (s)', 1],
    ['last activity']], groups.map(groupRow));
}

/* A list the server pages by position whose length it does not answer:
 * "next" while a page comes back full. */
function nextPager(offset, shown, hashFor) {
  return h('div', { class: 'pager' }, h('span', {}, 'showing ' + (shown ? offset + 1 : 0) + '–' + (offset + shown)),
    offset > 0 ? h('a', { 'data-action': 'page-back', href: hashFor(Math.max(0, offset - LIST_PAGE)) }, '‹ previous') : null,
    shown === LIST_PAGE ? h('a', { 'data-action': 'page-forth', href: hashFor(offset + LIST_PAGE) }, 'next ›') : null);
}

/* ---- finding in a list ---------------------------------------------- */

/* The queue and group lists are searched, sorted and paged by the server
 * (?search=&sort=&order=, docs/api.md): the page's hash carries them, and
 * the total is the filtered set's (X-Total-Count). */
const FIND_KEYS = ['search', 'sort', 'order'];
const QUEUE_SORTS = [['name', 'name'], ['lag', 'lag'], ['age', 'age'], ['failures', 'dead letters'],
  ['messages', 'messages'], ['rate', 'push rate']];
const GROUP_SORTS = [['name', 'name'], ['lag', 'total lag'], ['age', 'oldest unread']];
const ORDERS = [['', 'usual order'], ['asc', 'ascending'], ['desc', 'descending']];

function findParams(args) {
  return Object.fromEntries(FIND_KEYS.filter((k) => args[k]).map((k) => [k, args[k]]));
}

function select(id, label, choices, chosen) {
  return [h('label', { for: id }, label), h('select', { id }, choices.map(([v, words]) =>
    h('option', { value: v, selected: v === chosen }, words)))];
}

/* Search box, sort and order; submitting (or choosing a sort) goes to
 * hashOf({search, sort, order}), the first page. */
function findForm(id, args, sorts, hashOf) {
  const search = h('input', { id: id + '-search', type: 'search', value: args.search || '', placeholder: 'part of a name' });
  const [sortLabel, sort] = select(id + '-sort', 'sort by', sorts, args.sort || sorts[0][0]);
  const [orderLabel, order] = select(id + '-order', 'order', ORDERS, args.order || '');
  const go = () => { location.hash = hashOf({ search: search.value, sort: sort.value, order: order.value }); };
  sort.addEventListener('change', go);
  order.addEventListener('change', go);
  return h('form', { class: 'pager', role: 'search', id: id + '-find', onsubmit: (e) => { e.preventDefault(); go(); } },
    h('label', { for: id + '-search' }, 'search'), search, sortLabel, sort, orderLabel, order,
    h('button', { type: 'submit' }, 'find'));
}

/* A searched list's page: the route's reply and the pager over its total. */
async function foundPage(route, args, hashBase, noun, extra) {
  const offset = Math.max(0, Number(args.offset) || 0);
  const find = findParams(args);
  const path = route + '?' + new URLSearchParams(Object.assign({}, extra || {}, find,
    { limit: String(LIST_PAGE), offset: String(offset) }));
  const r = await api(path);
  if (r.status !== 200) throw failed(path, r);
  const hashOf = (values) => hashBase + '?' + new URLSearchParams(Object.fromEntries(
    Object.entries(values).filter(([, v]) => v !== '' && v !== undefined)));
  const pageHash = (o) => hashOf(Object.assign({}, find, { offset: String(o) }));
  const pager = r.total === null ? nextPager(offset, r.body.length, pageHash)
    : offsetPager(r.total, noun, offset, r.body.length, LIST_PAGE, pageHash, '‹ previous', 'next ›');
  return { rows: r.body, pager, hashOf };
}

const queuesPage = {
  live: true,
  title: () => 'Queues',
  async load(args) {
    const f = await foundPage('/api/v1/resources/queues', args, '#/queues', 'queues');
    return h('div', { id: 'page-queues' }, h('h1', {}, 'Queues'),
      findForm('queues', args, QUEUE_SORTS, f.hashOf), f.pager, queueTable(f.rows));
  },
};

function groupRow(g) {
  return h('tr', { 'data-row': g.name },
    h('td', { 'data-k': 'name' }, groupLink(g.name)), cell('state', g.state, g.state === 'Stable' ? '' : 'bad'),
    h('td', { 'data-k': 'queues' }, (g.queues || []).map((q, i) => [i ? ', ' : '', queueLink(q)])),
    cell('members', g.members), cell('totalLag', g.totalLag), cell('maxTimeLag', g.maxTimeLag),
    cell('lastActivityAt', g.lastActivityAt));
}

/* ---- one queue ------------------------------------------------------ */

function partitionRow(p) {
  return h('tr', { 'data-row': p.name },
    cell('name', p.name), cell('lastOffset', p.lastOffset), cell('logStart', p.logStart),
    cell('txnsStart', p.txnsStart), cell('messages', p.messages), cell('segments', p.segments),
    cell('lastWriteAt', p.lastWriteAt), cell('createdAt', p.createdAt), cell('id', p.id));
}

const queuePage = {
  live: true,
  title: (args) => 'Queue ' + args.name,
  async load(args, state) {
    const offset = Math.max(0, Number(args.offset) || 0);
    const path = '/api/v1/resources/queues/' + encodeURIComponent(args.name);
    const r = await api(path + '?' + new URLSearchParams({ limit: String(PARTITION_PAGE), offset: String(offset) }));
    if (r.status === 404) throw new GoneError('queue ' + args.name);
    if (r.status !== 200) throw failed(path, r);
    const q = r.body;
    const groups = await apiOk('/api/v1/consumer-groups?' + new URLSearchParams({ queue: q.name, limit: String(LIST_PAGE) }));
    await readHistory(state, q.name, true);
    const pending = q.messages.pending || {};
    return h('div', { id: 'page-queue', 'data-queue': q.name },
      h('h1', {}, 'Queue ', h('span', { 'data-k': 'name' }, q.name)),
      h('p', {}, h('a', { href: '#/queues/' + encodeURIComponent(q.name) + '/retention', id: 'retention-link' },
        'Retention: what was deleted, what pins it, what goes next')),
      h('div', { class: 'cards' },
        card('namespace', 'namespace', q.namespace), card('task', 'task', q.task),
        card('partitions', 'partitions', q.partitions), card('messages retained', 'messages.total', q.messages.total),
        card('dead letters', 'messages.deadLetters', q.messages.deadLetters), card('created', 'createdAt', q.createdAt),
        card('last write', 'lastWriteAt', q.lastWriteAt)),
      h('h2', {}, 'Messages per second: the last ' + HISTORY_HOURS + ' hours, by the minute'),
      h('div', { class: 'chart' }, h('canvas', { id: 'queue-rates' })),
      h('h2', {}, 'Options'),
      table([['option'], ['value']], Object.entries(q.options || {}).map(([k, v]) =>
        h('tr', { 'data-row': k }, h('td', {}, k), cell(k, v)))),
      h('h2', {}, 'Partitions'),
      offsetPager(q.partitions, 'partitions', offset, q.partitionList.length, PARTITION_PAGE,
        (o) => '#/queues/' + encodeURIComponent(q.name) + '?offset=' + o, '‹ previous', 'next ›'),
      table([['partition'], ['last offset', 1], ['log start (watermark)', 1], ['txns start', 1],
        ['messages', 1], ['segments', 1], ['last write'], ['created'], ['id']], q.partitionList.map(partitionRow)),
      h('h2', {}, 'Consumer groups on this queue'),
      table([['group'], ['pending here', 1], ['state'], ['members', 1], ['total lag (all queues)', 1],
        ['max time lag (s)', 1], ['last activity']], groups.map((g) => h('tr', { 'data-row': g.name },
        h('td', { 'data-k': 'name' }, groupLink(g.name)), cell('pending', pending[g.name] === undefined ? null : pending[g.name]),
        cell('state', g.state, g.state === 'Stable' ? '' : 'bad'), cell('members', g.members),
        cell('totalLag', g.totalLag), cell('maxTimeLag', g.maxTimeLag), cell('lastActivityAt', g.lastActivityAt)))));
  },
  after: (state) => drawRateChart(state, 'queue-rates', null),
  teardown(state) { if (state.chart) state.chart.destroy(); },
};

const groupsPage = {
  live: true,
  title: () => 'Consumer groups',
  async load(args) {
    const f = await foundPage('/api/v1/consumer-groups', args, '#/groups', 'consumer groups');
    return h('div', { id: 'page-groups' }, h('h1', {}, 'Consumer groups'),
      findForm('groups', args, GROUP_SORTS, f.hashOf), f.pager, groupTable(f.rows));
  },
};

/* ---- one consumer group -------------------------------------------- */

function groupLink(name) {
  return h('a', { href: '#/groups/' + encodeURIComponent(name) }, name);
}

/* Seek moves every partition of the queue for this group: asked first. */
async function seek(group, queue, body, what) {
  if (!confirm('Move ' + group + '\'s cursors on ' + queue + ' ' + what + '?')) return;
  const r = await api('/api/v1/consumer-groups/' + encodeURIComponent(group) + '/queues/' +
    encodeURIComponent(queue) + '/seek', { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body) });
  if (r.status === 200) notice('moved ' + r.body.partitions.length + ' cursors on ' + queue, false);
  else notice('seek failed: ' + ((r.body && r.body.error) || r.status), true);
  route();
}

function seekForm(group, queue) {
  const when = h('input', { type: 'text', placeholder: '2026-12-01T07:00:00Z', 'data-seek-time': queue, size: 24,
    'aria-label': 'seek ' + queue + ' to this time' });
  return h('div', { class: 'pager', 'data-seek': queue },
    h('strong', {}, queue), ' seek:',
    h('button', { 'data-action': 'seek-end', 'data-queue': queue,
      onclick: () => seek(group, queue, { toEnd: true }, 'to the end') }, 'to end'),
    when,
    h('button', { 'data-action': 'seek-time', 'data-queue': queue,
      onclick: () => seek(group, queue, { timestamp: when.value }, 'to ' + when.value) }, 'to time'));
}

const groupPage = {
  live: true,
  title: (args) => 'Group ' + args.name,
  async load(args, state) {
    const offset = Math.max(0, Number(args.offset) || 0);
    const path = '/api/v1/consumer-groups/' + encodeURIComponent(args.name);
    const r = await api(path + '?limit=' + PARTITION_PAGE + '&offset=' + offset);
    if (r.status === 404) throw new GoneError('consumer group ' + args.name);
    if (r.status !== 200) throw failed(path, r);
    const g = r.body;
    const queues = [...new Set(g.queues.concat(g.subscriptions.map((x) => x.queue)))];
    return h('div', { id: 'page-group', 'data-group': g.name },
      h('h1', {}, 'Consumer group ', h('span', { 'data-k': 'name' }, g.name)),
      h('div', { class: 'cards' },
        h('div', { class: 'card ' + (g.state === 'Stable' ? 'ok' : 'bad') }, h('div', { class: 'label' }, 'state'),
          h('div', { class: 'value', 'data-k': 'state' }, show(g.state))),
        card('members (live leases)', 'members', g.members), card('total lag', 'totalLag', g.totalLag),
        card('max time lag (s)', 'maxTimeLag', g.maxTimeLag), card('last activity', 'lastActivityAt', g.lastActivityAt)),
      h('p', { class: 'muted' }, 'The lag counts every partition of the queues the group reads, one it has no cursor ' +
        'on yet from where its first pop there would start.'),
      h('h2', {}, 'Cursors'),
      offsetPager(g.cursors, 'cursors', offset, g.partitions.length, PARTITION_PAGE,
        (o) => '#/groups/' + encodeURIComponent(g.name) + '?offset=' + o, '‹ previous', 'next ›'),
      table([['queue'], ['partition'], ['committed offset', 1], ['lag', 1], ['time lag (s)', 1], ['retries', 1],
        ['consumed', 1], ['last activity'], ['lease']], g.partitions.map((p) =>
        h('tr', { 'data-row': p.queue + '/' + p.partition },
          h('td', { 'data-k': 'queue' }, queueLink(p.queue)), cell('partition', p.partition),
          cell('committedOffset', p.committedOffset), cell('lag', p.lag), cell('timeLag', p.timeLag),
          cell('retryCount', p.retryCount), cell('totalConsumed', p.totalConsumed), cell('lastActivityAt', p.lastActivityAt),
          cell('lease', p.lease ? 'until ' + p.lease.expiresAt : null)))),
      h('h2', {}, 'Subscriptions'),
      table([['queue'], ['from'], ['created']], g.subscriptions.map((x) => h('tr', { 'data-row': x.queue },
        h('td', { 'data-k': 'queue' }, queueLink(x.queue)), cell('from', x.from), cell('createdAt', x.createdAt)))),
      may(state, 'admin') ? [h('h2', {}, 'Seek'),   /* seek needs the admin role */
        h('p', { class: 'muted' }, 'Moves the cursor of every partition of the queue, releases leases and resets retries.'),
        queues.map((q) => seekForm(g.name, q))] : null);
  },
};

/* ---- one queue's log retention --------------------------------------- */

const RULES = [['retentionMsgs', 'retention', '#2d6cdf'], ['completedRetentionMsgs', 'completed_retention', '#2e7d32'],
  ['evictionMsgs', 'max_wait_time_eviction', '#c62828']];

/* A span of offsets the API gives as [from, to) in the one form the
 * explain notes use (queen.offset_span): "offsets 0-19 (20)", "offset 7 (1)". */
function offsetSpan(from, to) {
  const n = to - from;
  return (n === 1 ? 'offset ' + from : 'offsets ' + from + '-' + (to - 1)) + ' (' + n + ')';
}

function explainRow(p) {
  const cap = p.consumptionCap;
  const next = p.nextPass;
  return h('tr', { 'data-row': p.partition },
    cell('partition', p.partition), cell('watermark', p.watermark), cell('lastOffset', p.lastOffset),
    cell('retainedOffsets', p.retainedOffsets), cell('oldestRetainedAt', p.oldestRetainedAt),
    h('td', { 'data-k': 'consumptionCap.pinnedBy' }, cap ? cap.pinnedBy + ' (' + cap.behind + ' behind)' : '—'),
    h('td', { 'data-k': 'nextPass' }, next ? next.rule + ': ' + offsetSpan(next.fromOffset, next.toOffset) : 'nothing yet'),
    cell('nextPass.leasedOffsets', next ? next.leasedOffsets : 0, next && next.leasedOffsets ? 'bad' : ''),
    cell('nextCheckAt', p.nextCheckAt),
    h('td', { 'data-k': 'notes' }, (p.notes || []).map((n) => h('div', {}, n))));
}

function drawRetention(state) {
  const canvas = document.getElementById('retention-chart');
  if (!canvas || typeof Chart === 'undefined' || !state.series) return;
  if (state.chart) state.chart.destroy();
  state.chart = new Chart(canvas, { type: 'bar',
    data: { labels: state.series.map((b) => b.bucket),
      datasets: RULES.map(([k, label, color]) => ({ label, data: state.series.map((b) => b[k]), backgroundColor: color }))
        /* a subset of the bars, so a stack of its own: drawn over them, not added on */
        .concat([{ type: 'line', stack: 'leased', label: 'leased offsets evicted', borderColor: '#000', borderDash: [4, 3],
          pointRadius: 2, data: state.series.map((b) => b.leasedEvictedMsgs) }]) },
    options: { animation: false, responsive: true, maintainAspectRatio: false,
      scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } } } });
}

/* The spans the retention chart offers: the analytics route buckets each
 * (1, 5, 15 and 60 minutes). */
const RANGES = [['1h', 'the last hour', 3600e3], ['6h', 'the last 6 hours', 6 * 3600e3],
  ['24h', 'the last 24 hours', 24 * 3600e3], ['7d', 'the last 7 days', 7 * 24 * 3600e3]];

function rangeOf(key) {
  return RANGES.find(([k]) => k === key) || RANGES[0];
}

/* The whole queue in words, where a page of partitions shows only its own. */
function summaryLine(sum) {
  return h('p', { id: 'retention-summary' },
    h('span', { 'data-k': 'summary.retainedOffsets' }, String(sum.retainedOffsets)), ' offsets retained in ',
    h('span', { 'data-k': 'summary.partitions' }, String(sum.partitions)), ' partitions',
    sum.oldestRetainedAt ? ', the oldest committed ' + sum.oldestRetainedAt : '', '. ',
    h('span', { 'data-k': 'summary.partitionsDue' }, String(sum.partitionsDue)),
    ' of them due for a retention check now',
    sum.nextCheckAt ? '; the soonest check is ' + sum.nextCheckAt : '; no rule can delete anything yet', '.');
}

/* A pass covers every queue: the report shown keeps this queue's steps. */
async function retentionRun(queue, dry) {
  if (!dry && !confirm('Run a retention pass now? It deletes what every queue\'s rules allow.')) return;
  const r = await api('/api/v1/system/retention/run' + (dry ? '?dryRun=true' : ''), { method: 'POST' });
  const out = document.getElementById('run-report');
  if (!out) return;
  if (r.status !== 200) { out.replaceChildren(h('p', { class: 'error' }, (r.body && r.body.error) || String(r.status))); return; }
  const mine = (r.body.deleted || []).filter((d) => d.queue === queue);
  out.replaceChildren(...[h('p', { 'data-k': 'runReport' }, (dry ? 'A pass now would delete ' : 'The pass deleted ') +
    mine.reduce((n, d) => n + d.offsets, 0) + ' offsets of this queue in ' + mine.length + (mine.length === 1 ? ' step' : ' steps') +
    (r.body.busy ? ' (another server holds the pass)' : '') + '.'),
  mine.length ? table([['partition'], ['rule'], ['offsets'], ['leased offsets', 1]],
    mine.map((d) => h('tr', { 'data-row': d.partition }, cell('partition', d.partition), cell('rule', d.rule),
      cell('offsets', offsetSpan(d.fromOffset, d.toOffset)),
      cell('leasedOffsets', d.leasedOffsets, d.leasedOffsets ? 'bad' : '')))) : null].filter(Boolean));   /* no "null" text */
}

const queueRetentionPage = {
  live: true,
  title: (args) => 'Retention of ' + args.name,
  async load(args, state) {
    const q = encodeURIComponent(args.name);
    const offset = Math.max(0, Number(args.offset) || 0);
    const [range, rangeWords, rangeMs] = rangeOf(args.range);
    const hashOf = (more) => '#/queues/' + q + '/retention?' + new URLSearchParams(Object.assign({ range }, more));
    const ex = await api('/api/v1/retention/explain?queue=' + q + '&limit=' + PARTITION_PAGE + '&offset=' + offset);
    if (ex.status === 404) throw new GoneError('queue ' + args.name);
    if (ex.status !== 200) throw failed('/api/v1/retention/explain', ex);
    const an = await apiOk('/api/v1/analytics/retention?' + new URLSearchParams({ queue: args.name,
      from: new Date(Date.now() - rangeMs).toISOString(), to: new Date().toISOString() }));
    state.series = an.series;
    const e = ex.body;
    const t = an.totals;
    if (!state.report) state.report = h('div', { id: 'run-report' });
    return h('div', { id: 'page-queue-retention', 'data-queue': e.queue },
      h('h1', {}, 'Retention of ', queueLink(e.queue)),
      h('div', { class: 'cards' }, Object.entries(e.options || {}).map(([k, v]) => card(k, 'options.' + k, v))),
      h('h2', {}, 'Offsets dropped in ' + rangeWords + ', by rule'),
      h('div', { class: 'pager', id: 'retention-ranges' }, RANGES.map(([k, words]) => k === range
        ? h('strong', { 'data-range': k }, words) : h('a', { 'data-range': k, href: hashOf({ range: k }) }, words))),
      h('div', { class: 'cards', id: 'retention-totals' },
        RULES.map(([k, label]) => card(label, 'totals.' + k, t[k])),
        card('all rules', 'totals.totalMsgs', t.totalMsgs), card('deleting steps', 'totals.eventCount', t.eventCount),
        card('leased offsets evicted', 'totals.leasedEvictedMsgs', t.leasedEvictedMsgs, t.leasedEvictedMsgs ? 'bad' : '')),
      an.series.length ? h('div', { class: 'chart' }, h('canvas', { id: 'retention-chart' }))
        : h('p', { class: 'muted', id: 'retention-empty' }, 'nothing deleted in ' + rangeWords),
      h('h2', {}, 'What pins each partition, and what goes next'),
      summaryLine(e.summary),
      offsetPager(e.summary.partitions, 'partitions', offset, e.partitions.length, PARTITION_PAGE,
        (o) => hashOf({ offset: o }), '‹ previous', 'next ›'),
      table([['partition'], ['watermark', 1], ['last offset', 1], ['retained', 1], ['oldest retained'],
        ['pinned by'], ['next pass'], ['leased offsets evicted next', 1], ['next check'], ['in words']],
      e.partitions.map(explainRow)),
      may(state, 'admin') ? [h('h2', {}, 'Run'),   /* a pass, even a dry run, needs the admin role */
        h('div', { class: 'pager' },
          h('button', { 'data-action': 'dry-run', onclick: () => retentionRun(e.queue, true) }, 'dry run'),
          h('button', { 'data-action': 'run-now', onclick: () => retentionRun(e.queue, false) }, 'run now')),
        state.report] : null);
  },
  after: drawRetention,
  teardown(state) { if (state.chart) state.chart.destroy(); },
};

/* ---- task record retention ------------------------------------------ */

const retentionPage = {
  live: true,
  title: () => 'Task retention',
  async load() {
    const [classes, leaves, cov] = await Promise.all([
      apiOk('/api/v1/task-retention/classes'), apiOk('/api/v1/task-retention/leaves'),
      api('/api/v1/task-retention/coverage')]);
    if (cov.status !== 200 && !(cov.status === 503 && cov.body && 'healthy' in cov.body))
      throw failed('/api/v1/task-retention/coverage', cov);   /* a red coverage is an answer; no database is not */
    const c = cov.body;
    const absent = c.absent_leaves || [];
    const problems = c.problems || [];
    return h('div', { id: 'page-task-retention' },
      h('h1', {}, 'Task retention'),
      h('h2', {}, 'Coverage'),
      h('div', { class: 'cards', id: 'coverage' },
        h('div', { class: 'card ' + (c.healthy ? 'ok' : 'bad') }, h('div', { class: 'label' }, 'coverage'),
          h('div', { class: 'value', 'data-k': 'healthy' }, c.healthy ? 'healthy' : 'red')),
        card('last pass outcome', 'outcome', c.outcome),
        card('history covered through', 'historyCoveredThrough', c.historyCoveredThrough),
        card('heartbeats covered through', 'heartbeatsCoveredThrough', c.heartbeatsCoveredThrough),
        card('last pass finished', 'lastPass.finishedAt', c.lastPass && c.lastPass.finishedAt)),
      problems.length ? h('div', { class: 'error', id: 'problems' }, h('strong', {}, 'Problems'),
        h('ul', { class: 'problems' }, problems.map((p) => h('li', { 'data-k': 'problem' }, show(p))))) : null,
      absent.length ? h('div', { class: 'error', id: 'absent-leaves' }, h('strong', {}, 'Absent leaves'),
        h('ul', { class: 'problems' }, absent.map((l) => h('li', { 'data-k': 'absent_leaf', class: 'bad' }, l)))) : null,
      h('h2', {}, 'Classes'),
      table([['class'], ['duration'], ['origin'], ['leaves', 1], ['bytes', 1], ['records (estimate)', 1],
        ['oldest leaf'], ['next drop'], ['registered']], classes.classes.map((k) => h('tr', { 'data-row': k.classKey },
        cell('classKey', k.classKey), cell('duration', k.duration === null ? 'forever' : k.duration),
        cell('origin', k.origin), cell('leaves', k.leaves), cell('bytes', k.bytes), cell('records', k.records),
        cell('oldestLeaf', k.oldestLeaf), cell('nextDropAt', k.nextDropAt), cell('registeredAt', k.registeredAt)))),
      h('h2', {}, 'Leaves'),
      table([['leaf'], ['class'], ['day'], ['from'], ['to'], ['bytes', 1], ['drops at'], ['state']],
        leaves.leaves.map((l) => {
          const bad = l.state === 'absent' || absent.includes(l.leaf);
          return h('tr', { 'data-row': l.leaf, class: bad ? 'bad' : null },
            cell('leaf', l.leaf), cell('classKey', l.classKey), cell('day', l.day), cell('from', l.from),
            cell('to', l.to), cell('bytes', l.bytes), cell('dropsAt', l.dropsAt), cell('state', l.state));
        })));
  },
};

/* ---- dead letters --------------------------------------------------- */

const dlqPage = {
  live: false,   /* a page of dead letters stays put while it is read */
  title: () => 'Dead letters',
  async load(args, state) {
    const offset = Math.max(0, Number(args.offset) || 0);
    const listed = dlqFilter(args);   /* what the list shows is what the bulk actions take */
    const q = new URLSearchParams(Object.assign({ limit: String(DLQ_PAGE), offset: String(offset) }, listed));
    const d = await apiOk('/api/v1/dlq?' + q.toString());
    const nav = (o) => '#/dead-letters?' + new URLSearchParams(Object.assign({}, listed, { offset: String(o) })).toString();
    const filter = h('input', { id: 'dlq-queue', placeholder: 'queue', value: args.queue || '' });
    const group = h('input', { id: 'dlq-group', placeholder: 'consumer group', value: args.consumerGroup || '' });
    const admin = may(state, 'admin');   /* replay and delete need it */
    return h('div', { id: 'page-dead-letters' },
      h('h1', {}, 'Dead letters'),
      h('form', { class: 'pager', onsubmit: (e) => {
        e.preventDefault();
        const f = dlqFilter({ queue: filter.value, consumerGroup: group.value });
        location.hash = '#/dead-letters' + (Object.keys(f).length ? '?' + new URLSearchParams(f) : '');
      } }, h('label', { for: 'dlq-queue' }, 'queue'), filter, h('label', { for: 'dlq-group' }, 'group'), group,
        h('button', { type: 'submit' }, 'filter')),
      offsetPager(d.total, 'dead letters', offset, d.messages.length, DLQ_PAGE, nav, '‹ newer', 'older ›'),
      admin && d.total > 0 ? h('div', { class: 'pager', id: 'dlq-bulk' },
        h('button', { 'data-action': 'replay-matching', onclick: () => bulkDeadLetters('replay', listed) },
          'replay all matching'),
        h('button', { 'data-action': 'delete-matching', onclick: () => bulkDeadLetters('delete', listed) },
          'delete all matching'),
        h('span', { id: 'dlq-preview', class: 'muted' })) : null,
      table([['failed'], ['queue'], ['partition'], ['offset', 1], ['group'], ['producer'], ['retries', 1], ['error'],
        ['data'], ['']],
        d.messages.map((m) => h('tr', { 'data-row': m.id },
          cell('failedAt', m.failedAt), h('td', { 'data-k': 'queue' }, queueLink(m.queue)), cell('partition', m.partition),
          cell('offset', m.offset), cell('consumerGroup', m.consumerGroup), cell('producerSub', m.producerSub),
          cell('retryCount', m.retryCount),
          cell('errorMessage', m.errorMessage), h('td', { 'data-k': 'data' }, h('pre', {}, show(m.data))),
          h('td', {}, h('a', { href: messageHash(m.partitionId, m.transactionId), 'data-action': 'view' }, 'view'),
            admin ? [' ', h('button', { 'data-action': 'replay', onclick: () => replay(m) }, 'replay'), ' ',
              h('button', { 'data-action': 'delete', onclick: () => deleteDeadLetter(m.partitionId, m.transactionId) },
                'delete')] : null)))));
  },
};

/* The page's filter as the list and the bulk routes take it. */
function dlqFilter(args) {
  return Object.fromEntries(['queue', 'consumerGroup'].filter((k) => args[k]).map((k) => [k, args[k]]));
}

const BULK_LIMIT = 500;   /* dead letters per call: the server bounds each call, the page calls again */

/* Replays or deletes every dead letter the filter matches: first a dry
 * run, whose count is shown on the page and asked about, then calls of
 * BULK_LIMIT until the server says none is left (or a call did nothing:
 * what remains cannot be replayed here). */
async function bulkDeadLetters(action, filter) {
  const post = (body) => api('/api/v1/dlq/' + action, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(Object.assign(body, filter)) });
  const why = (r) => (r.body && r.body.error) || r.status;
  const preview = await post({ dryRun: true });
  if (preview.status !== 200) { notice(action + ' failed: ' + why(preview), true); return; }
  const n = preview.body.matching;
  const where = Object.entries(filter).map(([k, v]) => k + ' ' + v).join(', ') || 'every queue';
  const shown = document.getElementById('dlq-preview');
  if (shown) shown.replaceChildren(h('span', { 'data-k': 'matching' }, String(n)), ' match (' + where + ')');
  if (n === 0) { notice('no dead letters match', false); return; }
  const verb = action === 'replay' ? 'Replay' : 'Delete';
  if (!confirm(verb + ' ' + count(n, 'dead letter') + ' (' + where + ')?' +
    (action === 'replay' ? ' Each goes back onto its partition as a new message.' : ' They cannot be recovered.'))) return;
  let done = 0;
  for (;;) {
    const r = await post({ limit: BULK_LIMIT });
    if (r.status !== 200) { notice(action + ' stopped after ' + count(done, 'dead letter') + ': ' + why(r), true); route(); return; }
    done += r.body.count;
    if (!r.body.more || r.body.count === 0) break;
  }
  notice((action === 'replay' ? 'replayed ' : 'deleted ') + count(done, 'dead letter'), false);
  route();
}

async function replay(m) {
  if (!confirm('Replay dead letter ' + m.id + ' onto ' + m.queue + '/' + m.partition + '?')) return;
  const r = await api('/api/v1/dlq/' + encodeURIComponent(m.id) + '/replay', { method: 'POST' });
  if (r.status === 200) notice('replayed as offset ' + r.body.offset, false);
  else notice('replay failed: ' + ((r.body && r.body.error) || r.status), true);
  route();
}

/* ---- tasks ---------------------------------------------------------- */

const TASK_STATUSES = ['', 'PENDING', 'CLAIMED', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED', 'EXPIRED'];
const TASK_PAGE = 50;

function taskLink(id) {
  return h('a', { href: '#/tasks/' + encodeURIComponent(id) }, id);
}

/* A task's last progress report (docs/tasks.md, "Progress"), in short: its
 * number, then its info cut to 60 characters; '' when it made none. */
function progressText(t) {
  const parts = [];
  if (t.progress !== null && t.progress !== undefined) parts.push(String(t.progress));
  if (t.progressInfo !== null && t.progressInfo !== undefined) {
    const info = JSON.stringify(t.progressInfo);
    parts.push(info.length > 60 ? info.slice(0, 59) + '…' : info);
  }
  return parts.join(' · ');
}

/* Above a task's fields: its report, with a bar when the number reads as a
 * percentage, and when it came. */
function taskProgress(t) {
  if (!t.progressAt) return null;
  const pct = typeof t.progress === 'number' && t.progress >= 0 && t.progress <= 100;
  return h('p', { id: 'task-progress' }, 'progress ',
    pct ? h('progress', { max: '100', value: String(t.progress) }) : null, ' ',
    h('b', { 'data-k': 'progress' }, progressText(t)), ' reported ' + t.progressAt);
}

/* Pages on the server: the list answers nextCursor when full, and the
 * page's hash carries it, so "next" is a link and "back" is the browser's. */
const tasksPage = {
  live: true,
  title: () => 'Tasks',
  async load(args, state) {
    const q = new URLSearchParams({ limit: String(TASK_PAGE) });
    for (const k of ['queue', 'status', 'search', 'order', 'cursor']) if (args[k]) q.set(k, args[k]);
    const [d, pauses] = await Promise.all([apiOk('/api/v1/tasks?' + q.toString()), apiOk('/api/v1/task-queues')]);
    const queue = h('input', { id: 'task-queue', placeholder: 'queue', value: args.queue || '' });
    const status = h('select', { id: 'task-status', 'aria-label': 'status' }, TASK_STATUSES.map((st) =>
      h('option', { value: st, selected: st === (args.status || '') }, st || 'any status')));
    const search = h('input', { id: 'task-search', type: 'search', placeholder: 'part of a name', value: args.search || '' });
    const [orderLabel, order] = select('task-order', 'order', [['', 'oldest first'], ['desc', 'newest first']],
      args.order || '');
    const hashOf = (extra) => '#/tasks?' + new URLSearchParams(Object.assign({},
      queue.value ? { queue: queue.value } : {}, status.value ? { status: status.value } : {},
      search.value ? { search: search.value } : {}, order.value ? { order: order.value } : {}, extra || {})).toString();
    return h('div', { id: 'page-tasks' },
      h('h1', {}, 'Tasks'),
      h('form', { class: 'pager', onsubmit: (e) => { e.preventDefault(); location.hash = hashOf(); } },
        h('label', { for: 'task-queue' }, 'queue'), queue, status, h('label', { for: 'task-search' }, 'name'), search,
        orderLabel, order, h('button', { type: 'submit' }, 'filter')),
      h('p', { class: 'muted', id: 'tasks-total' }, h('span', { 'data-k': 'total' }, String(d.total)),
        d.totalCapped ? ' or more' : '', ' tasks match'),
      pausedQueues(pauses.paused, args.queue, state),
      table([['id'], ['name'], ['queue'], ['status'], ['progress'], ['attempt', 1], ['sent'], ['finished'], ['error']],
        d.tasks.map((t) => h('tr', { 'data-row': t.id },
          h('td', { 'data-k': 'id' }, taskLink(t.id)), cell('name', t.name), cell('queue', t.queue),
          cell('status', t.status, t.status === 'FAILED' || t.status === 'EXPIRED' ? 'bad' : ''),
          cell('progress', progressText(t)), cell('attempt', t.attempt), cell('sentAt', t.sentAt), cell('finishedAt', t.finishedAt),
          cell('errorMessage', t.errorMessage)))),
      h('div', { class: 'pager' }, d.nextCursor
        ? h('a', { id: 'tasks-next', href: hashOf({ cursor: d.nextCursor }) }, 'next ' + TASK_PAGE + ' ›') : null));
  },
};

const TASK_ENDED = ['COMPLETED', 'FAILED', 'CANCELLED', 'EXPIRED'];

/* Pausing a task queue (docs/tasks.md, "Pausing a queue"): sends go on,
 * nothing is claimed until it is resumed. The paused queues are listed
 * above the tasks; to an admin token each has resume, and the queue
 * filtered on, when running, has pause. */
function pauseQueue(queue, verb) {
  return confirmedPost(verb + ' task queue ' + queue + '?',
    '/api/v1/task-queues/' + encodeURIComponent(queue) + '/' + verb, verb,
    (b) => 'task queue ' + b.queue + (b.paused ? ' paused: nothing is claimed until it is resumed' : ' resumed'));
}

function pausedQueues(paused, filtered, state) {
  const admin = may(state, 'admin');
  const rows = paused.map((p) => h('li', { 'data-paused': p.queue }, 'queue ', h('b', {}, p.queue),
    ' paused ', h('span', { title: p.pausedAt }, relativeTime(p.pausedAt)), ' ',
    admin ? h('button', { 'data-action': 'resume', onclick: () => pauseQueue(p.queue, 'resume') }, 'resume') : null));
  const running = admin && filtered && !paused.some((p) => p.queue === filtered);
  return h('div', { id: 'task-queue-pauses' }, rows.length ? h('ul', { class: 'bad' }, rows) : null,
    running ? h('button', { 'data-action': 'pause', onclick: () => pauseQueue(filtered, 'pause') },
      'pause queue ' + filtered) : null);
}

/* A finished task sent again as a new task naming it (rerunOf); a
 * completed one only on request. Opens the rerun's page. */
async function rerunTask(t) {
  if (!confirm('Rerun task ' + t.id + ' as a new task?')) return;
  const body = t.status === 'COMPLETED' ? '{"includeCompleted":true}' : '{}';
  const r = await api('/api/v1/tasks/' + encodeURIComponent(t.id) + '/rerun', { method: 'POST', body });
  if (r.status !== 200 && r.status !== 201) { notice('rerun failed: ' + ((r.body && r.body.error) || r.status), true); return; }
  notice(r.body.created ? 'rerun sent: task ' + r.body.id : 'task ' + t.id + ' was already rerun as ' + r.body.id, false);
  location.hash = '#/tasks/' + encodeURIComponent(r.body.id);
}

/* An action's POST (with body, a JSON value, when given), once confirm()
 * said yes: the notice says what the API answered (said(body) on 200,
 * else why the action failed), then the page is read again. */
async function confirmedPost(question, path, action, said, body) {
  if (!confirm(question)) return;
  const r = await api(path, body === undefined ? { method: 'POST' }
    : { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  if (r.status === 200) notice(said(r.body), false);
  else notice(action + ' failed: ' + ((r.body && r.body.error) || r.status), true);
  route();
}

/* A PENDING or CLAIMED task ends CANCELLED at once; a RUNNING one is
 * marked, and its worker stops it on its next heartbeat (docs/tasks.md). */
function cancelTask(id) {
  return confirmedPost('Cancel task ' + id + '?', '/api/v1/tasks/' + encodeURIComponent(id) + '/cancel', 'cancel', (b) =>
    b.cancelled ? 'cancelled task ' + id
      : b.cancelRequested ? 'cancel requested: the worker running task ' + id + ' stops it at its next heartbeat'
        : 'task ' + id + ' had already ended ' + b.status);
}

/* For an ended task, rerun; for one that has not ended and is not already
 * being cancelled, cancel; each to a token that may (read-write). */
function taskActions(t, state) {
  const writer = may(state, 'read-write');
  if (TASK_ENDED.includes(t.status)) {
    return h('div', { class: 'pager' }, t.rerunOf ? h('span', {}, 'rerun of ', taskLink(t.rerunOf), ' ') : null,
      writer ? h('button', { 'data-action': 'rerun', onclick: () => rerunTask(t) }, 'rerun') : null);
  }
  if (!writer) return null;
  if (t.cancelRequested) return h('p', { class: 'muted' }, 'cancel requested: its worker stops it at its next heartbeat');
  return h('div', { class: 'pager' }, h('button', { 'data-action': 'cancel', onclick: () => cancelTask(t.id) }, 'cancel'));
}

function attemptsTable(attempts) {
  return table([['attempt', 1], ['worker'], ['claim'], ['started'], ['finished'], ['outcome'], ['error code'],
    ['error message']], attempts.map((a) => h('tr', { 'data-row': 'attempt-' + a.attempt },
    cell('attempt', a.attempt), cell('workerId', a.workerId), cell('claimId', a.claimId), cell('startedAt', a.startedAt),
    cell('finishedAt', a.finishedAt), cell('outcome', a.outcome, STATE_CLASS[a.outcome] || ''),
    cell('errorCode', a.errorCode), cell('errorMessage', a.errorMessage))));
}

const taskPage = {
  live: true,
  title: (args) => 'Task ' + args.id,
  async load(args, state) {
    const path = '/api/v1/tasks/' + encodeURIComponent(args.id);
    const [r, attempts] = await Promise.all([api(path), api(path + '/attempts')]);
    if (r.status === 404) throw new GoneError('task ' + args.id);
    if (r.status !== 200) throw failed('/api/v1/tasks/:id', r);
    if (attempts.status !== 200) throw failed('/api/v1/tasks/:id/attempts', attempts);
    return h('div', { id: 'page-task' },
      h('h1', {}, 'Task ', h('span', { 'data-k': 'id' }, r.body.id)),
      taskActions(r.body, state),
      taskProgress(r.body),
      h('h2', {}, 'Attempts'), h('div', { id: 'task-attempts' }, attemptsTable(attempts.body.attempts)),
      h('h2', {}, 'Fields'),
      table([['field'], ['value']], Object.entries(r.body).map(([k, v]) => h('tr', { 'data-row': k },
        h('td', {}, k), h('td', { 'data-k': k }, typeof v === 'object' && v !== null ? h('pre', {}, show(v)) : show(v))))));
  },
};

/* ---- workers -------------------------------------------------------- */

/* Each registered worker, when it was last heard from against the
 * heartbeat interval it was given, and the tasks it holds (the first
 * TASK_PAGE running and claimed ones, by the tasks' workerId). A late
 * worker (the API's flag) is red. */
const workersPage = {
  live: true,
  title: () => 'Workers',
  async load() {
    const held = (status) => apiOk('/api/v1/tasks?' + new URLSearchParams({ status, limit: String(TASK_PAGE) }));
    const [w, running, claimed, queues] = await Promise.all([apiOk('/api/v1/workers'), held('RUNNING'), held('CLAIMED'),
      apiOk('/api/v1/task-queues')]);
    const tasks = {};
    for (const t of running.tasks.concat(claimed.tasks)) (tasks[t.workerId] = tasks[t.workerId] || []).push(t);
    return h('div', { id: 'page-workers' },
      h('h1', {}, 'Workers'),
      h('p', { class: 'muted' }, 'A worker holding tasks is late when it has not been heard from for two of its ' +
        'heartbeat intervals; recovery acts on its tasks after the stale thresholds of [recovery] in silt.conf.'),
      /* idle workers beside waiting tasks: the queue's cap, not the workers */
      queues.queues.filter((x) => x.heldBack).map((x) => h('p', { class: 'note', 'data-held-back': x.queue },
        'Queue ' + x.queue + ' has tasks due that wait for its concurrency cap: ' + x.claimedOrRunning +
        ' claimed or running of max_concurrency ' + x.maxConcurrency + ' (silt.conf of this server).')),
      queues.queues.filter((x) => x.heldBackByRateLimit).map((x) => h('p', { class: 'note', 'data-rate-held': x.queue },
        'Queue ' + x.queue + ' has tasks due that wait for its rate limit: ' + x.rateLimit.limit + ' claims per ' +
        x.rateLimit.periodMs + ' ms (rate_limit in silt.conf of this server).')),
      table([['worker'], ['host'], ['pid', 1], ['queues'], ['concurrency', 1], ['claimed', 1], ['running', 1],
        ['heartbeat every (ms)', 1], ['last heard'], ['unheard for (ms)', 1], ['late'], ['tasks held']],
      w.workers.map((x) => h('tr', { 'data-row': x.workerId, class: x.late ? 'bad' : null },
        cell('workerId', x.workerId), cell('hostname', x.hostname), cell('pid', x.pid),
        cell('queues', (x.queues || []).join(', ')), cell('concurrency', x.concurrency), cell('claimed', x.claimed),
        cell('running', x.running), cell('heartbeatIntervalMs', x.heartbeatIntervalMs), cell('lastSeenAt', x.lastSeenAt),
        cell('lastSeenAgeMs', x.lastSeenAgeMs), cell('late', x.late ? 'late' : 'no', x.late ? 'bad' : ''),
        h('td', { 'data-k': 'tasks' }, (tasks[x.workerId] || []).map((t, i) => [i ? ', ' : '', taskLink(t.id),
          ' (' + [t.status, progressText(t)].filter(Boolean).join(' ') + ')']))))));
  },
};

/* ---- workflows and schedules ----------------------------------------- */

const STATE_CLASS = { COMPLETED: 'ok', FAILED: 'bad', CANCELLED: 'bad', SKIPPED: 'muted' };

const workflowsPage = {
  live: true,
  title: () => 'Workflows',
  async load(args, state) {
    const q = new URLSearchParams({ limit: String(TASK_PAGE) });
    for (const k of ['status', 'name', 'cursor']) if (args[k]) q.set(k, args[k]);
    const d = await apiOk('/api/v1/workflows?' + q.toString());
    const next = new URLSearchParams(Object.assign({}, args, { cursor: d.nextCursor || '' })).toString();
    return h('div', { id: 'page-workflows' },
      h('h1', {}, 'Workflows'),
      table([['id'], ['name'], ['status'], ['created'], ['finished'], ['error']], d.workflows.map((w) =>
        h('tr', { 'data-row': w.id },
          h('td', { 'data-k': 'id' }, h('a', { href: '#/workflows/' + encodeURIComponent(w.id) }, w.id)),
          cell('name', w.name), cell('status', w.status, STATE_CLASS[w.status] || ''), cell('createdAt', w.createdAt),
          cell('finishedAt', w.finishedAt), cell('errorMessage', w.errorMessage)))),
      h('div', { class: 'pager' }, d.nextCursor ? h('a', { href: '#/workflows?' + next }, 'next ' + TASK_PAGE + ' ›') : null));
  },
};

/* Depth of each node: 0 without predecessors, else one more than the
 * deepest node it waits for (the definition has no cycle: the server
 * refuses one). The graph is drawn as columns by depth, each node a box
 * in its state's colour naming what it waits for. */
function depths(nodes) {
  const byId = Object.fromEntries(nodes.map((n) => [n.id, n]));
  const depth = {};
  const of = (id, seen) => {
    if (depth[id] !== undefined) return depth[id];
    if (seen.has(id) || !byId[id]) return 0;
    seen.add(id);
    const w = byId[id].waitsFor || [];
    depth[id] = w.length ? 1 + Math.max(...w.map((p) => of(p, seen))) : 0;
    return depth[id];
  };
  nodes.forEach((n) => of(n.id, new Set()));
  return depth;
}

function workflowGraph(nodes) {
  const depth = depths(nodes);
  const columns = [];
  for (const n of nodes) (columns[depth[n.id]] = columns[depth[n.id]] || []).push(n);
  return h('div', { class: 'graph', id: 'workflow-graph' }, columns.map((col, i) => h('div', { class: 'graph-col' },
    h('div', { class: 'label muted' }, 'step ' + (i + 1)),
    col.map((n) => h('div', { class: 'card node ' + (STATE_CLASS[n.status] || ''), 'data-node': n.id },
      h('div', { class: 'value' }, n.id), h('div', { 'data-k': 'status' }, n.status),
      h('div', { class: 'label' }, n.task + ' on ' + n.queue),
      (n.waitsFor || []).length ? h('div', { class: 'label' }, '← ' + n.waitsFor.join(', ') + ' (' + n.join + ')') : null,
      n.taskId ? h('div', { class: 'label' }, taskLink(n.taskId)) : null)))));
}

function svg(tag, attrs, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.appendChild(c);
  return el;
}

const EDGE_LANE = 12;   /* px between the lanes of edges that skip columns */

/* A box's sides and middle in the graph's own coordinates. */
function boxIn(graph, el) {
  const o = graph.getBoundingClientRect(), r = el.getBoundingClientRect();
  const x = graph.scrollLeft - o.left, y = graph.scrollTop - o.top;
  return { left: r.left + x, right: r.right + x, mid: r.top + r.height / 2 + y, bottom: r.bottom + y };
}

/* From the middle of a's right side to the middle of b's left side. Next
 * column: one curve across the gap between them. Further: down to a lane
 * under the boxes of the columns between, along it, and up, so the edge
 * crosses no box. */
function edgePath(a, b, gap, lane) {
  const half = gap / 2;
  if (lane === null) return `M${a.right},${a.mid} C${a.right + half},${a.mid} ${b.left - half},${b.mid} ${b.left},${b.mid}`;
  return `M${a.right},${a.mid} C${a.right + half},${a.mid} ${a.right + half},${lane} ${a.right + gap},${lane}` +
    ` H${b.left - gap} C${b.left - half},${lane} ${b.left - half},${b.mid} ${b.left},${b.mid}`;
}

/* The edges, once the boxes are laid out (a page's after hook): one path
 * per dependency, predecessor to successor, in an SVG under the boxes that
 * covers the whole graph. A successor is always deeper, so to the right. */
function drawEdges(graph, nodes) {
  const depth = depths(nodes);
  const gap = parseFloat(getComputedStyle(graph).columnGap) || 0;
  const boxes = new Map([...graph.querySelectorAll('[data-node]')].map((el) =>
    [el.getAttribute('data-node'), boxIn(graph, el)]));
  const bottom = [];   /* by column: the lowest box's bottom */
  for (const [id, b] of boxes) bottom[depth[id]] = Math.max(bottom[depth[id]] || 0, b.bottom);
  const edges = [];
  let lanes = 0, lowest = 0;
  for (const n of nodes) for (const p of n.waitsFor || []) {
    if (!boxes.has(p) || !boxes.has(n.id)) continue;
    const skips = bottom.slice(depth[p] + 1, depth[n.id]);
    const lane = skips.length ? Math.max(...skips) + EDGE_LANE * ++lanes : null;
    lowest = Math.max(lowest, lane || 0);
    edges.push(svg('path', { 'data-from': p, 'data-to': n.id, 'marker-end': 'url(#edge-arrow)',
      d: edgePath(boxes.get(p), boxes.get(n.id), gap, lane) }));
  }
  graph.style.paddingBottom = Math.max(0, lowest + EDGE_LANE - graph.scrollHeight) + 'px';   /* room for the lanes */
  graph.prepend(svg('svg', { class: 'edges', width: graph.scrollWidth, height: graph.scrollHeight },
    svg('defs', {}, svg('marker', { id: 'edge-arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7,
      markerHeight: 7, orient: 'auto' }, svg('path', { d: 'M0,0 L10,5 L0,10 z' }))), ...edges));
}

/* What a workflow in its state can be told (tasks.workflow_control): a
 * finished one, nothing. */
const WORKFLOW_ACTIONS = [['pause', ['PENDING', 'RUNNING']], ['resume', ['PAUSED']],
  ['cancel', ['PENDING', 'RUNNING', 'PAUSED']]];

function workflowActions(w, state) {
  if (!may(state, 'read-write')) return null;
  const buttons = WORKFLOW_ACTIONS.filter(([, when]) => when.includes(w.status)).map(([action]) =>
    h('button', { 'data-action': action, onclick: () => confirmedPost(
      action[0].toUpperCase() + action.slice(1) + ' workflow ' + w.name + ' (' + w.id + ')?',
      '/api/v1/workflows/' + encodeURIComponent(w.id) + '/' + action, action,
      (b) => action + ': workflow ' + w.id + ' is ' + b.status) }, action));
  return buttons.length ? h('div', { class: 'pager' }, buttons) : null;
}

const workflowPage = {
  live: true,
  title: (args) => 'Workflow ' + args.id,
  async load(args, state) {
    const r = await api('/api/v1/workflows/' + encodeURIComponent(args.id));
    if (r.status === 404) throw new GoneError('workflow ' + args.id);
    if (r.status !== 200) throw failed('/api/v1/workflows/:id', r);
    const w = r.body;
    state.nodes = w.nodes || [];
    return h('div', { id: 'page-workflow' },
      h('h1', {}, 'Workflow ', h('span', { 'data-k': 'name' }, w.name)),
      workflowActions(w, state),
      h('div', { class: 'cards' },
        h('div', { class: 'card ' + (STATE_CLASS[w.status] || '') }, h('div', { class: 'label' }, 'status'),
          h('div', { class: 'value', 'data-k': 'status' }, w.status)),
        card('on error', 'onError', w.onError), card('output', 'output', w.output),
        card('created', 'createdAt', w.createdAt), card('finished', 'finishedAt', w.finishedAt)),
      h('h2', {}, 'Nodes'), workflowGraph(state.nodes),
      h('h2', {}, 'Result'), h('pre', { 'data-k': 'result' }, show(w.result)));
  },
  after(state) {
    const graph = document.getElementById('workflow-graph');
    if (graph) drawEdges(graph, state.nodes);
  },
};

/* Pausing a schedule made through the API (docs/workflows.md, "Schedules
 * at run time"): it fires nothing until resumed, and the slots of the
 * pause are skipped. silt.conf's schedules (origin config) cannot be
 * paused through the API, so they have no button. */
function pauseSchedule(name, verb) {
  return confirmedPost(verb + ' schedule ' + name + '?',
    '/api/v1/schedules/' + encodeURIComponent(name) + '/' + verb, verb,
    (b) => 'schedule ' + b.name + (b.paused ? ' paused: it fires nothing until resumed' : ' resumed'));
}

function scheduleAction(x, admin) {
  if (!admin || x.origin !== 'api') return h('td', { 'data-k': 'action' });
  const verb = x.paused ? 'resume' : 'pause';
  return h('td', { 'data-k': 'action' },
    h('button', { 'data-action': verb, onclick: () => pauseSchedule(x.name, verb) }, verb));
}

const schedulesPage = {
  live: true,
  title: () => 'Schedules',
  async load(args, state) {
    const d = await apiOk('/api/v1/schedules');
    const admin = may(state, 'admin');   /* pause and resume need the admin role */
    return h('div', { id: 'page-schedules' },
      h('h1', {}, 'Schedules'),
      h('p', { class: 'muted' }, 'Every schedule: those of silt.conf (origin config) and those made through the API ' +
        '(origin api, which an admin may pause and resume).'),
      table([['name'], ['origin'], ['paused'], ['cron'], ['timezone'], ['task'], ['queue'], ['next fire'],
        ['last fired'], ['last task'], ['']],
        d.schedules.map((x) => h('tr', { 'data-row': x.name, class: x.paused ? 'bad' : '' },
          cell('name', x.name), cell('origin', x.origin), cell('paused', x.paused ? 'paused' : 'no'),
          cell('cron', x.cron), cell('timezone', x.timezone), cell('task', x.task),
          cell('queue', x.queue), cell('nextFire', x.nextFire), cell('lastFiredAt', x.lastFiredAt),
          h('td', { 'data-k': 'lastTaskId' }, x.lastTaskId ? taskLink(x.lastTaskId) : '—'),
          scheduleAction(x, admin)))));
  },
};

/* ---- message lookup --------------------------------------------------- */

function messageHash(partitionId, transactionId) {
  return '#/messages?' + new URLSearchParams({ partitionId, transactionId }).toString();
}

async function deleteDeadLetter(pid, txn) {
  if (!confirm('Delete the dead letters of ' + txn + '? They cannot be replayed afterwards.')) return;
  const r = await api('/api/v1/messages/' + encodeURIComponent(pid) + '/' + encodeURIComponent(txn), { method: 'DELETE' });
  if (r.status === 200) notice('deleted ' + r.body.deleted + ' dead letter(s)', false);
  else if (r.status === 404) notice('no dead letter of ' + txn + ' to delete', false);
  else notice('delete failed: ' + ((r.body && r.body.error) || r.status), true);
  route();
}

function messageView(m, state) {
  const dl = m.status === 'dead-lettered' ? m.deadLetter : null;
  const shown = dl || m;
  const fields = ['status', 'queue', 'partition', 'partitionId', 'offset', 'transactionId', 'traceId', 'producerSub',
    'createdAt']
    .map((k) => [k, k === 'status' ? m.status : shown[k]]);
  if (dl) fields.push(['consumerGroup', dl.consumerGroup], ['errorMessage', dl.errorMessage],
    ['retryCount', dl.retryCount], ['failedAt', dl.failedAt]);
  return [table([['field'], ['value']], fields.map(([k, v]) => h('tr', { 'data-row': k }, h('td', {}, k), cell(k, v)))),
    h('h2', {}, 'Payload'), h('pre', { 'data-k': 'data' }, show(shown.data)),
    /* A retained message may have dead letters too (the log keeps it until
     * retention): the DELETE removes them, or answers that there are none. */
    may(state, 'admin') ? h('div', { class: 'pager' },   /* replay and delete need the admin role */
      dl ? h('button', { 'data-action': 'replay', onclick: () => replay(dl) }, 'replay') : null,
      h('button', { 'data-action': 'delete', onclick: () => deleteDeadLetter(shown.partitionId, shown.transactionId) },
        'delete its dead letters')) : null];
}

const messagePage = {
  live: false,
  title: () => 'Message lookup',
  async load(args, state) {
    const pid = h('input', { id: 'msg-partition', placeholder: 'partition id', size: 38, value: args.partitionId || '' });
    const txn = h('input', { id: 'msg-txn', placeholder: 'transaction id', size: 38, value: args.transactionId || '' });
    let body = h('p', { class: 'muted' }, 'A message by the id of its partition and its transactionId.');
    if (args.partitionId && args.transactionId) {
      const r = await api('/api/v1/messages/' + encodeURIComponent(args.partitionId) + '/' +
        encodeURIComponent(args.transactionId));
      if (r.status === 404) body = h('p', { id: 'msg-none' }, 'no such message: not retained and no dead letter');
      else if (r.status !== 200) throw failed('/api/v1/messages', r);
      else body = h('div', { id: 'message' }, messageView(r.body, state));
    }
    return h('div', { id: 'page-message' },
      h('h1', {}, 'Message lookup'),
      h('form', { class: 'pager', onsubmit: (e) => { e.preventDefault(); location.hash = messageHash(pid.value, txn.value); } },
        h('label', { for: 'msg-partition' }, 'partition id'), pid, h('label', { for: 'msg-txn' }, 'transaction id'), txn,
        h('button', { type: 'submit' }, 'look up')),
      body);
  },
};

/* ---- router --------------------------------------------------------- */

const notFoundPage = { title: () => 'Not found', async load(args) {
  return h('div', {}, h('h1', {}, 'Not found'), h('p', {}, 'no page at #' + args.path));
} };

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const [path, query] = raw.split('?');
  const params = Object.fromEntries(new URLSearchParams(query || ''));
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0) return [overviewPage, {}, 'overview'];
  if (parts[0] === 'queues' && parts.length === 2) return [queuePage, Object.assign(params, { name: parts[1] }), 'overview'];
  if (parts[0] === 'queues' && parts.length === 3 && parts[2] === 'retention')
    return [queueRetentionPage, Object.assign(params, { name: parts[1] }), 'overview'];
  if (parts[0] === 'tasks' && parts.length === 1) return [tasksPage, params, 'tasks'];
  if (parts[0] === 'tasks' && parts.length === 2) return [taskPage, { id: parts[1] }, 'tasks'];
  if (parts[0] === 'workflows' && parts.length === 1) return [workflowsPage, params, 'workflows'];
  if (parts[0] === 'workflows' && parts.length === 2) return [workflowPage, { id: parts[1] }, 'workflows'];
  if (parts[0] === 'schedules' && parts.length === 1) return [schedulesPage, {}, 'schedules'];
  if (parts[0] === 'workers' && parts.length === 1) return [workersPage, {}, 'workers'];
  if (parts[0] === 'messages' && parts.length === 1) return [messagePage, params, 'messages'];
  if (parts[0] === 'queues' && parts.length === 1) return [queuesPage, params, 'overview'];
  if (parts[0] === 'groups' && parts.length === 1) return [groupsPage, params, 'groups'];
  if (parts[0] === 'groups' && parts.length === 2) return [groupPage, Object.assign(params, { name: parts[1] }), 'groups'];
  if (parts[0] === 'task-retention' && parts.length === 1) return [retentionPage, {}, 'task-retention'];
  if (parts[0] === 'dead-letters' && parts.length === 1) return [dlqPage, params, 'dead-letters'];
  return [notFoundPage, { path }, ''];
}

function route() {
  const [page, args, nav] = parseHash();
  for (const a of document.querySelectorAll('header nav a'))
    a.classList.toggle('active', a.getAttribute('data-nav') === nav);
  runPage(page, args);
}

/* The skip link moves focus to the page, not to a route. */
document.getElementById('skip').addEventListener('click', (e) => { e.preventDefault(); main.focus(); });
window.addEventListener('hashchange', route);
route();
