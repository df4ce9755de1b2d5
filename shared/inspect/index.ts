/**
 * Upload inspection: what the stored bytes really are, and whether the worker can process them, decided before a run
 * is accepted. Reads only what it needs through ranged reads (the head, the tail, a few structures), never decodes
 * pixels and loads no native modules, so it fits the small API function.
 *
 * Order of checks (each failure is the contract's named error): empty → real type from magic bytes (the file name is
 * never consulted) → size limit for the kind → format structure (truncation, encryption, pixel and page limits).
 */
import { fileTypeFromBuffer } from 'file-type/core';
import { CorruptFileError, FileTooLargeError, TooManyPagesError, UnsupportedFileTypeError } from '../errors.js';
import type { FileFacts, SupportedMime } from '../file-facts.js';
import { ftypBrands, HEIC_BRANDS, hasHevcItem, inspectHeic } from './heic.js';
import { inspectJpeg } from './jpeg.js';
import { inspectPdf } from './pdf.js';
import { inspectPng } from './png.js';
import { ByteSource, type Dimensions, PastEndError, type RangeReader, SourceReadError } from './source.js';

export type { RangeReader } from './source.js';

/** The limits inspection enforces (config.limits supplies them in production). */
export interface InspectLimits {
  imageMaxBytes: number;
  imageMaxPixels: number;
  pdfMaxBytes: number;
  pdfMaxPages: number;
}

// file-type's own recommendation: enough for every signature it knows.
const HEAD_BYTES = 4100;

/**
 * Inspects a stored upload of `sizeBytes` bytes and returns its facts, or throws CorruptFileError (reasons `empty`,
 * `truncated`, `encrypted`, `pixel_limit`, `unreadable`, `implausible`), UnsupportedFileTypeError, FileTooLargeError or
 * TooManyPagesError. Errors from `read` itself propagate unchanged.
 */
export async function inspectUpload(read: RangeReader, sizeBytes: number, limits: InspectLimits): Promise<FileFacts> {
  if (!Number.isSafeInteger(sizeBytes) || sizeBytes < 0) throw new RangeError(`Invalid sizeBytes ${sizeBytes}`);
  if (sizeBytes === 0) throw new CorruptFileError('empty', 'File is empty (0 bytes)');
  // Generous for any honest file (a PDF rebuild scans it once) yet bounded whatever the bytes say.
  const src = new ByteSource(read, sizeBytes, 3 * sizeBytes + 4 * 1024 * 1024);
  try {
    return await inspect(src, limits);
  } catch (error) {
    if (error instanceof SourceReadError) throw error.cause;
    if (error instanceof PastEndError) {
      throw new CorruptFileError('truncated', 'File ends before its structure does (the upload is incomplete)');
    }
    throw error;
  }
}

async function inspect(src: ByteSource, limits: InspectLimits): Promise<FileFacts> {
  const sizeBytes = src.size;
  const mime = await detectMime(src);

  if (mime === 'application/pdf') {
    if (sizeBytes > limits.pdfMaxBytes) throw new FileTooLargeError(sizeBytes, limits.pdfMaxBytes);
    const pages = await inspectPdf(src, limits.pdfMaxBytes);
    if (pages > limits.pdfMaxPages) throw new TooManyPagesError(pages, limits.pdfMaxPages);
    return { mime, kind: 'pdf', sizeBytes, pages };
  }

  if (sizeBytes > limits.imageMaxBytes) throw new FileTooLargeError(sizeBytes, limits.imageMaxBytes);
  const { width, height } = await imageDimensions(src, mime);
  if (width === 0 || height === 0) {
    throw new CorruptFileError('unreadable', `Image declares a size of ${width}x${height}`, { width, height });
  }
  checkPixels(width, height, limits);
  return { mime, kind: 'image', sizeBytes, width, height, pages: 1 };
}

