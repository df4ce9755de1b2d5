/**
 * The accuracy counters' storage shape (shared/store/quality.ts, shared/store/quality-read.ts): a confidence level's
 * right and wrong counts share one attribute (`right + wrong × 10^15`); the counters live in an item of their own and
 * the day item a period's Query reads holds a version and a snapshot of them. What a review moves and what a read gets
 * back must be exact, beyond 2^53 too (a few wrong values already pass it), whichever way the read takes.
 */
import { BatchGetCommand, DynamoDBDocumentClient, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import {
  addCounts,
  countsOf,
  emptyCounts,
  itemOfSlice,
  itemsOfSlice,
  type QualityCounts,
  qualityUpdates,
  sliceOf,
} from '../../shared/store/quality.js';
import { countsOfSnapshot, readQuality, snapshotOf } from '../../shared/store/quality-read.js';
import type { RunRecord } from '../../shared/store/runs.js';
import { completedRunItem, conditionalCheckFailed, mapsAsObjects, tableName } from '../support/aws.js';

const ddb = mockClient(DynamoDBDocumentClient);
beforeEach(() => ddb.reset());

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
  // Per filter: the day item (its version) and then its counters item.
  const values = Object.values(first?.[1]?.Update?.ExpressionAttributeValues ?? {});
  const names = Object.values(first?.[1]?.Update?.ExpressionAttributeNames ?? {});
  expect(names.filter((n) => n.startsWith('c#')).sort()).toEqual(['c#42', 'c#90']);
  expect(names.some((n) => n.startsWith('cr#') || n.startsWith('cw#'))).toBe(false);
  expect(values).toContain(1e15);
  // Accepted later: the wrong value becomes right (−10^15 + 1), the other level does not move.
  const again = qualityUpdates(run(0.42), corrected, accepted)?.[1]?.Update;
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

// ---------- the read: one Query of day items, snapshots while their version holds ----------

const DAY = '2026-11-20';
const SLOT = `*#*#${DAY}`;

/** A day's counts after `n` reviews of run(0.42), every fifth correcting the total. */
function reviewed(n: number): QualityCounts {
  const counts = emptyCounts();
  for (let i = 0; i < n; i++) addCounts(counts, countsOf(run(0.42), i % 5 === 0 ? corrected : accepted));
  return counts;
}

const read = () => readQuality('tenant-a', { workflow: '*', schemaId: '*' }, DAY, DAY);

test('a day whose snapshot is at its version is read from the day item alone: no counters read, nothing written', async () => {
  const counts = reviewed(10);
  const { day } = itemsOfSlice('tenant-a', SLOT, { day: DAY, counts }, 10);
  ddb.on(QueryCommand).resolves({ Items: [{ ...day, s: snapshotOf(counts), sv: 10 }] });
  const [slice] = await read();
  expect(slice?.counts).toEqual(counts);
  expect(ddb).toHaveReceivedCommandTimes(BatchGetCommand, 0);
  expect(ddb).toHaveReceivedCommandTimes(UpdateCommand, 0);
});

test('a day reviewed since its snapshot: its counters are read, and a new snapshot written if the version held', async () => {
  const old = reviewed(10);
  const now = reviewed(11);
  const items = itemsOfSlice('tenant-a', SLOT, { day: DAY, counts: now }, 11);
  ddb.on(QueryCommand).resolves({ Items: [{ ...items.day, s: snapshotOf(old), sv: 10 }] });
  ddb.on(BatchGetCommand).resolves({ Responses: { [tableName('quality')]: [items.counters] } });
  ddb.on(UpdateCommand).resolves({});
  const [slice] = await read();
  expect(slice?.counts).toEqual(now);
  const get = ddb.commandCalls(BatchGetCommand)[0]?.args[0].input;
  expect(get?.RequestItems?.[tableName('quality')]).toEqual({
    Keys: [{ tenantId: 'tenant-a', slot: `~c#${SLOT}` }],
    ConsistentRead: true,
  });
  const write = mapsAsObjects(ddb.commandCalls(UpdateCommand)[0]?.args[0].input);
  expect(write?.Key).toEqual({ tenantId: 'tenant-a', slot: SLOT });
  expect(write?.ConditionExpression).toBe('#version = :version');
  expect(write?.ExpressionAttributeNames?.['#version']).toBe('v');
  expect(write?.ExpressionAttributeValues?.[':version']).toBe(11);
  expect(countsOfSnapshot(write?.ExpressionAttributeValues?.[':snapshot'])).toEqual(now);
});

test('a snapshot write refused (a review moved the version meanwhile) or failing still answers the counters read', async () => {
  const counts = reviewed(7);
  const items = itemsOfSlice('tenant-a', SLOT, { day: DAY, counts }, 7);
  ddb.on(QueryCommand).resolves({ Items: [items.day] });
  ddb.on(BatchGetCommand).resolves({ Responses: { [tableName('quality')]: [items.counters] } });
  ddb.on(UpdateCommand).rejectsOnce(conditionalCheckFailed()).rejects(new Error('throttled'));
  expect((await read())[0]?.counts).toEqual(counts);
  expect((await read())[0]?.counts).toEqual(counts);
});

test('a day item in the one-item shape (counters inline) still counts, plus what later reviews counted apart', async () => {
  const before = reviewed(30_000);
  const after = reviewed(3);
  const legacy = itemOfSlice('tenant-a', SLOT, { day: DAY, counts: before });
  ddb.on(QueryCommand).resolves({ Items: [{ ...legacy, v: 3, s: snapshotOf(after), sv: 3 }] });
  const [slice] = await read();
  expect(slice?.counts).toEqual(addCounts(reviewed(30_000), after));
  expect(slice?.counts.confidence.get(42)).toEqual({ right: 24_002, wrong: 6_001 });
});

test('a snapshot that is not one is read around (the counters item), never trusted', () => {
  expect(countsOfSnapshot('{')).toBeNull();
  expect(countsOfSnapshot(JSON.stringify({ runs: 1, fields: { a: [1] }, providers: {}, levels: [] }))).toBeNull();
  expect(countsOfSnapshot(JSON.stringify({ runs: 1, fields: {}, providers: {}, levels: [[1, 2.5, 0]] }))).toBeNull();
  const counts = reviewed(4);
  expect(countsOfSnapshot(snapshotOf(counts))).toEqual(counts);
});
