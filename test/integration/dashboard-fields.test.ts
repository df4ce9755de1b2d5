/**
 * The dashboard's fields and review queue (issue #18 item 5) in Chromium against the local stack: it opens on the
 * review queue while that holds a run; a run's fields are listed least confident first with their confidence and the
 * review's reasons; each field's box is drawn over the image preview where the value stands (the boxes are the words'
 * boxes tesseract finds in receipt.png), and the box of the field under the pointer or keyboard focus is highlighted.
 * A PDF run shows the worker's image of a page with a field instead of the PDF (the boxes are its text layer's word
 * boxes), turns to the page of the field looked at, and falls back to the PDF's frame without a page image.
 * A tenant of its own, and runs settled through the store with fields and a review (test/support/review-seed.ts), their
 * page images stored by the worker's own storePagePreviews: the worker does not ground fields or store page images
 * until the lead wires it. Screenshots land in artifacts/dashboard/fields-*.png.
 * Over 400 lines: one browser and one seeded tenant serve every case (starting Chromium is the slow part).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { DeleteObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { Locator, Page } from 'playwright-core';
import sharp from 'sharp';
import type { BBox, Fields, PageWords, Review } from '../../shared/fields/types.js';
import type { FileFacts } from '../../shared/file-facts.js';
import { pdfWords } from '../../shared/media/index.js';
import { pagePreviewKey } from '../../shared/uploads/page-previews.js';
import { storePagePreviews } from '../../shared/worker/page-previews.js';
import {
  connect,
  type DashboardBrowser,
  detail,
  openDashboard,
  runRow,
  shot,
  statusSays,
  text,
  until,
} from '../support/dashboard-page.js';
import { freshTenant, RECEIPT_PNG, seedSettledRun, useStackBucket, useStackTables } from '../support/review-seed.js';
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

/** The box around `texts`, consecutive words of a page's text layer (mupdf's boxes, as grounding finds them). */
function wordsBox(pages: PageWords[], page: number, texts: string[]): BBox {
  const words = pages.find((p) => p.page === page)?.words ?? [];
  const start = words.findIndex((_, i) => texts.every((text, j) => words[i + j]?.text === text));
  if (start < 0) throw new Error(`"${texts.join(' ')}" is not on page ${page}`);
  const boxes = words.slice(start, start + texts.length).map((w) => w.bbox);
  return [
    Math.min(...boxes.map((b) => b[0])),
    Math.min(...boxes.map((b) => b[1])),
    Math.max(...boxes.map((b) => b[2])),
    Math.max(...boxes.map((b) => b[3])),
  ];
}
const media = () => ({ signal: new AbortController().signal, deadlineMs: Date.now() + 60_000 });

const INVOICE_RESULT = { invoiceNumber: 'INV-3001', date: '2026-09-30', currency: 'EUR', subtotal: 1315, total: 1578 };
/** Least confident first. */
const INVOICE_ORDER = ['total', 'date', 'subtotal', 'currency', 'invoiceNumber'];
const INVOICE_WORDS: Record<string, string[]> = {
  total: ['1,578.00'],
  date: ['2026-09-30'],
  subtotal: ['1,315.00'],
  currency: ['EUR'],
  invoiceNumber: ['INV-3001'],
};
/** The invoice's fields, each boxed on the words of invoice.pdf's text layer (filled in beforeAll). */
const INVOICE_FIELDS: Fields = {};

/** text.pdf: an invoice on page 1 and its terms on page 2. */
const TWO_PAGE_RESULT = { invoiceNumber: 'INV-2001', total: 1250, terms: 'thirty days' };
const TWO_PAGE_WORDS: Record<string, [number, string[]]> = {
  invoiceNumber: [1, ['INV-2001']],
  total: [1, ['1250.00']],
  terms: [2, ['thirty', 'days']],
};
const TWO_PAGE_FIELDS: Fields = {};
const CONFIDENCE: Record<string, number> = {
  total: 0.55,
  date: 0.86,
  subtotal: 0.9,
  currency: 0.93,
  invoiceNumber: 0.97,
  terms: 0.7,
};

