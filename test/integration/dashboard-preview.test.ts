/**
 * The dashboard's PDF preview in Chromium against the local stack (issue #15 item 5; docs/decisions.md, "The file
 * preview"). A PDF shows in the browser's own viewer; bytes PUT over a run's upload after the run was created (here
 * an HTML page sent as `text/html`, which the local emulator accepts, as it checks no signature) never run as a page:
 * the read address is answered as the inspected type, with `nosniff`, so the viewer gets the bytes and refuses them.
 */
import type { Frame, Page } from 'playwright-core';
import {
  connect,
  type DashboardBrowser,
  detail,
  filterRuns,
  openDashboard,
  pageCountIn,
  pdfViewerIn,
  runRow,
  shot,
  statusSays,
  text,
  until,
} from '../support/dashboard-page.js';
import { call, fixture, KEYS, stack } from './client.js';

const SUFFIX = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
const WORKFLOW = `dash-preview-${SUFFIX}`;
/** What the page PUT in place of the PDF asks for if its script ever runs. */
const BEACON = `script-ran-${SUFFIX}`;
const HTML = `<!doctype html><html><head><title>not a pdf</title></head><body><h1>Not a PDF</h1>
<script>document.title = 'script ran'; fetch('/${BEACON}');</script></body></html>`;

let dashboard: DashboardBrowser;
let page: Page;
let pdfRun: string;
let swappedRun: string;

/** Uploads text.pdf as `invoice.pdf` and creates a run from it; returns the jobId and the upload's address. */
async function pdfRunOf(): Promise<{ jobId: string; uploadUrl: string }> {
  const bytes = await fixture('text.pdf');
  const presign = await call<{ uploadId: string; uploadUrl: string }>('POST', '/v1/uploads/presign', {
    body: { fileName: 'invoice.pdf', contentLength: bytes.length },
  });
  const put = await fetch(presign.body.uploadUrl, {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream' },
    body: new Blob([new Uint8Array(bytes)]),
  });
  expect(put.status).toBe(200);
  const created = await call('POST', '/v1/runs', {
    // Text output: no fields, so no page images; the preview is the PDF itself, in the browser's viewer.
    body: { uploadId: presign.body.uploadId, prompt: 'Extract the invoice', outputFormat: 'text', workflow: WORKFLOW },
  });
  expect(created.status).toBe(202);
  return { jobId: String(created.body.jobId), uploadUrl: presign.body.uploadUrl };
}

/** Opens a run's detail and waits for its PDF frame. */
async function openPreview(jobId: string): Promise<Frame> {
  await runRow(page, jobId).click();
  const frame = detail(page, jobId).locator('iframe.preview-pdf');
  const content = await (await frame.elementHandle())?.contentFrame();
  if (!content) throw new Error('the preview frame has no document');
  return content;
}

beforeAll(async () => {
  pdfRun = (await pdfRunOf()).jobId;
  const swapped = await pdfRunOf();
  swappedRun = swapped.jobId;
  // After creation, the way an attacker would on the local stack: any type, any length, no signature checked.
  const put = await fetch(swapped.uploadUrl, { method: 'PUT', headers: { 'content-type': 'text/html' }, body: HTML });
  expect(put.status).toBe(200);

  dashboard = await openDashboard();
  page = dashboard.page;
  await page.goto(`${stack().baseUrl}/`);
  await connect(page, KEYS.a);
  await statusSays(page, /runs? on page 1/);
  await filterRuns(page, WORKFLOW);
});

afterAll(async () => {
  await dashboard?.browser.close();
});

test('a PDF shows in the browser’s PDF viewer inside the run’s detail, at an address ending in its name', async () => {
  const frame = await openPreview(pdfRun);
  const viewer = await until('the PDF viewer', async () => pdfViewerIn(frame));
  // What the reader sees once the document has loaded: its page count in the viewer's toolbar (an error dialog
  // instead when it cannot load). Not the tab title: Chromium 150 titled it after the address, 156 after its name.
  const pages = (await call<{ file: { pages: number } }>('GET', `/v1/runs/${pdfRun}`)).body.file.pages;
  await until('the PDF to load', async () => (await pageCountIn(viewer)) === String(pages));
  // The address ends in the file's own name: any browser's title and download name.
  expect(new URL(frame.url()).pathname).toMatch(/\/upl_[0-9a-f]{32}\/invoice\.pdf$/);
  // A frame without page images has nothing under it but the "Open file" line (no stray `null`).
  const preview = detail(page, pdfRun).locator('#preview');
  expect(await text(preview)).toMatch(/^Open file invoice\.pdf \(link valid until [^)]+\)$/);
  await shot(page, 'preview-pdf');
});

test('an HTML page PUT over a PDF run’s upload runs no script in the preview, nor when the file is opened', async () => {
  const frame = await openPreview(swappedRun);
  // Either its script runs (the beacon) or the PDF viewer takes the bytes: wait for whichever comes first.
  await until(
    'the preview to load',
    async () => dashboard.requests.some((url) => url.includes(BEACON)) || pdfViewerIn(frame),
  );
  expect(dashboard.requests.filter((url) => url.includes(BEACON))).toEqual([]);
  expect(await frame.evaluate(() => document.contentType)).toBe('application/pdf');
  await shot(page, 'preview-swapped');

  // "Open file" leads to the same address: answered as a PDF that no browser may sniff into a page.
  const href = await detail(page, swappedRun).getByRole('link', { name: 'Open file' }).getAttribute('href');
  const opened = await fetch(String(href));
  expect(opened.headers.get('content-type')).toBe('application/pdf');
  expect(opened.headers.get('x-content-type-options')).toBe('nosniff');
  expect(opened.headers.get('content-disposition')).toBe('inline; filename="invoice.pdf"');
  expect(dashboard.problems).toEqual([]);
});

test('a browser without a PDF viewer (most phones) is told why there is no preview, and can open the file', async () => {
  const phone = await dashboard.browser.newPage({ viewport: { width: 390, height: 844 } });
  await phone.addInitScript(() => Object.defineProperty(navigator, 'pdfViewerEnabled', { value: false }));
  await phone.goto(`${stack().baseUrl}/`);
  await connect(phone, KEYS.a);
  await statusSays(phone, /runs? on page 1/);
  await filterRuns(phone, WORKFLOW);
  await runRow(phone, pdfRun).click();
  const panel = detail(phone, pdfRun);
  await panel.getByText('No preview: this browser does not show PDFs inside a page. Open the file.').waitFor();
  expect(await panel.locator('iframe').count()).toBe(0);
  expect(await panel.getByRole('link', { name: 'Open file' }).getAttribute('href')).toMatch(/^http/);
  await shot(phone, 'preview-no-pdf-viewer');
  await phone.close();
});
