/**
 * The `local` provider: everything inside the worker. PDF text layers first (exact and ~10x cheaper), OCR only for
 * pages without one (PaddleOCR on onnxruntime, paddle-ocr.ts; tesseract.js in one long-lived worker thread where
 * onnxruntime cannot load); every decode capped in pixels and time; fields by rules (layout-fields.ts,
 * extract-fields.ts), never invented, the chosen total and merchant of a one-page scan read a second time
 * (second-read.ts). Every page it reads comes back with its words and their boxes (evidence), and
 * `ocrPageWords` lends the same engine to the worker for pages no provider read. Heavy modules load lazily.
 * See docs/decisions.md#local-provider.
 * Over 400 lines: the provider's two OCR engines share one page loop, its deadlines and its worker-thread lifecycle;
 * the engines themselves live in paddle-ocr.ts and ocr-words.ts.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Worker as ThreadWorker } from 'node:worker_threads';
import type Tesseract from 'tesseract.js';
import type { EvidenceWord, PageWords, WordSource } from '../../fields/types.js';
import type { SupportedMime } from '../../file-facts.js';
import { Deadline } from '../../media/deadline.js';
import { runSharp, uprightImage } from '../../media/image.js';
import { hasTextLayer, PdfFile, RENDER_MAX_PIXELS } from '../../media/pdf.js';
import { localCost } from '../../pricing/pricing.js';
import { ProviderFailure } from '../../task.js';
import { likelyTextLayer } from '../predict.js';
import type { InvokeOptions, ProviderAdapter, ProviderInput, ProviderOutput } from '../types.js';
import { extractFields, extractKeyValues } from './extract-fields.js';
import { type ReadWord, type Row, readingRows } from './layout.js';
import { extractWithLayout } from './layout-fields.js';
import { tesseractWords } from './ocr-words.js';
import type { TextRegion } from './paddle-geometry.js';
import { type GreyImage, paddleReadPage, paddleReady, paddleReread, releasePaddleModels } from './paddle-ocr.js';
import { type Claim, doubted, secondRead } from './second-read.js';

// The decoding limits (images: 100 MP before decoding; PDF renders: 25 MP) and the text-layer rule live with the
// decoders in shared/media.
/** PDF pages without a text layer are rendered at this resolution for OCR (capped to RENDER_MAX_PIXELS). */
export const RENDER_DPI = 200;
/** Images are downscaled so their long side is at most this (more pixels slow OCR without helping it). */
export const OCR_MAX_LONG_SIDE = 3000;
/** Confidence given to a text-layer page: the text is exact, but the layer may not be what a reader sees. */
export const TEXT_LAYER_CONFIDENCE = 0.99;
/** An OCR'd page is never as sure as a text layer, however sure the reader is of its characters. */
export const OCR_MAX_CONFIDENCE = 0.98;

const require = createRequire(import.meta.url);

/** Local paths for tesseract.js, resolved from the installed packages (never a CDN). */
function tesseractPaths(): { langPath: string; workerPath: string } {
  const engDir = path.dirname(require.resolve('@tesseract.js-data/eng/package.json'));
  return {
    // LSTM-only integer model (2.9 MB gz), the one tesseract.js itself would fetch for OEM.LSTM_ONLY.
    langPath: path.join(engDir, '4.0.0_best_int'),
    // Explicit so that bundling tesseract.js (which moves its __dirname) cannot break the worker thread's script.
    workerPath: require.resolve('tesseract.js/src/worker-script/node/index.js'),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// OCR engine: one tesseract worker per process
// ---------------------------------------------------------------------------------------------------------------

interface OcrResult {
  text: string;
  /** Tesseract's mean word confidence, 0–100. */
  confidence: number;
  /** The words with their boxes, relative to the image. */
  words: EvidenceWord[];
}

/** A page for OCR: grey pixels, one byte each (what word boxes are relative to). */
type OcrImage = GreyImage;

/** Fails a recognition whose worker was terminated under it (by another job's overrun, a crash or a shutdown). */
class WorkerStopped extends Error {
  constructor(
    readonly reason: string,
    /** False on shutdown: the job must not start a new worker. */
    readonly retryable: boolean,
  ) {
    super(reason);
  }
}

class OcrEngine {
  private worker: Promise<Tesseract.Worker> | null = null;
  /** Rejecters of the recognitions in flight on the current worker, failed at once when it is terminated. */
  private readonly inFlight = new Set<(error: WorkerStopped) => void>();

  /** Recognises one image; a job whose worker was restarted under it is run once more on the fresh worker. */
  async recognize(image: OcrImage, deadline: Deadline): Promise<OcrResult> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.recognizeOnce(image, deadline);
      } catch (error) {
        if (!(error instanceof WorkerStopped)) throw error;
        if (error.retryable && attempt < 2) continue;
        throw new ProviderFailure('server', `local provider: OCR stopped: ${error.reason}`);
      }
    }
  }

  private async recognizeOnce(image: OcrImage, deadline: Deadline): Promise<OcrResult> {
    const worker = await deadline.race(this.get(), 'starting OCR');
    deadline.check('running OCR');
    return new Promise<OcrResult>((resolve, reject) => {
      let done = false;
      const finish = (): boolean => {
        if (done) return false;
        done = true;
        cancelWatch();
        this.inFlight.delete(stop);
        return true;
      };
      const stop = (reason: WorkerStopped): void => {
        if (finish()) reject(reason);
      };
      // A running job cannot be cancelled inside tesseract: on overrun, terminate the worker so that nothing queues
      // behind it (the other jobs on it are re-run on a fresh worker) and fail this one with a timeout.
      const cancelWatch = deadline.watch(() => {
        if (!finish()) return;
        void this.reset(new WorkerStopped('another OCR job overran its deadline', true));
        reject(deadline.failure('running OCR'));
      });
      this.inFlight.add(stop);
      // `blocks`: the recognition tree, for the words' boxes (tesseract.js returns only text by default).
      pngOf(image)
        .then((png) => worker.recognize(png, {}, { text: true, blocks: true }))
        .then(
          (result) => {
            if (!finish()) return;
            const { text, confidence, blocks } = result.data;
            resolve({ text, confidence, words: tesseractWords(blocks, image) });
          },
          (error: unknown) => {
            if (finish()) {
              reject(new ProviderFailure('server', `local provider: OCR failed: ${String(error)}`, { cause: error }));
            }
          },
        );
    });
  }

  /** Terminates the worker (if any) and fails the recognitions still running on it with `reason`. */
  async reset(reason: WorkerStopped): Promise<void> {
    const current = this.worker;
    this.worker = null;
    for (const fail of [...this.inFlight]) fail(reason);
    this.inFlight.clear();
    if (current !== null) {
      try {
        await (await current).terminate();
      } catch {
        // A worker that failed to start has nothing to terminate.
      }
    }
  }

  private get(): Promise<Tesseract.Worker> {
    if (this.worker === null) {
      const created = createTesseractWorker(() => {
        if (this.worker === created) void this.reset(new WorkerStopped('the OCR worker thread stopped', true));
      });
      this.worker = created;
      created.catch(() => {
        if (this.worker === created) this.worker = null;
      });
    }
    return this.worker;
  }
}

