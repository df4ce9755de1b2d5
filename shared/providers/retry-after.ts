/**
 * The one `Retry-After` reading the provider adapters share (RFC 9110 §10.2.3, plus the `retry-after-ms` header the
 * OpenAI and Anthropic APIs send first). A provider's own signal (reset headers, RetryInfo) is passed in as the last
 * resort, so the order of precedence is written once.
 */

const DELTA_SECONDS = /^\d+(?:\.\d+)?$/;

/**
 * Milliseconds to wait from a `Retry-After` value: delta-seconds (integer or decimal, ≥ 0; rounded up to a whole
 * millisecond) or an HTTP date (a date already past gives 0). Undefined for a missing, empty or unparseable value,
 * including negative or malformed numbers.
 */
export function parseRetryAfterHeader(value: string | null | undefined, now = Date.now()): number | undefined {
  if (value === null || value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  if (DELTA_SECONDS.test(trimmed)) return Math.ceil(Number(trimmed) * 1000);
  // Every HTTP date names its day and month; without a letter V8's lenient Date.parse would read "-3" or "3." as 2001.
  if (!/[A-Za-z]/.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * Milliseconds the server asks us to wait: `retry-after-ms` (a non-negative number, rounded up), else `Retry-After`
 * (seconds or an HTTP date), else what the provider's own `resetMs` reads from its rate-limit headers.
 */
export function retryAfterMs(
  headers: Headers | undefined,
  now: number = Date.now(),
  resetMs?: (headers: Headers, now: number) => number | undefined,
): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get('retry-after-ms')?.trim();
  if (ms && DELTA_SECONDS.test(ms)) return Math.ceil(Number(ms));
  return parseRetryAfterHeader(headers.get('retry-after'), now) ?? resetMs?.(headers, now);
}
