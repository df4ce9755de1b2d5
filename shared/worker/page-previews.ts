/**
 * Page images of a PDF run, for drawing its fields' boxes in the dashboard (issue #18 item 5): the worker renders the
 * pages that have a boxed field (mupdf, JPEG, long side PREVIEW_LONG_SIDE) and stores each in the uploads bucket
 * under `previews/{tenantId}/{jobId}/page-{n}.jpg` (shared/uploads/page-previews.ts), where `GET
 * /v1/runs/{jobId}/file?page=N` finds it. They expire with the uploads (same lifecycle, same retention).
 * Not to undo:
 * - Evidence never fails a run: `storePagePreviews` never throws; a page that cannot be rendered or stored, or the
 *   deadline, ends it with the pages stored so far (logged).
 * - Bounded: at most PREVIEW_MAX_PAGES pages (the lowest), each rendered and stored before the next starts, so the
 *   deadline leaves every page stored until then usable. Each page opens the PDF again (renderPdfPages): a copy of
 *   the file per page, at most PREVIEW_MAX_PAGES times, for a loop that stops cleanly between pages.
 * See docs/decisions.md#page-images-of-pdf-runs.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { s3 } from '../aws/s3.js';
import { uploadsBucketName } from '../aws/s3-urls.js';
import type { FieldEvidence, Fields } from '../fields/types.js';
import type { FileFacts } from '../file-facts.js';
import { log } from '../log.js';
import { type ImageTarget, renderPdfPages } from '../media/index.js';
import { PAGE_PREVIEW_METADATA, PAGE_PREVIEW_TYPE, pagePreviewKey } from '../uploads/page-previews.js';

/** At most this many pages of a run get an image (the lowest pages with a boxed field). */
export const PREVIEW_MAX_PAGES = 10;
/** The long side of a page image in pixels: sharp enough to read a word on a wide screen, ~100–300 KB as JPEG. */
export const PREVIEW_LONG_SIDE = 1600;
/** A page image larger than this is encoded again at a lower JPEG quality (media's encodeWithin). */
export const PREVIEW_MAX_BYTES = 2 * 1024 * 1024;

const TARGET: ImageTarget = {
  formats: [PAGE_PREVIEW_TYPE],
  maxLongSide: PREVIEW_LONG_SIDE,
  maxBytes: PREVIEW_MAX_BYTES,
};

export interface StorePagePreviewsInput {
  /** The run: its key in the bucket, and its file's facts (only a PDF gets page images). */
  run: { jobId: string; tenantId: string; file: Pick<FileFacts, 'kind' | 'pages'> };
  /** The whole PDF. */
  bytes: Uint8Array;
  /** 1-based pages of the whole document; repeats and pages outside the file are ignored. */
  pages: readonly number[];
  /** Epoch ms after which no page is started (a page being rendered then is abandoned). */
  deadlineMs: number;
}

/**
 * The pages (1-based, ascending, each once) on which some field of `fields` has a box: its own, or one of its items'
 * fields (an array of objects). The pages to ask `storePagePreviews` for.
 */
export function pagesWithBoxes(fields: Fields): number[] {
  const pages = new Set<number>();
  const visit = (evidence: FieldEvidence | undefined): void => {
    if (!evidence) return;
    // A box without a page is on page 1, as the dashboard draws it.
    const page = evidence.page ?? 1;
    if (evidence.bbox !== undefined && Number.isInteger(page) && page >= 1) pages.add(page);
    for (const item of evidence.items ?? []) for (const sub of Object.values(item)) visit(sub);
  };
  for (const evidence of Object.values(fields)) visit(evidence);
  return [...pages].sort((a, b) => a - b);
}

/**
 * Renders `pages` of a PDF run and stores each as a JPEG page image; returns the pages stored, ascending. At most
 * PREVIEW_MAX_PAGES pages (the lowest), none after the deadline. Nothing for a file that is not a PDF. Never throws.
 */
export async function storePagePreviews(input: StorePagePreviewsInput): Promise<number[]> {
  const { run } = input;
  if (run.file.kind !== 'pdf') return [];
  const count = Math.max(1, run.file.pages);
  const wanted = [...new Set(input.pages)]
    .filter((page) => Number.isInteger(page) && page >= 1 && page <= count)
    .sort((a, b) => a - b)
    .slice(0, PREVIEW_MAX_PAGES);
  const stored: number[] = [];
  const deadline = { signal: new AbortController().signal, deadlineMs: input.deadlineMs };
  try {
    for (const page of wanted) {
      if (Date.now() >= input.deadlineMs) {
        log.warn('page previews stopped at the deadline', { jobId: run.jobId, stored, asked: wanted });
        break;
      }
      const [image] = await renderPdfPages(input.bytes, TARGET, deadline, [page - 1]);
      if (!image) throw new Error(`page ${page} was not rendered`);
      await s3().send(
        new PutObjectCommand({
          Bucket: uploadsBucketName(),
          Key: pagePreviewKey(run, page),
          Body: image.bytes,
          ContentType: image.mime,
          Metadata: {
            [PAGE_PREVIEW_METADATA.width]: String(image.width),
            [PAGE_PREVIEW_METADATA.height]: String(image.height),
          },
        }),
      );
      stored.push(page);
    }
  } catch (error: unknown) {
    log.warn('page previews stopped', { jobId: run.jobId, stored, asked: wanted, error: String(error) });
  }
  return stored;
}
