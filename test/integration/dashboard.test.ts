/**
 * The review dashboard in a real browser (Debian's chromium driven by playwright-core) against the local stack, served
 * by the stack itself at `/` with its Content-Security-Policy. The test seeds its own runs through the API, then does
 * what an operator does: paste a key, list, filter, open a run, review it, read usage; and checks what an operator
 * (or an attacker) would notice: where the key goes, CSP violations, phone width, keyboard use.
 * Screenshots land in artifacts/dashboard/. Long on purpose: one operator's session, each test going on from the last.
 */

import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { visibleWithoutScrolling } from '../support/dashboard-page.js';
import { createScopedKey, expireRunFile } from '../support/local-stack.js';
import { freshTenant, useStackTables } from '../support/review-seed.js';
import { call, fixture, stack, upload, waitForFinal } from './client.js';

const SHOTS = new URL('../../artifacts/dashboard/', import.meta.url).pathname;
const SUFFIX = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
/** Workflows of their own, so the usage table's rows are this test's alone. */
const WF_RECEIPTS = `dash-receipts-${SUFFIX}`;
const WF_CARDS = `dash-cards-${SUFFIX}`;
const WRONG_KEY = 'vk_test_not_a_real_key_0123456789abcdef';

interface SeededRun {
  jobId: string;
  chargedUsd: number;
  confidence: number;
  result: Record<string, unknown>;
}

/** How the dashboard shows dollars (exactly, to the micro-dollar): what the operator must read. */
function usd(value: number): string {
  return new Intl.NumberFormat('en-US', {
    style: 'currency',
    currency: 'USD',
    minimumFractionDigits: 2,
    maximumFractionDigits: 6,
  }).format(value);
}

const short = (jobId: string) => jobId.slice(0, 12);

// axe-core's browser build, injected into the page for the accessibility check.
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

async function seedRun(file: string, body: Record<string, unknown>): Promise<string> {
  const uploadId = await upload(file, await fixture(file), { key: tenant.key });
  const created = await call('POST', '/v1/runs', { key: tenant.key, body: { uploadId, ...body } });
  if (created.status !== 202) throw new Error(`create failed: ${JSON.stringify(created.body)}`);
  return String(created.body.jobId);
}

let browser: Browser;
let context: BrowserContext;
let page: Page;
let baseUrl: string;
/**
 * A tenant of the test's own: other files on the same stack create runs for the shared tenants, and the list is
 * asserted newest first.
 */
let tenant: { tenantId: string; key: string };
let restoreTables: () => void;
let readOnlyKey: string;
/** Created in this order, so the list (newest first) shows cards, corrected, accepted. */
let accepted: SeededRun;
let corrected: SeededRun;
let card: SeededRun;
const requests: { url: string; headers: Record<string, string> }[] = [];
const cspViolations: string[] = [];
const pageErrors: string[] = [];

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });
}

/** A node's text as the DOM holds it (textContent), trimmed. */
async function text(locator: Locator): Promise<string> {
  return ((await locator.textContent()) ?? '').trim();
}

/** Waits until the polite status region says `text` (each load first says "Loading…", so this is the new answer). */
async function statusSays(pattern: RegExp): Promise<void> {
  await page.getByRole('status').filter({ hasText: pattern }).waitFor();
}

async function alertSays(pattern: RegExp): Promise<string> {
  const alert = page.getByRole('alert').filter({ hasText: pattern });
  await alert.waitFor();
  return text(alert);
}

const runsView = () => page.getByRole('region', { name: 'Runs', exact: true });
const usageView = () => page.getByRole('region', { name: 'Usage', exact: true });
const runRow = (jobId: string) => page.locator('#runs-body tr', { hasText: short(jobId) });
const detail = (jobId: string) => page.getByRole('region', { name: `Run ${jobId}` });

/** The value shown next to `label` in a definition list of the detail panel. */
async function fact(region: Locator, label: string): Promise<string> {
  const value = region
    .locator('.fact', { has: page.locator('dt', { hasText: new RegExp(`^${label}$`) }) })
    .locator('dd');
  return text(value);
}

