/**
 * GET /v1/runs/{jobId}/file: a short-lived address to read a run's uploaded file, for the dashboard's preview.
 * The address is a presigned S3 GET for that one object; it carries no API key, so it can sit in an <img src>.
 */
import { GetObjectCommand, HeadObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { isMissingObject, s3, s3Presigner } from '../aws/s3.js';
import { config, resourceName } from '../config.js';
import type { FileUrlResponse } from '../contract.js';
import { NotFoundError, RunFileExpiredError } from '../errors.js';
import { uploadsBucket } from '../infra/resources.js';
import { getRunForTenant } from '../store/runs.js';

const BUCKET = resourceName(uploadsBucket.envVar);

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

  // Presigning never fails for a missing object, so check first: "expired" is a clearer answer than a broken image.
  try {
    await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: run.objectKey }));
  } catch (error) {
    if (isMissingObject(error)) throw new RunFileExpiredError(jobId, config.uploadRetentionHours);
    throw error;
  }

  const url = await getSignedUrl(
    s3Presigner,
    new GetObjectCommand({
      Bucket: BUCKET,
      Key: run.objectKey,
      // Stored as application/octet-stream; answer with the type found by inspection so the browser can render it.
      ResponseContentType: run.file.mime,
      ResponseContentDisposition: contentDisposition(run.fileName),
    }),
    { expiresIn: FILE_URL_TTL_SECONDS },
  );
  return {
    jobId,
    url,
    expiresAt: new Date(now.getTime() + FILE_URL_TTL_SECONDS * 1000).toISOString(),
    contentType: run.file.mime,
    fileName: run.fileName ?? null,
  };
}
