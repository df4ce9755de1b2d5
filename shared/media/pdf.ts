/**
 * PDFs for providers, through mupdf (WASM): the text layer page by page, and pages rendered to images.
 * Not to undo: renders stay under RENDER_MAX_DPI and RENDER_MAX_PIXELS, and a file mupdf cannot open is the file's
 * fault (`unreadable_file`), a page out of range the caller's (`client`). docs/decisions.md#pdfs-for-providers.
 */
import type * as Mupdf from 'mupdf';
import type { EvidenceWord, PageWords } from '../fields/types.js';
import { ProviderFailure } from '../task.js';
import { Deadline } from './deadline.js';
import {
  checkTarget,
  encodeWithin,
  fitInside,
  fromRaw,
  loadSharp,
  outputFormat,
  type RawImage,
  runSharp,
} from './image.js';
import type { ImageTarget, MediaDeadline, PreparedImage } from './types.js';
import { relativeBox } from './words.js';

/** Pages are rendered at most at this resolution… */
export const RENDER_MAX_DPI = 200;
/** …and scaled down so that a rendered page never exceeds this many pixels (huge page boxes). */
export const RENDER_MAX_PIXELS = 25_000_000;

type MupdfModule = typeof Mupdf;

/**
 * A page's words are read from at most this many characters (a dense page has under 10,000, a newspaper page about
 * 20,000): mupdf's walk calls JavaScript per character (a few microseconds each), so a hostile page of millions
 * would otherwise hold the thread for seconds.
 */
export const MAX_WORD_CHARS_PER_PAGE = 50_000;
/** Thrown inside the structured-text walk to end it at MAX_WORD_CHARS_PER_PAGE characters. */
const ENOUGH_CHARS = Symbol('enough characters');

/** How to render a page: the largest scale within all three limits. */
export interface RenderOptions {
  dpi: number;
  /** Long side in pixels (Infinity for none). */
  maxLongSide: number;
  maxPixels: number;
  colour: 'rgb' | 'grey';
}

/** An open PDF; `close()` it when done (mupdf memory lives in the WASM heap, outside the garbage collector). */
export class PdfFile {
  private constructor(
    private readonly mupdf: MupdfModule,
    private readonly doc: Mupdf.Document,
    private readonly d: Deadline,
    readonly pageCount: number,
  ) {}

  /** Loads mupdf and opens the PDF; `unreadable_file` failures for an unreadable, encrypted or empty document. */
  static async open(bytes: Uint8Array, d: Deadline): Promise<PdfFile> {
    if (bytes.byteLength === 0) throw d.fileFailure('the PDF is empty');
    const mupdf = await d.race(import('mupdf'), 'loading the PDF engine');
    let doc: Mupdf.Document;
    try {
      doc = mupdf.Document.openDocument(bytes, 'application/pdf');
    } catch (error) {
      throw d.fileFailure('the PDF cannot be opened', error);
    }
    try {
      if (doc.needsPassword()) throw d.fileFailure('the PDF is password-protected');
      let count: number;
      try {
        count = doc.countPages();
      } catch (error) {
        throw d.fileFailure('the PDF page tree cannot be read', error);
      }
      if (count < 1) throw d.fileFailure('the PDF has no pages');
      return new PdfFile(mupdf, doc, d, count);
    } catch (error) {
      doc.destroy();
      throw error;
    }
  }

  /** The page's text layer as mupdf's structured text gives it (whitespace preserved, not trimmed). */
  text(index: number): string {
    return this.withPage(index, (page) => {
      const stext = page.toStructuredText('preserve-whitespace');
      try {
        return stext.asText();
      } finally {
        stext.destroy();
      }
    });
  }

