/**
 * Where a PDF run's page images live in the uploads bucket: the worker writes them (shared/worker/page-previews.ts),
 * `GET /v1/runs/{jobId}/file?page=N` reads them (shared/runs/file-url.ts). One key per page, derived from the run
 * alone, so the reader needs no record of what was written: a missing object is a page without a preview.
 * Not to undo: the keys sit under `uploadsBucket.previewsPrefix`, the only prefix the worker may write and the one
 * the bucket's lifecycle expires with the uploads' retention (lib/stateful-stack.ts).
 */
import { uploadsBucket } from '../infra/resources.js';

/** The content type every page image is stored and served with. */
export const PAGE_PREVIEW_TYPE = 'image/jpeg';

/** S3 user metadata (`x-amz-meta-…`) on each page image: its size in pixels, for drawing boxes before it loads. */
export const PAGE_PREVIEW_METADATA = { width: 'width', height: 'height' } as const;

/** The key of page `page` (1-based) of a run's page images: `previews/{tenantId}/{jobId}/page-{page}.jpg`. */
export function pagePreviewKey(run: { tenantId: string; jobId: string }, page: number): string {
  if (!Number.isInteger(page) || page < 1) throw new Error(`page ${page} is not a 1-based page number`);
  return `${uploadsBucket.previewsPrefix}${run.tenantId}/${run.jobId}/page-${page}.jpg`;
}
