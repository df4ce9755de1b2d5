/**
 * Usage aggregates: per tenant × workflow × UTC hour and × UTC day of a run's creation, the counters `GET /v1/usage`
 * sums (runs, completed, failed, estimated, charged, refunded, verified, accepted, confidence). Each is changed with an
 * atomic `ADD` inside the transaction that writes the run's state (creation, settlement, verification), so the counters
 * are exactly-once with the state they count. A run carries `usageCounted` once its state is in the counters: runs
 * from before the aggregates are counted by `backfillUsage`, and no write adds a run the counters do not hold yet.
 * Why: docs/decisions.md#usage-aggregates
 */
import { QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { ddb } from '../aws/dynamodb.js';
import { tables } from '../infra/resources.js';
import type { Micros } from '../money.js';
import { resource } from '../resource-name.js';
import { getRun, listRuns, type RunRecord, runsTable } from './runs.js';
import { failedConditions, type TransactItem, transactWriteNamed } from './transact.js';

export const usageTable = resource(tables.usage.envVar);

/** What usage counts of a set of runs. Confidence is summed in thousandths (it is rounded to 3 decimals): exact. */
export interface UsageCounters {
  runs: number;
  completed: number;
  failed: number;
  estimatedMicros: Micros;
  chargedMicros: Micros;
  refundedMicros: Micros;
  verified: number;
  accepted: number;
  confidenceMilli: number;
  confidenceCount: number;
  /** What completed runs' prices exceeded their estimates by (the service's; operators only, never a tenant's view). */
  absorbedMicros: Micros;
}

export const COUNTER_NAMES = [
  'runs',
  'completed',
  'failed',
  'estimatedMicros',
  'chargedMicros',
  'refundedMicros',
  'verified',
  'accepted',
  'confidenceMilli',
  'confidenceCount',
  'absorbedMicros',
] as const satisfies readonly (keyof UsageCounters)[];

export type UsageDelta = Partial<UsageCounters>;

export function emptyCounters(): UsageCounters {
  return Object.fromEntries(COUNTER_NAMES.map((name) => [name, 0])) as unknown as UsageCounters;
}

export function addCounters(into: UsageCounters, delta: UsageDelta): UsageCounters {
  for (const name of COUNTER_NAMES) into[name] += delta[name] ?? 0;
  return into;
}

/** What creating a run adds. */
export function createdDelta(run: Pick<RunRecord, 'estimateMicros'>): UsageDelta {
  return { runs: 1, estimatedMicros: run.estimateMicros };
}

/** What settling a run adds. */
export function settledDelta(
  status: 'completed' | 'failed',
  charged: Micros,
  refunded: Micros,
  confidence: number | undefined,
  absorbed: Micros = 0,
): UsageDelta {
  return {
    [status]: 1,
    chargedMicros: charged,
    refundedMicros: refunded,
    absorbedMicros: absorbed,
    ...(typeof confidence === 'number' ? { confidenceMilli: Math.round(confidence * 1000), confidenceCount: 1 } : {}),
  };
}

/** What replacing a run's current verification (none before its first) changes. */
export function verifiedDelta(before: { accepted: boolean } | undefined, after: { accepted: boolean }): UsageDelta {
  return { verified: before ? 0 : 1, accepted: Number(after.accepted) - Number(before?.accepted ?? false) };
}

/** The fields of a run its whole contribution is computed from (`runContribution`). */
export const CONTRIBUTION_ATTRIBUTES = [
  'workflow',
  'status',
  'estimateMicros',
  'chargedMicros',
  'refundedMicros',
  'confidence',
  'absorbedMicros',
  'verification.accepted',
] as const;
export type ContributingRun = Pick<RunRecord, 'status' | 'estimateMicros'> &
  Partial<Pick<RunRecord, 'chargedMicros' | 'refundedMicros' | 'confidence' | 'absorbedMicros'>> & {
    verification?: { accepted: boolean };
  };

/** Everything a run in its current state adds: its creation, its settlement once final, its verification if any. */
export function runContribution(run: ContributingRun): UsageCounters {
  const counters = addCounters(emptyCounters(), createdDelta(run));
  if (run.status !== 'queued') {
    addCounters(
      counters,
      settledDelta(
        run.status,
        run.chargedMicros ?? 0,
        run.refundedMicros ?? 0,
        run.confidence ?? undefined,
        run.absorbedMicros ?? 0,
      ),
    );
  }
  if (run.verification) addCounters(counters, verifiedDelta(undefined, run.verification));
  return counters;
}

// ---------- writing: items for the transaction that writes the run's state ----------

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
type Unit = 'day' | 'hour';

/** The sort key of a bucket: `d#2026-11-26#<workflow>` or `h#2026-11-26T03#<workflow>` (no workflow: empty). */
function slotKey(unit: Unit, startMs: number, workflow: string | null): string {
  const iso = new Date(startMs).toISOString();
  return unit === 'day' ? `d#${iso.slice(0, 10)}#${workflow ?? ''}` : `h#${iso.slice(0, 13)}#${workflow ?? ''}`;
}

function slotStart(slot: string): number {
  const [unit, when] = slot.split('#');
  return Date.parse(unit === 'd' ? `${when}T00:00:00Z` : `${when}:00:00Z`);
}

function floorTo(ms: number, unit: Unit): number {
  const size = unit === 'day' ? DAY_MS : HOUR_MS;
  return Math.floor(ms / size) * size;
}

/**
 * The two updates (the run's hour and day) that add `delta` for a run, for a transaction; null when it changes nothing
 * or when the run is not counted yet (the backfill will count its state then).
 */
export function usageUpdates(
  run: Pick<RunRecord, 'tenantId' | 'workflow' | 'createdAt' | 'usageCounted'>,
  delta: UsageDelta,
): TransactItem[] | null {
  const names = COUNTER_NAMES.filter((name) => (delta[name] ?? 0) !== 0);
  if (names.length === 0 || run.usageCounted !== true) return null;
  const created = Date.parse(run.createdAt);
  const values: Record<string, unknown> = { ':workflow': run.workflow };
  for (const name of names) values[`:${name}`] = delta[name];
  const update = `SET workflow = :workflow ADD ${names.map((name) => `${name} :${name}`).join(', ')}`;
  return (['hour', 'day'] as const).map((unit) => ({
    Update: {
      TableName: usageTable(),
      Key: { tenantId: run.tenantId, slot: slotKey(unit, floorTo(created, unit), run.workflow) },
      UpdateExpression: update,
      ExpressionAttributeValues: values,
    },
  }));
}

/** The condition a run's own update adds so that `usageUpdates` agrees with the item: counted, or not yet. */
export function countedCondition(run: Pick<RunRecord, 'usageCounted'>): {
  expression: string;
  values: Record<string, unknown>;
} {
  return run.usageCounted === true
    ? { expression: 'usageCounted = :counted', values: { ':counted': true } }
    : { expression: 'attribute_not_exists(usageCounted)', values: {} };
}

// ---------- reading ----------

/** The counters of one stored bucket, or of one run on a partial hour, with the time it starts at. */
export interface UsageSlice {
  startMs: number;
  workflow: string | null;
  counters: UsageCounters;
}

type Piece = { unit: Unit; from: number; to: number } | { unit: 'run'; from: number; to: number };

/**
 * Covers [from, to) with the coarsest pieces it can: whole days, whole hours at the edges of a partial day, and the
 * runs themselves only for the partial hours at the very edges.
 */
export function cover(from: number, to: number, units: readonly Unit[]): Piece[] {
  const [unit, ...finer] = units;
  if (unit === undefined) return from < to ? [{ unit: 'run', from, to }] : [];
  const size = unit === 'day' ? DAY_MS : HOUR_MS;
  const first = Math.ceil(from / size) * size;
  const last = floorTo(to, unit);
  if (first >= last) return cover(from, to, finer);
  return [...cover(from, first, finer), { unit, from: first, to: last }, ...cover(last, to, finer)];
}

export interface UsageRead {
  tenantId: string;
  from: number;
  to: number;
  /** The widest stored bucket that may be used: `hour` when the caller groups by hour. */
  coarsest: Unit;
  workflow?: string;
}

/**
 * The counters of every run created in [from, to), as slices each lying inside one hour (or one day when `coarsest` is
 * a day): O(days × workflows) items read, plus the runs of at most two partial hours.
 */
export async function readUsage(read: UsageRead): Promise<UsageSlice[]> {
  const units: Unit[] = read.coarsest === 'day' ? ['day', 'hour'] : ['hour'];
  const pieces = cover(read.from, read.to, units);
  const slices = await Promise.all(
    pieces.map((piece) => (piece.unit === 'run' ? readRuns(read, piece) : readSlots(read, piece))),
  );
  return slices.flat();
}

async function readSlots(read: UsageRead, piece: { unit: Unit; from: number; to: number }): Promise<UsageSlice[]> {
  const prefix = piece.unit === 'day' ? 'd' : 'h';
  const lastStart = piece.to - (piece.unit === 'day' ? DAY_MS : HOUR_MS);
  const values: Record<string, unknown> = {
    ':tenant': read.tenantId,
    ':first': slotKey(piece.unit, piece.from, null),
    // `~` sorts after every character a workflow may hold.
    ':last': `${slotKey(piece.unit, lastStart, null)}~`,
  };
  if (read.workflow !== undefined) values[':workflow'] = read.workflow;
  const slices: UsageSlice[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await ddb.send(
      new QueryCommand({
        TableName: usageTable(),
        KeyConditionExpression: 'tenantId = :tenant AND slot BETWEEN :first AND :last',
        ...(read.workflow !== undefined ? { FilterExpression: 'workflow = :workflow' } : {}),
        ExpressionAttributeValues: values,
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) {
      const slot = String(item.slot);
      if (!slot.startsWith(`${prefix}#`)) continue;
      const counters = emptyCounters();
      for (const name of COUNTER_NAMES) counters[name] = Number(item[name] ?? 0);
      slices.push({ startMs: slotStart(slot), workflow: (item.workflow as string | null) ?? null, counters });
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return slices;
}

async function readRuns(read: UsageRead, piece: Piece): Promise<UsageSlice[]> {
  const slices: UsageSlice[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await listRuns({
      tenantId: read.tenantId,
      limit: 500,
      attributes: CONTRIBUTION_ATTRIBUTES,
      createdFrom: new Date(piece.from).toISOString(),
      // BETWEEN is inclusive: stop one millisecond before the piece's end.
      createdTo: new Date(piece.to - 1).toISOString(),
      ...(read.workflow !== undefined ? { workflow: read.workflow } : {}),
      ...(startKey ? { startKey } : {}),
    });
    for (const run of page.items) {
      slices.push({ startMs: Date.parse(run.createdAt), workflow: run.workflow, counters: runContribution(run) });
    }
    startKey = page.lastKey;
  } while (startKey);
  return slices;
}

// ---------- backfill ----------

export interface BackfillReport {
  scanned: number;
  counted: number;
  /** Items in the Runs table that are not runs the API created (no tenant, creation time or status): left alone. */
  skipped: number;
}

/**
 * Counts every run the aggregates do not hold yet (runs created before them), each in one transaction conditional on
 * the state it read, so that it is safe while the service runs and when run twice: a run settled or verified between
 * the read and the write is read again. `segment`/`totalSegments` split the scan for parallel workers.
 */
export async function backfillUsage(
  options: { segment?: number; totalSegments?: number } = {},
): Promise<BackfillReport> {
  const report: BackfillReport = { scanned: 0, counted: 0, skipped: 0 };
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await ddb.send(
      new ScanCommand({
        TableName: runsTable(),
        FilterExpression: 'attribute_not_exists(usageCounted)',
        ProjectionExpression: 'jobId',
        ExclusiveStartKey: startKey,
        ...(options.totalSegments !== undefined
          ? { Segment: options.segment ?? 0, TotalSegments: options.totalSegments }
          : {}),
      }),
    );
    for (const item of page.Items ?? []) {
      report.scanned += 1;
      const outcome = await countRun(String(item.jobId));
      if (outcome !== 'already') report[outcome] += 1;
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return report;
}

const STATUSES: readonly string[] = ['queued', 'completed', 'failed'];

/** Adds one uncounted run's whole state to the aggregates. */
async function countRun(jobId: string): Promise<'counted' | 'already' | 'skipped'> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const run = await getRun(jobId);
    if (!run || run.usageCounted === true) return 'already';
    if (typeof run.tenantId !== 'string' || Number.isNaN(Date.parse(run.createdAt)) || !STATUSES.includes(run.status)) {
      return 'skipped';
    }
    const names: Record<string, string> = { '#status': 'status' };
    const values: Record<string, unknown> = { ':true': true, ':status': run.status };
    // The state counted is the state read: a settlement or verification in between fails the condition.
    let condition = 'attribute_not_exists(usageCounted) AND #status = :status';
    if (run.verification) {
      condition += ' AND verification.accepted = :accepted AND verification.verifiedAt = :verifiedAt';
      values[':accepted'] = run.verification.accepted;
      values[':verifiedAt'] = run.verification.verifiedAt;
    } else {
      condition += ' AND attribute_not_exists(verification)';
    }
    const items = {
      run: {
        Update: {
          TableName: runsTable(),
          Key: { jobId },
          UpdateExpression: 'SET usageCounted = :true',
          ConditionExpression: condition,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        },
      },
      usage: usageUpdates({ ...run, usageCounted: true }, runContribution(run)),
    };
    try {
      await transactWriteNamed(items);
      return 'counted';
    } catch (error: unknown) {
      if (!failedConditions(error, items).has('run')) throw error;
    }
  }
  throw new Error(`run ${jobId} kept changing while being counted`);
}
