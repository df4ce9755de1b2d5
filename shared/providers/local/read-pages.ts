/**
 * How the local provider reads a file's pages: a PDF page from its text layer when it has one, else rendered and
 * OCR'd; an image oriented, bounded and OCR'd. OCR is PaddleOCR (paddle-ocr.ts) when its runtime loads, else
 * tesseract.js (tesseract-ocr.ts); either way a page comes back as its text, its confidence, its words with their
 * boxes and its rows (layout.ts), so the field rules read both alike. Every decode is capped in pixels and time.
 */
import type { EvidenceWord, WordSource } from '../../fields/types.js';
import type { SupportedMime } from '../../file-facts.js';
import type { Deadline } from '../../media/deadline.js';
import { runSharp, uprightImage } from '../../media/image.js';
import { hasTextLayer, PdfFile, RENDER_MAX_PIXELS } from '../../media/pdf.js';
import { ProviderFailure } from '../../task.js';
import type { ProviderInput } from '../types.js';
import { type ReadWord, type Row, readingRows } from './layout.js';
import { type GreyImage, paddleReadPage, paddleReady } from './paddle-ocr.js';
import { tesseractRead } from './tesseract-ocr.js';

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

/** A page for OCR: grey pixels, one byte each (what word boxes are relative to). */
export type OcrImage = GreyImage;

/** Which OCR engine read a page (the words' `source`). */
type OcrEngineName = Extract<WordSource, 'paddleocr' | 'tesseract'>;

/** One page as read: what the adapter answers and bills, and what the field rules read. */
export interface PageText {
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

/** A `client` failure of the local provider: the file cannot be read as asked. */
export function clientFailure(message: string, cause?: unknown): ProviderFailure {
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
export async function ocrPage(image: OcrImage, deadline: Deadline): Promise<PageText> {
  if (await paddleReady()) {
    const rows = readingRows(await paddleReadPage(image, deadline));
    const words = rows.flatMap((r) => r.words);
    const mean = words.length === 0 ? 0 : words.reduce((s, w) => s + (w.confidence ?? 0), 0) / words.length;
    const confidence = Math.min(OCR_MAX_CONFIDENCE, mean);
    const text = rows.map((r) => r.text).join('\n');
    return { text, source: 'ocr', engine: 'paddleocr', confidence, words, rows, image };
  }
  const { text, confidence, words } = await tesseractRead(image, deadline);
  const rows = readingRows(words);
  return { text: tidy(text), source: 'ocr', engine: 'tesseract', confidence: confidence / 100, words, rows };
}

/** Who read a page's words: the OCR engine that read it, or its text layer. */
export function wordSource(page: PageText): WordSource {
  return page.source === 'ocr' ? (page.engine ?? 'tesseract') : 'text-layer';
}

/** The words as evidence (shared/fields/types.ts): text, box and confidence; what only the rules read stays here. */
export function evidenceOf(words: readonly ReadWord[]): EvidenceWord[] {
  return words.map(({ text, bbox, confidence }) =>
    confidence === undefined ? { text, bbox } : { text, bbox, confidence },
  );
}

/** Decoded PNG pixels, one grey byte each. */
async function greyOf(png: Buffer, deadline: Deadline): Promise<OcrImage> {
  const { default: sharp } = await import('sharp');
  const { data, info } = await runSharp(sharp(png).toColourspace('b-w').raw(), deadline, 'decoding the page');
  return { data, width: info.width, height: info.height };
}

/** A PDF page as OCR reads it: rendered grey at RENDER_DPI, within RENDER_MAX_PIXELS. */
export function pageImage(pdf: PdfFile, index: number, deadline: Deadline): Promise<OcrImage> {
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
export async function readPdf(
  bytes: Uint8Array,
  deadline: Deadline,
  pages: PageText[],
  pricedAsText: boolean,
): Promise<void> {
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
export async function imageForOcr(bytes: Uint8Array, mime: SupportedMime, deadline: Deadline): Promise<OcrImage> {
  if (mime === 'application/pdf') throw clientFailure('a PDF is not an image');
  const image = await uprightImage(bytes, mime, deadline, OCR_MAX_LONG_SIDE);
  const { data, info } = await runSharp(
    image.flatten({ background: '#ffffff' }).toColourspace('b-w').raw(),
    deadline,
    'decoding the image',
  );
  return { data, width: info.width, height: info.height };
}

/** Reads an image, the one page it is, into `pages`. */
export async function readImage(input: ProviderInput, deadline: Deadline, pages: PageText[]): Promise<void> {
  pages.push(await ocrPage(await imageForOcr(input.bytes, input.facts.mime, deadline), deadline));
}