let restore: () => void;
let restoreBucket: () => void;
let dashboard: DashboardBrowser;
let page: Page;
let key: string;
let tenantId: string;
let imageRun: string;
let pdfRun: string;
let twoPageRun: string;
let fineRun: string;

beforeAll(async () => {
  restore = useStackTables(stack());
  restoreBucket = useStackBucket(stack());
  const tenant = await freshTenant('dash-fields');
  key = tenant.key;
  tenantId = tenant.tenantId;
  const png = await upload('receipt.png', await fixture('receipt.png'), { key });
  const invoiceBytes = await fixture('invoice.pdf');
  const invoice = await upload('invoice.pdf', invoiceBytes, { key });
  const twoPageBytes = await fixture('text.pdf');
  const twoPage = await upload('two-pages.pdf', twoPageBytes, { key });
  const invoiceWords = await pdfWords(invoiceBytes, media());
  for (const [name, texts] of Object.entries(INVOICE_WORDS)) {
    INVOICE_FIELDS[name] = {
      confidence: CONFIDENCE[name] ?? 0,
      page: 1,
      bbox: wordsBox(invoiceWords, 1, texts),
      source: texts.join(' '),
    };
  }
  const twoPageWords = await pdfWords(twoPageBytes, media());
  for (const [name, [onPage, texts]] of Object.entries(TWO_PAGE_WORDS)) {
    TWO_PAGE_FIELDS[name] = {
      confidence: CONFIDENCE[name] ?? 0,
      page: onPage,
      bbox: wordsBox(twoPageWords, onPage, texts),
      source: texts.join(' '),
    };
  }
  const pdfFacts = (bytes: Uint8Array, pages: number): FileFacts => ({
    mime: 'application/pdf',
    kind: 'pdf',
    sizeBytes: bytes.length,
    pages,
  });
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
  twoPageRun = await seedSettledRun({
    ...common,
    uploadId: twoPage,
    fileName: 'two-pages.pdf',
    file: pdfFacts(twoPageBytes, 2),
    result: TWO_PAGE_RESULT,
    fields: TWO_PAGE_FIELDS,
    review: { needed: true, reasons: ['terms: confidence 0.7 is below 0.8'] },
    createdAt: at(1.5),
  });
  pdfRun = await seedSettledRun({
    ...common,
    uploadId: invoice,
    fileName: 'invoice.pdf',
    file: pdfFacts(invoiceBytes, 1),
    result: INVOICE_RESULT,
    fields: INVOICE_FIELDS,
    review: { needed: true, reasons: ['total: confidence 0.55 is below 0.8'] },
    createdAt: at(2),
  });
  // What the worker stores once grounding found these boxes (the lead wires it): an image of each page with one.
  const stored = await Promise.all([
    storePagePreviews({
      run: { jobId: pdfRun, tenantId, file: pdfFacts(invoiceBytes, 1) },
      bytes: invoiceBytes,
      pages: [1],
      deadlineMs: Date.now() + 60_000,
    }),
    storePagePreviews({
      run: { jobId: twoPageRun, tenantId, file: pdfFacts(twoPageBytes, 2) },
      bytes: twoPageBytes,
      pages: [1, 2],
      deadlineMs: Date.now() + 60_000,
    }),
  ]);
  expect(stored).toEqual([[1], [1, 2]]);
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
  restoreBucket?.();
});

/** The image's box on screen, and a field's box on screen (its first rectangle). */
async function boxOnScreen(panel: Locator, field: string, imageName = 'Preview of receipt.png') {
  const image = await panel.getByRole('img', { name: imageName }).boundingBox();
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
  await statusSays(page, /^Connected\. 3 runs on page 1 of the review queue\.$/);
  expect(await page.getByLabel('Review', { exact: true }).inputValue()).toBe('needed');
  const rows = await page
    .locator('#runs-body tr')
    .evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.jobId));
  expect(rows).toEqual([imageRun, pdfRun, twoPageRun]);
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
    expectAround(field, box, onScreen(at, FIELDS[field]?.bbox), at.width);
  }
});

interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** A box of the page (relative coordinates) on screen, over `at`, the image as displayed. */
function onScreen(at: Rect, bbox: BBox | undefined): Rect {
  const [x0, y0, x1, y1] = bbox ?? [0, 0, 0, 0];
  return {
    x: at.x + x0 * at.width,
    y: at.y + y0 * at.height,
    width: (x1 - x0) * at.width,
    height: (y1 - y0) * at.height,
  };
}

/**
 * `box` is drawn around `word`: just outside it, by the dashboard's margin (6 thousandths of the image's displayed
 * width `imageWidth`, so the outline never crosses the text), within two pixels.
 */
function expectAround(field: string, box: Rect, word: Rect, imageWidth: number): void {
  const margin = (6 / 1000) * imageWidth;
  expect([field, Math.abs(box.x - (word.x - margin)) <= 2]).toEqual([field, true]);
  expect([field, Math.abs(box.y - (word.y - margin)) <= 2]).toEqual([field, true]);
  expect([field, Math.abs(box.width - (word.width + 2 * margin)) <= 3]).toEqual([field, true]);
  expect([field, Math.abs(box.height - (word.height + 2 * margin)) <= 3]).toEqual([field, true]);
}

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

test('pointing at a field lights its box without hiding its value: the value reads as it did', async () => {
  const panel = detail(page, imageRun);
  await runRow(page, imageRun).click();
  const image = panel.getByRole('img', { name: 'Preview of receipt.png' });
  await image.waitFor();
  await loaded(image);
  // Pointing at the entry may scroll the panel: the value is measured where it then stands, lit and not.
  await fieldItem(panel, 'total').hover();
  expect(await activeBoxes(panel)).toEqual(['total']);
  const at = await image.boundingBox();
  if (!at) throw new Error('no preview on screen');
  const value = onScreen(at, FIELDS.total?.bbox);
  const lit = await greys(value);
  await page.mouse.move(1, 1);
  expect(await activeBoxes(panel)).toEqual([]);
  expect(await image.boundingBox()).toEqual(at);
  const plain = await greys(value);
  // The characters keep their ink (no outline or opaque wash over them) and stand out from the wash as from the page.
  expect(inkAndContrast(plain).ink).toBeGreaterThan(0.2);
  expect(inkAndContrast(lit).ink).toBeGreaterThan(0.85 * inkAndContrast(plain).ink);
  expect(inkAndContrast(lit).contrast).toBeGreaterThan(0.75 * inkAndContrast(plain).contrast);
});

/** The grey levels (0–255) of a region of the screen, darkest first. */
async function greys(clip: Rect): Promise<number[]> {
  const { data, info } = await sharp(await page.screenshot({ clip }))
    .greyscale()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return Array.from({ length: info.width * info.height }, (_, i) => data[i * info.channels] ?? 255).sort(
    (a, b) => a - b,
  );
}

/**
 * How a value reads: its ink (the share of near-black pixels, grey below 100) and its contrast (the mean of the lighter
 * half, the background, less the mean of the darkest tenth, the strokes of its characters).
 */
function inkAndContrast(sorted: number[]): { ink: number; contrast: number } {
  const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / Math.max(1, values.length);
  return {
    ink: sorted.filter((v) => v < 100).length / sorted.length,
    contrast: mean(sorted.slice(Math.floor(sorted.length / 2))) - mean(sorted.slice(0, Math.ceil(sorted.length / 10))),
  };
}

/** The share of dark pixels (grey below 128) in a region of the screen. */
async function darkShare(clip: Rect): Promise<number> {
  const { data, info } = await sharp(await page.screenshot({ clip }))
    .greyscale()
    .raw()
    .toBuffer({ resolveWithObject: true });
  let dark = 0;
  for (let i = 0; i < info.width * info.height; i++) if ((data[i * info.channels] ?? 255) < 128) dark += 1;
  return dark / (info.width * info.height);
}

/** Waits for an <img> to be decoded (its box on screen is then the image's). */
async function loaded(image: Locator): Promise<void> {
  await image.evaluate((img: HTMLImageElement) =>
    img.complete ? undefined : new Promise((resolve) => img.addEventListener('load', resolve, { once: true })),
  );
}

