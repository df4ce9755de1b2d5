/**
 * The generic part of an HTTP `Retry-After` header (RFC 9110 §10.2.3), shared by the provider adapters. Each adapter
 * keeps its provider's extras (`retry-after-ms`, reset headers, RetryInfo) and falls back to or on this.
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
