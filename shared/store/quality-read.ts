/**
 * Reads the accuracy counters of a filter over a period of days (./quality.ts): one Query of the period's day items,
 * each a version and a snapshot of the day's counters. A snapshot is valid while the day's version (moved by every
 * review that moves a count) is the one it was taken at; a day without a valid one (reviewed since: mostly today) has
 * its counters item read, consistently, and a new snapshot written back on the condition that the version has not
 * moved meanwhile. The snapshot is a cache of counters kept exactly once by the verifies: losing or refusing its write
 * costs a read, never a count. Why: docs/decisions.md#accuracy-from-reviews
 */
import { BatchGetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { applied, ddbBigNumbers } from '../aws/dynamodb.js';
import { log } from '../log.js';
import {
  addCounts,
  countersKey,
  emptyCounts,
  type QualityCounts,
  type QualitySlice,
  qualityTable,
  sliceOf,
  slotKey,
  VERSION,
} from './quality.js';

/** The day item's snapshot of its counters (JSON, `snapshotOf`) and the version it was taken at. */
const SNAPSHOT = 's';
const SNAPSHOT_VERSION = 'sv';

/** Counts as a snapshot: `{runs, fields: {name: [verified, corrected]}, providers: {id: [runs, verified, corrected]}, levels: [[level, right, wrong]]}`. */
export function snapshotOf(counts: QualityCounts): string {
  return JSON.stringify({
    runs: counts.verifiedRuns,
    fields: Object.fromEntries([...counts.fields].map(([name, f]) => [name, [f.verified, f.corrected]])),
    providers: Object.fromEntries(
      [...counts.providers].map(([id, p]) => [id, [p.verifiedRuns, p.verified, p.corrected]]),
    ),
    levels: [...counts.confidence].map(([level, c]) => [level, c.right, c.wrong]),
  });
}

const counts = (row: unknown, n: number): row is number[] =>
  Array.isArray(row) && row.length === n && row.every(Number.isSafeInteger);

/** A stored snapshot read back; null when it is not one (the counters item is read instead). */
export function countsOfSnapshot(snapshot: unknown): QualityCounts | null {
  if (typeof snapshot !== 'string') return null;
  let parsed: { runs?: unknown; fields?: unknown; providers?: unknown; levels?: unknown };
  try {
    parsed = JSON.parse(snapshot);
  } catch {
    return null;
  }
  const { runs, fields, providers, levels } = parsed ?? {};
  if (!Number.isSafeInteger(runs) || !Array.isArray(levels)) return null;
  if (typeof fields !== 'object' || fields === null || typeof providers !== 'object' || providers === null) return null;
  const out = emptyCounts();
  out.verifiedRuns = runs as number;
  for (const [name, row] of Object.entries(fields)) {
    if (!counts(row, 2)) return null;
    out.fields.set(name, { verified: row[0] as number, corrected: row[1] as number });
  }
  for (const [id, row] of Object.entries(providers)) {
    if (!counts(row, 3)) return null;
    out.providers.set(id, { verifiedRuns: row[0] as number, verified: row[1] as number, corrected: row[2] as number });
  }
  for (const row of levels) {
    if (!counts(row, 3)) return null;
    out.confidence.set(row[0] as number, { right: row[1] as number, wrong: row[2] as number });
  }
  return out;
}

interface DayItem {
  slot: string;
  slice: QualitySlice;
  version: number;
  snapshot: QualityCounts | null;
}

/**
 * The counters of the tenant's runs created on the UTC days `fromDay` to `toDay` (inclusive, `YYYY-MM-DD`) of one
 * workflow (or `ANY`) and one schema (or `ANY`): one item per day, plus the counters items of the days whose snapshot
 * is stale.
 */
export async function readQuality(
  tenantId: string,
  filter: { workflow: string; schemaId: string },
  fromDay: string,
  toDay: string,
): Promise<QualitySlice[]> {
  const days: DayItem[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await ddbBigNumbers.send(
      new QueryCommand({
        TableName: qualityTable(),
        KeyConditionExpression: 'tenantId = :t AND slot BETWEEN :first AND :last',
        ExpressionAttributeValues: {
          ':t': tenantId,
          ':first': slotKey(filter.workflow, filter.schemaId, fromDay),
          ':last': slotKey(filter.workflow, filter.schemaId, toDay),
        },
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) {
      const version = Number(item[VERSION] ?? 0);
      days.push({
        slot: String(item.slot),
        // A day item written before the counters had items of their own holds them itself: sliceOf reads them.
        slice: sliceOf(item),
        version,
        snapshot: version > 0 && Number(item[SNAPSHOT_VERSION]) === version ? countsOfSnapshot(item[SNAPSHOT]) : null,
      });
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  const stale = days.filter((d) => d.version > 0 && d.snapshot === null);
  const read = await readCounters(tenantId, stale);
  await Promise.all(stale.map((d) => refreshSnapshot(tenantId, d, read.get(d.slot))));
  for (const d of days) {
    const more = d.snapshot ?? read.get(d.slot)?.counts;
    if (more) addCounts(d.slice.counts, more);
  }
  return days.map((d) => d.slice);
}

type Counters = { counts: QualityCounts; version: number };

/** The counters items of `days`, by day slot, each with its version (BatchGet, 100 keys a call, consistent). */
async function readCounters(tenantId: string, days: readonly DayItem[]): Promise<Map<string, Counters>> {
  const out = new Map<string, Counters>();
  for (let i = 0; i < days.length; i += 100) {
    let keys: Record<string, unknown>[] = days.slice(i, i + 100).map((d) => ({ tenantId, slot: countersKey(d.slot) }));
    while (keys.length > 0) {
      const page = await ddbBigNumbers.send(
        new BatchGetCommand({ RequestItems: { [qualityTable()]: { Keys: keys, ConsistentRead: true } } }),
      );
      for (const item of page.Responses?.[qualityTable()] ?? []) {
        out.set(String(item.slot).slice(countersKey('').length), {
          counts: sliceOf(item).counts,
          version: Number(item[VERSION] ?? 0),
        });
      }
      keys = page.UnprocessedKeys?.[qualityTable()]?.Keys ?? [];
    }
  }
  return out;
}

/**
 * Writes the snapshot of a day's counters as read, if the day's version is still the one read: a review that moved
 * it meanwhile refuses the write (the next read takes a new one). A failed write is logged, never the read's failure.
 */
async function refreshSnapshot(tenantId: string, day: DayItem, counters: Counters | undefined): Promise<void> {
  if (!counters || counters.version === 0) return;
  try {
    await applied(
      ddbBigNumbers.send(
        new UpdateCommand({
          TableName: qualityTable(),
          Key: { tenantId, slot: day.slot },
          UpdateExpression: 'SET #snapshot = :snapshot, #at = :version',
          ConditionExpression: '#version = :version',
          ExpressionAttributeNames: { '#snapshot': SNAPSHOT, '#at': SNAPSHOT_VERSION, '#version': VERSION },
          ExpressionAttributeValues: { ':snapshot': snapshotOf(counters.counts), ':version': counters.version },
        }),
      ),
    );
  } catch (error: unknown) {
    log.warn('quality: counters snapshot not written', { slot: day.slot, error });
  }
}
