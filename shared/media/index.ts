/**
 * Media preparation shared by every provider: turn an uploaded image or PDF into what a provider's API accepts.
 * Implementation in progress — the exported types and signatures below are final.
 */
import type { SupportedMime } from '../file-facts.js';

export type ImageMime = 'image/jpeg' | 'image/png' | 'image/heic' | 'image/webp';

/** What a provider accepts: the image formats it takes, the long side it is worth sending, the byte limit. */
export interface ImageTarget {
  formats: readonly ImageMime[];
  maxLongSide: number;
  maxBytes: number;
}

/** An image ready to send; width/height are those of `bytes` (upright, after any downscale). */
export interface PreparedImage {
  bytes: Uint8Array;
  mime: ImageMime;
  width: number;
  height: number;
}

/** The attempt's deadline (the provider's `InvokeOptions`). */
export interface MediaDeadline {
  signal: AbortSignal;
  deadlineMs: number;
}

/** HEIC → JPEG when the target does not take HEIC; EXIF orientation applied; downscaled to maxLongSide; re-encoded until ≤ maxBytes; pixel caps. */
export async function prepareImage(
  _bytes: Uint8Array,
  _mime: SupportedMime,
  _target: ImageTarget,
  _deadline: MediaDeadline,
): Promise<PreparedImage> {
  throw new Error('shared/media: not implemented yet');
}

/** Renders PDF pages (0-based indexes; all when omitted) to PNG/JPEG images within the target. */
export async function renderPdfPages(
  _bytes: Uint8Array,
  _target: ImageTarget,
  _deadline: MediaDeadline,
  _pages?: number[],
): Promise<PreparedImage[]> {
  throw new Error('shared/media: not implemented yet');
}

/** The PDF's text layer per page (empty string for a page without one). */
export async function pdfTextLayer(_bytes: Uint8Array, _deadline: MediaDeadline): Promise<string[]> {
  throw new Error('shared/media: not implemented yet');
}
