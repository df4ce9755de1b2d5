/**
 * Images for providers: decode (HEIC through ./libheif.ts, the rest through sharp), turn upright, downscale to what
 * the provider is worth sending, and encode until the bytes fit its limit.
 * Not to undo: pixel caps are enforced from the header before decoding, and every sharp call races the deadline and
 * gets sharp's own timeout. sharp and libheif load on first use. More: docs/decisions.md#images-for-providers.
 */
import type { OutputInfo, Sharp, SharpConstructor } from 'sharp';
import type { SupportedMime } from '../file-facts.js';
import { ProviderFailure } from '../task.js';
import { Deadline } from './deadline.js';
import { type HeifFile, type HeifPixels, type Libheif, libheif, openHeif } from './libheif.js';
import type { ImageMime, ImageTarget, MediaDeadline, PreparedImage } from './types.js';

/** Images larger than this are refused before decoding (sharp `limitInputPixels`; HEIC checked from its header). */
export const MAX_INPUT_PIXELS = 100_000_000;
/** JPEG/WebP qualities tried in turn before the pixels are shrunk to meet `maxBytes`. */
export const ENCODE_QUALITIES = [85, 72, 60] as const;
/** Shrinking to meet `maxBytes` gives up below this long side: the image would be useless to read. */
const MIN_LONG_SIDE = 32;

/** Decoded pixels, 8 bits per channel, rows packed. */
export interface RawImage {
  data: Buffer;
  width: number;
  height: number;
  channels: 1 | 2 | 3 | 4;
  /** Set when the alpha channel is known to be fully opaque, so it can be dropped. */
  opaque?: boolean;
}

/** Loads sharp (native libvips) on first use. */
export async function loadSharp(d: Deadline): Promise<SharpConstructor> {
  const module = await d.race(import('sharp'), 'loading the image decoder');
  return module.default;
}

/**
 * Where a sharp pipeline starts: `file`, the client's bytes (a failure means the file cannot be decoded:
 * `unreadable_file`); `pixels`, pixels the service decoded itself (a failure is the service's: `server`, retryable).
 */
export type PipelineSource = 'file' | 'pixels';

/**
 * Runs a sharp pipeline to a buffer within the deadline: a timeout (the race, or sharp's own) becomes
 * `ProviderFailure('timeout')`, any other sharp error an `unreadable_file` failure ("the image cannot be <what>") when
 * the pipeline reads the client's file (decoding is lazy: a damaged file fails here whatever the stage), or a
 * `server` failure when it reads pixels already decoded.
 */
export async function runSharp(
  pipeline: Sharp,
  d: Deadline,
  stage: string,
  what = 'decoded',
  source: PipelineSource = 'file',
): Promise<{ data: Buffer; info: OutputInfo }> {
  try {
    return await d.race(pipeline.timeout({ seconds: d.sharpSeconds() }).toBuffer({ resolveWithObject: true }), stage);
  } catch (error) {
    if (error instanceof ProviderFailure) throw error;
    if (error instanceof Error && /timeout/i.test(error.message)) throw d.failure(stage);
    const reason = error instanceof Error ? ` (${error.message})` : '';
    const message = `the image cannot be ${what}${reason}`;
    throw source === 'file' ? d.fileFailure(message, error) : d.serviceFailure(message, error);
  }
}

/** Runs a pipeline to raw 8-bit pixels. */
async function toRaw(pipeline: Sharp, d: Deadline, stage: string, source: PipelineSource): Promise<RawImage> {
  const { data, info } = await runSharp(pipeline.raw(), d, stage, 'decoded', source);
  return { data, width: info.width, height: info.height, channels: info.channels };
}

/** A sharp pipeline reading raw pixels. */
export function fromRaw(sharp: SharpConstructor, raw: RawImage): Sharp {
  return sharp(raw.data, { raw: { width: raw.width, height: raw.height, channels: raw.channels } });
}

/** `resize` options for "long side at most `maxLongSide`, never enlarged"; none when unbounded. */
export function fitInside(maxLongSide: number): Parameters<Sharp['resize']>[0] | undefined {
  if (!Number.isFinite(maxLongSide)) return undefined;
  const side = Math.max(1, Math.floor(maxLongSide));
  return { width: side, height: side, fit: 'inside', withoutEnlargement: true };
}

// ---------------------------------------------------------------------------------------------------------------
// HEIC
// ---------------------------------------------------------------------------------------------------------------

