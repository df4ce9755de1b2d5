/**
 * The shared `Retry-After` parser: delta-seconds (integer or decimal) or an HTTP date, in milliseconds; undefined for
 * anything else.
 */
import { parseRetryAfterHeader } from '../../shared/providers/retry-after.js';

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
