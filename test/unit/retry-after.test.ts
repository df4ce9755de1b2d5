/**
 * The shared `Retry-After` parser: delta-seconds (integer or decimal) or an HTTP date, in milliseconds; undefined for
 * anything else.
 */
import { parseRetryAfterHeader, retryAfterMs } from '../../shared/providers/retry-after.js';

const NOW = Date.parse('Sun, 22 Nov 2026 03:00:00 GMT');

describe('parseRetryAfterHeader', () => {
  test.each<[string, string | null | undefined, number | undefined]>([
    ['integer seconds', '3', 3_000],
    ['zero seconds', '0', 0],
    ['decimal seconds', '0.5', 500],
    ['decimal seconds, sub-millisecond rounds up', '1.2345', 1_235],
    ['large integer seconds', '86400', 86_400_000],
    ['surrounding whitespace', '  7 ', 7_000],
    ['HTTP date in the future (IMF-fixdate)', 'Sun, 22 Nov 2026 03:00:10 GMT', 10_000],
    ['HTTP date now', 'Sun, 22 Nov 2026 03:00:00 GMT', 0],
    ['HTTP date in the past → 0', 'Sun, 22 Nov 2026 02:59:00 GMT', 0],
    ['obsolete RFC 850 date', 'Sunday, 22-Nov-26 03:00:30 GMT', 30_000],
    ['asctime date', 'Sun Nov 22 03:01:00 2026 GMT', 60_000],
    ['undefined', undefined, undefined],
    ['null', null, undefined],
    ['empty', '', undefined],
    ['whitespace only', '   ', undefined],
    ['words', 'soon', undefined],
    ['negative seconds', '-3', undefined],
    ['seconds with a unit', '3s', undefined],
    ['trailing dot', '3.', undefined],
    ['date without a time or letters', '2026-11-22', undefined],
    ['ISO 8601 date (lenient, as before)', '2026-11-22T03:00:05Z', 5_000],
    ['exponent', '1e3', undefined],
    ['hex', '0x10', undefined],
    ['Infinity', 'Infinity', undefined],
  ])('%s: %p → %p', (_name, value, expected) => {
    expect(parseRetryAfterHeader(value, NOW)).toBe(expected);
  });

  test('defaults now to the current time', () => {
    const ms = parseRetryAfterHeader(new Date(Date.now() + 5_000).toUTCString());
    expect(ms).toBeGreaterThan(3_000);
    expect(ms).toBeLessThanOrEqual(5_000);
  });
});

describe('retryAfterMs', () => {
  const reset = () => 9_000;

  test('retry-after-ms comes first, rounded up to a whole millisecond', () => {
    const headers = new Headers({ 'retry-after-ms': '1500.2', 'retry-after': '3' });
    expect(retryAfterMs(headers, NOW, reset)).toBe(1_501);
  });

  test('then Retry-After, in seconds or as an HTTP date', () => {
    expect(retryAfterMs(new Headers({ 'retry-after': '3' }), NOW, reset)).toBe(3_000);
    expect(retryAfterMs(new Headers({ 'retry-after': 'Sun, 22 Nov 2026 03:00:10 GMT' }), NOW)).toBe(10_000);
  });

  test("then the provider's own reset headers; a malformed retry-after-ms is ignored", () => {
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '12abc' }), NOW, reset)).toBe(9_000);
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '-5' }), NOW)).toBeUndefined();
  });

  test('no headers, or none that says how long: undefined', () => {
    expect(retryAfterMs(undefined, NOW, reset)).toBeUndefined();
    expect(retryAfterMs(new Headers(), NOW)).toBeUndefined();
  });
});
