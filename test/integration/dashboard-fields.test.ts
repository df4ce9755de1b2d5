/**
 * The dashboard's fields and review queue (issue #18 item 5) in Chromium against the local stack: it opens on the
 * review queue while that holds a run; a run's fields are listed least confident first with their confidence and the
 * review's reasons; each field's box is drawn over the image preview where the value stands (the boxes are the words'
 * boxes tesseract finds in receipt.png), and the box of the field under the pointer or keyboard focus is highlighted.
 * A tenant of its own, and runs settled through the store with fields and a review (test/support/review-seed.ts): the
 * worker does not ground fields until the lead wires it. Screenshots land in artifacts/dashboard/fields-*.png.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Locator, Page } from 'playwright-core';
import type { Fields, Review } from '../../shared/fields/types.js';
import {
  connect,
  type DashboardBrowser,
  detail,
  openDashboard,
  runRow,
  shot,
  statusSays,
  text,
} from '../support/dashboard-page.js';
import { freshTenant, RECEIPT_PNG, seedSettledRun, useStackTables } from '../support/review-seed.js';
import { fixture, stack, upload } from './client.js';

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const RESULT = { merchant: 'ACME HARDWARE', date: '2026-11-02', subtotal: 38.5, tax: 4, total: 42.5, currency: null };
/** Boxes of the words in receipt.png (800 × 834) as tesseract reads them, relative to the page. */
const FIELDS: Fields = {
  merchant: { confidence: 0.97, page: 1, bbox: [76 / 800, 80 / 834, 531 / 800, 118 / 834], source: 'ACME HARDWARE' },
  date: { confidence: 0.62, page: 1, bbox: [165 / 800, 234 / 834, 333 / 800, 259 / 834], source: '2026-11-02' },
  subtotal: { confidence: 0.93, page: 1, bbox: [217 / 800, 509 / 834, 297 / 800, 534 / 834], source: '38.50' },
  tax: { confidence: 0.88, page: 1, bbox: [150 / 800, 564 / 834, 212 / 800, 589 / 834], source: '4.00' },
  total: { confidence: 0.41, page: 1, bbox: [188 / 800, 631 / 834, 280 / 800, 659 / 834], source: '42.50' },
  currency: { confidence: 0.2 },
};
const REVIEW: Review = {
  needed: true,
  reasons: ['total: confidence 0.41 is below 0.8', 'date: confidence 0.62 is below 0.8'],
};
/** Least confident first. */
const ORDER = ['currency', 'total', 'date', 'tax', 'subtotal', 'merchant'];

const PDF_RESULT = {
  merchant: 'Globex Ltd',
  date: '2026-10-15',
  subtotal: null,
  tax: null,
  total: 1250,
  currency: null,
};
const PDF_FIELDS: Fields = {
  merchant: { confidence: 0.95, page: 1, bbox: [0.2, 0.2, 0.4, 0.23], source: 'Globex Ltd' },
  total: { confidence: 0.55, page: 1, bbox: [0.2, 0.3, 0.38, 0.33], source: '1250.00' },
  date: { confidence: 0.9, page: 1, bbox: [0.2, 0.15, 0.45, 0.18], source: '2026-10-15' },
};

let restore: () => void;
let dashboard: DashboardBrowser;
let page: Page;
let key: string;
let imageRun: string;
let pdfRun: string;
let fineRun: string;

