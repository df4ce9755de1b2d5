/**
 * Large inputs the benchmark generates once and keeps in bench/results/inputs.tmp/ (ignored by git: `*.tmp`), so a
 * later run reuses them instead of paying for the generation again:
 *
 * - a 12-megapixel HEIC photo (4032 x 3024, an iPhone main-camera frame): a colour gradient with mild noise, drawn by
 *   sharp and encoded by libheif's `heif-enc` (x265, quality 50, as `npm run fixtures` encodes receipt.heic). Noise
 *   keeps the HEVC bitstream at a camera-like size (~3 MB) instead of the few KB a flat gradient would give.
 * - a PDF just under the upload limit (100 MiB by default): a "searchable scan" — every page a letter-size raster (1275 x 1650,
 *   150 dpi) of random noise stored as JPEG (incompressible, so the bytes are real image data, not padding) under an
 *   invisible OCR text layer (text render mode 3, as OCR tools write it), as many pages as fit the size budget.
 *
 * A file is generated into a temporary name and renamed once complete, so an interrupted run never leaves a truncated
 * input behind. Generation is deterministic in shape (sizes, page count), not byte for byte (noise is random).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { access, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { config } from '../shared/config.js';

const run = promisify(execFile);
const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
/** Matches `bench/results/*.tmp` in .gitignore. */
export const INPUTS_DIR = path.join(BENCH_DIR, 'results', 'inputs.tmp');

export const HEIF_ENC = '/usr/bin/heif-enc';
export const HEIC_WIDTH = 4032;
export const HEIC_HEIGHT = 3024;

/** The service's PDF upload limit (LIMIT_PDF_MAX_BYTES) and page limit (LIMIT_PDF_MAX_PAGES), as configured. */
const MiB = 1024 * 1024;
export const PDF_MAX_BYTES = config.limits.pdfMaxBytes;
export const PDF_MAX_PAGES = config.limits.pdfMaxPages;
/** Room kept under the byte limit for everything that is not image data (page objects, text streams, xref). */
const PDF_STRUCTURE_ALLOWANCE = 768 * 1024;
const PAGE_WIDTH_PT = 612;
const PAGE_HEIGHT_PT = 792;
const SCAN_WIDTH_PX = 1275;
const SCAN_HEIGHT_PX = 1650;
const SCAN_JPEG_QUALITY = 40;
const TEXT_LINES_PER_PAGE = 40;

export interface GeneratedInput {
  path: string;
  bytes: number;
  /** True when this run generated it (false: reused from an earlier run). */
  generated: boolean;
  generateMs: number;
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return (await stat(file)).size > 0;
  } catch {
    return false;
  }
}

async function reuse(file: string): Promise<GeneratedInput | undefined> {
  if (!(await exists(file))) return undefined;
  return { path: file, bytes: (await stat(file)).size, generated: false, generateMs: 0 };
}

/** The 12 MP HEIC, or undefined with the reason when heif-enc is not installed. */
export async function heic12mp(): Promise<GeneratedInput | { missing: string }> {
  const file = path.join(INPUTS_DIR, `photo-${HEIC_WIDTH}x${HEIC_HEIGHT}.heic`);
  const cached = await reuse(file);
  if (cached) return cached;
  try {
    await access(HEIF_ENC);
  } catch {
    return { missing: `${HEIF_ENC} not found (libheif-examples / libheif tools)` };
  }
  await mkdir(INPUTS_DIR, { recursive: true });
  const started = performance.now();
  const { default: sharp } = await import('sharp');
  const W = HEIC_WIDTH;
  const H = HEIC_HEIGHT;
  const raw = Buffer.allocUnsafe(W * H * 3);
  const noise = randomBytes(W * H);
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      const i = y * W + x;
      // ±13 levels of noise over smooth gradients: photo-like entropy for the encoder.
      const n = ((noise[i] as number) - 128) * 0.1;
      const o = i * 3;
      raw[o] = Math.max(0, Math.min(255, Math.round((x * 255) / W + n)));
      raw[o + 1] = Math.max(0, Math.min(255, Math.round((y * 255) / H + n)));
      raw[o + 2] = Math.max(0, Math.min(255, Math.round(128 + ((x + y) % 256) / 4 + n)));
    }
  }
  const source = path.join(INPUTS_DIR, 'photo-source.part.png');
  const part = path.join(INPUTS_DIR, 'photo.part.heic');
  try {
    await sharp(raw, { raw: { width: W, height: H, channels: 3 } })
      .png({ compressionLevel: 1 })
      .toFile(source);
    await run(HEIF_ENC, ['-q', '50', '-o', part, source], { maxBuffer: 16 * MiB });
    await rename(part, file);
  } finally {
    await rm(source, { force: true });
    await rm(part, { force: true });
  }
  return { path: file, bytes: (await stat(file)).size, generated: true, generateMs: performance.now() - started };
}