async function createTesseractWorker(onThreadExit: () => void): Promise<Tesseract.Worker> {
  const { default: tesseract } = await import('tesseract.js');
  const { langPath, workerPath } = tesseractPaths();
  let initialising = true;
  let failInit: (error: Error) => void = () => {};
  const initFailed = new Promise<never>((_, reject) => {
    failInit = reject;
  });
  const worker = await Promise.race([
    tesseract.createWorker('eng', tesseract.OEM.LSTM_ONLY, {
      langPath,
      workerPath,
      gzip: true,
      // 'none': read the model from langPath every start; never write a cache copy into the working directory.
      cacheMethod: 'none',
      // Without an errorHandler tesseract.js rethrows job errors from its message listener (an uncaught exception),
      // and a failure while loading the language would leave createWorker pending forever.
      errorHandler: (error: unknown) => {
        if (initialising) failInit(new Error(`OCR worker failed to start: ${String(error)}`));
      },
    }),
    initFailed,
  ]);
  initialising = false;
  // tesseract.js sets `onerror` on the node Worker, which node ignores: listen for real so that a crashed thread
  // fails its jobs instead of crashing the process (an 'error' event without a listener throws).
  const thread = (worker as unknown as { worker?: ThreadWorker }).worker;
  thread?.on('error', onThreadExit);
  thread?.on('exit', onThreadExit);
  return worker;
}

const ocrEngine = new OcrEngine();

/** Terminates the process's OCR worker (the local stack calls this on exit, tests in `afterAll`). */
export async function shutdownLocalProvider(): Promise<void> {
  await releasePaddleModels();
  await ocrEngine.reset(new WorkerStopped('the local provider was shut down', false));
}

// ---------------------------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------------------------

/** Which OCR engine read a page (the words' `source`). */
type OcrEngineName = Extract<WordSource, 'paddleocr' | 'tesseract'>;

interface PageText {
  text: string;
  source: 'text_layer' | 'ocr';
  /** The engine that read an OCR'd page. */
  engine?: OcrEngineName;
  /** 0–1; for OCR pages tesseract's mean word confidence / 100. */
  confidence: number;
  /** The page's words with their boxes (relative to the page), in reading order. */
  words: ReadWord[];
  /** The words as rows, top to bottom (layout.ts): what the field rules read. */
  rows: Row[];
  /** The image PaddleOCR read, kept for a second read of the chosen values (./second-read.ts). */
  image?: OcrImage;
}

function clientFailure(message: string, cause?: unknown): ProviderFailure {
  return new ProviderFailure('client', `local provider: ${message}`, cause === undefined ? undefined : { cause });
}

/**
 * Right-trims lines and drops blank ones: mupdf puts a blank line between text blocks and tesseract between its
 * paragraphs, neither of which carries meaning on forms and receipts, and without them a blank line in the document
 * text always means a page break.
 */
function tidy(text: string): string {
  return text
    .split(/\r?\n/)
    .map((line) => line.replace(/\s+$/, ''))
    .filter((line) => line !== '')
    .join('\n');
}

