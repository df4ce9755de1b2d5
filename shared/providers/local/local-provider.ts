/**
 * The `local` provider: everything inside the worker. PDF text layers first (exact and ~10x cheaper), OCR only for
 * pages without one (read-pages.ts: PaddleOCR on onnxruntime, else tesseract.js in a worker thread); fields by rules
 * (layout-fields.ts, extract-fields.ts), never invented, the chosen total and merchant of a one-page scan read a
 * second time (second-read.ts). Every page it reads comes back with its words and their boxes (evidence), and
 * `ocrPageWords` lends the same reading to the worker for pages no provider read. Heavy modules load lazily.
 * See docs/decisions.md#local-provider.
 */
import type { PageWords } from '../../fields/types.js';
import type { SupportedMime } from '../../file-facts.js';
import { Deadline } from '../../media/deadline.js';
import { PdfFile } from '../../media/pdf.js';
import { localCost } from '../../pricing/pricing.js';
import { ProviderFailure } from '../../task.js';
import { likelyTextLayer } from '../predict.js';
import type { InvokeOptions, ProviderAdapter, ProviderInput, ProviderOutput } from '../types.js';
import { extractFields, extractKeyValues } from './extract-fields.js';
import type { Row } from './layout.js';
import { extractWithLayout } from './layout-fields.js';
import type { TextRegion } from './paddle-geometry.js';
import { paddleReread, releasePaddleModels } from './paddle-ocr.js';
import {
  clientFailure,
  evidenceOf,
  imageForOcr,
  type OcrImage,
  ocrPage,
  type PageText,
  pageImage,
  readImage,
  readPdf,
  wordSource,
} from './read-pages.js';
import { type Claim, doubted, secondRead } from './second-read.js';
import { stopTesseract } from './tesseract-ocr.js';

function usageOf(pages: PageText[]): ProviderOutput['usage'] {
  const ocr = pages.filter((p) => p.source === 'ocr').length;
  const textLayer = pages.length - ocr;
  return {
    billableUnits: pages.length,
    costMicros: ocr * localCost.ocrPageMicros + textLayer * localCost.textLayerPageMicros,
  };
}

/**
 * The document's confidence: the page-count-weighted mean of per-page confidences, where an OCR page counts with
 * tesseract's mean word confidence / 100 and a text-layer page with TEXT_LAYER_CONFIDENCE (0.99). OCR pages on which
 * tesseract found no text at all (blank pages, confidence 0) are left out, so a blank back page does not make an
 * otherwise clean document look unreliable; a document with no text at all has confidence 0.
 */
function confidenceOf(pages: PageText[]): number {
  const counted = pages.filter((p) => p.source === 'text_layer' || p.text.trim() !== '');
  if (counted.length === 0) return 0;
  const mean = counted.reduce((sum, p) => sum + p.confidence, 0) / counted.length;
  return Math.min(1, Math.max(0, mean));
}

/** The answer from the document's text (and its rows, when the words were read here) and each field's confidence. */
function resultFor(
  input: ProviderInput,
  text: string,
  pages: number,
  rows?: Row[],
): { result: Record<string, unknown>; confidence?: Record<string, number>; claims?: Record<string, Claim> } {
  if (input.step === 'ocr' || input.task.outputFormat === 'text') return { result: { text } };
  if (input.task.fields === null) return { result: { text, keyValues: extractKeyValues(text), pages } };
  if (rows === undefined) return { result: extractFields(text, input.task.fields) };
  return extractWithLayout(rows, text, input.task.fields, new Date());
}

/** Reads a part of a text region of a page again, for the second read (PaddleOCR's recognition model: `paddleReread`). */
type Reread = (image: OcrImage, region: TextRegion, deadline: Deadline) => Promise<string>;

