/**
 * `Idempotency-Key` for the creations that take a hold (a run, an evaluation): the key is the tenant's, the body is
 * compared canonically (key order does not matter), and a replay answers the original response or refuses a different
 * body under the same key (`409 IDEMPOTENCY_KEY_REUSED`). The record itself is written in the hold's transaction.
 */
import { createHash } from 'node:crypto';
import { IdempotencyKeyReusedError, InvalidRequestError } from '../errors.js';
import { getIdempotencyRecord } from '../store/idempotency.js';

/** A request made with a key: the tenant-scoped key and the fingerprint of its body. */
export interface IdempotentRequest {
  key: string;
  hash: string;
}

/** Canonical fingerprint of a request body (key order does not matter). */
export function fingerprint(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The request's key and fingerprint, or null without a key; a key of the wrong length is a 400. */
export function idempotentRequest(
  tenantId: string,
  header: string | undefined,
  body: unknown,
): IdempotentRequest | null {
  if (header === undefined) return null;
  if (header.length === 0 || header.length > 255) {
    throw new InvalidRequestError('Idempotency-Key must be 1 to 255 characters', [
      { path: 'Idempotency-Key', message: 'length must be 1..255' },
    ]);
  }
  return { key: `${tenantId}#${header}`, hash: fingerprint(body) };
}

/** The original response of an earlier request with the same key and body; null when there was none. */
export async function replayOf<T>(request: IdempotentRequest): Promise<T | null> {
  const existing = await getIdempotencyRecord(request.key);
  if (!existing) return null;
  if (existing.requestHash !== request.hash) throw new IdempotencyKeyReusedError();
  return existing.response as T;
}
