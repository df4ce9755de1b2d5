/**
 * A generated 3-page PDF for "OCR only for pages with fields" (the worker's unit test and the bench's grounding phase):
 * page 1 has a text layer (text.pdf's invoice lines), page 2 is a scan of receipt.png and page 3 a scan of
 * business-card.png, both images alone on their page (no text layer), at 150 dpi as scanned.pdf.
 */
import { readFile } from 'node:fs/promises';
import * as mupdf from 'mupdf';
import type { Settlement } from '../../shared/store/ledger.js';
import type { RunRecord } from '../../shared/store/runs.js';
import { runItem } from './aws.js';

/** What a model would read on page 1 (all printed there). */
export const TEXT_PAGE_VALUES = {
  invoiceNumber: 'INV-2001',
  invoiceDate: '2026-10-15',
  vendor: 'Globex Ltd',
  totalDue: 1250,
} as const;

/** A value printed only on the page-2 scan (the receipt's total). */
export const SCAN_ONLY_VALUE = { receiptTotal: 42.5 } as const;

const PAGE_HEIGHT = 792;
const LINES = [
  { text: 'INVOICE', x: 72, y: 90, size: 28 },
  { text: 'Invoice Number: INV-2001', x: 72, y: 140, size: 16 },
  { text: 'Invoice Date: 2026-10-15', x: 72, y: 166, size: 16 },
  { text: 'Vendor: Globex Ltd', x: 72, y: 192, size: 16 },
  { text: 'Total Due: 1250.00', x: 72, y: 320, size: 18 },
] as const;

async function addScan(doc: mupdf.PDFDocument, fixture: string): Promise<void> {
  const bytes = await readFile(new URL(`../fixtures/${fixture}`, import.meta.url));
  const image = new mupdf.Image(bytes);
  // Points at 150 dpi: width px × 72 / 150.
  const w = Math.round((image.getWidth() * 72) / 150);
  const h = Math.round((image.getHeight() * 72) / 150);
  const ref = doc.addImage(image);
  doc.insertPage(-1, doc.addPage([0, 0, w, h], 0, { XObject: { Im1: ref } }, `q ${w} 0 0 ${h} 0 0 cm /Im1 Do Q\n`));
}

/** The PDF's bytes and page count (3). */
export async function textAndScansPdf(): Promise<{ bytes: Uint8Array; pages: number }> {
  const doc = new mupdf.PDFDocument();
  const font = doc.addSimpleFont(new mupdf.Font('Helvetica'));
  const shown = LINES.map((l) => `BT /F1 ${l.size} Tf ${l.x} ${PAGE_HEIGHT - l.y} Td (${l.text}) Tj ET`);
  const content = `0 g\n${shown.join('\n')}\n`;
  doc.insertPage(-1, doc.addPage([0, 0, 612, PAGE_HEIGHT], 0, { Font: { F1: font } }, content));
  await addScan(doc, 'receipt.png');
  await addScan(doc, 'business-card.png');
  const bytes = doc.saveToBuffer('compress=yes,garbage=yes').asUint8Array().slice();
  doc.destroy();
  return { bytes, pages: 3 };
}

/**
 * A JSON run without a schema on `pdf` and its completed settlement answering `result` as a language model does (no
 * words of its own): what the worker's withEvidence gets for such a run.
 */
export function modelAnswerOn(
  pdf: { bytes: Uint8Array; pages: number },
  jobId: string,
  result: Record<string, unknown>,
): { run: RunRecord; settlement: Settlement } {
  const run = runItem({
    jobId,
    task: {
      prompt: 'Extract',
      outputFormat: 'json',
      fields: null,
      schemaId: null,
      schemaLabel: null,
      promptScaffold: null,
    },
    file: { mime: 'application/pdf', kind: 'pdf', sizeBytes: pdf.bytes.byteLength, pages: pdf.pages },
  });
  const usage = { requests: 1, billableUnits: 1, costMicros: 0, priceMicros: 0 };
  return { run, settlement: { status: 'completed', result, usage, confidence: 0.9, attempts: [] } };
}
