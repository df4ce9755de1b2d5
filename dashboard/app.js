// @ts-check
/**
 * Review dashboard of the Vision Analysis API: a browser ES module with no build step, no framework, no dependency.
 *
 * Rules this file keeps (the server sends a strict Content-Security-Policy, and the page handles an API key):
 * - Every server string reaches the page through textContent / text nodes (the `h` helper); never innerHTML.
 * - No inline styles: presentation is classes in style.css and SVG presentation attributes.
 * - The API key lives only in sessionStorage and travels only as the `x-api-key` header; never in a URL, cookie,
 *   localStorage or log.
 * - Every URL is relative to the page, so the same files work at http://127.0.0.1:8787/ and https://<api>/<stage>/.
 *
 * One file on purpose, although long: the page has no build step, so a split would be one more request and one more
 * place that must agree on the DOM ids; the sections below (marked `// ----------`) read top to bottom.
 * Over 400 lines: a build-free browser module; splitting it means more requests under the CSP or a bundler step.
 */

import { isSplitRun, packetSection } from './packet-strip.js';

// ---------- configuration ----------

const KEY_STORAGE = 'vision-dashboard:api-key';
const PAGE_SIZE = 20;
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/**
 * The directory this page is served from (the server guarantees the trailing slash), e.g. https://x/prod/.
 * API paths are resolved against it, so `v1/runs` becomes https://x/prod/v1/runs.
 */
const API_BASE = new URL('./', window.location.href);

// ---------- DOM helpers ----------

const SVG_NS = 'http://www.w3.org/2000/svg';

/** Appends children: strings become text nodes (so they are never parsed as HTML); null/false are skipped. */
function append(parent, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

function applyProps(el, props) {
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'style') throw new Error('style attributes are blocked by the page CSP: use a class');
    if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
}

/** Creates an HTML element: h('p', {class: 'hint'}, 'text', otherNode). */
function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  applyProps(el, props);
  return append(el, children);
}

/** Creates an SVG element (charts); attributes are SVG presentation attributes, which the CSP allows. */
function s(tag, props = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  applyProps(el, props);
  return append(el, children);
}

/**
 * The element of index.html with this id, checked to be a `kind` (default: any HTML element), so a page that no
 * longer matches this script fails at load, by name, rather than at the first click.
 * @template {HTMLElement} [T=HTMLElement]
 * @param {string} id
 * @param {{ new (): T, name: string }} [kind]
 * @returns {T}
 */
const $ = (id, kind = /** @type {{ new (): T, name: string }} */ (/** @type {unknown} */ (HTMLElement))) => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing from index.html`);
  if (!(el instanceof kind)) throw new Error(`#${id} in index.html is not a ${kind.name}`);
  return el;
};

/**
 * The elements under `root` that match `selector`, for selectors of the page's own HTML markup (not its SVG).
 * @param {ParentNode} root
 * @param {string} selector
 * @returns {HTMLElement[]}
 */
function htmlElements(root, selector) {
  return /** @type {HTMLElement[]} */ ([...root.querySelectorAll(selector)]);
}

const els = {
  tabs: $('tabs'),
  tabRuns: $('tab-runs'),
  tabUsage: $('tab-usage'),
  forget: $('forget-key'),
  keyName: $('key-name'),
  status: $('status'),
  alert: $('alert'),
  keyView: $('key-view'),
  keyForm: $('key-form'),
  keyInput: $('api-key', HTMLInputElement),
  keyError: $('key-error'),
  runsView: $('runs-view'),
  filters: $('filters'),
  filterWorkflow: $('filter-workflow', HTMLInputElement),
  filterStatus: $('filter-status', HTMLSelectElement),
  filterReview: $('filter-review', HTMLSelectElement),
  runsBody: $('runs-body'),
  runsTableBox: $('runs-table-box'),
  runsEmpty: $('runs-empty'),
  pagePrev: $('page-prev', HTMLButtonElement),
  pageNext: $('page-next', HTMLButtonElement),
  pageLabel: $('page-label'),
  pager: $('pager'),
  detail: $('detail'),
  usageView: $('usage-view'),
  usageForm: $('usage-form'),
  usageRange: $('usage-range', HTMLSelectElement),
  usageWorkflow: $('usage-workflow', HTMLInputElement),
  usagePeriod: $('usage-period'),
  usageEmpty: $('usage-empty'),
  usageData: $('usage-data'),
  usageScroll: $('usage-scroll'),
  usageScrollCue: $('usage-scroll-cue'),
  usageCards: $('usage-cards'),
  usageBody: $('usage-body'),
  usageFoot: $('usage-foot'),
  charts: $('charts'),
};

// ---------- formatting ----------

// Amounts are whole micro-dollars and small (a receipt costs about $0.00026): every one is shown exactly, to the
// micro-dollar, so a cost and a price that differ never look the same ($0.000011 and $0.000014, not $0.00001 twice).
const usd = new Intl.NumberFormat('en-US', {
  style: 'currency',
  currency: 'USD',
  minimumFractionDigits: 2,
  maximumFractionDigits: 6,
});
const percent = new Intl.NumberFormat('en-US', { style: 'percent', maximumFractionDigits: 1 });
const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const dateTime = new Intl.DateTimeFormat(undefined, {
  year: 'numeric',
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
});
// The list shows the short form (no year); the exact ISO timestamp is in each <time>'s tooltip.
const dateTimeShort = new Intl.DateTimeFormat(undefined, {
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
});
const timeOnly = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
// Daily usage buckets are UTC days, so their labels are UTC dates.
const utcDay = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
const hourLabel = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });

function formatUsd(value) {
  if (typeof value !== 'number' || !Number.isFinite(value)) return '—';
  return usd.format(value);
}

const formatPercent = (value) => (typeof value === 'number' && Number.isFinite(value) ? percent.format(value) : '—');
const formatCount = (value) => (typeof value === 'number' ? integer.format(value) : '—');

function formatTime(iso, format = dateTime) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso ?? '—') : format.format(date);
}

/** A <time> element: readable local time, exact ISO timestamp in `datetime` and as tooltip. */
const timeEl = (iso, format = dateTime) =>
  iso ? h('time', { datetime: iso, title: iso }, formatTime(iso, format)) : '—';

