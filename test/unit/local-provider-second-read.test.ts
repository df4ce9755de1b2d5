/**
 * The second read wired end to end: the local provider on a rendered receipt (test/fixtures/receipt.png, real
 * PaddleOCR), its result grounded as the worker grounds it. The recogniser's second look is the real one, changed
 * here to read the total's digits or the name's letters otherwise: the run must then go to review for that field,
 * and only for it. second-read.test.ts tests the comparison itself; this tests that the provider applies it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { groundFields } from '../../shared/fields/ground.js';
import type { Deadline } from '../../shared/media/deadline.js';
import { localProviderWith, shutdownLocalProvider } from '../../shared/providers/local/local-provider.js';
import type { TextRegion } from '../../shared/providers/local/paddle-geometry.js';
import { type GreyImage, paddleReread } from '../../shared/providers/local/paddle-ocr.js';
import type { ProviderInput, ProviderOutput } from '../../shared/providers/types.js';
import { registry } from '../../shared/registry/registry.js';
import type { FieldSpec } from '../../shared/task.js';

const OCR_TIMEOUT = 60_000;
const REVIEW_THRESHOLD = 0.8;
const FIELDS = registry.get('receipt')?.expectedFields as FieldSpec[];
/** ACME HARDWARE … Total: 42.50 (scripts/make-fixtures.ts). */
const RECEIPT = readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'receipt.png'));

function receiptInput(): ProviderInput {
  const bytes = new Uint8Array(RECEIPT);
  return {
    bytes,
    facts: { mime: 'image/png', kind: 'image', sizeBytes: bytes.byteLength, pages: 1 },
    task: {
      prompt: 'Extract the receipt',
      outputFormat: 'json',
      fields: FIELDS,
      schemaId: 'receipt',
      schemaLabel: 'Receipt',
      promptScaffold: null,
    },
    step: 'vision',
  };
}

/** The real second read with `from` read as `to` wherever it shows; `seen` counts the reads it changed. */
function misreading(from: string, to: string) {
  const seen: string[] = [];
  const reread = async (image: GreyImage, region: TextRegion, deadline: Deadline): Promise<string> => {
    const text = await paddleReread(image, region, deadline);
    if (text.includes(from)) seen.push(text);
    return text.replace(from, to);
  };
  return { reread, seen };
}

/** Runs the provider with `reread` and grounds its answer as the worker does. */
async function run(reread: Parameters<typeof localProviderWith>[0]) {
  const out: ProviderOutput = await localProviderWith(reread).invoke(receiptInput(), {
    signal: new AbortController().signal,
    deadlineMs: Date.now() + OCR_TIMEOUT,
  });
  const grounded = groundFields({
    result: out.result,
    fieldSpecs: FIELDS,
    words: out.words ?? [],
    ...(out.nativeConfidence !== undefined ? { nativeConfidence: out.nativeConfidence } : {}),
    ...(out.valueConfidence !== undefined ? { valueConfidence: out.valueConfidence } : {}),
    reviewThreshold: REVIEW_THRESHOLD,
    now: new Date(),
  });
  return { out, grounded };
}

afterAll(async () => {
  await shutdownLocalProvider();
});

describe('the local provider reads the total and the merchant a second time', () => {
  test(
    'read alike twice: the total and the name keep their confidence',
    async () => {
      const { out, grounded } = await run(paddleReread);
      expect(out.result).toMatchObject({ merchant: 'ACME HARDWARE', total: 42.5 });
      expect(grounded.fields.total?.confidence).toBeGreaterThanOrEqual(REVIEW_THRESHOLD);
      expect(grounded.fields.merchant?.confidence).toBeGreaterThanOrEqual(REVIEW_THRESHOLD);
      expect(grounded.review.reasons.filter((r) => /^(total|merchant):/.test(r))).toEqual([]);
    },
    OCR_TIMEOUT,
  );

  test(
    "the total's digits read otherwise the second time: the run goes to review for the total alone",
    async () => {
      const { reread, seen } = misreading('42.50', '42.80');
      const { out, grounded } = await run(reread);
      expect(seen).toHaveLength(1);
      // The answer is the first read's; only its confidence changes.
      expect(out.result).toMatchObject({ merchant: 'ACME HARDWARE', total: 42.5 });
      expect(out.valueConfidence?.total).toBeLessThanOrEqual(0.5);
      expect(grounded.review.needed).toBe(true);
      expect(grounded.review.reasons).toContainEqual(expect.stringMatching(/^total: below 0\.8/));
      expect(grounded.fields.merchant?.confidence).toBeGreaterThanOrEqual(REVIEW_THRESHOLD);
    },
    OCR_TIMEOUT,
  );

  test(
    "the name's letters read otherwise the second time: the run goes to review for the merchant alone",
    async () => {
      const { reread, seen } = misreading('HARDWARE', 'HARDWIRE');
      const { grounded } = await run(reread);
      expect(seen).toHaveLength(1);
      expect(grounded.review.needed).toBe(true);
      expect(grounded.review.reasons).toContainEqual(expect.stringMatching(/^merchant: below 0\.8/));
      expect(grounded.fields.total?.confidence).toBeGreaterThanOrEqual(REVIEW_THRESHOLD);
    },
    OCR_TIMEOUT,
  );
});
