/** Read-side cores: one run, the tenant's runs page by page, and usage per workflow. */
import {
  type ListRunsQuery,
  type ListRunsResponse,
  type RunResponse,
  USAGE_MAX_BUCKETS,
  type UsageInterval,
  type UsageQuery,
  type UsageResponse,
  type UsageRow,
} from '../contract.js';
import { InvalidRequestError, NotFoundError } from '../errors.js';
import { microsToUsd } from '../money.js';
import { withResult } from '../store/run-results.js';
import { getRunForTenant, JOB_ID, listRuns, type RunRecord, runIndexKey } from '../store/runs.js';
import { toRunResponse } from './run-view.js';

export async function getRunView(tenantId: string, jobId: string): Promise<RunResponse> {
  const run = await getRunForTenant(jobId, tenantId);
  if (!run) throw new NotFoundError('run', jobId);
  return toRunResponse(await withResult(run));
}

/**
 * Cursors are the index position, base64url-encoded, with the tenant inside: a cursor from another tenant (or a
 * forged one) is refused rather than used.
 */
// The workflow filter is bound too: it selects the index, and a key from one index is invalid on the other.
function encodeCursor(tenantId: string, workflow: string | undefined, key: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify({ t: tenantId, w: workflow ?? null, k: key })).toString('base64url');
}

function decodeCursor(tenantId: string, workflow: string | undefined, cursor: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as {
      t?: unknown;
      w?: unknown;
      k?: unknown;
    };
    if (parsed.t === tenantId && parsed.w === (workflow ?? null) && isIndexKey(parsed.k, tenantId, workflow)) {
      return parsed.k;
    }
  } catch {
    // fall through to the validation error
  }
  throw new InvalidRequestError('cursor is not valid', [{ path: 'cursor', message: 'unknown or malformed cursor' }]);
}

/**
 * Whether `key` is a position in this tenant's own index partition, as DynamoDB returns it: the table key (jobId),
 * the index key (tenant, or tenant#workflow, and createdAt), all strings, and nothing else but the tenant itself. A
 * cursor edited to point elsewhere would otherwise reach DynamoDB, which refuses a start key outside the query's
 * partition with an error (a 500).
 */
function isIndexKey(key: unknown, tenantId: string, workflow: string | undefined): key is Record<string, string> {
  if (!key || typeof key !== 'object' || Array.isArray(key)) return false;
  const entries = key as Record<string, unknown>;
  const own: Record<string, string> = { tenantId };
  if (workflow !== undefined) own.tenantWorkflow = `${tenantId}#${workflow}`;
  const partition = workflow === undefined ? 'tenantId' : 'tenantWorkflow';
  return (
    entries[partition] === own[partition] &&
    Object.entries(entries).every(([name, value]) =>
      name === 'jobId' || name === 'createdAt' ? true : Object.hasOwn(own, name) && value === own[name],
    ) &&
    typeof entries.jobId === 'string' &&
    JOB_ID.test(entries.jobId) &&
    typeof entries.createdAt === 'string' &&
    entries.createdAt.length <= 64
  );
}

/**
 * Most serialized bytes of the runs on one page. Lambda's response is at most 6 MB, with the body escaped inside it
 * (each quote and newline of a result takes one byte more), so a page stops after the run that passes 4 MB.
 */
export const LIST_PAGE_MAX_BYTES = 4 * 1024 * 1024;

export async function listRunViews(tenantId: string, query: ListRunsQuery): Promise<ListRunsResponse> {
  const page = await listRuns({
    tenantId,
    limit: query.limit,
    ...(query.workflow !== undefined ? { workflow: query.workflow } : {}),
    ...(query.status !== undefined ? { status: query.status } : {}),
    ...(query.cursor !== undefined ? { startKey: decodeCursor(tenantId, query.workflow, query.cursor) } : {}),
  });
  const runs = await Promise.all(page.items.map(withResult));
  // A page of long transcriptions (up to 3 MB each) could pass Lambda's 6 MB response limit and never be listable:
  // the page ends early instead, and the cursor continues after its last run (get-run serves any one run whole).
  const items: RunResponse[] = [];
  let bytes = 0;
  for (const run of runs) {
    const item = toRunResponse(run);
    bytes += Buffer.byteLength(JSON.stringify(item), 'utf8');
    if (items.length > 0 && bytes > LIST_PAGE_MAX_BYTES) {
      const last = page.items[items.length - 1] as RunRecord;
      return {
        items,
        nextCursor: encodeCursor(tenantId, query.workflow, runIndexKey(last, query.workflow !== undefined)),
      };
    }
    items.push(item);
  }
  return { items, nextCursor: page.lastKey ? encodeCursor(tenantId, query.workflow, page.lastKey) : null };
}

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
 * What usage sums of each run: read alone (a ProjectionExpression), since a month of runs with their results, prompts
 * and attempts would take the function's time and memory; of a verification only whether it accepted.
 */
