/** The shapes media preparation works in: what a provider accepts, an image ready to send, the attempt's deadline. */
/** An image format a provider may accept. */
export type ImageMime = 'image/jpeg' | 'image/png' | 'image/heic' | 'image/webp';

/** What a provider accepts: the image formats it takes, the long side worth sending (pixels), the byte limit. */
export interface ImageTarget {
  formats: readonly ImageMime[];
  maxLongSide: number;
  maxBytes: number;
}

/** An image ready to send; `width`/`height` are those of `bytes` (upright, after any downscale). */
export interface PreparedImage {
  bytes: Uint8Array;
  mime: ImageMime;
  width: number;
  height: number;
}

/** The attempt's deadline (a provider's `InvokeOptions` fits). */
export interface MediaDeadline {
  signal: AbortSignal;
  deadlineMs: number;
}