/** A HEIC file whose container has been parsed: the primary image's dimensions are known, no pixel decoded yet. */
export interface HeicImage {
  width: number;
  height: number;
  /** Decodes the pixels (RGB; RGBA with `opaque` set when alpha is all 255) and frees the decoder. */
  decode(): Promise<RawImage>;
  /** Frees the decoder without decoding. */
  dispose(): void;
}

/** Parses a HEIC container and checks its dimensions against MAX_INPUT_PIXELS before anything is decoded. */
export async function openHeic(bytes: Uint8Array, d: Deadline): Promise<HeicImage> {
  d.check('reading the HEIC image');
  let lib: Libheif;
  try {
    lib = libheif();
  } catch (error) {
    throw new ProviderFailure('server', `${d.label}: the HEIC decoder cannot be loaded`, { cause: error });
  }
  let file: HeifFile;
  try {
    file = openHeif(bytes, lib);
  } catch (error) {
    throw d.fileFailure('the HEIC image cannot be read', error);
  }
  const { width, height } = file;
  if (width < 1 || height < 1) {
    file.dispose();
    throw d.fileFailure('the HEIC file contains no image');
  }
  if (width * height > MAX_INPUT_PIXELS) {
    file.dispose();
    throw d.fileFailure(`the HEIC image is ${width} x ${height}, over the ${MAX_INPUT_PIXELS} pixel limit`);
  }
  return {
    width,
    height,
    dispose: () => file.dispose(),
    async decode(): Promise<RawImage> {
      try {
        d.check('decoding the HEIC image');
        let pixels: HeifPixels;
        try {
          pixels = file.decode();
        } catch (error) {
          throw d.fileFailure('the HEIC image cannot be decoded', error);
        }
        d.check('decoding the HEIC image');
        const { data, channels } = pixels;
        return { data, width: pixels.width, height: pixels.height, channels, opaque: channels === 4 && opaque(data) };
      } finally {
        file.dispose();
      }
    },
  };
}

