/**
 * The accuracy counters' storage shape (shared/store/quality.ts): a confidence level's right and wrong counts share one
 * attribute (`right + wrong × 10^15`), so a day's item holds one attribute per level. What a review moves and what a
 * read gets back must be exact, beyond 2^53 too (a few wrong values already pass it).
 */
import { addCounts, countsOf, emptyCounts, itemOfSlice, qualityUpdates, sliceOf } from '../../shared/store/quality.js';
import type { RunRecord } from '../../shared/store/runs.js';
import { completedRunItem } from '../support/aws.js';

const run = (confidence: number): RunRecord =>
  completedRunItem({
    schemaId: 'receipt',
    workflow: 'expenses',
    task: {
      prompt: 'p',
      outputFormat: 'json',
      fields: [
        { name: 'merchant', type: 'string', required: true },
        { name: 'total', type: 'number', required: true },
      ],
      schemaId: 'receipt',
      schemaLabel: 'Receipt',
      promptScaffold: null,
    },
    result: { merchant: 'ACME', total: 10 },
    fields: {
      merchant: { confidence: 0.9 },
      total: { confidence },
    } as never,
  });

const corrected = { accepted: false, corrections: { total: 11 } };
const accepted = { accepted: true, corrections: {} };

test('one attribute per level: a corrected value moves the level by 10^15, its later acceptance moves it back', () => {
  const first = qualityUpdates(run(0.42), undefined, corrected);
  const values = Object.values(first?.[0]?.Update?.ExpressionAttributeValues ?? {});
  const names = Object.values(first?.[0]?.Update?.ExpressionAttributeNames ?? {});
  expect(names.filter((n) => n.startsWith('c#')).sort()).toEqual(['c#42', 'c#90']);
  expect(names.some((n) => n.startsWith('cr#') || n.startsWith('cw#'))).toBe(false);
  expect(values).toContain(1e15);
  // Accepted later: the wrong value becomes right (−10^15 + 1), the other level does not move.
  const again = qualityUpdates(run(0.42), corrected, accepted)?.[0]?.Update;
  const moved = Object.entries(again?.ExpressionAttributeNames ?? {}).filter(([, n]) => n.startsWith('c#'));
  expect(moved.map(([, n]) => n)).toEqual(['c#42']);
  expect(Object.values(again?.ExpressionAttributeValues ?? {})).toContain(1 - 1e15);
});

test('a day of counts reads back exactly, with counts whose packed number passes 2^53', () => {
  const day = emptyCounts();
  // 30,000 reviews at two levels: 6,000 wrong totals at 0.42 (packed: 6·10^18 + right), the rest right.
  for (let i = 0; i < 30_000; i++) addCounts(day, countsOf(run(0.42), i % 5 === 0 ? corrected : accepted));
  const item = itemOfSlice('tenant-a', '*#*#2026-11-20', { day: '2026-11-20', counts: day });
  expect(typeof item['c#42']).toBe('bigint');
  // What the read gets: numbers past 2^53 as bigints (ddbBigNumbers), the others as numbers.
  const back = sliceOf(item).counts;
  expect(back.confidence.get(42)).toEqual({ right: 24_000, wrong: 6_000 });
  expect(back.confidence.get(90)).toEqual({ right: 30_000, wrong: 0 });
  expect(back.fields.get('total')).toEqual({ verified: 30_000, corrected: 6_000 });
  expect(back.verifiedRuns).toBe(30_000);
});

test('an item in the shape before packing (`cr#`/`cw#` per level) still reads, added to the packed counts', () => {
  const back = sliceOf({ day: '2026-11-01', verifiedRuns: 3, 'cr#42': 2, 'cw#42': 1, 'c#42': 1e15 + 4 }).counts;
  expect(back.confidence.get(42)).toEqual({ right: 6, wrong: 2 });
});