/** The cells of a usage table row by column header. */
async function usageRow(name: string): Promise<Record<string, string>> {
  const headers = await page.locator('#usage-table thead th').allInnerTexts();
  const row = page.locator('#usage-table tr', { has: page.getByRole('rowheader', { name, exact: true }) });
  const cells = await row.locator('th, td').allInnerTexts();
  return Object.fromEntries(headers.map((h, i) => [h.trim().toLowerCase(), (cells[i] ?? '').trim()]));
}

async function usageCard(label: string): Promise<string> {
  const value = page
    .locator('#usage-cards .card', { has: page.locator('dt', { hasText: new RegExp(`^${label}$`) }) })
    .locator('dd');
  return text(value);
}

/** True when the page can be scrolled sideways (something is wider than the viewport). */
async function overflowsHorizontally(): Promise<boolean> {
  return page.evaluate(
    () =>
      document.documentElement.scrollWidth > document.documentElement.clientWidth ||
      document.body.scrollWidth > document.documentElement.clientWidth,
  );
}

async function connect(key: string): Promise<void> {
  await page.getByLabel('API key', { exact: true }).fill(key);
  await page.getByRole('button', { name: 'Connect' }).click();
}

beforeAll(async () => {
  baseUrl = stack().baseUrl;
  restoreTables = useStackTables(stack());
  tenant = await freshTenant('dash');
  await mkdir(SHOTS, { recursive: true });
  const [acceptedId, correctedId, cardId] = [
    await seedRun('receipt.png', { prompt: 'Extract the receipt', schemaId: 'receipt', workflow: WF_RECEIPTS }),
    await seedRun('receipt.png', { prompt: 'Extract the receipt', schemaId: 'receipt', workflow: WF_RECEIPTS }),
    await seedRun('business-card.png', { prompt: 'What is this?', outputFormat: 'text', workflow: WF_CARDS }),
  ];
  const finals = await Promise.all(
    [acceptedId, correctedId, cardId].map((id) => waitForFinal(String(id), { key: tenant.key })),
  );
  for (const final of finals) if (final.body.status !== 'completed') throw new Error(JSON.stringify(final.body));
  [accepted, corrected, card] = finals.map((final) => final.body as unknown as SeededRun) as [
    SeededRun,
    SeededRun,
    SeededRun,
  ];
  readOnlyKey = await createScopedKey(stack(), tenant.tenantId, ['runs:read']);

  // Debian's chromium (README prerequisites; .ci/run installs it). Missing, this fails loudly rather than skipping.
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium' });
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  page.setDefaultTimeout(15_000);
  page.on('request', (request) => requests.push({ url: request.url(), headers: request.headers() }));
  page.on('console', (message) => {
    if (/Content.Security.Policy/i.test(message.text())) cspViolations.push(message.text());
  });
  page.on('pageerror', (error) => pageErrors.push(error.message));
});

afterAll(async () => {
  await browser?.close();
  restoreTables?.();
});

