/**
 * A run's detail in the dashboard, in Chromium against the local stack (issue 26 point 5): a failed run says why at
 * the top, before its preview; money is shown to the micro-dollar, so a cost and a price that differ never read the
 * same; a corrected review is not shown in the amber of a review still needed. A tenant of its own, its runs settled
 * through the store (test/support/review-seed.ts) with the costs and failures the cases need.
 */
import type { Locator, Page } from 'playwright-core';
import {
  connect,
  type DashboardBrowser,
  detail,
  openDashboard,
  runRow,
  shot,
  statusSays,
  text,
  visibleWithoutScrolling,
} from '../support/dashboard-page.js';
import { freshTenant, RECEIPT_PNG, seedSettledRun, useStackTables } from '../support/review-seed.js';
import { call, fixture, stack, upload } from './client.js';

const RESULT = { merchant: 'ACME HARDWARE', date: '2026-11-02', subtotal: 38.5, tax: 4, total: 42.5, currency: null };

let restore: () => void;
let dashboard: DashboardBrowser;
let page: Page;
let failedRun: string;
let cheapRun: string;
let correctedRun: string;
let toReviewRun: string;

beforeAll(async () => {
  restore = useStackTables(stack());
  const tenant = await freshTenant('dash-detail');
  const png = await upload('receipt.png', await fixture('receipt.png'), { key: tenant.key });
  const at = (seconds: number) => new Date(Date.now() - 60_000 + seconds * 1000);
  const common = {
    tenantId: tenant.tenantId,
    uploadId: png,
    fileName: 'receipt.png',
    file: RECEIPT_PNG,
    result: RESULT,
  };
  toReviewRun = await seedSettledRun({
    ...common,
    review: { needed: true, reasons: ['total: confidence 0.41 is below 0.8'] },
    createdAt: at(1),
  });
  correctedRun = await seedSettledRun({ ...common, review: { needed: false, reasons: [] }, createdAt: at(2) });
  const verified = await call('POST', `/v1/runs/${correctedRun}/verify`, {
    key: tenant.key,
    body: { accepted: false, corrections: { merchant: 'ACME Hardware' } },
  });
  expect(verified.status).toBe(200);
  // Cost and price 3 micro-dollars apart: both $0.00001 when rounded to 5 decimals.
  cheapRun = await seedSettledRun({
    ...common,
    usage: { requests: 1, billableUnits: 1, costMicros: 11, priceMicros: 14 },
    createdAt: at(3),
  });
  failedRun = await seedSettledRun({
    ...common,
    failure: {
      code: 'PROVIDER_ERROR',
      message: 'Every provider failed for this run',
      status: 502,
      retryable: true,
    },
    createdAt: at(4),
  });

  dashboard = await openDashboard();
  page = dashboard.page;
  await page.goto(`${stack().baseUrl}/`);
  await connect(page, tenant.key);
  await statusSays(page, /runs? on page 1/);
  // Every run, not only the review queue the dashboard opens on.
  await page.getByLabel('Review', { exact: true }).selectOption('');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await statusSays(page, /4 runs on page 1/);
});

afterAll(async () => {
  await dashboard?.browser.close();
  restore?.();
});

/** The value shown next to `label` in a definition list of `region`. */
async function fact(region: Locator, label: string): Promise<string> {
  return text(
    region
      .locator('.fact', { has: page.locator('dt', { hasText: new RegExp(`^${label}$`) }) })
      .locator('dd')
      .first(),
  );
}

test('a failed run shows its error at the top of its detail, on screen without scrolling, before the preview', async () => {
  await runRow(page, failedRun).click();
  const panel = detail(page, failedRun);
  const error = panel.getByRole('region', { name: 'Error', exact: true });
  await error.getByText('PROVIDER_ERROR: Every provider failed for this run').waitFor();
  expect(await visibleWithoutScrolling(error.locator('.error-box'))).toBe(true);
  const order = await panel
    .locator('section.detail-section')
    .evaluateAll((sections) => sections.map((section) => section.getAttribute('aria-labelledby')));
  expect(order.indexOf('result-heading')).toBeGreaterThanOrEqual(0);
  expect(order.indexOf('result-heading')).toBeLessThan(order.indexOf('preview-heading'));
  await shot(page, 'detail-failed-run');
});

test('money is shown to the micro-dollar: a cost and a price 3 micro-dollars apart read differently', async () => {
  await runRow(page, cheapRun).click();
  const money = detail(page, cheapRun).getByRole('region', { name: 'Money and usage' });
  await money.waitFor();
  expect(await fact(money, 'Provider cost')).toBe('$0.000011');
  expect(await fact(money, 'Price')).toBe('$0.000014');
  expect(await fact(money, 'Charged')).toBe('$0.000014');
  expect(await fact(money, 'Estimated \\(held\\)')).toBe('$0.00026');
  expect(await fact(money, 'Refunded')).toBe('$0.000246');
  expect(await text(runRow(page, cheapRun).locator('td[data-label="Charged"]'))).toBe('$0.000014');
  await shot(page, 'detail-micro-dollars');
});

test('a corrected review is not shown in the amber of a review still needed', async () => {
  const colours = async (jobId: string) =>
    runRow(page, jobId)
      .locator('td[data-label="Review"] .badge')
      .evaluate((badge) => {
        const style = getComputedStyle(badge);
        return { text: badge.textContent, background: style.backgroundColor, color: style.color };
      });
  const corrected = await colours(correctedRun);
  const needed = await colours(toReviewRun);
  expect(corrected.text).toBe('Corrected');
  expect(needed.text).toBe('Needs review');
  expect(corrected.background).not.toBe(needed.background);
  expect(corrected.color).not.toBe(needed.color);
});
