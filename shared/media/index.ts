/**
 * Media preparation shared by every provider: `prepareImage`, `renderPdfPages`, `pdfTextLayer`, `pdfWords`. Every
 * function takes the attempt's deadline (`timeout` once it passes); a file that cannot be decoded fails
 * `unreadable_file`. sharp, mupdf and libheif load on first use, so importing this module costs nothing.
 */
export type { SupportedMime } from '../file-facts.js';
export { Deadline, MAX_TIMER_MS } from './deadline.js';
export { ENCODE_QUALITIES, MAX_INPUT_PIXELS, prepareImage } from './image.js';
export {
  hasTextLayer,
  MIN_TEXT_LAYER_CHARS,
  PdfFile,
  pdfTextLayer,
  pdfWords,
  RENDER_MAX_DPI,
  RENDER_MAX_PIXELS,
  renderPdfPages,
} from './pdf.js';
export type { ImageMime, ImageTarget, MediaDeadline, PreparedImage } from './types.js';
export { relativeBox, unitConfidence } from './words.js';