function formatBytes(bytes) {
  if (typeof bytes !== 'number') return '';
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

function formatMs(ms) {
  if (typeof ms !== 'number') return '—';
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(2)} s`;
}

/** jobIds are `run_` + 32 random hex digits; the first 8 of those tell runs apart in a list. */
const shortId = (jobId) => (jobId.length > 14 ? `${jobId.slice(0, 12)}…` : jobId);

/** Any JSON value as one line for a field (strings as they are, the rest as JSON). */
const fieldText = (value) => (typeof value === 'string' ? value : JSON.stringify(value));

// ---------- the API key (sessionStorage only) ----------

function getKey() {
  try {
    return window.sessionStorage.getItem(KEY_STORAGE);
  } catch {
    return null; // storage disabled: behave as if no key was given
  }
}

function storeKey(key) {
  window.sessionStorage.setItem(KEY_STORAGE, key);
}

function forgetKey() {
  try {
    window.sessionStorage.removeItem(KEY_STORAGE);
  } catch {
    // nothing stored
  }
}

// ---------- API client ----------

/** A rejected call, carrying the contract's error object `{code, message, status, retryable, details?, requestId}`. */
class ApiError extends Error {
  /**
   * @param {number} httpStatus
   * @param {any} body
   * @param {string | null} [retryAfter]
   */
  constructor(httpStatus, body, retryAfter = null) {
    const error = body && typeof body === 'object' && body.error && typeof body.error === 'object' ? body.error : {};
    super(typeof error.message === 'string' ? error.message : `The service answered HTTP ${httpStatus}`);
    this.name = 'ApiError';
    this.status = httpStatus;
    this.code = typeof error.code === 'string' ? error.code : httpStatus === 0 ? 'NETWORK_ERROR' : `HTTP_${httpStatus}`;
    this.retryable = error.retryable === true;
    this.requestId = typeof error.requestId === 'string' ? error.requestId : null;
    this.details = error.details && typeof error.details === 'object' ? error.details : {};
    this.retryAfter = retryAfter;
  }
}

/**
 * Calls the API: `path` is relative (e.g. `v1/runs`), `query` values that are empty are left out, `body` is sent as
 * JSON. Resolves with the parsed JSON; rejects with ApiError (or an AbortError when `signal` aborts).
 */
/**
 * @param {string} path
 * @param {{ method?: string, query?: Record<string, unknown>, body?: unknown, signal?: AbortSignal }} [options]
 */
async function api(path, { method = 'GET', query = {}, body, signal } = {}) {
  const key = getKey();
  if (!key) throw new ApiError(401, { error: { code: 'UNAUTHORIZED', message: 'No API key in this session' } });
  const url = new URL(path, API_BASE);
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') url.searchParams.set(name, String(value));
  }
  /** @type {Record<string, string>} */
  const headers = { accept: 'application/json', 'x-api-key': key };
  /** @type {RequestInit} */
  const init = { method, headers, signal, cache: 'no-store', credentials: 'omit' };
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch (error) {
    if (error?.name === 'AbortError') throw error;
    throw new ApiError(0, { error: { code: 'NETWORK_ERROR', message: 'The service could not be reached' } });
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null; // not JSON (a proxy's error page): the status still tells what happened
  }
  if (!response.ok) throw new ApiError(response.status, data, response.headers.get('retry-after'));
  return data;
}

const runPath = (jobId, suffix = '') => `v1/runs/${encodeURIComponent(jobId)}${suffix}`;

// ---------- messages (aria-live regions) ----------

function setStatus(text) {
  els.status.textContent = text;
}

function showAlert(text) {
  els.alert.textContent = text;
}

function clearAlert() {
  els.alert.textContent = '';
}

/** What the operator can do about an error code (the message itself comes from the server). */
const ERROR_HINTS = {
  FORBIDDEN: 'This API key lacks the scope for this action: reading needs runs:read, reviewing needs runs:verify.',
  RUN_NOT_COMPLETED: 'Only completed runs can be reviewed; wait until the run has finished.',
  NOT_FOUND: 'The run does not exist (or belongs to another tenant).',
  INVALID_REQUEST: 'Check the values entered.',
  NETWORK_ERROR: 'Check the connection, then retry.',
};

/** One readable sentence for an error: what failed, the contract code and HTTP status, the message, a hint. */
function describeError(error, action) {
  if (!(error instanceof ApiError)) return `${action} failed: ${error?.message ?? String(error)}`;
  if (error.status === 429) {
    const wait = Number(error.retryAfter);
    const when = Number.isFinite(wait) && wait > 0 ? `in ${wait} s` : 'in a moment';
    return `${action} failed: too many requests (RATE_LIMITED). Please retry ${when}.`;
  }
  // A hint only adds what the server's message does not already say (its FORBIDDEN message names the scope).
  const hint = ERROR_HINTS[error.code];
  const redundant = error.code === 'FORBIDDEN' && /runs:\w+/.test(error.message);
  const status = error.status ? `, HTTP ${error.status}` : '';
  return [
    `${action} failed: ${error.code}${status}: ${error.message}.`.replace(/\.\.$/, '.'),
    redundant ? null : hint,
    error.retryable && error.code !== 'NETWORK_ERROR' ? 'Retrying may succeed.' : null,
  ]
    .filter(Boolean)
    .join(' ');
}

/**
 * Reports an error in the alert region (and in `inline`, next to the control that failed, when given).
 * 401 means the key is wrong or revoked: it is forgotten and the key form comes back with the reason.
 */
/**
 * @param {any} error
 * @param {string} action
 * @param {HTMLElement | null} [inline]
 */
function reportError(error, action, inline = null) {
  if (error?.name === 'AbortError') return;
  if (error instanceof ApiError && error.status === 401) {
    forgetKey();
    // While connecting, what was typed stays in the field, so a typo can be fixed rather than pasted again.
    showKeyForm(`The API key was refused (UNAUTHORIZED: ${error.message}). Paste a valid key.`, state.connecting ?? '');
    return;
  }
  const text = describeError(error, action);
  showAlert(text);
  if (inline) inline.textContent = text;
}

// ---------- state ----------

/**
 * @typedef {{ keyId: string, label?: string, tenantId?: string, scopes?: string[] }} KeyInfo
 * @typedef {{ jobId: string, [field: string]: any }} Run A run as the API returned it (the page reads what it shows).
 */

/**
 * @type {{
 *   pages: Array<string | null>, nextCursor: string | null, runs: Run[], openJobId: string | null,
 *   usage: any, key: KeyInfo | null, connecting: string | null, listScrollY: number,
 * }}
 */
const state = {
  /** Cursors of the pages walked through: the last one is the current page (null = first page). */
  pages: [null],
  nextCursor: null,
  /** Runs of the current page, as the API returned them. */
  runs: [],
  /** jobId of the run shown in the detail panel. */
  openJobId: null,
  /** The last usage answer (charts are redrawn from it when the window is resized). */
  usage: null,
  /** The connected key as GET v1/whoami describes it ({keyId, label, tenantId, scopes}); null when unknown. */
  key: null,
  /** The key being tried by the key form (kept in the field if it is refused); null otherwise. */
  connecting: null,
  /** Where the list was scrolled to when a run was opened (a narrow screen shows the run instead of the list). */
  listScrollY: 0,
};

/** One AbortController per area, so a slow older answer never overwrites a newer one. */
/** @type {Record<'list' | 'detail' | 'preview' | 'page' | 'usage', AbortController | null>} */
const inflight = { list: null, detail: null, preview: null, page: null, usage: null };

function startRequest(area) {
  inflight[area]?.abort();
  inflight[area] = new AbortController();
  return inflight[area].signal;
}

function abortAll() {
  for (const area of Object.keys(inflight)) {
    inflight[area]?.abort();
    inflight[area] = null;
  }
}

// ---------- screens ----------

function showKeyForm(message = '', typed = '') {
  abortAll();
  state.runs = [];
  state.pages = [null];
  state.openJobId = null;
  state.usage = null;
  state.key = null;
  els.runsView.classList.remove('has-detail');
  renderKeyName();
  els.runsBody.replaceChildren();
  els.detail.replaceChildren();
  els.detail.hidden = true;
  els.usageBody.replaceChildren();
  els.usageFoot.replaceChildren();
  els.usageCards.replaceChildren();
  els.charts.replaceChildren();
  els.runsView.hidden = true;
  els.usageView.hidden = true;
  els.tabs.hidden = true;
  els.forget.hidden = true;
  els.keyView.hidden = false;
  els.keyError.textContent = message;
  els.keyInput.value = typed;
  els.keyInput.focus();
  if (typed) els.keyInput.select();
}

/** Shows the view `<name>-view` and presses its tab `tab-<name>` (the Quality view, quality.js, uses it too). */
function showView(view) {
  els.keyView.hidden = true;
  els.tabs.hidden = false;
  els.forget.hidden = false;
  for (const section of htmlElements(document, 'main > .view')) section.hidden = section.id !== `${view}-view`;
  for (const tab of els.tabs.querySelectorAll('.tab'))
    tab.setAttribute('aria-pressed', String(tab.id === `tab-${view}`));
}

/** Whether the connected key may record reviews (runs:verify or admin); null while that is unknown. */
function canReview() {
  const scopes = state.key?.scopes;
  if (!Array.isArray(scopes)) return null;
  return scopes.includes('runs:verify') || scopes.includes('admin');
}

function renderKeyName() {
  const key = state.key;
  els.keyName.hidden = !key;
  if (!key) return els.keyName.replaceChildren();
  els.keyName.replaceChildren();
  append(els.keyName, [
    'Key ',
    h('strong', { title: key.keyId }, key.label || key.keyId),
    canReview() === false ? h('span', { class: 'muted' }, ' · read only') : null,
  ]);
}

/**
 * Asks the service who the key is (GET v1/whoami: label and scopes, never the key). Resolves false when the key was
 * refused (reported: the key form comes back), true otherwise; a service without the route leaves the key unknown,
 * and the server then decides each action as before.
 */
async function loadKeyInfo() {
  try {
    state.key = await api('v1/whoami');
  } catch (error) {
    state.key = null;
    if (error instanceof ApiError && error.status === 401) {
      reportError(error, 'Connecting');
      return false;
    }
  }
  renderKeyName();
  return true;
}

els.keyForm.addEventListener('submit', async (event) => {
  event.preventDefault();
  const key = els.keyInput.value.trim();
  if (!key) {
    els.keyError.textContent = 'Paste an API key first.';
    els.keyInput.focus();
    return;
  }
  storeKey(key);
  els.keyError.textContent = '';
  clearAlert();
  setStatus('Connecting…');
  // The key check: a 401 brings the form back with the reason and with what was typed.
  state.connecting = key;
  const known = await loadKeyInfo();
  state.connecting = null;
  if (!known) return setStatus('');
  els.keyInput.value = ''; // connected: the key is not kept in the DOM
  showView('runs');
  await openOnReviewQueue();
  if (await loadRuns()) setStatus(`Connected. ${els.status.textContent}`);
});

els.forget.addEventListener('click', () => {
  forgetKey();
  clearAlert();
  showKeyForm();
  setStatus('The key was removed from this tab.');
});

els.tabRuns.addEventListener('click', () => {
  clearAlert();
  showView('runs');
  void loadRuns();
});

els.tabUsage.addEventListener('click', () => {
  clearAlert();
  showView('usage');
  void loadUsage();
});

// ---------- runs list ----------

function statusBadge(run) {
  const label = run.status === 'queued' && run.stage === 'processing' ? 'processing' : run.status;
  return h('span', { class: `badge badge-${run.status}` }, label);
}

/** A run's review state: its recorded verification, else whether its result needs a person (review.needed). */
/** @param {any} verification @param {{ needed?: boolean } | null} [review] */
function reviewLabel(verification, review = null) {
  if (!verification && review?.needed) return h('span', { class: 'badge badge-review' }, 'Needs review');
  if (!verification) return h('span', { class: 'muted' }, 'Not reviewed');
  return verification.accepted
    ? h('span', { class: 'badge badge-accepted' }, 'Accepted')
    : h('span', { class: 'badge badge-corrected' }, 'Corrected');
}

function runRow(run) {
  const fileName = run.file?.name ?? run.file?.type ?? '—';
  // The row itself is the control: focusable, opened with Enter/Space or a click (handled on the tbody).
  return h(
    'tr',
    {
      tabindex: '0',
      'data-job-id': run.jobId,
      class: 'run-row',
      'aria-current': run.jobId === state.openJobId ? 'true' : null,
    },
    // data-label names the column when a phone-width layout shows each row as a card (style.css).
    h('td', { 'data-label': 'Job' }, h('code', { title: run.jobId }, shortId(run.jobId))),
    h('td', { 'data-label': 'Created', class: 'nowrap col-aside' }, timeEl(run.createdAt, dateTimeShort)),
    h('td', { 'data-label': 'Workflow', class: 'col-aside' }, run.workflow ?? h('span', { class: 'muted' }, 'none')),
    h('td', { 'data-label': 'Status' }, statusBadge(run)),
    h('td', { 'data-label': 'File', class: 'file-cell col-aside', title: fileName }, fileName),
    h('td', { 'data-label': 'Charged', class: 'num' }, run.status === 'queued' ? '—' : formatUsd(run.chargedUsd)),
    h('td', { 'data-label': 'Confidence', class: 'num' }, formatPercent(run.confidence)),
    h('td', { 'data-label': 'Review' }, run.status === 'completed' ? reviewLabel(run.verification, run.review) : '—'),
  );
}

const filtersInUse = () => Boolean(els.filterWorkflow.value.trim() || els.filterStatus.value || els.filterReview.value);

function clearFilters() {
  els.filterWorkflow.value = '';
  els.filterStatus.value = '';
  els.filterReview.value = '';
  state.pages = [null];
  void loadRuns();
}

/** What to do when there is no run to show: widen the filters, or (none at all yet) create one. */
function emptyRuns() {
  if (state.pages.length > 1) return [h('p', {}, 'No more runs on this page; go back with Previous.')];
  if (filtersInUse()) {
    const queueOnly =
      els.filterReview.value === 'needed' && !els.filterWorkflow.value.trim() && !els.filterStatus.value;
    return [
      h('p', {}, queueOnly ? 'No run needs review: the review queue is empty.' : 'No runs match these filters.'),
      h('button', { type: 'button', class: 'button secondary', onclick: clearFilters }, 'Clear filters'),
    ];
  }
  const baseUrl = API_BASE.href.replace(/\/$/, '');
  return [
    h('h3', {}, 'No runs yet'),
    h(
      'p',
      {},
      'Runs created with any key of this tenant appear here. Create one from a terminal with the CLI and a key that has ',
      h('code', {}, 'runs:write'),
      ' in ',
      h('code', {}, 'VISION_API_KEY'),
      ':',
    ),
    h(
      'pre',
      { class: 'command' },
      `export VISION_BASE_URL=${baseUrl}\nnpx vision analyze receipt.jpg --prompt "Extract the receipt" --schema receipt`,
    ),
    h(
      'p',
      {},
      'or with the SDK, or with the API itself: POST v1/uploads/presign, PUT the file to the address it answers, then ',
      'POST v1/runs (the README walks through it with curl). Then refresh this list.',
    ),
    h('button', { type: 'button', class: 'button secondary', onclick: () => void loadRuns() }, 'Refresh'),
  ];
}

function renderRuns() {
  els.runsBody.replaceChildren(...state.runs.map(runRow));
  const empty = state.runs.length === 0;
  els.runsTableBox.hidden = empty;
  els.runsEmpty.hidden = !empty;
  els.runsEmpty.replaceChildren(...(empty ? emptyRuns() : []));
  els.pager.hidden = empty && state.pages.length <= 1;
  els.pagePrev.disabled = state.pages.length <= 1;
  els.pageNext.disabled = !state.nextCursor;
  els.pageLabel.textContent = `Page ${state.pages.length}`;
}

/**
 * Loads the current page with the current filters. Resolves true when the page was shown, false when the call
 * failed (the error is reported), null when a newer load replaced this one.
 */
async function loadRuns() {
  const signal = startRequest('list');
  const cursor = state.pages[state.pages.length - 1];
  setStatus('Loading runs…');
  els.runsBody.setAttribute('aria-busy', 'true');
  try {
    const page = await api('v1/runs', {
      query: {
        workflow: els.filterWorkflow.value.trim(),
        status: els.filterStatus.value,
        review: els.filterReview.value,
        limit: PAGE_SIZE,
        cursor,
      },
      signal,
    });
    state.runs = Array.isArray(page?.items) ? page.items : [];
    state.nextCursor = page?.nextCursor ?? null;
    renderRuns();
    const count = state.runs.length;
    const queue = els.filterReview.value === 'needed' ? ' of the review queue' : '';
    setStatus(`${count} ${count === 1 ? 'run' : 'runs'} on page ${state.pages.length}${queue}.`);
    return true;
  } catch (error) {
    if (error?.name === 'AbortError') return null;
    reportError(error, 'Loading runs');
    setStatus('');
    return false;
  } finally {
    els.runsBody.removeAttribute('aria-busy');
  }
}

/**
 * The dashboard opens on the review queue when it holds a run (the list filtered to `review=needed`), else on every
 * run. Asked once per connection with one run's worth of listing; a failure leaves the filters as they are (the list
 * itself then reports it).
 */
async function openOnReviewQueue() {
  try {
    const page = await api('v1/runs', { query: { review: 'needed', limit: 1 } });
    els.filterReview.value = Array.isArray(page?.items) && page.items.length > 0 ? 'needed' : '';
  } catch {
    // reported by the listing that follows
  }
}

els.filters.addEventListener('submit', (event) => {
  event.preventDefault();
  clearAlert();
  state.pages = [null]; // new filters start again at the first page
  closeDetail({ restoreFocus: false });
  void loadRuns();
});

els.pageNext.addEventListener('click', () => {
  if (!state.nextCursor) return;
  state.pages.push(state.nextCursor);
  // If the page cannot be loaded, stay on the page still shown (so Previous/Next keep matching it).
  void loadRuns().then((ok) => {
    if (ok === false) state.pages.pop();
  });
});

els.pagePrev.addEventListener('click', () => {
  if (state.pages.length <= 1) return;
  const left = /** @type {string | null} */ (state.pages.pop());
  void loadRuns().then((ok) => {
    if (ok === false) state.pages.push(left);
  });
});

els.runsBody.addEventListener('click', (event) => {
  const row = /** @type {HTMLElement | null} */ (/** @type {Element} */ (event.target).closest?.('tr[data-job-id]'));
  if (row) openRun(row.dataset.jobId);
});

els.runsBody.addEventListener('keydown', (event) => {
  const row = /** @type {HTMLElement | null} */ (/** @type {Element} */ (event.target).closest?.('tr[data-job-id]'));
  if (!row || event.target !== row) return;
  if (event.key === 'Enter' || event.key === ' ') {
    event.preventDefault();
    openRun(row.dataset.jobId);
  } else if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
    // Arrow keys move between rows, as in a list box; Tab still walks the page.
    event.preventDefault();
    const next = /** @type {HTMLElement | null} */ (
      event.key === 'ArrowDown' ? row.nextElementSibling : row.previousElementSibling
    );
    next?.focus();
  }
});

// ---------- run detail ----------

/** @returns {HTMLElement | null} */
function rowFor(jobId) {
  return htmlElements(els.runsBody, 'tr[data-job-id]').find((row) => row.dataset.jobId === jobId) ?? null;
}

function markOpenRow() {
  for (const row of htmlElements(els.runsBody, 'tr[data-job-id]')) {
    if (row.dataset.jobId === state.openJobId) row.setAttribute('aria-current', 'true');
    else row.removeAttribute('aria-current');
  }
}

/** Replaces a run in the current page (after a refresh or a verify) and redraws its row in place. */
function updateRun(run) {
  const index = state.runs.findIndex((r) => r.jobId === run.jobId);
  if (index < 0) return;
  state.runs[index] = run;
  const hadFocus = document.activeElement === rowFor(run.jobId);
  rowFor(run.jobId)?.replaceWith(runRow(run));
  if (hadFocus) rowFor(run.jobId)?.focus();
}

/** Wide screens show the list and the open run side by side; narrower ones show the run instead of the list. */
const sideBySide = window.matchMedia('(min-width: 1100px)');

function openRun(jobId) {
  const run = state.runs.find((r) => r.jobId === jobId);
  if (!run) return;
  clearAlert();
  if (els.detail.hidden) state.listScrollY = window.scrollY;
  state.openJobId = jobId;
  pageImages.clear();
  markOpenRow();
  renderDetail(run);
  els.detail.hidden = false;
  els.runsView.classList.add('has-detail');
  // Focus moves into the panel (it is announced by its heading); a narrow screen starts the run at the top.
  els.detail.focus({ preventScroll: true });
  if (sideBySide.matches) els.detail.scrollIntoView({ block: 'nearest' });
  else window.scrollTo(0, 0);
  void loadPreview(run);
  setStatus(`Run ${jobId} opened.`);
}

function closeDetail({ restoreFocus = true } = {}) {
  if (els.detail.hidden) return;
  inflight.preview?.abort();
  inflight.page?.abort();
  inflight.detail?.abort();
  pageImages.clear();
  const jobId = state.openJobId;
  state.openJobId = null;
  els.detail.hidden = true;
  els.detail.replaceChildren();
  els.runsView.classList.remove('has-detail');
  markOpenRow();
  // Back on a narrow screen: the list where it was left, with the run's row focused.
  if (!sideBySide.matches) window.scrollTo(0, state.listScrollY);
  if (restoreFocus) rowFor(jobId)?.focus({ preventScroll: !sideBySide.matches });
}

document.addEventListener('keydown', (event) => {
  if (event.key !== 'Escape' || els.detail.hidden || els.runsView.hidden) return;
  // Escape inside the open correction form closes that form first; otherwise it closes the detail.
  const form = /** @type {HTMLElement | null} */ (/** @type {Element} */ (event.target).closest?.('.correct-form'));
  if (form && !form.hidden) {
    hideCorrectForm(form);
    return;
  }
  event.preventDefault();
  closeDetail();
});

/** A definition list from [label, value] pairs; pairs whose value is null/undefined are left out. */
function facts(pairs, className = 'facts') {
  return h(
    'dl',
    { class: className },
    pairs
      .filter(([, value]) => value !== null && value !== undefined && value !== '')
      .map(([label, value]) => h('div', { class: 'fact' }, h('dt', {}, label), h('dd', {}, value))),
  );
}

function section(id, title, ...children) {
  return h(
    'section',
    { class: 'detail-section', 'aria-labelledby': `${id}-heading` },
    h('h3', { id: `${id}-heading` }, title),
    ...children,
  );
}

function fileFacts(file) {
  if (!file) return null;
  const parts = [file.name, file.type, formatBytes(file.sizeBytes)];
  if (file.pages > 1) parts.push(`${file.pages} pages`);
  if (file.width && file.height) parts.push(`${file.width}×${file.height} px`);
  return parts.filter(Boolean).join(' · ');
}

function renderDetail(run) {
  const review = reviewParts(run);
  // append skips the parts a run does not have (null); replaceChildren would print them as "null".
  els.detail.replaceChildren();
  append(els.detail, [
    // The header stays in view while the detail scrolls: the run, its status and the review actions.
    h(
      'div',
      { class: 'detail-header' },
      h(
        'button',
        { type: 'button', class: 'button secondary back-button narrow-only', onclick: () => closeDetail() },
        'Back to runs',
      ),
      h(
        'div',
        { class: 'detail-title' },
        h('h2', { id: 'detail-heading' }, 'Run ', h('code', { class: 'job-id' }, run.jobId)),
        statusBadge(run),
        h(
          'button',
          {
            type: 'button',
            class: 'button secondary wide-only',
            'aria-label': 'Close run detail',
            onclick: () => closeDetail(),
          },
          'Close',
        ),
      ),
      review.bar,
    ),
    // A failed run's error comes first, before anything else can push it out of view (a preview is ~450 px tall).
    run.status === 'failed' ? resultSection(run) : null,
    facts([
      ['Workflow', run.workflow ?? 'none'],
      ['Created', timeEl(run.createdAt)],
      ['Finished', run.completedAt ? timeEl(run.completedAt) : null],
      ['Prompt', run.prompt],
      ['Schema', run.schemaId ?? 'none'],
      ['Output format', run.outputFormat],
      ['Strategy', run.strategy ?? null],
      ['Confidence', run.confidence === undefined ? null : formatPercent(run.confidence)],
      ['File', fileFacts(run.file)],
      ['Metadata', Object.keys(run.metadata ?? {}).length > 0 ? h('code', {}, JSON.stringify(run.metadata)) : null],
    ]),
    evidenceLayout(
      run,
      section('preview', 'File', h('div', { class: 'preview', id: 'preview' }, h('p', { class: 'hint' }, 'Loading…'))),
      fieldsSection(run),
    ),
    run.status === 'failed' ? null : resultSection(run),
    review.section,
    moneySection(run),
    attemptsSection(run),
  ]);
}

/**
 * An image's preview, or a PDF's page image, and its fields side by side when the panel is wide enough (style.css),
 * so a box and its entry show together. A PDF shown in its frame (no page image: `showListOnly`) takes the full width
 * again, and a HEIC has no preview: the fields follow.
 */
function evidenceLayout(run, preview, fields) {
  const type = run.file?.type;
  const boxed =
    type === 'image/png' || type === 'image/jpeg' || (type === 'application/pdf' && boxedPages(run).length > 0);
  if (!fields) return preview;
  return boxed
    ? h('div', { class: 'evidence-layout', id: 'evidence-layout' }, preview, fields)
    : append(document.createDocumentFragment(), [preview, fields]);
}

/** The preview and the fields one after the other again (a PDF without a page image shows in its frame). */
function showListOnly() {
  document.getElementById('evidence-layout')?.classList.remove('evidence-layout');
}

function isTextResult(run) {
  const keys = Object.keys(run.result ?? {});
  return (
    run.outputFormat === 'text' || (keys.length === 1 && keys[0] === 'text' && typeof run.result.text === 'string')
  );
}

function resultSection(run) {
  if (run.status === 'failed') {
    const error = run.error ?? {};
    return section(
      'result',
      'Error',
      h('div', { class: 'error-box' }, h('p', {}, h('strong', {}, error.code ?? 'ERROR'), ': ', error.message ?? '')),
      facts([
        ['HTTP status', error.status],
        ['Retryable', error.retryable === undefined ? null : error.retryable ? 'yes' : 'no'],
      ]),
    );
  }
  if (run.status !== 'completed') {
    return section(
      'result',
      'Result',
      h('p', {}, `Not finished yet (${run.stage ?? 'queued'}).`),
      h('button', { type: 'button', class: 'button secondary', onclick: () => refreshRun(run.jobId) }, 'Refresh'),
    );
  }
  if (isSplitRun(run)) {
    // Each document's boxes on its pages' images, drawn as a run's own are (from its fields and result).
    const signal = startRequest('page');
    return packetSection(run, async (doc, page) => {
      const image = await pageImage(run, page, signal);
      const own = { status: 'completed', fields: doc.fields, result: doc.result };
      const name = run.file?.name ?? 'the packet';
      return image && fieldBoxes(own, previewImage(image.url, `Page ${page} of ${name}`), page, image);
    });
  }
  const body = isTextResult(run)
    ? h('pre', { class: 'result result-text' }, String(run.result.text ?? ''))
    : h('pre', { class: 'result result-json' }, JSON.stringify(run.result, null, 2));
  return section('result', 'Result', body);
}

async function refreshRun(jobId) {
  const signal = startRequest('detail');
  setStatus('Refreshing the run…');
  try {
    const run = await api(runPath(jobId), { signal });
    updateRun(run);
    if (state.openJobId === jobId) {
      renderDetail(run);
      void loadPreview(run);
    }
    setStatus(`Run is ${run.status}.`);
  } catch (error) {
    reportError(error, 'Refreshing the run');
  }
}

function moneySection(run) {
  const money = facts([
    ['Estimated (held)', formatUsd(run.estimatedCostUsd)],
    ['Charged', run.chargedUsd === undefined ? null : formatUsd(run.chargedUsd)],
    ['Refunded', run.refundedUsd === undefined ? null : formatUsd(run.refundedUsd)],
  ]);
  const usage = run.usage
    ? facts([
        ['Requests', formatCount(run.usage.requests)],
        ['Billable units', String(run.usage.billableUnits)],
        ['Provider cost', formatUsd(run.usage.costUsd)],
        ['Price', formatUsd(run.usage.priceUsd)],
      ])
    : null;
  return section('money', 'Money and usage', money, usage ? h('h4', {}, 'Usage') : null, usage);
}

function attemptsSection(run) {
  const attempts = Array.isArray(run.attempts) ? run.attempts : [];
  if (attempts.length === 0) return section('attempts', 'Attempts', h('p', { class: 'muted' }, 'No attempts yet.'));
  return section(
    'attempts',
    'Attempts',
    h(
      'ol',
      { class: 'timeline' },
      attempts.map((attempt) =>
        h(
          'li',
          { class: `attempt attempt-${attempt.outcome}` },
          h('span', { class: 'attempt-step' }, attempt.step),
          ' · ',
          h('span', { class: 'attempt-provider' }, attempt.provider),
          ' · ',
          h('span', { class: `badge badge-${attempt.outcome}` }, attempt.outcome),
          ' · ',
          h('span', { class: 'attempt-latency' }, formatMs(attempt.latencyMs)),
          attempt.failure ? [' · ', h('span', { class: 'attempt-failure' }, `failure: ${attempt.failure}`)] : null,
        ),
      ),
    ),
  );
}

// ---------- file preview ----------

async function loadPreview(run) {
  const signal = startRequest('preview');
  const container = () => (state.openJobId === run.jobId ? document.getElementById('preview') : null);
  try {
    const file = await api(runPath(run.jobId, '/file'), { signal });
    // A PDF with boxed fields opens on the first page with one, when the worker stored an image of it.
    const pdf = String(file.contentType).toLowerCase() === 'application/pdf';
    const first = pdf ? boxedPages(run)[0] : undefined;
    // A page image that fails to load for another reason than the sign-in or a newer request: the frame instead.
    const page =
      first === undefined
        ? null
        : await pageImage(run, first, signal).catch((error) => {
            if (error?.name === 'AbortError' || (error instanceof ApiError && error.status === 401)) throw error;
            return null;
          });
    if (pdf && !page) showListOnly();
    // Through append, which skips the null parts (replaceChildren would write them out as the text "null").
    const target = container();
    if (target) {
      target.replaceChildren();
      append(target, previewFor(file, run, page));
    }
  } catch (error) {
    if (error?.name === 'AbortError') return;
    if (error instanceof ApiError && error.status === 401) return reportError(error, 'Loading the file');
    const target = container();
    if (!target) return;
    // The run itself was just listed, so NOT_FOUND here means its upload is gone (details.reason: file_expired).
    if (error instanceof ApiError && error.code === 'NOT_FOUND') {
      target.replaceChildren(
        h(
          'p',
          { class: 'notice' },
          'The uploaded file has expired, so there is no preview (the run and its result are kept). ',
          h('span', { class: 'muted' }, error.message),
        ),
      );
    } else {
      target.replaceChildren(h('p', { class: 'field-error' }, describeError(error, 'Loading the file')));
    }
  }
}

/**
 * Nodes that preview a file: an image (with its fields' boxes drawn over it), a PDF's page image (with the boxes of
 * that page's fields: `page`, the answer of GET …/file?page=N) or else the PDF in a frame, or a note for HEIC; always
 * an "Open file" link.
 */
/** @param {any} file @param {Run} run @param {any} [page] */
function previewFor(file, run, page = null) {
  const type = String(file.contentType ?? '').toLowerCase();
  const name = file.fileName ?? 'the uploaded file';
  const expires = file.expiresAt ? ` (link valid until ${timeOnly.format(new Date(file.expiresAt))})` : '';
  // The URL is a short-lived presigned storage address: it carries its own signature, never the API key.
  const link = h(
    'p',
    { class: 'file-link' },
    h('a', { href: file.url, target: '_blank', rel: 'noopener noreferrer' }, 'Open file'),
    ` ${name}${expires}`,
  );
  if (type === 'image/heic' || type === 'image/heif') {
    return [
      h('p', { class: 'notice' }, 'No preview: browsers cannot display HEIC images. Open the file to download it.'),
      link,
    ];
  }
  if (type.startsWith('image/')) {
    return [fieldBoxes(run, previewImage(file.url, `Preview of ${name}`)), link];
  }
  if (type === 'application/pdf' && page) {
    return [h('div', { class: 'page-view', id: 'page-view', 'data-page': page.page }, pageView(run, name, page)), link];
  }
  if (type === 'application/pdf') {
    if (navigator.pdfViewerEnabled === false) {
      return [
        h('p', { class: 'notice' }, 'No preview: this browser does not show PDFs inside a page. Open the file.'),
        link,
      ];
    }
    // An <iframe>, not <object>: the CSP allows frames from storage (frame-src) but objects only from 'self'. No
    // sandbox: Chromium shows no PDF in a sandboxed frame; storage answers with the inspected type instead
    // (docs/decisions.md, "The file preview").
    return [
      h('iframe', { src: file.url, title: `PDF preview of ${name}`, class: 'preview-pdf' }),
      boxedPages(run).length > 0
        ? h('p', { class: 'hint' }, 'No page image to draw the boxes on; each field below names its page and place.')
        : null,
      link,
    ];
  }
  return [h('p', { class: 'notice' }, `No preview: this page cannot display ${type || 'this file type'}.`), link];
}

/** An <img> of a preview that says so in its place when it cannot be shown. */
function previewImage(src, alt) {
  const img = h('img', { src, alt, class: 'preview-image', decoding: 'async' });
  img.addEventListener('error', () => {
    img.replaceWith(
      h(
        'p',
        { class: 'notice' },
        'The image could not be shown: storage did not send it (the 5-minute link may have expired; close and ' +
          'reopen the run for a new one) or its bytes do not decode in this browser.',
      ),
    );
  });
  return img;
}

// ---------- page images of a PDF run (GET …/file?page=N) ----------

/** The answers of GET …/file?page=N for the open run, by page (null: no image of that page); cleared per run. */
const pageImages = new Map();
/** The page the PDF preview should show last asked for (a quick pointer asks for several; the last one wins). */
let pageWanted = null;

/**
 * The image of `page` of the run (its GET …/file?page=N answer), or null when the worker stored none (404). Answers
 * are kept while the open run stays open and their address is valid for another 30 s.
 */
async function pageImage(run, page, signal) {
  const kept = pageImages.get(page);
  if (kept !== undefined && (kept === null || Date.parse(kept.expiresAt) - Date.now() > 30_000)) return kept;
  try {
    const answer = await api(runPath(run.jobId, '/file'), { query: { page }, signal });
    pageImages.set(page, answer);
    return answer;
  } catch (error) {
    if (error instanceof ApiError && error.code === 'NOT_FOUND' && error.details?.reason === 'no_page_preview') {
      pageImages.set(page, null);
      return null;
    }
    throw error;
  }
}

/** The nodes of a page view: which page it is, and the page image with the boxes of that page's fields. */
function pageView(run, name, page) {
  const pages = run.file?.pages;
  return [
    h(
      'p',
      { class: 'page-caption muted' },
      h('strong', {}, `Page ${page.page}${pages ? ` of ${pages}` : ''}`),
      boxedPages(run).length > 1 ? ' · pointing at or focusing a field turns to its page' : null,
    ),
    fieldBoxes(run, previewImage(page.url, `Page ${page.page} of ${name}`), page.page, page),
  ];
}

/**
 * Turns the PDF preview to a page of this field's boxes, unless it shows one already (the field under the pointer or
 * keyboard focus). A page without an image says so in place of the image; the list keeps saying where each field is.
 */
async function showPageOf(run, name) {
  const view = document.getElementById('page-view');
  const evidence = run.fields?.[name];
  if (!view || !evidence) return;
  const pages = boxedPages(run).filter((page) => boxesOn(evidence, page).length > 0);
  const shown = Number(view.dataset.page);
  if (pages.length === 0 || pages.includes(shown)) return;
  const page = pages[0];
  pageWanted = page;
  const fileName = run.file?.name ?? 'the uploaded file';
  try {
    const image = await pageImage(run, page, startRequest('page'));
    if (pageWanted !== page || state.openJobId !== run.jobId || !view.isConnected) return;
    view.dataset.page = String(page);
    view.replaceChildren(
      ...(image
        ? pageView(run, fileName, image)
        : [
            h('p', { class: 'page-caption muted' }, h('strong', {}, `Page ${page}`)),
            h('p', { class: 'notice' }, `No image of page ${page}; the fields list says where on it each value is.`),
          ]),
    );
    // The entry still under the pointer or focus keeps its box lit on the new page.
    const active = /** @type {HTMLElement | null} */ (els.detail.querySelector('li.field-item.active'));
    if (active) highlightField(active.dataset.evidence, true);
  } catch (error) {
    if (error?.name === 'AbortError') return;
    reportError(error, 'Loading the page image');
  }
}

// ---------- fields: per-field evidence (contract-v1.1 §3) ----------

/** A box `[x0, y0, x1, y1]` relative to the page, as the contract promises it (anything else is not drawn). */
function isBox(box) {
  return (
    Array.isArray(box) &&
    box.length === 4 &&
    box.every((n) => typeof n === 'number' && n >= 0 && n <= 1) &&
    box[2] >= box[0] &&
    box[3] >= box[1]
  );
}

/**
 * A completed run's fields with their evidence, lowest confidence first (the ones a person should look at), ties in
 * the result's order. Each has a rank (1 = least sure), which labels its box on the preview.
 */
function fieldEntries(run) {
  if (run?.status !== 'completed' || !run.fields || typeof run.fields !== 'object') return [];
  const order = Object.keys(run.result ?? {});
  return Object.entries(run.fields)
    .filter(([, evidence]) => evidence && typeof evidence.confidence === 'number')
    .sort(([a, x], [b, y]) => x.confidence - y.confidence || order.indexOf(a) - order.indexOf(b))
    .map(([name, evidence], index) => ({ name, evidence, rank: index + 1, id: `field-${index + 1}` }));
}

/** The pages (ascending) on which some field has a box: its own or one of its items' fields. */
function boxedPages(run) {
  const pages = new Set();
  for (const { evidence } of fieldEntries(run)) {
    const all = [
      evidence,
      ...(Array.isArray(evidence.items) ? evidence.items.flatMap((i) => Object.values(i ?? {})) : []),
    ];
    for (const e of all) if (e && isBox(e.bbox) && Number.isInteger(e.page ?? 1)) pages.add(e.page ?? 1);
  }
  return [...pages].sort((a, b) => a - b);
}

/** The boxes of a field on `page`: its own, and those of its items' fields (an array of objects). */
function boxesOn(evidence, page) {
  const here = (e) => (e.page ?? 1) === page && isBox(e.bbox);
  const boxes = here(evidence) ? [evidence.bbox] : [];
  for (const item of Array.isArray(evidence.items) ? evidence.items : []) {
    for (const sub of Object.values(item ?? {})) if (sub && here(sub)) boxes.push(sub.bbox);
  }
  return boxes;
}

/** The review's reasons that name this field (reasons are sentences; a field is named as a whole word). */
function reasonsFor(run, name) {
  const reasons = Array.isArray(run.review?.reasons) ? run.review.reasons : [];
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const named = new RegExp(`(^|[^\\w])${escaped}([^\\w]|$)`);
  return reasons.filter((reason) => typeof reason === 'string' && named.test(reason));
}

/**
 * Marks a field's list entry and its boxes as the one looked at (hover or keyboard focus), or not; a PDF's preview
 * turns to the field's page.
 */
function highlightField(name, on, run = null) {
  for (const el of els.detail.querySelectorAll('[data-evidence]')) {
    // A field's list entry (HTML) and its boxes (SVG) both carry data-evidence.
    const marked = /** @type {HTMLElement | SVGElement} */ (el);
    if (marked.dataset.evidence === name) marked.classList.toggle('active', on);
  }
  if (on && run) void showPageOf(run, name);
}

/**
 * The image of `page` (an image file is page 1; a PDF page's image has its own `size`) with the boxes of that page's
 * fields drawn over it (an SVG of the same size, so a box is where its relative coordinates say whatever the image's
 * displayed size). Each box carries its field's rank. Decorative for assistive technology: the fields list says the
 * same in words.
 */
function fieldBoxes(run, img, page = 1, size = run.file) {
  const stage = h('div', { class: 'preview-stage' }, img);
  const entries = fieldEntries(run).filter((entry) => boxesOn(entry.evidence, page).length > 0);
  if (entries.length === 0) return stage;
  const width = 1000;
  const height = Math.round((1000 * (size?.height || 1000)) / (size?.width || 1000));
  const svg = s('svg', {
    class: 'preview-boxes',
    viewBox: `0 0 ${width} ${height}`,
    preserveAspectRatio: 'none',
    'aria-hidden': 'true',
    focusable: 'false',
  });
  // Each box is drawn a little outside its value (in the image's own units, so it scales with the text): the outline
  // never crosses the characters it points at, whatever size the preview is shown at.
  const margin = 6;
  for (const entry of entries) {
    const group = s('g', { class: 'field-box', 'data-evidence': entry.name });
    for (const [x0, y0, x1, y1] of boxesOn(entry.evidence, page)) {
      group.append(
        s('rect', {
          x: x0 * width - margin,
          y: y0 * height - margin,
          width: Math.max(1, (x1 - x0) * width) + 2 * margin,
          height: Math.max(1, (y1 - y0) * height) + 2 * margin,
          rx: 3,
          'vector-effect': 'non-scaling-stroke',
        }),
      );
    }
    // The rank as a badge just right of the box, on its line (on a page the line above is text too, and a value
    // usually ends its line), or left of it when the box reaches the right edge: a filled disc, never read as text.
    const [x0, y0, x1, y1] = boxesOn(entry.evidence, page)[0];
    const r = 22;
    const cx = x1 < 0.93 ? x1 * width + margin + 6 + r : x0 * width - margin - 6 - r;
    const cy = Math.max(r, ((y0 + y1) / 2) * height);
    group.append(
      s('circle', { class: 'field-badge', cx, cy, r }),
      s('text', { x: cx, y: cy, 'text-anchor': 'middle', 'dominant-baseline': 'central' }, entry.rank),
    );
    svg.append(group);
  }
  stage.append(svg);
  return stage;
}

/** Where a field's value stands, in words (also what its list entry is described by). */
function whereText(run, evidence) {
  const page = evidence.page ?? 1;
  const pdf = run.file?.type === 'application/pdf';
  if (!isBox(evidence.bbox)) {
    return evidence.page ? `Page ${page}; no place on it found for this value.` : 'Not found in the document.';
  }
  const [x0, y0, x1, y1] = evidence.bbox.map((n) => Math.round(n * 100));
  const place = `${x0}–${x1}% across, ${y0}–${y1}% down`;
  if (pdf) return `Page ${page}, ${place}.`;
  return page === 1 ? `Boxed on the preview, ${place}.` : `Page ${page}, ${place}.`;
}

/**
 * The fields of a completed json run, the least sure first: each with its value, confidence, where it was read and
 * the review's reasons that name it. An entry is focusable; hovering or focusing it highlights its box.
 */
function fieldsSection(run) {
  const entries = fieldEntries(run);
  if (entries.length === 0) return null;
  const review = run.review;
  const reasons = Array.isArray(review?.reasons) ? review.reasons : [];
  const summary = review?.needed
    ? h(
        'div',
        { class: 'notice review-needed' },
        h('p', {}, h('strong', {}, 'Needs review'), reasons.length > 0 ? ':' : '.'),
        reasons.length > 0
          ? h(
              'ul',
              {},
              reasons.map((reason) => h('li', {}, reason)),
            )
          : null,
      )
    : review
      ? h('p', { class: 'muted' }, reasons.length > 0 ? 'Review done; it was asked for because:' : 'No review needed.')
      : null;
  const doneReasons =
    review && !review.needed && reasons.length > 0
      ? h(
          'ul',
          { class: 'muted' },
          reasons.map((r) => h('li', {}, r)),
        )
      : null;
  const list = h(
    'ol',
    { class: 'field-list', 'aria-label': 'Fields, least confident first' },
    entries.map(({ name, evidence, rank, id }) => {
      const value = run.result?.[name];
      const named = reasonsFor(run, name);
      const low = named.length > 0;
      const item = h(
        'li',
        {
          class: `field-item${low ? ' field-low' : ''}`,
          tabindex: '0',
          'data-evidence': name,
          'aria-describedby': `${id}-where${low ? ` ${id}-reasons` : ''}`,
        },
        h(
          'div',
          { class: 'field-head' },
          h('span', { class: 'field-rank', 'aria-hidden': 'true' }, String(rank)),
          h('strong', { class: 'field-name' }, name),
          h('span', { class: 'field-confidence' }, formatPercent(evidence.confidence)),
        ),
        h(
          'p',
          { class: 'field-value' },
          value === null || value === undefined
            ? h('span', { class: 'muted' }, 'no value')
            : h('code', {}, fieldText(value)),
          typeof evidence.source === 'string' && evidence.source && evidence.source !== fieldText(value)
            ? h('span', { class: 'muted' }, ` read as “${evidence.source}”`)
            : null,
        ),
        h('p', { class: 'field-where muted', id: `${id}-where` }, whereText(run, evidence)),
        low
          ? h(
              'ul',
              { class: 'field-reasons', id: `${id}-reasons` },
              named.map((r) => h('li', {}, r)),
            )
          : null,
      );
      item.addEventListener('mouseenter', () => highlightField(name, true, run));
      item.addEventListener('mouseleave', () => highlightField(name, item === document.activeElement));
      item.addEventListener('focus', () => highlightField(name, true, run));
      item.addEventListener('blur', () => highlightField(name, false));
      return item;
    }),
  );
  return section('fields', 'Fields', summary, doneReasons, list);
}

// ---------- review (verify) ----------

/** Who recorded a review: the key's label when the review kept it (its id otherwise, and as tooltip). */
function reviewer(verification) {
  const name = verification.verifiedByLabel || verification.verifiedBy || 'unknown';
  return h('strong', { title: verification.verifiedBy ?? '' }, name);
}

function verificationView(verification) {
  if (!verification) return h('p', { class: 'muted verification-state' }, 'Not reviewed yet.');
  const corrections = Object.entries(verification.corrections ?? {});
  return h(
    'div',
    { class: 'verification' },
    h(
      'p',
      { class: 'verification-state' },
      reviewLabel(verification),
      ' by ',
      reviewer(verification),
      ' on ',
      timeEl(verification.verifiedAt),
    ),
    corrections.length > 0
      ? h(
          'dl',
          { class: 'facts corrections' },
          corrections.map(([field, value]) =>
            h('div', { class: 'fact' }, h('dt', {}, field), h('dd', {}, h('code', {}, fieldText(value)))),
          ),
        )
      : null,
    verification.note ? h('p', { class: 'note' }, 'Note: ', verification.note) : null,
  );
}

/** The next completed, unreviewed run of this page after `jobId` (wrapping round), or null. */
function nextToReview(jobId) {
  const at = state.runs.findIndex((r) => r.jobId === jobId);
  const order = [...state.runs.slice(at + 1), ...state.runs.slice(0, Math.max(0, at))];
  return order.find((r) => r.status === 'completed' && !r.verification && r.jobId !== jobId) ?? null;
}

/**
 * A run's review controls, in two parts: a bar for the detail's header (the actions, in view without scrolling) and a
 * section below the result (what was recorded, the correction form, errors). Before a review the primary action is
 * Accept; after one it is the next run to review. A key without runs:verify sees the actions disabled, and why.
 */
function reviewParts(run) {
  if (run.status !== 'completed') {
    return {
      bar: null,
      section: section('review', 'Review', h('p', { class: 'muted' }, 'Only completed runs can be reviewed.')),
    };
  }
  let current = run;
  const bar = h('div', { class: 'review-bar', role: 'group', 'aria-label': 'Review actions' });
  const recorded = h('div', { class: 'verification-current' });
  const error = h('p', { class: 'field-error', 'aria-live': 'polite' });
  const form = correctForm(run, error, (verification) => reviewed(verification));

  function reviewed(verification) {
    current = { ...current, verification };
    render();
    bar.querySelector('button:not(:disabled)')?.focus();
  }

  async function accept(button) {
    error.textContent = '';
    button.disabled = true;
    const verification = await submitVerification(run.jobId, { accepted: true }, error);
    button.disabled = false;
    if (verification) reviewed(verification);
  }

  function toggleForm(button) {
    form.hidden = !form.hidden;
    button.setAttribute('aria-expanded', String(!form.hidden));
    if (!form.hidden) form.querySelector('input, textarea')?.focus();
  }

  function render() {
    const allowed = canReview() !== false;
    const done = current.verification;
    const next = done ? nextToReview(run.jobId) : null;
    const reason = allowed
      ? null
      : h(
          'p',
          { class: 'review-reason', id: 'review-reason' },
          'This key cannot review runs: it lacks the runs:verify scope. Use a key that has it to accept or correct.',
        );
    const button = (label, kind, extra = {}) =>
      h(
        'button',
        {
          type: 'button',
          class: `button ${kind}`,
          disabled: !allowed,
          'aria-describedby': allowed ? null : 'review-reason',
          ...extra,
        },
        label,
      );
    const acceptButton = button('Accept', done ? 'secondary' : 'primary');
    acceptButton.addEventListener('click', () => accept(acceptButton));
    const correctButton = button('Correct…', 'secondary', {
      'aria-expanded': String(!form.hidden),
      'data-action': 'correct',
    });
    correctButton.addEventListener('click', () => toggleForm(correctButton));
    const nextButton = next
      ? h('button', { type: 'button', class: 'button primary', onclick: () => openRun(next.jobId) }, 'Review next run')
      : null;
    bar.replaceChildren();
    append(bar, [
      h('span', { class: 'review-state' }, reviewLabel(done, run.review)),
      done ? [nextButton, done.accepted ? null : acceptButton, correctButton] : [acceptButton, correctButton],
      reason,
    ]);
    recorded.replaceChildren(verificationView(current.verification));
  }

  form.addEventListener('reset', () => {
    // "Cancel" restores the prefilled values (native reset) and folds the form away.
    form.hidden = true;
    const correctButton = bar.querySelector('[data-action="correct"]');
    correctButton?.setAttribute('aria-expanded', 'false');
    correctButton?.focus();
  });
  render();
  return { bar, section: section('review', 'Review', recorded, form, error) };
}

function hideCorrectForm(form) {
  form.reset(); // triggers the reset listener above
}

/** Editable text for a result value. */
function toField(value) {
  return value === null || value === undefined ? '' : fieldText(value);
}

const TYPE_HINTS = {
  string: 'text',
  number: 'a number',
  integer: 'a whole number',
  boolean: 'true or false',
  date: 'a date',
  array: 'a JSON list',
  object: 'a JSON object',
};

/** A field's type: the run's schema's (expectedFields), else the JSON type of its extracted value. */
function fieldType(run, field) {
  const declared = (run.expectedFields ?? []).find((f) => f.name === field);
  if (declared) return declared.type;
  const value = run.result?.[field];
  if (typeof value === 'number' || typeof value === 'boolean') return typeof value;
  if (value !== null && typeof value === 'object') return Array.isArray(value) ? 'array' : 'object';
  return 'string';
}

/** The control for a field of a type, holding its current value (an empty control means "no value"). */
function fieldControl(id, type, value) {
  const text = toField(value);
  if (type === 'boolean') {
    const select = h(
      'select',
      { id },
      h('option', { value: '' }, '(no value)'),
      h('option', { value: 'true' }, 'true'),
      h('option', { value: 'false' }, 'false'),
    );
    select.value = typeof value === 'boolean' ? String(value) : '';
    return select;
  }
  if (type === 'number' || type === 'integer') {
    const props = {
      id,
      type: 'number',
      step: type === 'integer' ? '1' : 'any',
      inputmode: 'decimal',
      autocomplete: 'off',
    };
    const input = h('input', props);
    input.value = typeof value === 'number' ? String(value) : '';
    return input;
  }
  if (type === 'date') {
    const input = h('input', { id, type: 'date', autocomplete: 'off' });
    // A date read as printed (day and month ambiguous) is no ISO date: the control starts empty, with it as a hint.
    input.value = /^\d{4}-\d{2}-\d{2}$/.test(text) ? text : '';
    if (input.value === '' && text !== '') input.title = `read as "${text}"`;
    return input;
  }
  const long = type === 'array' || type === 'object' || text.length > 80 || text.includes('\n');
  return long
    ? h('textarea', { id, rows: '6', spellcheck: 'false' }, text) // textarea's default value is its text
    : h('input', { id, type: 'text', value: text, autocomplete: 'off', spellcheck: 'false' });
}

/** The value a control stands for, in its field's type; throws on JSON that does not parse. */
function fromField(type, text) {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  if (type === 'number' || type === 'integer') return Number(trimmed);
  if (type === 'boolean') return trimmed === 'true';
  if (type === 'array' || type === 'object') return JSON.parse(trimmed);
  return text;
}

/** The "Correct" form: one typed control per result field (prefilled) and a note; only changed fields are sent. */
function correctForm(run, error, onSaved) {
  const entries = Object.entries(run.result ?? {});
  const rows = entries.map(([field, value], index) => {
    const id = `correct-${index}`;
    const type = fieldType(run, field);
    const input = fieldControl(id, type, value);
    input.dataset.field = field;
    input.dataset.type = type;
    // What the control holds before any edit (a control may not hold every text: a number box, a date picker).
    input.dataset.initial = input.value;
    input.title ||= `${field}: ${TYPE_HINTS[type] ?? type}`;
    return h('div', { class: 'correct-row' }, h('label', { for: id }, field), input);
  });
  const note = h('textarea', { id: 'correct-note', rows: '2', maxlength: '2000' });
  const form = h(
    'form',
    { class: 'correct-form', novalidate: true, hidden: true, 'aria-label': 'Correct the result' },
    h('p', { class: 'hint' }, 'Change the wrong values; only changed fields are sent as corrections.'),
    rows,
    h('div', { class: 'correct-row' }, h('label', { for: 'correct-note' }, 'Note (optional)'), note),
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'submit', class: 'button primary' }, 'Save correction'),
      h('button', { type: 'reset', class: 'button secondary' }, 'Cancel'),
    ),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    error.textContent = '';
    const corrections = {};
    for (const input of form.querySelectorAll('[data-field]')) {
      if (input.value === input.dataset.initial) continue;
      try {
        corrections[input.dataset.field] = fromField(input.dataset.type, input.value);
      } catch {
        error.textContent = `${input.dataset.field}: not valid JSON.`;
        input.focus();
        return;
      }
    }
    const text = note.value.trim();
    if (Object.keys(corrections).length === 0 && !text) {
      error.textContent = 'Change at least one field (or write a note) before saving a correction.';
      return;
    }
    const body = { accepted: false, corrections, ...(text ? { note: text } : {}) };
    const submit = form.querySelector('button[type="submit"]');
    submit.disabled = true;
    const verification = await submitVerification(run.jobId, body, error);
    submit.disabled = false;
    if (!verification) return;
    form.hidden = true;
    onSaved(verification);
  });
  return form;
}

/** POST verify; on success updates the run's row and resolves with the recorded verification (null on failure). */
async function submitVerification(jobId, body, error) {
  setStatus('Saving the review…');
  try {
    const answer = await api(runPath(jobId, '/verify'), { method: 'POST', body });
    const run = state.runs.find((r) => r.jobId === jobId);
    // A verify clears a needed review on the service (reasons kept); the page shows the same without a reload.
    const review = run?.review ? { review: { ...run.review, needed: false } } : {};
    if (run) updateRun({ ...run, verification: answer.verification, ...review });
    setStatus(answer.verification.accepted ? 'Review saved: result accepted.' : 'Review saved: corrections recorded.');
    return answer.verification;
  } catch (caught) {
    reportError(caught, 'Saving the review', error);
    setStatus('');
    return null;
  }
}

// ---------- usage ----------

const RANGES = {
  '24h': { interval: 'hour', buckets: 24, label: 'the last 24 hours, per hour', span: 'the last 24 hours' },
  '7d': { interval: 'day', buckets: 7, label: 'the last 7 days, per UTC day', span: 'the last 7 days' },
  '30d': { interval: 'day', buckets: 30, label: 'the last 30 days, per UTC day', span: 'the last 30 days' },
};

/** from/to for a range: `from` is aligned to the start of an hour / UTC day so every bucket is whole. */
function usageQuery() {
  const range = RANGES[els.usageRange.value] ?? RANGES['7d'];
  const now = new Date();
  const start = new Date(now);
  if (range.interval === 'hour') start.setUTCMinutes(0, 0, 0);
  else start.setUTCHours(0, 0, 0, 0);
  const step = range.interval === 'hour' ? HOUR_MS : DAY_MS;
  const from = new Date(start.getTime() - (range.buckets - 1) * step);
  return {
    range,
    query: {
      from: from.toISOString(),
      to: now.toISOString(),
      interval: range.interval,
      workflow: els.usageWorkflow.value.trim(),
    },
  };
}

async function loadUsage() {
  const signal = startRequest('usage');
  const { range, query } = usageQuery();
  setStatus('Loading usage…');
  try {
    const usage = await api('v1/usage', { query, signal });
    state.usage = { data: usage, range, workflow: query.workflow };
    renderUsage();
    setStatus(`Usage for ${range.label} loaded.`);
  } catch (error) {
    reportError(error, 'Loading usage');
    if (error?.name !== 'AbortError') setStatus('');
  }
}

els.usageForm.addEventListener('submit', (event) => {
  event.preventDefault();
  clearAlert();
  void loadUsage();
});
els.usageRange.addEventListener('change', () => void loadUsage());

/** @type {Array<[string, (value: unknown) => string]>} */
const USAGE_COLUMNS = [
  ['runs', formatCount],
  ['completed', formatCount],
  ['failed', formatCount],
  ['queued', formatCount],
  ['estimatedUsd', formatUsd],
  ['chargedUsd', formatUsd],
  ['refundedUsd', formatUsd],
  ['verified', formatCount],
  ['accepted', formatCount],
  ['acceptanceRate', formatPercent],
  ['meanConfidence', formatPercent],
];

function usageRow(row, label, header = 'th') {
  return h(
    'tr',
    {},
    h(header, header === 'th' ? { scope: 'row' } : {}, label),
    USAGE_COLUMNS.map(([key, format]) => h('td', { class: 'num' }, format(row[key]))),
  );
}

/** Usage with no run in the range is one line, not empty cards, an empty table and five empty charts. */
function renderNoUsage(range, workflow) {
  const which = workflow ? ` for workflow “${workflow}”` : '';
  const wider = range.buckets < 30 ? ' A longer range may find older ones.' : '';
  els.usageEmpty.textContent = `No runs in ${range.span}${which}: usage appears here once runs are created.${wider}`;
}

function renderUsage() {
  if (!state.usage) return;
  const { data, range, workflow } = state.usage;
  const totals = data.totals ?? {};
  const empty = !(totals.runs > 0);
  els.usagePeriod.hidden = empty;
  els.usageEmpty.hidden = !empty;
  els.usageData.hidden = empty;
  if (empty) return renderNoUsage(range, workflow);
  els.usagePeriod.textContent = `${formatTime(data.from)} to ${formatTime(data.to)}: ${range.label}.`;

  const cards = [
    ['Runs', formatCount(totals.runs)],
    ['Charged', formatUsd(totals.chargedUsd)],
    ['Refunded', formatUsd(totals.refundedUsd)],
    ['Verified', formatCount(totals.verified)],
    ['Acceptance rate', formatPercent(totals.acceptanceRate)],
    ['Mean confidence', formatPercent(totals.meanConfidence)],
  ];
  els.usageCards.replaceChildren(
    h(
      'dl',
      { class: 'card-list' },
      cards.map(([label, value]) =>
        h('div', { class: 'card' }, h('dt', { class: 'card-label' }, label), h('dd', { class: 'card-value' }, value)),
      ),
    ),
  );

  const workflows = Array.isArray(data.workflows) ? data.workflows : [];
  els.usageBody.replaceChildren(
    ...(workflows.length > 0
      ? workflows.map((row) => usageRow(row, row.workflow ?? '(no workflow)'))
      : [
          h('tr', {}, h('td', { colspan: String(USAGE_COLUMNS.length + 1), class: 'empty' }, 'No runs in this range.')),
        ]),
  );
  els.usageFoot.replaceChildren(usageRow(totals, 'Total'));
  renderCharts();
  showScrollCue();
}

/** A table wider than its box says so (a line above it, shadows at the edges that hide columns). */
function showScrollCue() {
  const box = els.usageScroll;
  const scrolls = !els.usageView.hidden && !els.usageData.hidden && box.scrollWidth > box.clientWidth + 1;
  box.classList.toggle('scrolls', scrolls);
  els.usageScrollCue.hidden = !scrolls;
}

// ---------- charts (inline SVG built with DOM calls) ----------

const CHARTS = [
  // emptyMax: the top of the y axis while every bucket is 0 (a cent-scale axis for money, not $1).
  { key: 'runs', title: 'Runs', kind: 'bar', format: formatCount, emptyMax: 2 },
  { key: 'chargedUsd', title: 'Spend (charged)', kind: 'bar', format: formatUsd, emptyMax: 0.001 },
  { key: 'refundedUsd', title: 'Refunds', kind: 'bar', format: formatUsd, emptyMax: 0.001 },
  { key: 'acceptanceRate', title: 'Acceptance rate', kind: 'line', max: 1, format: formatPercent },
  { key: 'meanConfidence', title: 'Mean confidence', kind: 'line', max: 1, format: formatPercent },
];

/** The smallest 1, 2 or 5 × 10^n at or above `value` (a readable top for the y axis). */
function niceMax(value) {
  if (!(value > 0)) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * magnitude >= value) return step * magnitude;
  return 10 * magnitude;
}

function bucketLabel(iso, interval) {
  const date = new Date(iso);
  return interval === 'hour' ? hourLabel.format(date) : utcDay.format(date);
}

function renderCharts() {
  if (!state.usage) return;
  const { data } = state.usage;
  const series = Array.isArray(data.series) ? data.series : [];
  if (series.length === 0) {
    els.charts.replaceChildren(h('p', { class: 'muted' }, 'No time series in this answer.'));
    return;
  }
  // Draw at the real pixel width so text stays legible on a phone (the SVG is not scaled down).
  const width = Math.max(260, Math.floor(els.charts.clientWidth || 640));
  const chartWidth = width >= 900 ? Math.floor((width - 16) / 2) : width;
  els.charts.replaceChildren(...CHARTS.map((metric, i) => chartFigure(metric, series, data.interval, chartWidth, i)));
}

function chartFigure(metric, series, interval, width, index) {
  const height = 180;
  const margin = { top: 12, right: 12, bottom: 26, left: 64 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const values = series.map((bucket) => {
    const value = bucket.totals?.[metric.key];
    return typeof value === 'number' && Number.isFinite(value) ? value : null;
  });
  const present = values.filter((v) => v !== null);
  const highest = Math.max(0, ...present);
  const max = metric.max ?? (highest > 0 ? niceMax(highest) : metric.emptyMax);
  const band = plotW / series.length;
  const x = (i) => margin.left + i * band + band / 2;
  const y = (v) => margin.top + plotH - (v / max) * plotH;
  const label = (i) => bucketLabel(series[i].start, interval);

  const titleId = `chart-${index}-title`;
  const descId = `chart-${index}-desc`;
  const summary = chartSummary(metric, values, series, interval);
  const svg = s('svg', {
    class: `chart chart-${metric.kind}`,
    viewBox: `0 0 ${width} ${height}`,
    width: '100%',
    height,
    role: 'img',
    'aria-labelledby': titleId,
    'aria-describedby': descId,
    preserveAspectRatio: 'xMinYMin meet',
  });
  svg.append(s('title', { id: titleId }, metric.title), s('desc', { id: descId }, summary));

  // Horizontal grid lines with y labels at 0, half and the top.
  for (const fraction of [0, 0.5, 1]) {
    const value = max * fraction;
    svg.append(
      s('line', { class: 'grid', x1: margin.left, x2: width - margin.right, y1: y(value), y2: y(value) }),
      s(
        'text',
        { class: 'axis-label', x: margin.left - 6, y: y(value) + 4, 'text-anchor': 'end' },
        metric.format(value),
      ),
    );
  }

  // X labels: one per 90 px at most (a time label is ~55 px wide), evenly spaced, always the first and the last bucket.
  const every = Math.max(1, Math.ceil(series.length / Math.max(2, Math.floor(plotW / 90))));
  series.forEach((_bucket, i) => {
    if (i % every !== 0 && i !== series.length - 1) return;
    // Keep the last label clear: it is end-anchored, so it reaches a whole step leftwards.
    if (i !== series.length - 1 && series.length - 1 - i < every) return;
    // The first and last labels are anchored inwards so they never stick out of the chart.
    const anchor = i === 0 ? 'start' : i === series.length - 1 ? 'end' : 'middle';
    const at = anchor === 'start' ? x(i) - band / 2 : anchor === 'end' ? x(i) + band / 2 : x(i);
    svg.append(s('text', { class: 'axis-label', x: at, y: height - 8, 'text-anchor': anchor }, label(i)));
  });

  if (metric.kind === 'bar') {
    values.forEach((value, i) => {
      const v = value ?? 0;
      const top = y(v);
      const bar = s('rect', {
        class: 'bar',
        x: x(i) - (band * 0.7) / 2,
        y: top,
        width: Math.max(1, band * 0.7),
        height: Math.max(v > 0 ? 1 : 0, margin.top + plotH - top),
      });
      bar.append(s('title', {}, `${label(i)}: ${metric.format(v)}`));
      svg.append(bar);
    });
  } else {
    // A line through the buckets that have a value; a bucket without one (no reviews, no runs) breaks the line.
    let d = '';
    let drawing = false;
    values.forEach((value, i) => {
      if (value === null) {
        drawing = false;
        return;
      }
      d += `${drawing ? 'L' : 'M'}${x(i).toFixed(1)},${y(value).toFixed(1)}`;
      drawing = true;
    });
    if (d) svg.append(s('path', { class: 'line', d, fill: 'none' }));
    values.forEach((value, i) => {
      if (value === null) return;
      const dot = s('circle', { class: 'dot', cx: x(i), cy: y(value), r: 3.5 });
      dot.append(s('title', {}, `${label(i)}: ${metric.format(value)}`));
      svg.append(dot);
    });
  }

  return h('figure', { class: 'chart-figure' }, h('figcaption', {}, h('strong', {}, metric.title), ' ', summary), svg);
}

/** A sentence a screen reader can use instead of the picture: total or average, and the peak. */
function chartSummary(metric, values, series, interval) {
  const present = values.map((v, i) => [v, i]).filter(([v]) => v !== null);
  if (present.length === 0) return '(no data in this range)';
  const [peak, at] = present.reduce((best, item) => (item[0] > best[0] ? item : best));
  const when = bucketLabel(series[at].start, interval);
  if (metric.kind === 'bar') {
    const total = present.reduce((sum, [v]) => sum + v, 0);
    if (total === 0) return '(none in this range)';
    return `(total ${metric.format(total)}; highest ${metric.format(peak)} at ${when})`;
  }
  const mean = present.reduce((sum, [v]) => sum + v, 0) / present.length;
  const unit = `${interval}${present.length === 1 ? '' : 's'}`;
  return `(average ${metric.format(mean)} over ${present.length} ${unit}; highest ${metric.format(peak)} at ${when})`;
}

// Charts are drawn at the container's pixel width; redraw after the window size settles.
let resizeTimer = 0;
window.addEventListener('resize', () => {
  window.clearTimeout(resizeTimer);
  resizeTimer = window.setTimeout(() => {
    if (els.usageView.hidden) return;
    renderCharts();
    showScrollCue();
  }, 150);
});

// ---------- start ----------

if (getKey()) {
  showView('runs');
  void loadKeyInfo().then((known) => known && loadRuns());
} else {
  showKeyForm();
}

// What the Quality view (quality.js, a module of its own) uses: the same API client, helpers and messages.
export {
  $,
  ApiError,
  api,
  clearAlert,
  formatCount,
  formatMs,
  formatPercent,
  formatTime,
  formatUsd,
  h,
  reportError,
  runPath,
  s,
  setStatus,
  shortId,
  showView,
};