beforeAll(async () => {
  restore = useStackTables(stack());
  const tenant = await freshTenant('dash-fields');
  key = tenant.key;
  const png = await upload('receipt.png', await fixture('receipt.png'), { key });
  const pdfBytes = await fixture('text.pdf');
  const pdf = await upload('invoice.pdf', pdfBytes, { key });
  const at = (seconds: number) => new Date(Date.now() - 60_000 + seconds * 1000);
  const common = { tenantId: tenant.tenantId, workflow: 'dash-fields' };
  fineRun = await seedSettledRun({
    ...common,
    uploadId: png,
    fileName: 'receipt.png',
    file: RECEIPT_PNG,
    result: RESULT,
    fields: { ...FIELDS, total: { ...FIELDS.total, confidence: 0.95 } } as Fields,
    review: { needed: false, reasons: [] },
    createdAt: at(1),
  });
  pdfRun = await seedSettledRun({
    ...common,
    uploadId: pdf,
    fileName: 'invoice.pdf',
    file: { mime: 'application/pdf', kind: 'pdf', sizeBytes: pdfBytes.length, pages: 2 },
    result: PDF_RESULT,
    fields: PDF_FIELDS,
    review: { needed: true, reasons: ['total: confidence 0.55 is below 0.8'] },
    createdAt: at(2),
  });
  imageRun = await seedSettledRun({
    ...common,
    uploadId: png,
    fileName: 'receipt.png',
    file: RECEIPT_PNG,
    result: RESULT,
    fields: FIELDS,
    review: REVIEW,
    createdAt: at(3),
  });

  dashboard = await openDashboard();
  page = dashboard.page;
  await page.goto(`${stack().baseUrl}/`);
  await connect(page, key);
});

afterAll(async () => {
  await dashboard?.browser.close();
  restore?.();
});

/** The image's box on screen, and a field's box on screen (the union of its rectangles). */
async function boxOnScreen(panel: Locator, field: string) {
  const image = await panel.getByRole('img', { name: 'Preview of receipt.png' }).boundingBox();
  const box = await panel.locator(`.field-box[data-evidence="${field}"] rect`).first().boundingBox();
  if (!image || !box) throw new Error(`no box on screen for ${field}`);
  return { image, box };
}

const fieldItem = (panel: Locator, field: string) => panel.locator(`li.field-item[data-evidence="${field}"]`);
const activeBoxes = (panel: Locator) =>
  panel.locator('.field-box.active').evaluateAll((groups) => groups.map((g) => (g as SVGElement).dataset.evidence));

async function accessibilityViolations(): Promise<string[]> {
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

test('with runs to review, the dashboard opens on the review queue, newest first', async () => {
  await statusSays(page, /^Connected\. 2 runs on page 1 of the review queue\.$/);
  expect(await page.getByLabel('Review', { exact: true }).inputValue()).toBe('needed');
  const rows = await page
    .locator('#runs-body tr')
    .evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.jobId));
  expect(rows).toEqual([imageRun, pdfRun]);
  expect(await text(runRow(page, imageRun).locator('td[data-label="Review"]'))).toBe('Needs review');
  await shot(page, 'fields-01-review-queue');
});

test('a run’s fields: least confident first, with confidence, where each stands and the reasons that name it', async () => {
  await runRow(page, imageRun).click();
  const panel = detail(page, imageRun);
  await panel.getByRole('img', { name: 'Preview of receipt.png' }).waitFor();
  const fields = panel.getByRole('region', { name: 'Fields' });
  const names = await fields.locator('li.field-item .field-name').allTextContents();
  expect(names).toEqual(ORDER);
  expect(await fields.locator('li.field-item .field-confidence').allTextContents()).toEqual([
    '20%',
    '41%',
    '62%',
    '88%',
    '93%',
    '97%',
  ]);
  expect(await text(fields.locator('.review-needed'))).toContain('total: confidence 0.41 is below 0.8');
  expect(await text(fieldItem(fields, 'total').locator('.field-reasons'))).toBe('total: confidence 0.41 is below 0.8');
  expect(await fieldItem(fields, 'merchant').locator('.field-reasons').count()).toBe(0);
  expect(await text(fieldItem(fields, 'currency'))).toContain('Not found in the document.');
  await shot(page, 'fields-02-run-fields');
});