/**
 * One page's text and words: PaddleOCR (paddle-ocr.ts) when its runtime loads, else tesseract.js (a platform without
 * onnxruntime's binary still reads, less well). The text is the page's rows, so both engines feed the rules alike.
 */
async function ocrPage(image: OcrImage, deadline: Deadline): Promise<PageText> {
  if (await paddleReady()) {
    const rows = readingRows(await paddleReadPage(image, deadline));
    const words = rows.flatMap((r) => r.words);
    const mean = words.length === 0 ? 0 : words.reduce((s, w) => s + (w.confidence ?? 0), 0) / words.length;
    const confidence = Math.min(OCR_MAX_CONFIDENCE, mean);
    const text = rows.map((r) => r.text).join('\n');
    return { text, source: 'ocr', engine: 'paddleocr', confidence, words, rows, image };
  }
  const { text, confidence, words } = await ocrEngine.recognize(image, deadline);
  const rows = readingRows(words);
  return { text: tidy(text), source: 'ocr', engine: 'tesseract', confidence: confidence / 100, words, rows };
}

/** Who read a page's words: the OCR engine that read it, or its text layer. */
function wordSource(page: PageText): WordSource {
  return page.source === 'ocr' ? (page.engine ?? 'tesseract') : 'text-layer';
}

/** The words as evidence (shared/fields/types.ts): text, box and confidence; what only the rules read stays here. */
function evidenceOf(words: readonly ReadWord[]): EvidenceWord[] {
  return words.map(({ text, bbox, confidence }) =>
    confidence === undefined ? { text, bbox } : { text, bbox, confidence },
  );
}

/** A grey image as PNG, for tesseract. */
async function pngOf(image: OcrImage): Promise<Buffer> {
  const { default: sharp } = await import('sharp');
  return sharp(image.data, { raw: { width: image.width, height: image.height, channels: 1 } })
    .png({ compressionLevel: 1 })
    .toBuffer();
}

/** Decoded PNG pixels, one grey byte each. */
async function greyOf(png: Buffer, deadline: Deadline): Promise<OcrImage> {
  const { default: sharp } = await import('sharp');
  const { data, info } = await runSharp(sharp(png).toColourspace('b-w').raw(), deadline, 'decoding the page');
  return { data, width: info.width, height: info.height };
}

/** A PDF page as OCR reads it: rendered grey at RENDER_DPI, within RENDER_MAX_PIXELS. */
function pageImage(pdf: PdfFile, index: number, deadline: Deadline): Promise<OcrImage> {
  const { png } = pdf.renderPng(index, {
    dpi: RENDER_DPI,
    maxLongSide: Number.POSITIVE_INFINITY,
    maxPixels: RENDER_MAX_PIXELS,
    colour: 'grey',
  });
  return greyOf(png, deadline);
}

/**
 * Reads a PDF page by page into `pages` (filled as it goes, so a timeout can still report the pages done). A page is
 * read from its text layer when it has a real one, or, in a file the estimate priced as text (`pricedAsText`), any
 * text at all: a last page with only "Terms net 30" is text, not a scan to OCR at 20x (shared/worker/steps.ts).
 */
async function readPdf(bytes: Uint8Array, deadline: Deadline, pages: PageText[], pricedAsText: boolean): Promise<void> {
  const pdf = await PdfFile.open(bytes, deadline);
  try {
    for (let i = 0; i < pdf.pageCount; i++) {
      deadline.check(`reading PDF page ${i + 1} of ${pdf.pageCount}`);
      const { text, words } = pdf.textAndWords(i);
      if (hasTextLayer(text) || (pricedAsText && text.trim() !== '')) {
        const rows = readingRows(words);
        pages.push({ text: tidy(text), source: 'text_layer', confidence: TEXT_LAYER_CONFIDENCE, words, rows });
        continue;
      }
      const { image, ...read } = await ocrPage(await pageImage(pdf, i, deadline), deadline);
      // Only a one-page document is read a second time: a long scan's renders are not kept.
      pages.push(pdf.pageCount === 1 && image !== undefined ? { ...read, image } : read);
    }
  } finally {
    pdf.close();
  }
}

/** EXIF orientation applied (HEIC decoded first), bounded in pixels and size, flattened on white, grey pixels. */
async function imageForOcr(bytes: Uint8Array, mime: SupportedMime, deadline: Deadline): Promise<OcrImage> {
  if (mime === 'application/pdf') throw clientFailure('a PDF is not an image');
  const image = await uprightImage(bytes, mime, deadline, OCR_MAX_LONG_SIDE);
  const { data, info } = await runSharp(
    image.flatten({ background: '#ffffff' }).toColourspace('b-w').raw(),
    deadline,
    'decoding the image',
  );
  return { data, width: info.width, height: info.height };
}

async function readImage(input: ProviderInput, deadline: Deadline, pages: PageText[]): Promise<void> {
  pages.push(await ocrPage(await imageForOcr(input.bytes, input.facts.mime, deadline), deadline));
}

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

// ---------------------------------------------------------------------------------------------------------------
// The adapter
// ---------------------------------------------------------------------------------------------------------------

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