const USAGE_ATTRIBUTES = [
  'workflow',
  'status',
  'estimateMicros',
  'chargedMicros',
  'refundedMicros',
  'confidence',
  'verification.accepted',
] as const;
type UsageFields = Pick<RunRecord, 'createdAt' | 'workflow' | 'status' | 'estimateMicros'> &
  Partial<Pick<RunRecord, 'chargedMicros' | 'refundedMicros' | 'confidence'>> & {
    verification?: { accepted: boolean };
  };

/**
 * Totals per workflow over runs created in [from, to), and the same per time bucket for charts. Buckets start at UTC
 * hour, day or month boundaries; the first one may begin before `from` (its totals still count only runs from `from`
 * on). Without an interval: days, or months when the period holds too many days.
 */
export async function usageSummary(tenantId: string, query: UsageQuery, now = new Date()): Promise<UsageResponse> {
  // The period is [from, to). Timestamps are normalised to the stored form (UTC, milliseconds), because the index
  // compares them as strings: `…T00:00:00Z` would sort after `…T00:00:00.123Z`.
  const to = query.to !== undefined ? Date.parse(query.to) : now.getTime();
  const from = query.from !== undefined ? Date.parse(query.from) : to - DEFAULT_USAGE_WINDOW_DAYS * 86400_000;
  // The schema compares the bounds when both are sent; `to` defaulting to now is only known here. An inverted range
  // must not reach the index query: DynamoDB refuses a BETWEEN whose bounds are reversed (a 500).
  if (from >= to) {
    throw new InvalidRequestError('from must be before to', [
      { path: 'from', message: 'from must be before to (to defaults to now)' },
    ]);
  }
  const [fromIso, toIso] = [new Date(from).toISOString(), new Date(to).toISOString()];
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

  const runs: UsageFields[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await listRuns({
      tenantId,
      limit: 500,
      attributes: USAGE_ATTRIBUTES,
      createdFrom: fromIso,
      // BETWEEN is inclusive: stop one millisecond before `to`.
      createdTo: new Date(to - 1).toISOString(),
      ...(query.workflow !== undefined ? { workflow: query.workflow } : {}),
      ...(startKey ? { startKey } : {}),
    });
    runs.push(...page.items);
    startKey = page.lastKey;
  } while (startKey);

  const index = new Map(starts.map((start, i) => [start, i]));
  const perBucket: UsageFields[][] = starts.map(() => []);
  for (const run of runs) perBucket[index.get(bucketStart(Date.parse(run.createdAt), interval)) ?? -1]?.push(run);
  const series = perBucket.map((items, i) => ({
    start: new Date(starts[i] as number).toISOString(),
    end: new Date(nextBucket(starts[i] as number, interval)).toISOString(),
    totals: summarise(null, items),
    workflows: byWorkflow(items),
  }));
  return {
    from: fromIso,
    to: toIso,
    interval,
    workflows: byWorkflow(runs),
    totals: summarise(null, runs),
    series,
  };
}

/** One row per workflow (the runs without one under `null`), sorted by name. */
function byWorkflow(runs: UsageFields[]): UsageRow[] {
  const groups = new Map<string | null, UsageFields[]>();
  for (const run of runs) {
    const group = groups.get(run.workflow);
    if (group) group.push(run);
    else groups.set(run.workflow, [run]);
  }
  return [...groups.entries()]
    .sort(([a], [b]) => String(a).localeCompare(String(b)))
    .map(([workflow, items]) => summarise(workflow, items));
}

function summarise(workflow: string | null, runs: UsageFields[]): UsageRow {
  const verified = runs.filter((r) => r.verification !== undefined);
  const accepted = verified.filter((r) => r.verification?.accepted === true);
  const confidences = runs.map((r) => r.confidence).filter((c): c is number => typeof c === 'number');
  const sum = (f: (r: UsageFields) => number) => runs.reduce((acc, r) => acc + f(r), 0);
  return {
    workflow,
    runs: runs.length,
    completed: runs.filter((r) => r.status === 'completed').length,
    failed: runs.filter((r) => r.status === 'failed').length,
    queued: runs.filter((r) => r.status === 'queued').length,
    estimatedUsd: microsToUsd(sum((r) => r.estimateMicros)),
    chargedUsd: microsToUsd(sum((r) => r.chargedMicros ?? 0)),
    refundedUsd: microsToUsd(sum((r) => r.refundedMicros ?? 0)),
    verified: verified.length,
    accepted: accepted.length,
    acceptanceRate: verified.length > 0 ? accepted.length / verified.length : null,
    meanConfidence:
      confidences.length > 0
        ? Math.round((confidences.reduce((a, b) => a + b, 0) / confidences.length) * 1000) / 1000
        : null,
  };
}
