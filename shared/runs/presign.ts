/** Presign: reserve an upload slot and hand out a PUT URL signed for exactly the declared length and content type. */
import { randomUUID } from 'node:crypto';
import { presignObject } from '../aws/s3-urls.js';
import { config } from '../config.js';
import type { PresignRequest, PresignResponse } from '../contract.js';
import { FileTooLargeError, UnsupportedFileTypeError } from '../errors.js';
import { putUpload } from '../store/uploads.js';
import { uploadObjectKey } from '../uploads/object-key.js';

const EXTENSION_KIND: Record<string, 'image' | 'pdf'> = {
  '.jpg': 'image',
  '.jpeg': 'image',
  '.png': 'image',
  '.heic': 'image',
  '.pdf': 'pdf',
};

/** The byte limit that applies to a file name's kind (the real type is checked again at run creation). */
export function maxBytesFor(fileName: string): number {
  const dot = fileName.lastIndexOf('.');
  const kind = dot >= 0 ? EXTENSION_KIND[fileName.slice(dot).toLowerCase()] : undefined;
  if (!kind) {
    throw new UnsupportedFileTypeError(`File extension of "${fileName}" is not supported`, { fileName });
  }
  return kind === 'pdf' ? config.limits.pdfMaxBytes : config.limits.imageMaxBytes;
}

export async function presignUpload(
  tenantId: string,
  request: PresignRequest,
  now = new Date(),
): Promise<PresignResponse> {
  // The contract refuses control and bidirectional formatting characters: the name is stored as given.
  const fileName = request.fileName;
  const maxBytes = maxBytesFor(fileName);
  if (request.contentLength > maxBytes) throw new FileTooLargeError(request.contentLength, maxBytes);

  const uploadId = `upl_${randomUUID().replaceAll('-', '')}`;
  // Ends in the file's name: so does every address of it, which browsers title and name downloads after.
  const objectKey = uploadObjectKey(tenantId, uploadId, fileName);
  const expiresAt = new Date(now.getTime() + config.uploadUrlTtlSeconds * 1000);
  const usableUntil = new Date(now.getTime() + config.uploadRetentionHours * 3600 * 1000);

  await putUpload({
    uploadId,
    tenantId,
    objectKey,
    fileName,
    contentLength: request.contentLength,
    createdAt: now.toISOString(),
    expiresAt: usableUntil.toISOString(),
    expiresAtEpoch: Math.floor(usableUntil.getTime() / 1000),
  });

  // Content-Length and Content-Type are signed, so S3 itself rejects a PUT of any other size or type.
  const uploadUrl = await presignObject({
    method: 'PUT',
    key: objectKey,
    headers: { 'content-type': 'application/octet-stream', 'content-length': String(request.contentLength) },
    expiresIn: config.uploadUrlTtlSeconds,
    forClients: true,
  });

  return {
    uploadId,
    uploadUrl,
    expiresAt: expiresAt.toISOString(),
    method: 'PUT',
    headers: { 'Content-Type': 'application/octet-stream' },
    maxBytes,
  };
}