/** Refuses an image above the pixel limit (CorruptFileError `pixel_limit`). */
function checkPixels(width: number, height: number, limits: InspectLimits): void {
  // A small file can declare a huge canvas (a "pixel bomb"); decoding it would exhaust the worker's memory.
  if (width * height > limits.imageMaxPixels) {
    const megapixels = Math.round((width * height) / 100_000) / 10;
    const limitMegapixels = limits.imageMaxPixels / 1_000_000;
    throw new CorruptFileError(
      'pixel_limit',
      `Image is ${width}x${height} (${megapixels} MP); the limit is ${limitMegapixels} MP`,
      { width, height, megapixels, limitMegapixels },
    );
  }
}

/** A file as a client describes it (POST /v1/estimates), without its bytes. */
export interface DeclaredFile {
  mime: SupportedMime;
  sizeBytes: number;
  pages?: number | undefined;
  width?: number | undefined;
  height?: number | undefined;
  textLayer?: boolean | undefined;
}

/**
 * The facts of a declared file, refused by the same limits an upload of it would meet (FileTooLargeError,
 * TooManyPagesError, CorruptFileError `pixel_limit`), in the same order. The client's word is taken for the rest:
 * nothing is held against an estimate.
 */
export function declaredFacts(file: DeclaredFile, limits: InspectLimits): FileFacts {
  if (file.mime === 'application/pdf') {
    if (file.sizeBytes > limits.pdfMaxBytes) throw new FileTooLargeError(file.sizeBytes, limits.pdfMaxBytes);
    const pages = file.pages ?? 1;
    if (pages > limits.pdfMaxPages) throw new TooManyPagesError(pages, limits.pdfMaxPages);
    return {
      mime: file.mime,
      kind: 'pdf',
      sizeBytes: file.sizeBytes,
      pages,
      ...(file.textLayer !== undefined ? { textLayer: file.textLayer } : {}),
    };
  }
  if (file.sizeBytes > limits.imageMaxBytes) throw new FileTooLargeError(file.sizeBytes, limits.imageMaxBytes);
  if (file.width !== undefined && file.height !== undefined) checkPixels(file.width, file.height, limits);
  return {
    mime: file.mime,
    kind: 'image',
    sizeBytes: file.sizeBytes,
    pages: 1,
    ...(file.width !== undefined ? { width: file.width } : {}),
    ...(file.height !== undefined ? { height: file.height } : {}),
  };
}

/** The supported type the magic bytes say this is, or UnsupportedFileTypeError. */
async function detectMime(src: ByteSource): Promise<SupportedMime> {
  const head = await src.read(0, HEAD_BYTES);
  const detected = await fileTypeFromBuffer(head);
  switch (detected?.mime) {
    case 'image/jpeg':
    case 'image/png':
    case 'application/pdf':
    case 'image/heic':
      return detected.mime;
    // An animated PNG is a valid PNG whose first frame is the default image every decoder shows.
    case 'image/apng':
      return 'image/png';
  }
  // file-type calls every `mif1`-branded file generic HEIF; it is HEIC when it says so in its brands or when its
  // images are HEVC-coded (AVIF-in-HEIF and others are not).
  if (
    detected?.ext === 'heic' &&
    (ftypBrands(head).some((brand) => HEIC_BRANDS.has(brand)) || (await hasHevcItem(src)))
  ) {
    return 'image/heic';
  }
  throw new UnsupportedFileTypeError(
    `File content is ${detected ? `${detected.mime} (.${detected.ext})` : 'not a recognised type'}; only JPEG, PNG, HEIC and PDF are supported`,
    { detected: detected?.mime ?? null },
  );
}

async function imageDimensions(src: ByteSource, mime: Exclude<SupportedMime, 'application/pdf'>): Promise<Dimensions> {
  switch (mime) {
    case 'image/jpeg':
      return inspectJpeg(src);
    case 'image/png':
      return inspectPng(src);
    case 'image/heic':
      return inspectHeic(src);
  }
}