  /**
   * The page's text layer and its words, from one structured-text pass: `text` as `text()` gives it, `words` split at
   * whitespace and line ends in mupdf's reading order (blocks, then lines), each box the union of its characters'
   * quads relative to the page's bounds. A word wholly off the page is left out; words stop after
   * MAX_WORD_CHARS_PER_PAGE characters (the text does not).
   */
  textAndWords(index: number): { text: string; words: EvidenceWord[] } {
    return this.withPage(index, (page) => {
      const [left, top, right, bottom] = page.getBounds();
      const bounds = { left, top, width: right - left, height: bottom - top };
      const stext = page.toStructuredText('preserve-whitespace');
      try {
        const words: EvidenceWord[] = [];
        let text = '';
        let box: [number, number, number, number] = [Infinity, Infinity, -Infinity, -Infinity];
        const flush = (): void => {
          const bbox = text === '' ? undefined : relativeBox(box, bounds);
          if (bbox) words.push({ text, bbox });
          text = '';
          box = [Infinity, Infinity, -Infinity, -Infinity];
        };
        let chars = 0;
        try {
          stext.walk({
            onChar(c, _origin, _font, _size, quad) {
              if (++chars > MAX_WORD_CHARS_PER_PAGE) throw ENOUGH_CHARS;
              if (/\s/.test(c)) return flush();
              text += c;
              // A quad is its four corners: upper-left, upper-right, lower-left, lower-right (x, y each).
              box = [
                Math.min(box[0], quad[0], quad[2], quad[4], quad[6]),
                Math.min(box[1], quad[1], quad[3], quad[5], quad[7]),
                Math.max(box[2], quad[0], quad[2], quad[4], quad[6]),
                Math.max(box[3], quad[1], quad[3], quad[5], quad[7]),
              ];
            },
            endLine: flush,
          });
          flush();
        } catch (error) {
          if (error !== ENOUGH_CHARS) throw error;
        }
        return { text: stext.asText(), words };
      } finally {
        stext.destroy();
      }
    });
  }

  /** Renders a page to raw pixels (no alpha: white paper) at the largest scale `options` allow. */
  render(index: number, options: RenderOptions): RawImage {
    return this.withPixmap(index, options, (pixmap) => {
      const width = pixmap.getWidth();
      const height = pixmap.getHeight();
      const channels = pixmap.getNumberOfComponents() as 1 | 3;
      const row = width * channels;
      const stride = pixmap.getStride();
      // getPixels() is a view into the WASM heap, gone once the pixmap is destroyed: copy it out.
      const samples = pixmap.getPixels();
      const data = Buffer.allocUnsafe(row * height);
      if (stride === row) data.set(samples.subarray(0, row * height));
      else for (let y = 0; y < height; y++) data.set(samples.subarray(y * stride, y * stride + row), y * row);
      return { data, width, height, channels };
    });
  }

  /** Renders a page straight to PNG with mupdf's encoder; `width` and `height` are the PNG's, in pixels. */
  renderPng(index: number, options: RenderOptions): { png: Buffer; width: number; height: number } {
    return this.withPixmap(index, options, (pixmap) => ({
      png: Buffer.from(pixmap.asPNG()),
      width: pixmap.getWidth(),
      height: pixmap.getHeight(),
    }));
  }

  /**
   * A new PDF of pages `first`..`last` (0-based, both included), for a provider that reads only those pages: mupdf
   * grafts each page with the resources it uses, so the bytes stay near those pages' share of the file.
   */
  extractPages(first: number, last: number): Uint8Array {
    const source = this.doc.asPDF();
    if (!source) throw this.d.fileFailure('the document is not a PDF');
    if (!Number.isInteger(first) || !Number.isInteger(last) || first < 0 || last < first || last >= this.pageCount) {
      throw this.d.clientFailure(`pages ${first + 1}-${last + 1} are out of range (the PDF has ${this.pageCount})`);
    }
    const out = new this.mupdf.PDFDocument();
    try {
      const map = out.newGraftMap();
      try {
        for (let index = first; index <= last; index++) map.graftPage(-1, source, index);
      } finally {
        map.destroy();
      }
      const buffer = out.saveToBuffer('compress');
      try {
        // A copy: the buffer's bytes live in the WASM heap and go with it.
        return buffer.asUint8Array().slice();
      } finally {
        buffer.destroy();
      }
    } catch (error) {
      if (error instanceof ProviderFailure) throw error;
      throw this.d.fileFailure(`PDF pages ${first + 1}-${last + 1} cannot be copied`, error);
    } finally {
      out.destroy();
    }
  }

  /** Frees the document. */
  close(): void {
    this.doc.destroy();
  }

  private withPixmap<T>(index: number, options: RenderOptions, use: (pixmap: Mupdf.Pixmap) => T): T {
    return this.withPage(index, (page) => {
      const [x0, y0, x1, y1] = page.getBounds();
      const widthPt = Math.max(1, x1 - x0);
      const heightPt = Math.max(1, y1 - y0);
      let scale = Math.min(options.dpi / 72, options.maxLongSide / Math.max(widthPt, heightPt));
      const pixels = widthPt * scale * heightPt * scale;
      if (pixels > options.maxPixels) scale *= Math.sqrt(options.maxPixels / pixels);
      const colour = options.colour === 'grey' ? this.mupdf.ColorSpace.DeviceGray : this.mupdf.ColorSpace.DeviceRGB;
      const pixmap = page.toPixmap(this.mupdf.Matrix.scale(scale, scale), colour, false);
      try {
        return use(pixmap);
      } finally {
        pixmap.destroy();
      }
    });
  }

