/**
 * GET /v1/runs/{jobId}/file: a short-lived address to read a run's uploaded file, for the dashboard's preview.
 * The address is a presigned S3 GET for that one object; it carries no API key, so it can sit in an <img src>.
 */
import { objectExists, presignObject } from '../aws/s3-urls.js';
import { config } from '../config.js';
import type { FileUrlResponse } from '../contract.js';
import { NotFoundError, RunFileExpiredError } from '../errors.js';
import { getRunForTenant } from '../store/runs.js';

/** Long enough to load a preview, short enough that a leaked address is soon useless. */
export const FILE_URL_TTL_SECONDS = 300;

/** `inline` so the browser shows it; the name is reduced to safe characters (it came from the client). */
function contentDisposition(fileName: string | undefined): string {
  const safe = fileName?.replace(/[^A-Za-z0-9._ -]/g, '_').slice(0, 200);
  return safe ? `inline; filename="${safe}"` : 'inline';
}

export async function fileUrl(tenantId: string, jobId: string, now = new Date()): Promise<FileUrlResponse> {
  const run = await getRunForTenant(jobId, tenantId);
  if (!run) throw new NotFoundError('run', jobId);

  // Past the upload's retention the file is not served, even while the bucket's lifecycle (which counts whole days and
  // leaves room for runs still queued) has not deleted it yet.
  if (run.uploadExpiresAtEpoch !== undefined && now.getTime() >= run.uploadExpiresAtEpoch * 1000) {
    throw new RunFileExpiredError(jobId, config.uploadRetentionHours);
  }
  // Presigning never fails for a missing object, so check first: "expired" is a clearer answer than a broken image.
  if (!(await objectExists(run.objectKey))) throw new RunFileExpiredError(jobId, config.uploadRetentionHours);

  const url = await presignObject({
    method: 'GET',
    key: run.objectKey,
    query: {
      // Stored as application/octet-stream; answer with the type found by inspection so the browser can render it.
      'response-content-disposition': contentDisposition(run.fileName),
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