/**
 * The share of dark pixels inside a box of the screen, 3 px in from its edges (clear of the box's own outline). A page
 * image just swapped in may not be painted yet (decoding runs after `load` on a busy machine): read the screen again
 * for up to 5 s until ink shows, and return the last reading.
 */
async function inkIn(box: Rect): Promise<number> {
  const inside = { x: box.x + 3, y: box.y + 3, width: Math.max(1, box.width - 6), height: Math.max(1, box.height - 6) };
  const deadline = Date.now() + 5000;
  for (;;) {
    const share = await darkShare(inside);
    if (share > 0.04 || Date.now() > deadline) return share;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test('a PDF run shows the image of its page with each field boxed on the words its value was read from', async () => {
  await runRow(page, pdfRun).click();
  const panel = detail(page, pdfRun);
  const image = panel.getByRole('img', { name: 'Page 1 of invoice.pdf' });
  await image.waitFor();
  await loaded(image);
  // The page image, not the PDF's frame.
  expect(await panel.locator('iframe.preview-pdf').count()).toBe(0);
  expect(await text(panel.locator('.page-caption'))).toBe('Page 1 of 1');
  const fields = panel.getByRole('region', { name: 'Fields' });
  expect(await fields.locator('li.field-item .field-name').allTextContents()).toEqual(INVOICE_ORDER);
  expect(await panel.locator('.field-box').count()).toBe(5);
  for (const field of INVOICE_ORDER) {
    const { image: at, box } = await boxOnScreen(panel, field, 'Page 1 of invoice.pdf');
    // Around the word's box scaled to the page image as displayed…
    expectAround(field, box, onScreen(at, INVOICE_FIELDS[field]?.bbox), at.width);
    // …and on the page as rendered, the word is inside it: ink within the box.
    expect([field, (await inkIn(box)) > 0.04]).toEqual([field, true]);
  }
  expect(await text(fieldItem(fields, 'total').locator('.field-where'))).toMatch(
    /^Page 1, \d+–\d+% across, \d+–\d+% down\.$/,
  );
  await fieldItem(fields, 'total').hover();
  expect(await activeBoxes(panel)).toEqual(['total']);
  await shot(page, 'fields-05-pdf-page-boxes');
  expect(await accessibilityViolations()).toEqual([]);
});

test('the PDF preview turns to the page of the field under the pointer or keyboard focus', async () => {
  await runRow(page, twoPageRun).click();
  const panel = detail(page, twoPageRun);
  // It opens on the first page with a boxed field.
  const first = panel.getByRole('img', { name: 'Page 1 of two-pages.pdf' });
  await first.waitFor();
  await loaded(first);
  expect(await text(panel.locator('.page-caption'))).toBe(
    'Page 1 of 2 · pointing at or focusing a field turns to its page',
  );
  expect(
    await panel.locator('.field-box').evaluateAll((g) => g.map((e) => (e as SVGElement).dataset.evidence)),
  ).toEqual(['total', 'invoiceNumber']);
  const fields = panel.getByRole('region', { name: 'Fields' });

  // The terms stand on page 2: pointing at them turns the preview to page 2, their box lit.
  await fieldItem(fields, 'terms').hover();
  const second = panel.getByRole('img', { name: 'Page 2 of two-pages.pdf' });
  await second.waitFor();
  await loaded(second);
  expect(await activeBoxes(panel)).toEqual(['terms']);
  const { box } = await boxOnScreen(panel, 'terms', 'Page 2 of two-pages.pdf');
  expect(await inkIn(box)).toBeGreaterThan(0.04);
  await shot(page, 'fields-06-pdf-page-2');

  // The keyboard does the same: focus on the total turns back to page 1.
  await fieldItem(fields, 'total').focus();
  await panel.getByRole('img', { name: 'Page 1 of two-pages.pdf' }).waitFor();
  await until('the total lit on page 1', async () => (await activeBoxes(panel)).includes('total'));
  expect(await activeBoxes(panel)).toEqual(['total']);
  expect(await accessibilityViolations()).toEqual([]);
});

test('a page without an image says so in its place; a PDF without page images keeps its frame', async () => {
  const s3 = new S3Client({ endpoint: stack().endpoints.s3, forcePathStyle: true });
  const remove = (n: number) =>
    s3.send(
      new DeleteObjectCommand({
        Bucket: stack().resources.bucket,
        Key: pagePreviewKey({ tenantId, jobId: twoPageRun }, n),
      }),
    );
  try {
    await remove(2);
    // Opened again, the dashboard asks again.
    await runRow(page, pdfRun).click();
    await runRow(page, twoPageRun).click();
    const panel = detail(page, twoPageRun);
    await panel.getByRole('img', { name: 'Page 1 of two-pages.pdf' }).waitFor();
    const fields = panel.getByRole('region', { name: 'Fields' });
    await fieldItem(fields, 'terms').hover();
    await panel.getByText('No image of page 2; the fields list says where on it each value is.').waitFor();
    expect(await panel.locator('.preview-boxes').count()).toBe(0);
    await shot(page, 'fields-07-pdf-page-without-image');

    await remove(1);
    await runRow(page, pdfRun).click();
    await runRow(page, twoPageRun).click();
    await panel.locator('iframe.preview-pdf').waitFor();
    await panel.getByText('No page image to draw the boxes on; each field below names its page and place.').waitFor();
    expect(await panel.locator('.preview-boxes').count()).toBe(0);
    expect(await text(fieldItem(fields, 'terms').locator('.field-where'))).toMatch(/^Page 2, /);
    await shot(page, 'fields-08-pdf-frame-without-page-images');
  } finally {
    s3.destroy();
  }
});

test('at phone width (390×844) the page image fits the screen with its boxes, the fields below it', async () => {
  // Narrow, an open run takes the place of the list: close the one the previous test left open.
  await page.getByRole('button', { name: 'Close run detail' }).click();
  await page.setViewportSize({ width: 390, height: 844 });
  try {
    await runRow(page, pdfRun).click();
    const panel = detail(page, pdfRun);
    const image = panel.getByRole('img', { name: 'Page 1 of invoice.pdf' });
    await image.waitFor();
    await loaded(image);
    await image.scrollIntoViewIfNeeded();
    const at = await image.boundingBox();
    expect(at?.width ?? 999).toBeLessThanOrEqual(390);
    expect(await panel.locator('.field-box').count()).toBe(5);
    const { box } = await boxOnScreen(panel, 'total', 'Page 1 of invoice.pdf');
    expect(await inkIn(box)).toBeGreaterThan(0.04);
    const overflow = await page.evaluate(
      () =>
        document.documentElement.scrollWidth > document.documentElement.clientWidth ||
        document.body.scrollWidth > document.documentElement.clientWidth,
    );
    expect(overflow).toBe(false);
    await shot(page, 'fields-10-phone-pdf-page');
    await panel.getByRole('button', { name: 'Back to runs' }).click();
  } finally {
    await page.setViewportSize({ width: 1280, height: 800 });
  }
});

test('accepting takes runs out of the queue; with the queue empty the dashboard opens on every run', async () => {
  for (const jobId of [twoPageRun, pdfRun, imageRun]) {
    await runRow(page, jobId).click();
    const panel = detail(page, jobId);
    await panel.getByRole('button', { name: 'Accept', exact: true }).click();
    await panel.getByText(/Accepted by/).waitFor();
    expect(await text(runRow(page, jobId).locator('td[data-label="Review"]'))).toBe('Accepted');
  }
  await page.reload();
  await statusSays(page, /^4 runs on page 1\.$/);
  expect(await page.getByLabel('Review', { exact: true }).inputValue()).toBe('');
  expect(await text(runRow(page, fineRun).locator('td[data-label="Review"]'))).toBe('Not reviewed');
  // The queue, asked for, is empty and says so.
  await page.getByLabel('Review', { exact: true }).selectOption('needed');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.getByText('No run needs review: the review queue is empty.').waitFor();
  await shot(page, 'fields-09-queue-empty');
  expect(dashboard.problems).toEqual([]);
});
