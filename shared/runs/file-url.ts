/**
 * GET /v1/runs/{jobId}/file: a short-lived address to read a run's uploaded file, for the dashboard's preview; with
 * `?page=N`, the address of that page's image instead (a PDF run's pages with a boxed field, rendered by the worker:
 * shared/worker/page-previews.ts), so boxes can be drawn on a PDF page as on an image.
 * The address is a presigned S3 GET for that one object; it carries no API key, so it can sit in an <img src>.
 * Not to undo: a page image is served within the upload's retention only, exactly as the file (same 404).
 */
import { headObject, objectExists, presignObject } from '../aws/s3-urls.js';
import { config } from '../config.js';
import type { FileUrlQuery, FileUrlResponse } from '../contract.js';
import { InvalidRequestError, NotFoundError, PagePreviewNotFoundError, RunFileExpiredError } from '../errors.js';
import { getRunForTenant, type RunRecord } from '../store/runs.js';
import { safeFileName } from '../uploads/object-key.js';
import { PAGE_PREVIEW_METADATA, PAGE_PREVIEW_TYPE, pagePreviewKey } from '../uploads/page-previews.js';

/** Long enough to load a preview, short enough that a leaked address is soon useless. */
export const FILE_URL_TTL_SECONDS = 300;

/** `inline` so the browser shows it. */
function contentDisposition(name: string | undefined): string {
  return name ? `inline; filename="${name}"` : 'inline';
}

export async function fileUrl(
  tenantId: string,
  jobId: string,
  query: FileUrlQuery = {},
  now = new Date(),
): Promise<FileUrlResponse> {
  const run = await getRunForTenant(jobId, tenantId);
  if (!run) throw new NotFoundError('run', jobId);
  if (query.page !== undefined && query.page > run.file.pages) {
    throw new InvalidRequestError('Query string failed validation', [
      { path: 'page', message: `the run's file has ${run.file.pages} page${run.file.pages === 1 ? '' : 's'}` },
    ]);
  }

  // Past the upload's retention the file is not served, even while the bucket's lifecycle (which counts whole days and
  // leaves room for runs still queued) has not deleted it yet.
  if (run.uploadExpiresAtEpoch !== undefined && now.getTime() >= run.uploadExpiresAtEpoch * 1000) {
    throw new RunFileExpiredError(jobId, config.uploadRetentionHours);
  }
  if (query.page !== undefined) return pageImageUrl(run, query.page, now);

  // Presigning never fails for a missing object, so check first: "expired" is a clearer answer than a broken image.
  if (!(await objectExists(run.objectKey))) throw new RunFileExpiredError(jobId, config.uploadRetentionHours);

  const url = await presignObject({
    method: 'GET',
    key: run.objectKey,
    query: {
      // Stored as application/octet-stream; answer with the type found by inspection so the browser can render it.
      'response-content-disposition': contentDisposition(safeFileName(run.fileName)),
      'response-content-type': run.file.mime,
      // The version the run was created from: bytes PUT to the address afterwards are not the run's file.
      ...(run.objectIdentity?.versionId !== undefined ? { versionId: run.objectIdentity.versionId } : {}),
    },
    expiresIn: FILE_URL_TTL_SECONDS,
    forClients: true,
  });
  return {
    jobId,
    url,
    expiresAt: new Date(now.getTime() + FILE_URL_TTL_SECONDS * 1000).toISOString(),
    contentType: run.file.mime,
    fileName: run.fileName ?? null,
  };
}

/** A positive whole number from a metadata header, or undefined (an image stored without it). */
function pixels(value: string | null): number | undefined {
  const n = Number(value);
  return value !== null && Number.isInteger(n) && n > 0 ? n : undefined;
}

/** The address of page `page`'s image; 404 when the worker stored none (only pages with a boxed field get one). */
async function pageImageUrl(run: RunRecord, page: number, now: Date): Promise<FileUrlResponse> {
  const key = pagePreviewKey(run, page);
  const head = await headObject(key);
  if (!head) throw new PagePreviewNotFoundError(run.jobId, page);
  const base = safeFileName(run.fileName)?.replace(/\.[^.]*$/, '');
  const url = await presignObject({
    method: 'GET',
    key,
    query: {
      'response-content-disposition': contentDisposition(`${base || 'page'}-page-${page}.jpg`),
      'response-content-type': PAGE_PREVIEW_TYPE,
    },
    expiresIn: FILE_URL_TTL_SECONDS,
    forClients: true,
  });
  const width = pixels(head.get(`x-amz-meta-${PAGE_PREVIEW_METADATA.width}`));
  const height = pixels(head.get(`x-amz-meta-${PAGE_PREVIEW_METADATA.height}`));
  return {
    jobId: run.jobId,
    url,
    expiresAt: new Date(now.getTime() + FILE_URL_TTL_SECONDS * 1000).toISOString(),
    contentType: PAGE_PREVIEW_TYPE,
    fileName: run.fileName ?? null,
    page,
    ...(width !== undefined && height !== undefined ? { width, height } : {}),
  };
}
