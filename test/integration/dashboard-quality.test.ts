/**
 * The dashboard's Quality view in Chromium (contract-v1.2 §1): accuracy from reviews per field, over time and as a
 * reliability diagram; evaluations with providers side by side and their items (expected against what came back, the
 * field's box on the page) — at desktop and phone width, with no WCAG 2.1 A/AA violation (axe-core) and nothing the
 * page's CSP refused.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { connect, type DashboardBrowser, openDashboard, shot, statusSays, text } from '../support/dashboard-page.js';
import { call, fixture, KEYS, putEvaluationRecords, stack, upload, waitForFinal } from './client.js';

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeResults {
  violations: { id: string; nodes: { target: string[] }[] }[];
}

async function accessibilityViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource);
  return page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (c: Document, o: unknown) => Promise<AxeResults> } }).axe;
    const results = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21aa'] } });
    return results.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
}

let evaluationName: string;
/** More evaluations than one page of the list holds, older than any other: the oldest is on the last page. */
const OLD_EVALUATIONS = 25;
const oldName = (i: number) => `older evaluation ${String(i).padStart(2, '0')}`;

beforeAll(async () => {
  // Reviews to count: one accepted, one with a corrected total.
  const workflow = `dash-quality-${Date.now()}`;
  for (const corrections of [undefined, { total: 1 }]) {
    const uploadId = await upload('receipt.png', await fixture('receipt.png'));
    const created = await call('POST', '/v1/runs', {
      body: { uploadId, prompt: 'Extract the receipt', schemaId: 'receipt', workflow },
    });
    await waitForFinal(String(created.body.jobId));
    await call('POST', `/v1/runs/${created.body.jobId}/verify`, {
      body: corrections ? { accepted: false, corrections } : { accepted: true },
    });
  }
  // Finished evaluations from long ago, written as stored (the list pages through them; none is opened).
  await putEvaluationRecords(
    Array.from({ length: OLD_EVALUATIONS }, (_, i) => ({
      evaluationId: `eval_${String(i).padStart(32, 'e')}`,
      tenantId: 'tenant-a',
      name: oldName(i),
      status: 'completed',
      schemaId: 'receipt',
      task: {
        prompt: 'p',
        outputFormat: 'json',
        fields: null,
        schemaId: 'receipt',
        schemaLabel: null,
        promptScaffold: null,
      },
      providers: null,
      workflow: null,
      metadata: {},
      documents: 1,
      itemsTotal: 1,
      itemsDone: 1,
      estimateMicros: 1000,
      maxCostMicros: null,
      chargedMicros: 0,
      refundedMicros: 1000,
      holdFromCredit: false,
      marginPct: 0,
      createdAt: `2025-01-01T00:${String(i).padStart(2, '0')}:00.000Z`,
      completedAt: `2025-01-01T01:${String(i).padStart(2, '0')}:00.000Z`,
      expiresAtEpoch: Math.floor(Date.now() / 1000) + 86_400,
    })),
  );
  // An evaluation: a receipt whose total is expected wrong, and a damaged file whose run fails.
  evaluationName = `dashboard evaluation ${Date.now()}`;
  const [png, damaged] = await Promise.all([
    upload('receipt.png', await fixture('receipt.png')),
    upload('damaged.png', await fixture('damaged.png')),
  ]);
  const created = await call('POST', '/v1/evaluations', {
    body: {
      name: evaluationName,
      schemaId: 'receipt',
      providers: ['local'],
      confirmCost: true,
      items: [
        { uploadId: png, expected: { merchant: 'ACME HARDWARE', total: 99 } },
        { uploadId: damaged, expected: { merchant: 'Somewhere' } },
      ],
    },
  });
  const deadline = Date.now() + 120_000;
  while ((await call('GET', `/v1/evaluations/${created.body.evaluationId}?itemsLimit=0`)).body.status === 'queued') {
    if (Date.now() > deadline) throw new Error('evaluation not done');
    await new Promise((r) => setTimeout(r, 500));
  }
});