test('each field with a box is drawn over the image where its value stands', async () => {
  const panel = detail(page, imageRun);
  const image = panel.getByRole('img', { name: 'Preview of receipt.png' });
  await image.evaluate((img: HTMLImageElement) =>
    img.complete ? undefined : new Promise((resolve) => img.addEventListener('load', resolve, { once: true })),
  );
  // Five boxes: currency has no support in the document, so no box.
  expect(await panel.locator('.field-box').count()).toBe(5);
  for (const field of ['merchant', 'date', 'total', 'tax', 'subtotal']) {
    const { image: at, box } = await boxOnScreen(panel, field);
    const [x0, y0, x1, y1] = FIELDS[field]?.bbox ?? [0, 0, 0, 0];
    // Within two pixels of the word's box scaled to the image as displayed.
    expect([field, Math.abs(box.x - (at.x + x0 * at.width)) <= 2]).toEqual([field, true]);
    expect([field, Math.abs(box.y - (at.y + y0 * at.height)) <= 2]).toEqual([field, true]);
    expect([field, Math.abs(box.width - (x1 - x0) * at.width) <= 3]).toEqual([field, true]);
    expect([field, Math.abs(box.height - (y1 - y0) * at.height) <= 3]).toEqual([field, true]);
  }
});

test('the field under the pointer or keyboard focus has its box highlighted; its entry describes where it is', async () => {
  const panel = detail(page, imageRun);
  expect(await activeBoxes(panel)).toEqual([]);
  await fieldItem(panel, 'total').hover();
  expect(await activeBoxes(panel)).toEqual(['total']);
  await shot(page, 'fields-03-hover-total');
  await page.mouse.move(1, 1);
  expect(await activeBoxes(panel)).toEqual([]);

  // Keyboard: Tab from one entry reaches the next; its box lights up, the previous one goes out.
  await fieldItem(panel, 'total').focus();
  await page.keyboard.press('Tab');
  expect(await page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.evidence)).toBe('date');
  expect(await activeBoxes(panel)).toEqual(['date']);
  const describedBy = (await fieldItem(panel, 'date').getAttribute('aria-describedby'))?.split(' ') ?? [];
  const descriptions = await Promise.all(describedBy.map((id) => text(page.locator(`#${id}`))));
  expect(descriptions).toEqual([
    'Boxed on the preview, 21–42% across, 28–31% down.',
    'date: confidence 0.62 is below 0.8',
  ]);
  await shot(page, 'fields-04-focus-date');
  expect(await accessibilityViolations()).toEqual([]);
});

test('a PDF run lists its fields with their pages; boxes are drawn on image previews only', async () => {
  await runRow(page, pdfRun).click();
  const panel = detail(page, pdfRun);
  await panel.locator('iframe.preview-pdf').waitFor();
  await panel.getByText('Field boxes are drawn on image previews only').waitFor();
  const fields = panel.getByRole('region', { name: 'Fields' });
  expect(await fields.locator('li.field-item .field-name').allTextContents()).toEqual(['total', 'date', 'merchant']);
  expect(await text(fieldItem(fields, 'total').locator('.field-where'))).toBe(
    'Page 1, 20–38% across, 30–33% down (open the file at that page).',
  );
  expect(await panel.locator('.preview-boxes').count()).toBe(0);
  await shot(page, 'fields-05-pdf-fields');
});

test('accepting takes runs out of the queue; with the queue empty the dashboard opens on every run', async () => {
  for (const jobId of [pdfRun, imageRun]) {
    await runRow(page, jobId).click();
    const panel = detail(page, jobId);
    await panel.getByRole('button', { name: 'Accept', exact: true }).click();
    await panel.getByText(/Accepted by/).waitFor();
    expect(await text(runRow(page, jobId).locator('td[data-label="Review"]'))).toBe('Accepted');
  }
  await page.reload();
  await statusSays(page, /^3 runs on page 1\.$/);
  expect(await page.getByLabel('Review', { exact: true }).inputValue()).toBe('');
  expect(await text(runRow(page, fineRun).locator('td[data-label="Review"]'))).toBe('Not reviewed');
  // The queue, asked for, is empty and says so.
  await page.getByLabel('Review', { exact: true }).selectOption('needed');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.getByText('No run needs review: the review queue is empty.').waitFor();
  await shot(page, 'fields-06-queue-empty');
  expect(dashboard.problems).toEqual([]);
});
