/**
 * The worker benchmark's cases: the files, the run requests and the fake provider's canned answers that
 * bench/worker-overhead.ts measures and bench/worker-ab.ts compares between two commits.
 */
import type { ProviderOutput } from '../shared/providers/types.js';

/** The tenant the worker benchmark's runs belong to. */
export const WORKER_TENANT = 'bench';

export interface FileCase {
  id: 'image' | 'image-model' | 'pdf';
  file: string;
  /** How the row names the case. */
  label: string;
  /**
   * The words the fake's answer carries: `local` the real local provider's (recorded in the first, unmeasured run:
   * tesseract's boxes, so grounding needs no OCR), `none` a language model's (the worker OCRs the page for evidence).
   */
  words: 'local' | 'none';
  /** Pages of the file (1 for an image): the overhead is also reported per page. */
  pages: number;
  body: Record<string, unknown>;
  fake: ProviderOutput;
}

const RECEIPT_TEXT = [
  'ACME HARDWARE',
  'Date: 2026-11-02',
  'Invoice Number: INV-1042',
  'Subtotal: 38.50',
  'Tax: 4.00',
  'Total: 42.50',
  'Thank you',
].join('\n');

const RECEIPT_ANSWER: ProviderOutput = {
  result: { merchant: 'ACME HARDWARE', date: '2026-11-02', subtotal: 38.5, tax: 4, total: 42.5, currency: null },
  documentText: RECEIPT_TEXT,
  nativeConfidence: 0.9,
  usage: { billableUnits: 1, costMicros: 200 },
};

export const CASES: FileCase[] = [
  {
    id: 'image',
    file: 'receipt.png',
    label: "receipt.png, the local provider's answer with its words",
    words: 'local',
    pages: 1,
    body: { prompt: 'Extract the receipt', schemaId: 'receipt' },
    fake: RECEIPT_ANSWER,
  },
  {
    id: 'image-model',
    file: 'receipt.png',
    label: "receipt.png, a language model's answer (no words: the image is OCR'd for evidence)",
    words: 'none',
    pages: 1,
    body: { prompt: 'Extract the receipt', schemaId: 'receipt' },
    fake: RECEIPT_ANSWER,
  },
  {
    id: 'pdf',
    file: 'twenty-pages.pdf',
    label: 'twenty-pages.pdf',
    words: 'none',
    pages: 20,
    body: { prompt: 'Summarise the document', outputFormat: 'text' },
    fake: {
      result: { text: 'Twenty pages, a paragraph each.' },
      documentText: 'Twenty pages, a paragraph each.',
      nativeConfidence: 0.99,
      usage: { billableUnits: 20, costMicros: 200 },
    },
  },
];