describe.each([
  ['desktop', 1280, 800],
  ['phone', 390, 844],
] as const)('at %s width', (name, width, height) => {
  let dashboard: DashboardBrowser;
  let page: Page;

  beforeAll(async () => {
    dashboard = await openDashboard(width, height);
    page = dashboard.page;
    await page.goto(`${stack().baseUrl}/`);
    await connect(page, KEYS.a);
    await statusSays(page, /Connected\./);
    await page.getByRole('button', { name: 'Quality', exact: true }).click();
    await statusSays(page, /Quality: \d+ reviewed runs in the last 30 days/);
  });

  afterAll(async () => {
    await dashboard?.browser.close();
  });

  test('accuracy from reviews: per field, per provider, over time and a reliability diagram', async () => {
    const perField = page.getByRole('table', { name: 'Per field' }).first();
    await perField.waitFor();
    expect(await text(perField.getByRole('row', { name: /^total/ }))).toMatch(/total\s*\d+\s*[1-9]\d*/);
    await page
      .getByRole('table', { name: 'Per provider' })
      .getByRole('row', { name: /^local/ })
      .waitFor();
    const overTime = page.getByRole('img', { name: /^Accuracy per field by day/ });
    expect(await overTime.getAttribute('aria-label')).toMatch(/total \d+(\.\d+)? ?%/);
    await page.getByRole('img', { name: /^Reliability diagram \(reviews\)/ }).waitFor();
    await shot(page, `quality-${name}`);
  });

  test('an evaluation: providers side by side and its items, expected against what came back with the box on the page', async () => {
    await page.getByRole('button', { name: evaluationName }).click();
    await statusSays(page, /Evaluation .* opened/);
    const providers = page.getByRole('table', { name: 'Providers side by side' });
    expect(await text(providers.getByRole('row', { name: /^local/ }))).toMatch(/local\s*2\s*1/);
    const items = page.getByRole('table', { name: 'Items (one run each)' });
    expect(await items.getByRole('row').count()).toBe(3);
    await items.getByRole('button', { name: /^Item 1, run / }).click();
    const fields = page.getByRole('table', { name: 'Expected against what came back' });
    const total = fields.getByRole('row', { name: /^total/ });
    expect(await text(total)).toMatch(/^total\s*99\s*42\.5\s*wrong/);
    // The first wrong field is shown on the page: the receipt's image with the total's box drawn over it.
    await page.getByRole('img', { name: 'Page 1 of receipt.png' }).waitFor();
    await page.getByText('The box of total on page 1.').waitFor();
    expect(await page.locator('.quality-preview .field-box rect').count()).toBe(1);
    await shot(page, `quality-item-${name}`);
    expect(await accessibilityViolations(page)).toEqual([]);
    expect(dashboard.problems).toEqual([]);
  });

  test('the failed item is listed as failed, its fields missing', async () => {
    const items = page.getByRole('table', { name: 'Items (one run each)' });
    const failed = items.getByRole('row', { name: /^Item 2,/ });
    expect(await text(failed)).toContain('failed');
    expect(await text(failed)).toContain('missing');
  });

  test('the list pages through every evaluation with the API cursor, forward and back', async () => {
    const list = page.getByRole('table', { name: 'Evaluations, newest first' });
    // A full first page (20 and the header row), the newest first.
    expect(await list.getByRole('row').count()).toBe(21);
    await list.getByRole('button', { name: evaluationName }).waitFor();
    expect(await page.getByRole('button', { name: 'Previous evaluations' }).count()).toBe(0);
    let pages = 1;
    while ((await page.getByRole('button', { name: 'Next evaluations' }).count()) > 0) {
      await page.getByRole('button', { name: 'Next evaluations' }).click();
      pages += 1;
      await statusSays(page, new RegExp(`Page ${pages} of the evaluations shown`));
    }
    expect(pages).toBeGreaterThanOrEqual(2);
    // The last page ends with the oldest evaluation of all.
    const rows = list.getByRole('row');
    expect(await text(rows.last())).toContain(oldName(0));
    expect(await text(page.getByRole('navigation', { name: 'Pages of evaluations' }))).toMatch(/Evaluations \d+–\d+/);
    await shot(page, `quality-evaluations-last-page-${name}`);
    expect(await accessibilityViolations(page)).toEqual([]);
    while ((await page.getByRole('button', { name: 'Previous evaluations' }).count()) > 0) {
      await page.getByRole('button', { name: 'Previous evaluations' }).click();
      pages -= 1;
      await statusSays(page, new RegExp(`Page ${pages} of the evaluations shown`));
    }
    expect(pages).toBe(1);
    await list.getByRole('button', { name: evaluationName }).waitFor();
    expect(dashboard.problems).toEqual([]);
  });
});
