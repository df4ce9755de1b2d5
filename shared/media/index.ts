/**
 * Media preparation shared by every provider: an uploaded image or PDF turned into what a provider's API accepts.
 *
 * - `prepareImage`: HEIC decoded when the provider does not take it, EXIF orientation applied, downscaled to the
 *   provider's useful long side, encoded (JPEG unless the provider takes only PNG) until it fits the byte limit.
 * - `renderPdfPages`: PDF pages rasterised by mupdf within the same kind of target.
 * - `pdfTextLayer`: the text a PDF carries, page by page.
 *
 * Every function takes the attempt's deadline: once it passes (or the signal aborts) the work stops with
 * `ProviderFailure('timeout')`; a file that cannot be decoded fails with `ProviderFailure('unreadable_file')`. sharp, mupdf and
 * libheif are loaded on first use, so importing this module costs nothing.
 */
export type { SupportedMime } from '../file-facts.js';
export { Deadline } from './deadline.js';
export { ENCODE_QUALITIES, MAX_INPUT_PIXELS, prepareImage } from './image.js';
export {
  hasTextLayer,
  MIN_TEXT_LAYER_CHARS,
  PdfFile,
  pdfTextLayer,
  RENDER_MAX_DPI,
  RENDER_MAX_PIXELS,
  renderPdfPages,
} from './pdf.js';
export type { ImageMime, ImageTarget, MediaDeadline, PreparedImage } from './types.js';
