/**
 * `GET /v1/usage`: totals per workflow and per time bucket, summed from the usage counters (store/usage.ts), so the
 * work grows with the days and workflows of the period, not with its runs. Its own module: get-run and list-runs
 * must not load the usage table (each function checks, at init, the tables it loads).
 */
import {
  USAGE_MAX_BUCKETS,
  type UsageInterval,
  type UsageQuery,
  type UsageResponse,
  type UsageRow,
} from '../contract.js';
import { InvalidRequestError } from '../errors.js';
import { microsToUsd } from '../money.js';
import { addCounters, emptyCounters, readUsage, type UsageSlice } from '../store/usage.js';
import { askedPeriod } from './period.js';

const DEFAULT_USAGE_WINDOW_DAYS = 30;

/** The start of the UTC hour, day or month holding `ms`, and the start of the next one. */
function bucketStart(ms: number, interval: UsageInterval): number {
  const d = new Date(ms);
  switch (interval) {
    case 'hour':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours());
    case 'day':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
    case 'month':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth());
  }
}

function nextBucket(start: number, interval: UsageInterval): number {
  if (interval === 'hour') return start + 3600_000;
  if (interval === 'day') return start + 86400_000;
  const d = new Date(start);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1);
}

/** Starts of the buckets covering [from, to): from the one holding `from`; null when there would be too many. */
function bucketStarts(from: number, to: number, interval: UsageInterval): number[] | null {
  const starts: number[] = [];
  for (let t = bucketStart(from, interval); t < to; t = nextBucket(t, interval)) {
    if (starts.length === USAGE_MAX_BUCKETS) return null;
    starts.push(t);
  }
  return starts;
}

/**
 * Totals per workflow over runs created in [from, to), and the same per time bucket for charts. Buckets start at UTC
 * hour, day or month boundaries; the first one may begin before `from` (its totals still count only runs from `from`
 * on). Without an interval: days, or months when the period holds too many days. Read from the usage aggregates
 * (store/usage.ts): the work grows with the days and workflows of the period, not with its runs.
 */
export async function usageSummary(tenantId: string, query: UsageQuery, now = new Date()): Promise<UsageResponse> {
  // The period is [from, to), both normalised to the stored form (UTC, milliseconds).
  const { from, to } = askedPeriod(query, now, DEFAULT_USAGE_WINDOW_DAYS);
  let interval: UsageInterval = query.interval ?? 'day';
  let starts = bucketStarts(from, to, interval);
  if (!starts && query.interval === undefined) {
    interval = 'month';
    starts = bucketStarts(from, to, interval);
  }
  if (!starts) {
    throw new InvalidRequestError(`the period holds more than ${USAGE_MAX_BUCKETS} ${interval}s`, [
      { path: 'interval', message: `use a shorter period or a wider interval (at most ${USAGE_MAX_BUCKETS} buckets)` },
    ]);
  }

  const slices = await readUsage({
    tenantId,
    from,
    to,
    coarsest: interval === 'hour' ? 'hour' : 'day',
    ...(query.workflow !== undefined ? { workflow: query.workflow } : {}),
  });
  const index = new Map(starts.map((start, i) => [start, i]));
  const perBucket: UsageSlice[][] = starts.map(() => []);
  for (const slice of slices) perBucket[index.get(bucketStart(slice.startMs, interval)) ?? -1]?.push(slice);
  const series = perBucket.map((items, i) => ({
    start: new Date(starts[i] as number).toISOString(),
    end: new Date(nextBucket(starts[i] as number, interval)).toISOString(),
    totals: summarise(null, items),
    workflows: byWorkflow(items),
  }));
  return {
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    interval,
    workflows: byWorkflow(slices),
    totals: summarise(null, slices),
    series,
  };
}

/** One row per workflow that had runs (the runs without one under `null`), sorted by name. */
function byWorkflow(slices: UsageSlice[]): UsageRow[] {
  const groups = new Map<string | null, UsageSlice[]>();
  for (const slice of slices) {
    const group = groups.get(slice.workflow);
    if (group) group.push(slice);
    else groups.set(slice.workflow, [slice]);
  }
  return [...groups.entries()]
    .sort(([a], [b]) => String(a).localeCompare(String(b)))
    .map(([workflow, items]) => summarise(workflow, items))
    .filter((row) => row.runs > 0);
}

function summarise(workflow: string | null, slices: UsageSlice[]): UsageRow {
  const c = slices.reduce((sum, slice) => addCounters(sum, slice.counters), emptyCounters());
  return {
    workflow,
    runs: c.runs,
    completed: c.completed,
    failed: c.failed,
    queued: c.runs - c.completed - c.failed,
    estimatedUsd: microsToUsd(c.estimatedMicros),
    chargedUsd: microsToUsd(c.chargedMicros),
    refundedUsd: microsToUsd(c.refundedMicros),
    verified: c.verified,
    accepted: c.accepted,
    acceptanceRate: c.verified > 0 ? c.accepted / c.verified : null,
    meanConfidence: c.confidenceCount > 0 ? Math.round(c.confidenceMilli / c.confidenceCount) / 1000 : null,
  };
}