/** True when every alpha byte of packed RGBA is 255 (camera photos): the alpha channel can go (~15 ms for 12 MP). */
function opaque(rgba: Buffer): boolean {
  for (let i = 3; i < rgba.length; i += 4) if (rgba[i] !== 255) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------------------------
// Decoding and encoding
// ---------------------------------------------------------------------------------------------------------------

/**
 * A sharp pipeline over the image with EXIF orientation applied (pixels upright, no orientation tag on output) and
 * its long side downscaled to at most `maxLongSide` (never enlarged). HEIC is decoded first (pixel cap from the
 * header); other formats are refused by sharp past MAX_INPUT_PIXELS before decoding.
 */
export async function uprightImage(
  bytes: Uint8Array,
  mime: Exclude<SupportedMime, 'application/pdf'>,
  d: Deadline,
  maxLongSide: number,
): Promise<Sharp> {
  if (bytes.byteLength === 0) throw d.fileFailure('the image is empty');
  const raw = mime === 'image/heic' ? await (await openHeic(bytes, d)).decode() : undefined;
  return openPipeline(await loadSharp(d), bytes, raw, maxLongSide);
}

/** sharp over decoded HEIC pixels, or over encoded bytes (pixel-capped, EXIF-oriented); then the downscale. */
function openPipeline(
  sharp: SharpConstructor,
  bytes: Uint8Array,
  raw: RawImage | undefined,
  maxLongSide: number,
): Sharp {
  const pipeline =
    raw === undefined
      ? sharp(bytes, { limitInputPixels: MAX_INPUT_PIXELS, failOn: 'error' }).autoOrient()
      : raw.opaque === true
        ? fromRaw(sharp, raw).removeAlpha()
        : fromRaw(sharp, raw);
  const fit = fitInside(maxLongSide);
  return fit === undefined ? pipeline : pipeline.resize(fit);
}

/** The format to encode to: JPEG when accepted, else WebP, else PNG; a HEIC-only target cannot be encoded for. */
export function outputFormat(target: ImageTarget, d: Deadline): Exclude<ImageMime, 'image/heic'> {
  for (const mime of ['image/jpeg', 'image/webp', 'image/png'] as const) if (target.formats.includes(mime)) return mime;
  throw d.clientFailure('the provider accepts only HEIC, which cannot be encoded here');
}

/** Throws on a target no image can meet (a caller's bug, not the file's fault). */
export function checkTarget(target: ImageTarget): void {
  if (target.formats.length === 0) throw new TypeError('media: the image target lists no formats');
  if (!(target.maxLongSide >= 1)) throw new TypeError(`media: maxLongSide must be ≥ 1, got ${target.maxLongSide}`);
  if (!(target.maxBytes >= 1)) throw new TypeError(`media: maxBytes must be ≥ 1, got ${target.maxBytes}`);
}

function encoder(pipeline: Sharp, raw: RawImage, mime: Exclude<ImageMime, 'image/heic'>, quality: number): Sharp {
  switch (mime) {
    case 'image/jpeg':
      // JPEG has no alpha: transparent areas become white (paper), not black.
      return (raw.channels % 2 === 0 ? pipeline.flatten({ background: '#ffffff' }) : pipeline).jpeg({ quality });
    case 'image/webp':
      return pipeline.webp({ quality });
    case 'image/png':
      return pipeline.png({ compressionLevel: 6, adaptiveFiltering: true });
  }
}

/**
 * Encodes raw pixels to `mime` in at most `maxBytes`: JPEG/WebP at qualities 85, 72, 60; then (and for PNG, whose
 * size has no quality knob) the pixels are shrunk by the estimated ratio and encoded again, down to MIN_LONG_SIDE.
 */
export async function encodeWithin(
  sharp: SharpConstructor,
  raw: RawImage,
  mime: Exclude<ImageMime, 'image/heic'>,
  maxBytes: number,
  d: Deadline,
): Promise<PreparedImage> {
  let current = raw;
  // PNG is lossless: one encode per size (its quality value is unused).
  let qualities: readonly number[] = mime === 'image/png' ? [0] : ENCODE_QUALITIES;
  for (;;) {
    let size = 0;
    for (const quality of qualities) {
      d.check('encoding the image');
      const { data, info } = await runSharp(
        encoder(fromRaw(sharp, current), current, mime, quality),
        d,
        'encoding the image',
        'encoded',
        'pixels',
      );
      if (data.byteLength <= maxBytes) return { bytes: data, mime, width: info.width, height: info.height };
      size = data.byteLength;
    }
    // Encoded size is roughly proportional to the pixel count; aim a little under and never shrink by less than 10%.
    const ratio = Math.min(0.9, Math.max(0.2, Math.sqrt(maxBytes / size) * 0.95));
    const width = Math.max(1, Math.floor(current.width * ratio));
    const height = Math.max(1, Math.floor(current.height * ratio));
    if (Math.max(width, height) < MIN_LONG_SIDE) {
      throw d.clientFailure(`the image cannot be encoded in ${maxBytes} bytes`);
    }
    current = await toRaw(
      fromRaw(sharp, current).resize(width, height, { fit: 'fill' }),
      d,
      'shrinking the image',
      'pixels',
    );
    qualities = qualities.slice(-1);
  }
}

/** Runs a decoding pipeline to raw sRGB pixels (CMYK and 16-bit inputs converted, so the bytes mean RGB(A)). */
async function decodeToRaw(pipeline: Sharp, d: Deadline): Promise<RawImage> {
  return toRaw(pipeline.toColourspace('srgb'), d, 'decoding the image', 'file');
}

/** HEIC → JPEG when the target does not take HEIC; EXIF orientation applied; downscaled to maxLongSide; re-encoded until ≤ maxBytes; pixel caps. */
export async function prepareImage(
  bytes: Uint8Array,
  mime: SupportedMime,
  target: ImageTarget,
  deadline: MediaDeadline,
): Promise<PreparedImage> {
  const d = new Deadline(deadline.signal, deadline.deadlineMs);
  checkTarget(target);
  d.check('preparing the image');
  if (mime === 'application/pdf') throw d.clientFailure('a PDF is not an image (render its pages instead)');
  if (bytes.byteLength === 0) throw d.fileFailure('the image is empty');

  let raw: RawImage | undefined;
  if (mime === 'image/heic') {
    const heic = await openHeic(bytes, d);
    // Sent as it is when the provider takes HEIC and it already fits: no decode, no generation loss.
    if (
      target.formats.includes('image/heic') &&
      Math.max(heic.width, heic.height) <= target.maxLongSide &&
      bytes.byteLength <= target.maxBytes
    ) {
      heic.dispose();
      return { bytes, mime: 'image/heic', width: heic.width, height: heic.height };
    }
    try {
      outputFormat(target, d); // a HEIC-only target fails here, before the expensive decode
    } catch (error) {
      heic.dispose();
      throw error;
    }
    raw = await heic.decode();
  }
  const format = outputFormat(target, d);
  const sharp = await loadSharp(d);
  const pixels = await decodeToRaw(openPipeline(sharp, bytes, raw, target.maxLongSide), d);
  return encodeWithin(sharp, pixels, format, target.maxBytes, d);
}
