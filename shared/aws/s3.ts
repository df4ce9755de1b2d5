/**
 * The S3 client for the worker's reads of whole files, created once per process at first use; its endpoint comes from
 * `AWS_ENDPOINT_URL[_S3]`. Presigned addresses are made without a client: shared/aws/s3-urls.ts.
 */
import { NoSuchKey, S3Client } from '@aws-sdk/client-s3';

let client: S3Client | undefined;

/** The client, created at its first use: S3_FORCE_PATH_STYLE is read then, not at import. */
export function s3(): S3Client {
  // Emulators listen on 127.0.0.1, where virtual-hosted bucket names cannot resolve; real S3 uses virtual-hosted style.
  client ??= new S3Client({ forcePathStyle: process.env.S3_FORCE_PATH_STYLE === 'true' });
  return client;
}

/**
 * Whether a GetObject error means "no such object" (NoSuchKey). Anything else (a missing bucket, access denied) is a
 * real failure.
 */
export function isMissingObject(error: unknown): boolean {
  // NoSuchVersion: the version a run pinned has expired (a replaced version is kept a day; the current one expires
  // with the upload's retention).
  return (
    error instanceof NoSuchKey ||
    (error instanceof Error && (error.name === 'NoSuchKey' || error.name === 'NoSuchVersion'))
  );
}

/** The object is no longer the one asked for: its ETag changed (412 PreconditionFailed on `IfMatch`). */
export function isReplacedObject(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return error.name === 'PreconditionFailed' || status === 412;
}
