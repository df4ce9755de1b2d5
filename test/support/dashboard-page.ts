/**
 * The review dashboard in Debian's Chromium (driven by playwright-core), for the integration suites that use it:
 * launching, connecting with a key, and reading what the operator sees (status and alert regions, rows, the detail).
 * Screenshots land in artifacts/dashboard/.
 */
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { type Browser, chromium, type Frame, type Locator, type Page } from 'playwright-core';

export const SHOTS = new URL('../../artifacts/dashboard/', import.meta.url).pathname;

export interface DashboardBrowser {
  browser: Browser;
  page: Page;
  /** Every request the page (and its frames) made, in order. */
  requests: string[];
  /** Console messages about the Content-Security-Policy, and uncaught page errors. */
  problems: string[];
}

/** Debian's chromium (README prerequisites; .ci/run installs it). Missing, this fails loudly rather than skipping. */
export async function openDashboard(width = 1280, height = 800): Promise<DashboardBrowser> {
  await mkdir(SHOTS, { recursive: true });
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium' });
  const context = await browser.newContext({ viewport: { width, height } });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const requests: string[] = [];
  const problems: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  page.on('console', (message) => {
    if (/Content.Security.Policy/i.test(message.text())) problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(error.message));
  return { browser, page, requests, problems };
}

export async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });
}

/** A node's text as the DOM holds it (textContent), trimmed. */
export async function text(locator: Locator): Promise<string> {
  return ((await locator.textContent()) ?? '').trim();
}

/** Waits until the polite status region says `pattern` (each load first says "Loading…", so this is the new answer). */
export async function statusSays(page: Page, pattern: RegExp): Promise<void> {
  await page.getByRole('status').filter({ hasText: pattern }).waitFor();
}

export async function connect(page: Page, key: string): Promise<void> {
  await page.getByLabel('API key', { exact: true }).fill(key);
  await page.getByRole('button', { name: 'Connect' }).click();
}

/** Shows only `workflow`'s runs (the Runs view must be open). */
export async function filterRuns(page: Page, workflow: string): Promise<void> {
  const runs = page.getByRole('region', { name: 'Runs', exact: true });
  await runs.getByLabel('Workflow', { exact: true }).fill(workflow);
  // Every run of the workflow: the dashboard opens on the review queue when it holds a run.
  await runs.getByLabel('Review', { exact: true }).selectOption('');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await statusSays(page, /runs? on page 1|No runs/);
}

/** Run ids are shown shortened to their first 12 characters. */
export const runRow = (page: Page, jobId: string) => page.locator('#runs-body tr', { hasText: jobId.slice(0, 12) });
export const detail = (page: Page, jobId: string) => page.getByRole('region', { name: `Run ${jobId}` });

/** Polls `probe` until it gives a value (not undefined/false), or fails naming `what` after `timeoutMs`. */
export async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Chromium's PDF viewer (a built-in extension) inside `frame`, once it is there. */
export function pdfViewerIn(frame: Frame): Frame | undefined {
  return frame.childFrames().find((child) => child.url().startsWith('chrome-extension://'));
}

/**
 * The number of pages Chromium's PDF viewer shows in its toolbar (`/ 2`) once it has loaded the document, or undefined
 * before: what a reader sees, whatever the browser version titles the tab.
 */
export async function pageCountIn(viewer: Frame): Promise<string | undefined> {
  const count = viewer.locator('viewer-page-selector #pagelength');
  if ((await count.count()) === 0) return undefined;
  const value = (await count.textContent())?.trim();
  return value ? value : undefined;
}

/**
 * True when all of the element is on screen as the page stands: inside the viewport and inside every box that
 * clips it (a scrolling table, the detail panel's own scroll), so the operator sees it without scrolling anything.
 */
export async function visibleWithoutScrolling(locator: Locator): Promise<boolean> {
  return locator.evaluate((element) => {
    const box = element.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) return false;
    const inside = (outer: { top: number; bottom: number; left: number; right: number }) =>
      box.top >= outer.top - 0.5 &&
      box.bottom <= outer.bottom + 0.5 &&
      box.left >= outer.left - 0.5 &&
      box.right <= outer.right + 0.5;
    if (!inside({ top: 0, left: 0, bottom: window.innerHeight, right: window.innerWidth })) return false;
    for (let parent = element.parentElement; parent; parent = parent.parentElement) {
      const style = getComputedStyle(parent);
      if (style.overflowX !== 'visible' || style.overflowY !== 'visible') {
        if (!inside(parent.getBoundingClientRect())) return false;
      }
    }
    return true;
  });
}

/** axe-core's WCAG 2.1 A/AA violations on the page as it stands, one line each (axe injected once per page). */
export async function accessibilityViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) {
    await page.evaluate(readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8'));
  }
  return page.evaluate(async () => {
    type Results = { violations: { id: string; nodes: { target: string[] }[] }[] };
    const axe = (window as unknown as { axe: { run: (c: Document, o: unknown) => Promise<Results> } }).axe;
    const results = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21aa'] } });
    return results.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
}