async function invoke(input: ProviderInput, options: InvokeOptions, reread: Reread): Promise<ProviderOutput> {
  const deadline = new Deadline(options.signal, options.deadlineMs, 'local provider');
  deadline.check('starting');

  // An `analyze` step after another provider's OCR: the text is given, only the extraction runs (text-layer price).
  if (input.step === 'analyze' && input.documentText !== undefined) {
    const pages = Math.max(1, input.facts.pages);
    return {
      result: resultFor(input, input.documentText, pages).result,
      documentText: input.documentText,
      usage: { billableUnits: pages, costMicros: pages * localCost.textLayerPageMicros },
    };
  }

  if (input.bytes.byteLength === 0) throw new ProviderFailure('unreadable_file', 'local provider: the file is empty');
  const pages: PageText[] = [];
  // A failure after some pages were read (a timeout) still cost those pages (the page being OCR'd when it struck is
  // not counted).
  const costing = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if (error instanceof ProviderFailure && error.usage === undefined && pages.length > 0) {
        throw new ProviderFailure(error.kind, error.message, { usage: usageOf(pages), cause: error });
      }
      throw error;
    }
  };
  await costing(async () => {
    if (input.facts.mime === 'application/pdf')
      await readPdf(input.bytes, deadline, pages, likelyTextLayer(input.facts));
    else await readImage(input, deadline, pages);
    deadline.check('finishing');
  });

  const text = pages
    .map((p) => p.text)
    .filter((t) => t !== '')
    .join('\n\n');
  const read = resultFor(
    input,
    text,
    pages.length,
    pages.flatMap((p) => p.rows),
  );
  const { result, claims } = read;
  // A one-page OCR'd document's chosen values are read again; a disagreement sends the field to review.
  const image = pages.length === 1 ? pages[0]?.image : undefined;
  const confidence =
    image !== undefined && claims !== undefined && read.confidence !== undefined
      ? doubted(
          read.confidence,
          await costing(() => secondRead(image, claims, (img, region) => reread(img, region, deadline))),
        )
      : read.confidence;
  return {
    result,
    documentText: text,
    nativeConfidence: confidenceOf(pages),
    ...(confidence !== undefined && Object.keys(confidence).length > 0 ? { valueConfidence: confidence } : {}),
    words: pages.map((p, i) => ({ page: i + 1, source: wordSource(p), words: evidenceOf(p.words) })),
    usage: usageOf(pages),
  };
}

/** The local provider with another second reader: tests give one that reads a value otherwise, to see it doubted. */
export function localProviderWith(reread: Reread): ProviderAdapter {
  return { id: 'local', invoke: (input, options) => invoke(input, options, reread) };
}

export const localProvider: ProviderAdapter = localProviderWith(paddleReread);

// ---------------------------------------------------------------------------------------------------------------
// What the worker borrows: the same reading for evidence, and the engines' shutdown
// ---------------------------------------------------------------------------------------------------------------

/**
 * OCR of chosen pages (1-based; an image is page 1) with the provider's own engine, renders and limits, for the
 * worker's evidence of pages no provider read (shared/worker/evidence.ts). Fills `out` as it goes, so a deadline that
 * passes (a `timeout` thrown) still leaves the pages done; a page outside the file fails `client`.
 */
export async function ocrPageWords(
  file: { bytes: Uint8Array; mime: SupportedMime },
  pages: readonly number[],
  deadline: Deadline,
  out: PageWords[],
): Promise<void> {
  if (file.mime !== 'application/pdf') {
    if (pages.some((page) => page !== 1)) throw clientFailure('an image has only page 1');
    if (pages.length === 0) return;
    const read = await ocrPage(await imageForOcr(file.bytes, file.mime, deadline), deadline);
    out.push({ page: 1, source: wordSource(read), words: evidenceOf(read.words) });
    return;
  }
  const pdf = await PdfFile.open(file.bytes, deadline);
  try {
    for (const page of pages) {
      deadline.check(`reading PDF page ${page} for evidence`);
      const read = await ocrPage(await pageImage(pdf, page - 1, deadline), deadline);
      out.push({ page, source: wordSource(read), words: evidenceOf(read.words) });
    }
  } finally {
    pdf.close();
  }
}

/** Terminates the process's OCR engines (the local stack calls this on exit, tests in `afterAll`). */
export async function shutdownLocalProvider(): Promise<void> {
  await releasePaddleModels();
  await stopTesseract();
}
