/**
 * A split run in the dashboard (contract-v1.2 §3, issue 30): the run detail shows the packet as a strip of its pages
 * grouped by document, one block per document with its class, pages, result and fields' pages and boxes, and each
 * document's field boxes drawn on the images of its pages — at desktop and phone width, with no WCAG 2.1 A/AA
 * violation (axe-core) and nothing the page logs as a problem.
 */
import type { Page } from 'playwright-core';
import {
  accessibilityViolations,
  connect,
  type DashboardBrowser,
  detail,
  openDashboard,
  runRow,
  shot,
  statusSays,
  text,
} from '../support/dashboard-page.js';
import { makePackets } from '../support/packets.js';
import { freshTenant, useStackTables } from '../support/review-seed.js';
import { call, stack, upload, waitForFinal } from './client.js';

const PACKET = makePackets(30, 8).filter((p) => p.truth.length >= 3)[0];
if (!PACKET) throw new Error('no packet of three documents or more');

let restore: () => void;
let key: string;
let jobId: string;
interface Evidence {
  page?: number;
  bbox?: number[];
}
let documents: {
  index: number;
  schemaId: string;
  pages: { first: number; last: number };
  fields?: Record<string, Evidence>;
}[];

/** The fields of a document with a box, by page. */
function boxesByPage(fields: Record<string, Evidence> = {}): Map<number, string[]> {
  const pages = new Map<number, string[]>();
  for (const [name, e] of Object.entries(fields)) {
    if (!Array.isArray(e.bbox)) continue;
    pages.set(e.page ?? 1, [...(pages.get(e.page ?? 1) ?? []), name]);
  }
  return pages;
}

beforeAll(async () => {
  restore = useStackTables(stack());
  const tenant = await freshTenant('dash-packets');
  key = tenant.key;
  const uploadId = await upload('packet.pdf', PACKET.bytes, { key });
  const created = await call('POST', '/v1/runs', {
    key,
    body: { uploadId, prompt: 'Extract each document', split: true, confirmCost: true },
  });
  expect(created.status).toBe(202);
  jobId = String(created.body.jobId);
  const final = await waitForFinal(jobId, { key, timeoutMs: 120_000 });
  expect(final.body.status).toBe('completed');
  documents = (final.body.result as { documents: typeof documents }).documents;
}, 180_000);

afterAll(() => restore?.());

describe.each([
  ['desktop', 1280, 800],
  ['phone', 390, 844],
])('at %s width', (name, width, height) => {
  let dashboard: DashboardBrowser;
  let page: Page;

  beforeAll(async () => {
    dashboard = await openDashboard(width, height);
    page = dashboard.page;
    await page.goto(`${stack().baseUrl}/`);
    await connect(page, key);
    await statusSays(page, /runs? on page 1/);
    await page.getByLabel('Review', { exact: true }).selectOption('');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await statusSays(page, /1 run on page 1/);
  });
  afterAll(async () => {
    await dashboard?.browser.close();
  });

  test('the page strip has one group per document with its pages, and a block per document', async () => {
    await runRow(page, jobId).click();
    const panel = detail(page, jobId);
    const strip = panel.getByRole('list', { name: 'Pages of the packet by document' });
    await strip.waitFor();
    for (const doc of documents) {
      const pages = panel.getByRole('list', {
        name: new RegExp(`^Document ${doc.index + 1}: pages? ${doc.pages.first}`),
      });
      expect(await pages.getByRole('listitem').count()).toBe(doc.pages.last - doc.pages.first + 1);
      const block = panel.getByRole('region', { name: new RegExp(`^Document ${doc.index + 1}: ${doc.schemaId},`) });
      await block.waitFor();
      if (doc.schemaId === 'other') expect(await text(block)).toContain('Not extracted');
      else expect(await block.locator('pre').count()).toBe(1);
    }
    // Each document's boxes on the images of its pages: one box group per field with a box on that page.
    const boxed = documents.flatMap((doc) => [...boxesByPage(doc.fields)].map(([p, names]) => ({ doc, p, names })));
    expect(boxed.length).toBeGreaterThan(0);
    for (const { doc, p, names } of boxed) {
      const figure = panel.locator('figure', { hasText: `Page ${p}: the boxes of document ${doc.index + 1}'s fields` });
      await figure.locator('img').waitFor();
      expect(
        await figure.locator('img').evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0),
      ).toBe(true);
      const drawn = await figure
        .locator('g.field-box')
        .evaluateAll((gs) => gs.map((g) => g.getAttribute('data-evidence')));
      expect(drawn.sort()).toEqual([...names].sort());
    }
    // Every page of the packet once in the strip.
    const numbers = (await strip.locator('.packet-page').allTextContents()).map(Number);
    expect(numbers).toEqual(Array.from({ length: PACKET.pages }, (_, i) => i + 1));
    await shot(page, `packet-strip-${name}`);
    expect(await accessibilityViolations(page)).toEqual([]);
    expect(dashboard.problems).toEqual([]);
  });
});
