/** What the service knows about an uploaded file after inspecting its bytes (never the client's word). */

export const SUPPORTED_MIME_TYPES = ['image/jpeg', 'image/png', 'image/heic', 'application/pdf'] as const;
export type SupportedMime = (typeof SUPPORTED_MIME_TYPES)[number];

/** Facts recorded on the run at creation; the estimate and the plan are computed from them. */
export interface FileFacts {
  mime: SupportedMime;
  kind: 'image' | 'pdf';
  sizeBytes: number;
  /** Pixel dimensions for images (as stored, before EXIF orientation). Absent for PDFs. */
  width?: number;
  height?: number;
  /** 1 for images; the page count for PDFs. */
  pages: number;
  /**
   * A PDF whose every page carries a text layer, when known for sure: only a client's declared file for an estimate
   * (POST /v1/estimates) says so; inspection leaves it unset and the estimate guesses from the bytes per page.
   */
  textLayer?: boolean;
}
