/**
 * Where an upload's bytes live in the bucket, `uploads/{tenantId}/{uploadId}/{name}`, and the file name as it may
 * stand in a storage key or a header. The key ends in the file's own name so that its read address does too: a
 * browser titles a document, and names its download, after the address's last segment (Chromium's PDF viewer did
 * until version 156, whatever Content-Disposition said).
 * Not to undo: the name in a key or a header is the client's name reduced to `[A-Za-z0-9._ -]` (never the name as
 * given, which may hold `/`, `%` or quotes), and never dots alone (`..` would be resolved away by every URL parser,
 * and the signed address with it).
 */
import { uploadsBucket } from '../infra/resources.js';

/** The longest name kept in a key: with the prefix, tenant and upload id, well under S3's 1,024 bytes. */
const NAME_MAX = 200;

/** The client's file name reduced to safe characters; undefined when nothing usable is left. */
export function safeFileName(fileName: string | undefined): string | undefined {
  const safe = fileName
    ?.replace(/[^A-Za-z0-9._ -]/g, '_')
    .slice(0, NAME_MAX)
    .trim();
  return safe && !/^\.*$/.test(safe) ? safe : undefined;
}

/** The key of a new upload's object. */
export function uploadObjectKey(tenantId: string, uploadId: string, fileName: string): string {
  return `${uploadsBucket.keyPrefix}${tenantId}/${uploadId}/${safeFileName(fileName) ?? 'file'}`;
}
