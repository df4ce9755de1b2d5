/**
 * S3 clients, created once per process; endpoints come from `AWS_ENDPOINT_URL[_S3]`.
 */
import { NoSuchKey, S3Client } from '@aws-sdk/client-s3';

// Emulators listen on 127.0.0.1, where virtual-hosted bucket names cannot resolve; real S3 uses virtual-hosted style.
const forcePathStyle = process.env.S3_FORCE_PATH_STYLE === 'true';

/** S3 client for reads. */
export const s3 = new S3Client({ forcePathStyle });

/**
 * S3 client for presigning. `WHEN_REQUIRED` stops newer SDKs from signing a checksum of an empty body into the URL,
 * which would make every real PUT fail. A separate endpoint may be given for the address clients see.
 */
export const s3Presigner = new S3Client({
  forcePathStyle,
  requestChecksumCalculation: 'WHEN_REQUIRED',
  ...(process.env.UPLOAD_PUBLIC_ENDPOINT ? { endpoint: process.env.UPLOAD_PUBLIC_ENDPOINT } : {}),
});

/**
 * Whether an S3 error means "no such object": GetObject's NoSuchKey, or HeadObject's NotFound (a HEAD answer has no
 * body, so the SDK names it from the status). Anything else (a missing bucket, access denied) is a real failure.
 */
export function isMissingObject(error: unknown): boolean {
  return (
    error instanceof NoSuchKey || (error instanceof Error && (error.name === 'NoSuchKey' || error.name === 'NotFound'))
  );
}