test('a refused key brings the form back with the reason; a valid key lists the runs newest first', async () => {
  await page.goto(`${baseUrl}/`);
  await page.getByLabel('API key', { exact: true }).waitFor();
  await shot('01-key-form');

  await connect(WRONG_KEY);
  await page.getByText(/The API key was refused \(UNAUTHORIZED/).waitFor();
  expect(await page.getByLabel('API key', { exact: true }).isVisible()).toBe(true);
  // What was typed stays, to be corrected rather than pasted again; but nothing is stored.
  expect(await page.getByLabel('API key', { exact: true }).inputValue()).toBe(WRONG_KEY);
  expect(await page.evaluate(() => sessionStorage.length)).toBe(0);

  await connect(tenant.key);
  await statusSays(/Connected\. \d+ runs? on page 1/);
  const rows = await page.locator('#runs-body tr').allInnerTexts();
  // Newest first: the seeded runs are the tenant's only runs.
  expect(rows.slice(0, 3).map((text) => text.slice(0, 12))).toEqual(
    [card, corrected, accepted].map((r) => short(r.jobId)),
  );
  const acceptedRow = await text(runRow(accepted.jobId));
  expect(acceptedRow).toContain(WF_RECEIPTS);
  expect(acceptedRow).toContain('completed');
  expect(acceptedRow).toContain('receipt.png');
  expect(acceptedRow).toContain(usd(accepted.chargedUsd));
  expect(acceptedRow).toContain('Not reviewed');
  expect(await text(runRow(card.jobId))).toContain('business-card.png');
  // The key is in this tab's sessionStorage and nowhere else.
  expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([tenant.key]);
  expect(await page.evaluate(() => localStorage.length)).toBe(0);
  expect(await context.cookies()).toEqual([]);
  expect(page.url()).toBe(`${baseUrl}/`);
  // The page names the key it acts as by its label (the dev keys are labelled "dev"), never by the key.
  expect(await text(page.locator('#key-name'))).toBe('Key dash reviewer');
  await shot('02-runs');
});

test('usage before any review: the seeded workflow has runs but nothing verified', async () => {
  await page.getByRole('button', { name: 'Usage', exact: true }).click();
  await statusSays(/Usage for the last 7 days/);
  expect(await usageRow(WF_RECEIPTS)).toMatchObject({
    runs: '2',
    completed: '2',
    verified: '0',
    accepted: '0',
    'acceptance rate': '—',
  });
  expect(await usageRow(WF_CARDS)).toMatchObject({ runs: '1', verified: '0' });
  // Five charts, each an SVG image with one bar or point slot per day of the range.
  expect(await page.getByRole('img').count()).toBe(5);
  expect(await page.locator('svg.chart-bar').first().locator('rect.bar').count()).toBe(7);
});

test('filtering by workflow lists only that workflow’s runs', async () => {
  await page.getByRole('button', { name: 'Runs', exact: true }).click();
  await statusSays(/runs? on page 1/);
  await runsView().getByLabel('Workflow', { exact: true }).fill(WF_RECEIPTS);
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await statusSays(/^2 runs on page 1\.$/);
  const rows = await page.locator('#runs-body tr').allInnerTexts();
  expect(rows).toHaveLength(2);
  for (const row of rows) expect(row).toContain(WF_RECEIPTS);
  expect(rows.map((text) => text.slice(0, 12))).toEqual([short(corrected.jobId), short(accepted.jobId)]);
  expect(await page.getByRole('button', { name: 'Next' }).isDisabled()).toBe(true);
  await shot('03-filtered');
});

test('keyboard only: Tab reaches a run row, Enter opens it, Escape closes it and returns to the row', async () => {
  await page.getByLabel('Status', { exact: true }).focus();
  const focusedJob = () => page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.jobId ?? null);
  for (let i = 0; i < 4 && (await focusedJob()) === null; i += 1) await page.keyboard.press('Tab');
  expect(await focusedJob()).toBe(corrected.jobId);

  await page.keyboard.press('Enter');
  await detail(corrected.jobId).waitFor();
  await page.keyboard.press('Escape');
  await detail(corrected.jobId).waitFor({ state: 'hidden' });
  expect(await focusedJob()).toBe(corrected.jobId);
});

