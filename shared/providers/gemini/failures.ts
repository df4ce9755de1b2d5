import { ProviderFailure } from '../../task.js';
import { isPlainObject, redact } from '../common.js';
import { parseRetryAfterHeader } from '../retry-after.js';

/** Longest upstream error text quoted in a failure message. */
export const MAX_UPSTREAM_MESSAGE = 300;

/** Milliseconds from a `google.rpc.RetryInfo` detail's `retryDelay` (a protobuf Duration in JSON: "43s", "0.5s"). */
export function retryAfterFromDetails(details: unknown): number | undefined {
  if (!Array.isArray(details)) return undefined;
  for (const detail of details) {
    if (!isPlainObject(detail) || typeof detail.retryDelay !== 'string') continue;
    const match = /^(\d+(?:\.\d+)?)s$/.exec(detail.retryDelay.trim());
    if (match?.[1]) return Math.round(Number(match[1]) * 1000);
  }
  return undefined;
}

export interface UpstreamError {
  message: string;
  status: string;
  reasons: string[];
  details: unknown;
}

/** The `{error: {code, message, status, details}}` body the SDK puts (as JSON) in an ApiError's message. */
export function parseUpstream(raw: string): UpstreamError {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    return { message: raw, status: '', reasons: [], details: undefined };
  }
  const error = isPlainObject(body) && isPlainObject(body.error) ? body.error : {};
  const details = error.details;
  const reasons = Array.isArray(details)
    ? details.flatMap((d) => (isPlainObject(d) && typeof d.reason === 'string' ? [d.reason] : []))
    : [];
  return {
    message: typeof error.message === 'string' ? error.message : raw,
    status: typeof error.status === 'string' ? error.status : '',
    reasons,
    details,
  };
}

/** Maps an HTTP error from the API to a failure kind (the Gemini API answers an invalid key with 400 API_KEY_INVALID). */
export function apiFailure(
  status: number,
  rawMessage: string,
  headers: Headers | undefined,
  apiKey: string,
): ProviderFailure {
  const upstream = parseUpstream(rawMessage);
  const quoted = redact(upstream.message, [apiKey], MAX_UPSTREAM_MESSAGE);
  const message = `gemini: HTTP ${status}${upstream.status ? ` ${upstream.status}` : ''}: ${quoted}`;
  if (status === 429) {
    const retryAfterMs = parseRetryAfterHeader(headers?.get('retry-after')) ?? retryAfterFromDetails(upstream.details);
    return new ProviderFailure('rate_limited', message, retryAfterMs === undefined ? undefined : { retryAfterMs });
  }
  const keyProblem = upstream.reasons.some((r) => /^API_KEY_/.test(r)) || /api key/i.test(upstream.message);
  if (status === 401 || status === 403 || (status === 400 && keyProblem)) return new ProviderFailure('auth', message);
  if (status === 408) return new ProviderFailure('timeout', message);
  if (status >= 400 && status < 500) return new ProviderFailure('client', message);
  return new ProviderFailure('server', message);
}

/** An error's name, read structurally: errors raised inside undici come from another realm than this module's. */
export function errorName(error: unknown): string | undefined {
  return isPlainObject(error) && typeof error.name === 'string' ? error.name : undefined;
}

export function isAbortError(error: unknown): boolean {
  const name = errorName(error);
  return name === 'AbortError' || name === 'TimeoutError';
}

/** A short description of a transport error (name, message, and the low-level code such as ECONNREFUSED). */
export function describe(error: unknown): string {
  if (!isPlainObject(error)) return String(error);
  const cause = error.cause;
  const code = isPlainObject(cause) && typeof cause.code === 'string' ? ` (${cause.code})` : '';
  return `${errorName(error) ?? 'Error'}: ${String(error.message ?? '')}${code}`;
}
