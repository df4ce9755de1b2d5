/**
 * The period a report's query asks for (`GET /v1/usage`, `GET /v1/quality`): [from, to) in epoch milliseconds, `to`
 * defaulting to now and `from` to `days` before it.
 * Not to undo: an empty or inverted period is refused here, 400 INVALID_REQUEST. The schemas compare the bounds only
 * when both are sent (`to` defaulting to now is only known here), and a reversed range reaching DynamoDB's BETWEEN is a
 * retryable 500 that no retry mends.
 */
import { InvalidRequestError } from '../errors.js';

const DAY_MS = 86_400_000;

export function askedPeriod(
  query: { from?: string | undefined; to?: string | undefined },
  now: Date,
  days: number,
): { from: number; to: number } {
  const to = query.to !== undefined ? Date.parse(query.to) : now.getTime();
  const from = query.from !== undefined ? Date.parse(query.from) : to - days * DAY_MS;
  if (from >= to) {
    throw new InvalidRequestError('from must be before to', [
      { path: 'from', message: 'from must be before to (to defaults to now)' },
    ]);
  }
  return { from, to };
}