/** Escapes a string for a PDF literal string. */
function pdfString(s: string): string {
  return `(${s.replace(/[\\()]/g, (c) => `\\${c}`)})`;
}

/** A line of plausible OCR text (about 80 characters). */
function textLine(page: number, line: number): string {
  const words = ['invoice', 'amount', 'account', 'payment', 'period', 'balance', 'reference', 'statement'];
  const pick = (k: number) => words[(page * 7 + line * 3 + k) % words.length];
  return `${page}.${line} The ${pick(0)} and ${pick(1)} for the ${pick(2)} are listed with ${pick(3)} number ${1000 + page * 50 + line}.`;
}

/** The scanned-with-OCR PDF at the upload limit (see the file comment); under PDF_MAX_BYTES and PDF_MAX_PAGES. */
export async function pdfAtLimit(): Promise<GeneratedInput & { pages: number }> {
  const file = path.join(INPUTS_DIR, `scan-${Math.floor(PDF_MAX_BYTES / (1024 * 1024))}mib-${PDF_MAX_PAGES}p.pdf`);
  const meta = `${file}.json`;
  const cached = await reuse(file);
  if (cached && (await exists(meta))) {
    const { pages } = JSON.parse(await readFile(meta, 'utf8')) as { pages: number };
    return { ...cached, pages };
  }
  await mkdir(INPUTS_DIR, { recursive: true });
  const started = performance.now();
  const { default: sharp } = await import('sharp');
  const mupdf = await import('mupdf');
  const doc = new mupdf.PDFDocument();
  try {
    const font = doc.addSimpleFont(new mupdf.Font('Helvetica'));
    let imageBytes = 0;
    let pages = 0;
    while (pages < PDF_MAX_PAGES) {
      const jpeg = await sharp(randomBytes(SCAN_WIDTH_PX * SCAN_HEIGHT_PX * 3), {
        raw: { width: SCAN_WIDTH_PX, height: SCAN_HEIGHT_PX, channels: 3 },
      })
        .jpeg({ quality: SCAN_JPEG_QUALITY })
        .toBuffer();
      if (imageBytes + jpeg.byteLength > PDF_MAX_BYTES - PDF_STRUCTURE_ALLOWANCE) break;
      imageBytes += jpeg.byteLength;
      pages += 1;
      const image = doc.addImage(new mupdf.Image(jpeg));
      const lines = Array.from({ length: TEXT_LINES_PER_PAGE }, (_, i) => textLine(pages, i + 1));
      // Invisible text (3 Tr) over the scan, one line every 17 pt, as OCR tools lay out a searchable PDF.
      const text = lines.map((l, i) => `1 0 0 1 54 ${PAGE_HEIGHT_PT - 60 - i * 17} Tm ${pdfString(l)} Tj`).join('\n');
      const content = `q ${PAGE_WIDTH_PT} 0 0 ${PAGE_HEIGHT_PT} 0 0 cm /Im1 Do Q\nBT 3 Tr /F1 10 Tf\n${text}\nET\n`;
      const page = doc.addPage(
        [0, 0, PAGE_WIDTH_PT, PAGE_HEIGHT_PT],
        0,
        { XObject: { Im1: image }, Font: { F1: font } },
        content,
      );
      doc.insertPage(-1, page);
    }
    const bytes = Buffer.from(doc.saveToBuffer('compress=yes').asUint8Array());
    if (bytes.byteLength > PDF_MAX_BYTES) {
      throw new Error(`generated PDF is ${bytes.byteLength} bytes, over the ${PDF_MAX_BYTES}-byte limit`);
    }
    const part = `${file}.part`;
    await writeFile(part, bytes);
    await rename(part, file);
    await writeFile(meta, `${JSON.stringify({ pages, bytes: bytes.byteLength })}\n`);
    return { path: file, bytes: bytes.byteLength, pages, generated: true, generateMs: performance.now() - started };
  } finally {
    doc.destroy();
  }
}