test('a run’s detail shows the image preview, the result, the attempts and the money', async () => {
  await runRow(accepted.jobId).click();
  const panel = detail(accepted.jobId);
  await panel.waitFor();
  const image = panel.getByRole('img', { name: 'Preview of receipt.png' });
  await image.waitFor();
  // The image really loaded from the short-lived storage address.
  await image.evaluate((img: HTMLImageElement) =>
    img.complete ? undefined : new Promise((resolve) => img.addEventListener('load', resolve, { once: true })),
  );
  expect(await image.evaluate((img: HTMLImageElement) => img.naturalWidth)).toBeGreaterThan(0);
  const open = await panel.getByRole('link', { name: 'Open file' }).getAttribute('href');
  expect(open).toMatch(/^https?:\/\//);

  const result = await text(panel.getByRole('region', { name: 'Result' }));
  expect(result).toContain('"total": 42.5');
  expect(result).toContain(`"merchant": ${JSON.stringify(accepted.result.merchant)}`);
  const attempts = await text(panel.getByRole('region', { name: 'Attempts' }));
  expect(attempts).toMatch(/local/);
  expect(attempts).toMatch(/succeeded/);
  expect(await fact(panel, 'Charged')).toBe(usd(accepted.chargedUsd));
  expect(await fact(panel, 'Confidence')).toBe(`${Math.round(accepted.confidence * 1000) / 10}%`);
  expect(await fact(panel, 'Strategy')).toBe('ocr_then_analyze');
  // Beside the open run, the list keeps its key columns on screen, and the review actions need no scrolling.
  const row = runRow(accepted.jobId);
  for (const label of ['Status', 'Charged', 'Confidence', 'Review']) {
    expect([label, await visibleWithoutScrolling(row.locator(`td[data-label="${label}"]`))]).toEqual([label, true]);
  }
  expect(await visibleWithoutScrolling(panel.getByRole('button', { name: 'Accept', exact: true }))).toBe(true);
  expect(await visibleWithoutScrolling(panel.getByRole('button', { name: 'Correct…', exact: true }))).toBe(true);
  await shot('04-run-detail');
});

test('Accept records an accepted review; Correct records the changed fields and the note', async () => {
  const acceptedPanel = detail(accepted.jobId);
  await acceptedPanel.getByRole('button', { name: 'Accept', exact: true }).click();
  await acceptedPanel.getByText(/Accepted by/).waitFor();
  expect(await text(runRow(accepted.jobId))).toContain('Accepted');
  // The reviewer is named by the key's label, with the key id as tooltip.
  const by = acceptedPanel.getByRole('region', { name: 'Review' }).locator('.verification-state strong');
  expect(await text(by)).toBe('dash reviewer');
  expect(await by.getAttribute('title')).toMatch(/^key_/);
  // Accepted, the primary action is now the next run to review (Accept is gone); focus moved to it.
  const actions = acceptedPanel.getByRole('group', { name: 'Review actions' });
  expect(await text(actions)).toBe('AcceptedReview next runCorrect…');
  expect(await actions.getByRole('button', { name: 'Accept', exact: true }).count()).toBe(0);
  const next = actions.getByRole('button', { name: 'Review next run' });
  expect(await next.getAttribute('class')).toContain('primary');
  expect(await next.evaluate((button) => button === document.activeElement)).toBe(true);
  await shot('05-accepted');

  // The next unreviewed run of the page (wrapping round to the top) is the other receipt.
  await next.click();
  const panel = detail(corrected.jobId);
  await panel.getByRole('button', { name: 'Correct…', exact: true }).click();
  await panel.getByLabel('merchant', { exact: true }).fill('ACME Hardware Store');
  // Controls follow the schema's types: numbers in number boxes, the date in a date picker.
  const inputType = (label: string) => panel.getByLabel(label, { exact: true }).getAttribute('type');
  expect(await Promise.all(['total', 'tax', 'date', 'merchant'].map(inputType))).toEqual([
    'number',
    'number',
    'date',
    'text',
  ]);
  await panel.getByLabel('total', { exact: true }).fill('43');
  await panel.getByLabel('tax', { exact: true }).fill('0.01');
  await panel.getByLabel('Note (optional)').fill('merchant name cut short');
  await panel.getByRole('button', { name: 'Save correction' }).click();
  await panel.getByText(/Corrected by/).waitFor();
  const review = await text(panel.getByRole('region', { name: 'Review' }));
  expect(review).toContain('ACME Hardware Store');
  expect(review).toContain('Note: merchant name cut short');
  expect(await text(runRow(corrected.jobId))).toContain('Corrected');
  await panel.getByRole('region', { name: 'Review' }).scrollIntoViewIfNeeded();
  await shot('06-corrected');

  // Only the changed fields were sent, with the numbers kept numbers.
  const stored = await call<{ verification: unknown }>('GET', `/v1/runs/${corrected.jobId}`, { key: tenant.key });
  expect(stored.body.verification).toMatchObject({
    accepted: false,
    corrections: { merchant: 'ACME Hardware Store', total: 43, tax: 0.01 },
    note: 'merchant name cut short',
  });

  // A reload keeps the session (sessionStorage) and shows the recorded reviews.
  await page.reload();
  await statusSays(/runs? on page 1/);
  expect(await text(runRow(corrected.jobId))).toContain('Corrected');
  expect(await text(runRow(accepted.jobId))).toContain('Accepted');
});

test('usage after the reviews: verified count and acceptance rate changed; hourly range has 24 buckets', async () => {
  await page.getByRole('button', { name: 'Usage', exact: true }).click();
  await statusSays(/Usage for the last 7 days/);
  expect(await usageRow(WF_RECEIPTS)).toMatchObject({
    runs: '2',
    verified: '2',
    accepted: '1',
    'acceptance rate': '50%',
  });

  await usageView().getByLabel('Workflow', { exact: true }).fill(WF_RECEIPTS);
  await page.getByLabel('Range', { exact: true }).selectOption('24h');
  await statusSays(/Usage for the last 24 hours/);
  expect(await usageCard('Runs')).toBe('2');
  expect(await usageCard('Verified')).toBe('2');
  expect(await usageCard('Acceptance rate')).toBe('50%');
  expect(await usageCard('Charged')).toBe(usd(accepted.chargedUsd + corrected.chargedUsd));
  expect(await page.locator('svg.chart-bar').first().locator('rect.bar').count()).toBe(24);
  // The acceptance-rate chart has a point for the hour of the reviews.
  const rate = page.getByRole('img', { name: 'Acceptance rate', exact: true });
  expect(await rate.locator('circle.dot').count()).toBe(1);
  // The scroll cue shows exactly when the table is wider than its box (here a long workflow name makes it so).
  const scrolls = await page.locator('#usage-scroll').evaluate((box) => box.scrollWidth > box.clientWidth);
  expect(await page.getByText(/scroll it sideways/).isVisible()).toBe(scrolls);
  await shot('07-usage');
});

test('errors read clearly: rate limited, expired upload, and a key without runs:verify', async () => {
  // A 429 from the gateway (simulated once here: the test stack's limit is deliberately high).
  const isUsage = (url: URL) => url.pathname.endsWith('/v1/usage');
  await page.route(isUsage, (route) =>
    route.fulfill({
      status: 429,
      headers: { 'content-type': 'application/json; charset=utf-8', 'retry-after': '7' },
      body: JSON.stringify({
        error: { code: 'RATE_LIMITED', message: 'Too many requests', status: 429, retryable: true },
      }),
    }),
  );
  await page.getByRole('button', { name: 'Show usage' }).click();
  expect(await alertSays(/RATE_LIMITED/)).toContain('Please retry in 7 s');
  await page.unroute(isUsage);

  // The card's upload is gone (retention): its detail says so, and still shows the text result.
  await expireRunFile(stack(), card.jobId);
  await page.getByRole('button', { name: 'Runs', exact: true }).click();
  await runsView().getByLabel('Workflow', { exact: true }).fill(WF_CARDS);
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await statusSays(/^1 run on page 1\.$/);
  await runRow(card.jobId).click();
  const cardPanel = detail(card.jobId);
  await cardPanel.getByText(/The uploaded file has expired/).waitFor();
  expect(await text(cardPanel.locator('pre.result-text'))).toMatch(/Jane/);
  await shot('08-expired-file');

  // Forget the key; a read-only key can list but not review.
  await page.getByRole('button', { name: 'Forget key' }).click();
  await page.getByLabel('API key', { exact: true }).waitFor();
  expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  expect(await page.locator('#runs-body tr').count()).toBe(0);
  await connect(readOnlyKey);
  await statusSays(/runs? on page 1/);
  expect(await text(page.locator('#key-name'))).toBe('Key test: limited scopes · read only');
  await runRow(card.jobId).click();
  // A key without runs:verify sees the review actions disabled, and why, before any click.
  const readOnly = detail(card.jobId).getByRole('group', { name: 'Review actions' });
  const accept = readOnly.getByRole('button', { name: 'Accept', exact: true });
  expect(await accept.isDisabled()).toBe(true);
  expect(await readOnly.getByRole('button', { name: 'Correct…', exact: true }).isDisabled()).toBe(true);
  const reason = await text(page.locator(`#${await accept.getAttribute('aria-describedby')}`));
  expect(reason).toContain('runs:verify');
  expect(await visibleWithoutScrolling(page.locator('#review-reason'))).toBe(true);
  await shot('09-read-only');

  await page.getByRole('button', { name: 'Forget key' }).click();
  await connect(tenant.key);
  await statusSays(/runs? on page 1/);
});

/** axe-core's WCAG 2 A/AA checks on the page as it is now; returns each violation as `rule: targets`. */
async function accessibilityViolations(): Promise<string[]> {
  // Evaluated through the DevTools protocol, which the page's CSP does not apply to (the page itself runs no eval).
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource);
  return page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (c: Document, o: unknown) => Promise<AxeResults> } }).axe;
    const results = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21aa'] } });
    return results.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
}
interface AxeResults {
  violations: { id: string; nodes: { target: string[] }[] }[];
}

