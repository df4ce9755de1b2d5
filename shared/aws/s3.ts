/**
 * The S3 client for the worker's reads of whole files, created once per process; its endpoint comes from
 * `AWS_ENDPOINT_URL[_S3]`. Presigned addresses are made without a client: shared/aws/s3-urls.ts.
 */
import { NoSuchKey, S3Client } from '@aws-sdk/client-s3';

// Emulators listen on 127.0.0.1, where virtual-hosted bucket names cannot resolve; real S3 uses virtual-hosted style.
const forcePathStyle = process.env.S3_FORCE_PATH_STYLE === 'true';

export const s3 = new S3Client({ forcePathStyle });

/**
 * Whether a GetObject error means "no such object" (NoSuchKey). Anything else (a missing bucket, access denied) is a
 * real failure.
 */
export function isMissingObject(error: unknown): boolean {
  return error instanceof NoSuchKey || (error instanceof Error && error.name === 'NoSuchKey');
}
