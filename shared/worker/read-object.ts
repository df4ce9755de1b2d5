/**
 * The bytes a run was created from, read by every delivery that processes it (a whole run, or a fanned-out group).
 * Not to undo: exactly the object creation inspected (its version, or its ETag), never bytes PUT to the same address
 * since (docs/decisions.md#a-run-reads-the-bytes-it-inspected).
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { isMissingObject, isReplacedObject, s3 } from '../aws/s3.js';
import { uploadsBucketName } from '../aws/s3-urls.js';
import { runError } from '../errors.js';
import type { Settlement } from '../store/ledger.js';
import type { RunRecord } from '../store/runs.js';

/**
 * The bytes creation inspected: that version of the object (a versioned bucket), or the object only while its ETag is
 * the one inspected. `replaced`: a later PUT to the same address replaced them (the ETag no longer matches).
 */
export async function readObject(run: RunRecord): Promise<Uint8Array | 'missing' | 'replaced'> {
  const { etag, versionId } = run.objectIdentity ?? {};
  const which = versionId !== undefined ? { VersionId: versionId } : etag !== undefined ? { IfMatch: etag } : {};
  try {
    const out = await s3().send(new GetObjectCommand({ Bucket: uploadsBucketName(), Key: run.objectKey, ...which }));
    return out.Body ? await out.Body.transformToByteArray() : 'missing';
  } catch (error: unknown) {
    if (isMissingObject(error)) return 'missing';
    if (isReplacedObject(error)) return 'replaced';
    throw error;
  }
}

/** The settlement of a run whose bytes are gone (expired) or were replaced: failed, nothing asked of a provider. */
export function objectUnavailable(why: 'missing' | 'replaced'): Settlement {
  if (why === 'missing') {
    return { status: 'failed', error: runError('UPLOAD_NOT_FOUND', 'The uploaded file has expired'), attempts: [] };
  }
  return {
    status: 'failed',
    error: runError(
      'UPLOAD_NOT_FOUND',
      'The file this run was created from was replaced by a later upload to the same address; create a new run',
      { reason: 'replaced' },
    ),
    attempts: [],
  };
}