test('no WCAG 2.1 A/AA violations (axe-core) on the runs list with a run open, and on the usage view', async () => {
  await page.getByRole('button', { name: 'Runs', exact: true }).click();
  await runsView().getByLabel('Workflow', { exact: true }).fill(WF_RECEIPTS);
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await runRow(accepted.jobId).click();
  await detail(accepted.jobId).getByRole('img', { name: 'Preview of receipt.png' }).waitFor();
  expect(await accessibilityViolations()).toEqual([]);
  await page.getByRole('button', { name: 'Usage', exact: true }).click();
  await page.getByRole('button', { name: 'Show usage' }).click();
  await statusSays(/Usage for .* loaded/);
  expect(await accessibilityViolations()).toEqual([]);
  await page.getByRole('button', { name: 'Runs', exact: true }).click();
});

test('phone width (390×844): runs as cards, an open run is a view of its own with a way back, usage scrolls visibly', async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  // The run left open above is now the whole view; "Back to runs" leads to the list.
  await page.getByRole('button', { name: 'Back to runs' }).click();
  await runsView().getByLabel('Workflow', { exact: true }).fill('');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await statusSays(/runs? on page 1/);
  expect(await overflowsHorizontally()).toBe(false);
  // A status badge keeps its own width inside the card.
  expect((await runRow(accepted.jobId).locator('.badge').first().boundingBox())?.width ?? 999).toBeLessThan(120);
  await shot('10-phone-runs');

  await runRow(accepted.jobId).click();
  const panel = detail(accepted.jobId);
  await panel.waitFor();
  // No list above the run: its heading and its review actions are in sight without scrolling.
  expect(await page.locator('#runs-table').isVisible()).toBe(false);
  expect(await visibleWithoutScrolling(panel.locator('#detail-heading'))).toBe(true);
  expect(await visibleWithoutScrolling(panel.getByRole('button', { name: 'Correct…', exact: true }))).toBe(true);
  const image = panel.getByRole('img', { name: 'Preview of receipt.png' });
  await image.waitFor();
  expect((await image.boundingBox())?.width ?? 999).toBeLessThanOrEqual(390);
  expect(await overflowsHorizontally()).toBe(false);
  await shot('11-phone-detail');
  expect(await accessibilityViolations()).toEqual([]);

  // Back: the list again, with the run's row focused.
  await panel.getByRole('button', { name: 'Back to runs' }).click();
  await panel.waitFor({ state: 'hidden' });
  expect(await page.locator('#runs-table').isVisible()).toBe(true);
  const focused = await page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.jobId);
  expect(focused).toBe(accepted.jobId);

  await page.getByRole('button', { name: 'Usage', exact: true }).click();
  await statusSays(/Usage for/);
  expect(await overflowsHorizontally()).toBe(false);
  // The per-workflow table scrolls sideways inside its box, and says so.
  expect(await page.locator('#usage-scroll').evaluate((box) => box.scrollWidth > box.clientWidth)).toBe(true);
  expect(await page.getByText(/scroll it sideways/).isVisible()).toBe(true);
  await shot('12-phone-usage');
  expect(await accessibilityViolations()).toEqual([]);
});

test('the key never left the tab: no URL carried it, every API call sent it as a header, storage saw none of it', async () => {
  const keys = [tenant.key, readOnlyKey, WRONG_KEY];
  for (const { url } of requests) for (const key of keys) expect(url).not.toContain(key);
  expect(page.url()).toBe(`${baseUrl}/`);
  const api = requests.filter((r) => new URL(r.url).pathname.startsWith('/v1/'));
  expect(api.length).toBeGreaterThan(10);
  for (const r of api) expect(keys).toContain(r.headers['x-api-key']);
  // File previews come from storage, which never gets the key.
  const storage = requests.filter((r) => !r.url.startsWith(baseUrl));
  expect(storage.length).toBeGreaterThan(0);
  for (const r of storage) expect(r.headers['x-api-key']).toBeUndefined();
  expect(await page.evaluate(() => localStorage.length)).toBe(0);
  expect(await context.cookies()).toEqual([]);
  expect(cspViolations).toEqual([]);
  expect(pageErrors).toEqual([]);
});