  private withPage<T>(index: number, use: (page: Mupdf.Page) => T): T {
    if (!Number.isInteger(index) || index < 0 || index >= this.pageCount) {
      throw this.d.clientFailure(`page index ${index} is out of range (the PDF has ${this.pageCount} pages)`);
    }
    let page: Mupdf.Page | undefined;
    try {
      page = this.doc.loadPage(index);
      return use(page);
    } catch (error) {
      if (error instanceof ProviderFailure) throw error;
      throw this.d.fileFailure(`PDF page ${index + 1} cannot be read`, error);
    } finally {
      page?.destroy();
    }
  }
}

/** Renders PDF pages (0-based indexes; all when omitted) to PNG/JPEG images within the target. */
export async function renderPdfPages(
  bytes: Uint8Array,
  target: ImageTarget,
  deadline: MediaDeadline,
  pages?: number[],
): Promise<PreparedImage[]> {
  const d = new Deadline(deadline.signal, deadline.deadlineMs);
  checkTarget(target);
  d.check('rendering the PDF');
  const format = outputFormat(target, d);
  const sharp = await loadSharp(d);
  const pdf = await PdfFile.open(bytes, d);
  try {
    const indexes = pages ?? Array.from({ length: pdf.pageCount }, (_, i) => i);
    const out: PreparedImage[] = [];
    for (const index of indexes) {
      d.check(`rendering PDF page ${index + 1} of ${pdf.pageCount}`);
      let raw = pdf.render(index, {
        dpi: RENDER_MAX_DPI,
        maxLongSide: target.maxLongSide,
        maxPixels: RENDER_MAX_PIXELS,
        colour: 'rgb',
      });
      // mupdf rounds the page box outwards, which can add a pixel past maxLongSide.
      const fit = fitInside(target.maxLongSide);
      if (fit !== undefined && Math.max(raw.width, raw.height) > target.maxLongSide) {
        const scaled = fromRaw(sharp, raw).resize(fit).raw();
        const { data, info } = await runSharp(scaled, d, 'scaling the page', 'scaled', 'pixels');
        raw = { data, width: info.width, height: info.height, channels: info.channels };
      }
      out.push(await encodeWithin(sharp, raw, format, target.maxBytes, d));
    }
    return out;
  } finally {
    pdf.close();
  }
}

/** The PDF's text layer per page (empty string for a page without one). */
export async function pdfTextLayer(bytes: Uint8Array, deadline: MediaDeadline): Promise<string[]> {
  const d = new Deadline(deadline.signal, deadline.deadlineMs);
  d.check('reading the PDF');
  const pdf = await PdfFile.open(bytes, d);
  try {
    const texts: string[] = [];
    for (let i = 0; i < pdf.pageCount; i++) {
      d.check(`reading PDF page ${i + 1} of ${pdf.pageCount}`);
      texts.push(pdf.text(i).trim());
    }
    return texts;
  } finally {
    pdf.close();
  }
}

/**
 * The words of the PDF's text layer with their boxes, for the pages (1-based; all when omitted) that have a text layer
 * (`hasTextLayer`); a page without one (a scan) is left out, not listed empty: no one has read it yet.
 */
export async function pdfWords(
  bytes: Uint8Array,
  deadline: MediaDeadline,
  pages?: readonly number[],
): Promise<PageWords[]> {
  const d = new Deadline(deadline.signal, deadline.deadlineMs);
  d.check('reading the PDF');
  const pdf = await PdfFile.open(bytes, d);
  try {
    const wanted = pages ?? Array.from({ length: pdf.pageCount }, (_, i) => i + 1);
    const out: PageWords[] = [];
    for (const page of wanted) {
      d.check(`reading the words of PDF page ${page} of ${pdf.pageCount}`);
      const { text, words } = pdf.textAndWords(page - 1);
      if (hasTextLayer(text)) out.push({ page, source: 'text-layer', words });
    }
    return out;
  } finally {
    pdf.close();
  }
}

/** A page with fewer visible characters than this has no real text layer (a scan, a photo): it needs OCR. */
export const MIN_TEXT_LAYER_CHARS = 20;

/** True when a page's text layer is real text rather than a scan's stray marks. */
export function hasTextLayer(pageText: string): boolean {
  return pageText.replace(/\s/g, '').length >= MIN_TEXT_LAYER_CHARS;
}
