/**
 * Run records in the Runs table: the item shape, reads, claims and listing (persistence only; the API's view of a run
 * is shared/runs/run-view.ts).
 * Writes that move money (create-with-hold, settle) live in ledger.ts because they are one transaction with the ledger.
 * Over 400 lines: the run item's shape, each attribute with what writes and reads it, is half of the file.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { applied, ddb } from '../aws/dynamodb.js';
import type { Attempt, Verification } from '../contract.js';
import type { ErrorCode } from '../errors.js';
import type { Fields, Review } from '../fields/types.js';
import type { FileFacts } from '../file-facts.js';
import { reconcileSettings, tables } from '../infra/resources.js';
import { log } from '../log.js';
import type { Micros } from '../money.js';
import type { CalibrationSample } from '../pricing/calibration.js';
import { resource } from '../resource-name.js';
import type { ProviderId, Strategy, TaskSpec } from '../task.js';

export const runsTable = resource(tables.runs.envVar);

/** The sparse index of queued runs (shared/infra/resources.ts). */
const QUEUED_INDEX = 'queued';

/** The indexes a tenant's runs are listed from, and the attribute each is partitioned by. */
export const LIST_INDEXES = {
  byTenant: 'tenantId',
  byTenantWorkflow: 'tenantWorkflow',
  /** Sparse: the runs whose review is needed (`reviewTenant` set by the settlement, removed by a verify). */
  reviewNeeded: 'reviewTenant',
} as const;
export type ListIndex = keyof typeof LIST_INDEXES;

export interface RunUsage {
  requests: number;
  billableUnits: number;
  costMicros: Micros;
  priceMicros: Micros;
}

export interface RunError {
  code: ErrorCode;
  message: string;
  status: number;
  retryable: boolean;
  details?: Record<string, unknown>;
}

/** What a run of an evaluation carries (store/evaluations.ts). */
export interface RunEvaluation {
  evaluationId: string;
  /** The item's position in the evaluation (its key in EvaluationItems). */
  n: number;
  /** The document's position in the request. */
  index: number;
  /** The provider the evaluation listed for this run; null: the normal plan. */
  provider: ProviderId | null;
  expected: Record<string, unknown>;
  /** The evaluation's `untypedFields`, scored `auto`. */
  untypedFields?: string[];
}

/** A run as stored. Money is integer micros; the contract's dollars are derived in runs/run-view.ts. */
export interface RunRecord {
  jobId: string;
  tenantId: string;
  status: 'queued' | 'completed' | 'failed';
  /**
   * Progress detail while queued: waiting in the queue, a worker is on it, or (a batch run) its provider request waits
   * for or is in a provider batch (shared/batching/).
   */
  stage: 'waiting' | 'processing' | 'batched' | 'done';
  /** `batch`: a batch run (contract-v1.2 §4), priced at its batch estimate; absent: standard. */
  priority?: 'batch';
  /** A batch run: by when it is finished (ISO; creation + batchSettings.expiresWithinHours). */
  expiresAt?: string;
  uploadId: string;
  objectKey: string;
  /**
   * The stored object creation inspected: its version (a versioned bucket) and ETag. The worker reads exactly it, so
   * bytes PUT to the same address after creation are not the run's. Absent on runs created before it was recorded.
   */
  objectIdentity?: { etag?: string; versionId?: string };
  /**
   * When the upload's retention ends (epoch seconds): the file is not served after it, although the bucket's lifecycle
   * (whole days, for runs still in the queue) deletes the bytes a day or two later. Absent on runs created before.
   */
  uploadExpiresAtEpoch?: number;
  prompt: string;
  outputFormat: 'json' | 'text';
  schemaId: string | null;
  task: TaskSpec;
  workflow: string | null;
  /** `${tenantId}#${workflow}` for the byTenantWorkflow index; absent when no workflow. */
  tenantWorkflow?: string;
  metadata: Record<string, unknown>;
  file: FileFacts;
  /** The client's file name from presign (runs created before it was stored have none). */
  fileName?: string;
  strategy: Strategy;
  /** Candidate providers in order of preference, fixed at creation (a chained plan's `analyze` step). */
  candidates: ProviderId[];
  /** A chained OCR-then-analyze plan's OCR engines, in order (absent for a single-step plan). */
  ocrCandidates?: ProviderId[];
  /**
   * A PDF run in page chunks (shared/planning/chunks.ts): the pages one call carries, fixed at creation with the hold
   * that covers every chunk. Absent: one call for the whole file (images, one-page PDFs, chained plans, older runs).
   */
  chunkPages?: number;
  /** While a chunked run is queued: its pages, and how many are done (checkpointed; shared/store/chunks.ts). */
  progress?: { pagesTotal: number; pagesDone: number };
  /**
   * A packet run (contract-v1.2 §3, shared/packets/): split into documents, or one document classed first (`auto`),
   * among these registry schemas. Absent for an ordinary run.
   */
  packet?: { mode: 'split' | 'auto'; schemaIds: string[] };
  /**
   * A completed `auto` run: the schema the file was classed as (its `task` is then that schema's) and how sure the
   * class is. Written by the settlement.
   */
  classification?: { schemaId: string; confidence: number };
  /** A run fanned out to several worker invocations (store/groups.ts): set once, by the delivery that fanned it out. */
  fanout?: { groups: number; groupPages: number };
  /** Per group (keyed by its 0-based index): the lease of the delivery running it, and when it was counted done. */
  groups?: Record<string, { leaseUntil?: number; leaseHolder?: string; doneAt?: string }>;
  /** Groups counted done: the delivery whose count reaches `fanout.groups` merges the run and settles it. */
  groupsDone?: number;
  estimateMicros: Micros;
  /** The margin the estimate was computed with; the worker prices with it (absent on older runs: the current one). */
  marginPct?: number;
  maxCostMicros: Micros | null;
  /** True when the hold was taken from a limited tenant's available credit (so settle must give the refund back). */
  holdFromCredit: boolean;
  createdAt: string;
  /** The id of the request that created the run: a failed run's `error.requestId` (absent on older runs). */
  requestId?: string;
  expiresAtEpoch: number;
  /** Worker deliveries seen while the run was queued, of all its messages (a crash, redelivery or duplicate adds one). */
  deliveries?: number;
  /**
   * SQS's receive count of the latest delivery (of whichever message): the reconciler tells a dead-lettered run by it
   * (absent on older runs: `deliveries` stands in).
   */
  lastReceiveCount?: number;
  /**
   * Epoch milliseconds until which a worker delivery holds the run (claimRun), renewed by its heartbeat while it works
   * (shared/worker/heartbeat.ts); another delivery stands back until then.
   */
  leaseUntil?: number;
  /** Who holds that lease (a delivery's own id, heartbeat.ts holderId): only it renews or releases the lease. */
  leaseHolder?: string;
  /** When the latest delivery reached the worker (ISO), whether it processed or stood back; read by the reconciler. */
  deliveredAt?: string;
  /**
   * Present only while the run is queued (removed by the settlement): the partition of the sparse `queued` index,
   * through which the reconciler (shared/worker/reconcile.ts) finds runs that wait too long.
   */
  queuedShard?: string;
  /** Messages the reconciler sent again for this run, and when it last did. */
  resends?: number;
  resentAt?: string;
  // Final fields, written once together with the status and the money.
  completedAt?: string;
  result?: Record<string, unknown>;
  /** Set instead of `result` when the result was too large for this item: it is in RunResults (run-results.ts). */
  resultParts?: number;
  usage?: RunUsage;
  chargedMicros?: Micros;
  refundedMicros?: Micros;
  /**
   * What the price exceeded the estimate by (max(0, price - estimate)): the service's, not the client's. Internal:
   * operators see it (metric, usage report), a tenant's run envelope never does.
   */
  absorbedMicros?: Micros;
  /** The answering model's predicted and actual tokens (calibration; internal). */
  calibration?: CalibrationSample;
  confidence?: number;
  /** A chunked run's fields whose chunks read different values: the other values, with the page each came from. */
  alternatives?: Record<string, Array<{ value: unknown; page?: number }>>;
  /**
   * Per-field evidence of a completed json run (contract-v1.1 §3). Absent here when it travels with the result in
   * RunResults (`fieldsInParts`; run-results.ts).
   */
  fields?: Fields;
  /** The result's parts in RunResults hold `{result, fields}` rather than the result alone. */
  fieldsInParts?: boolean;
  /** Whether a person must check the result, and why. A verify sets `needed` to false and keeps the reasons. */
  review?: Review;
  /**
   * The tenant id while the run's review is needed, else absent: the partition of the sparse `reviewNeeded` index
   * (the review queue). Set by the settlement, removed by the verify that clears the review.
   */
  reviewTenant?: string;
  attempts?: Attempt[];
  error?: RunError;
  verification?: Verification;
  /** How many verifications the run has had (the history is in the Verifications table). */
  verificationCount?: number;
  /** True once a review of the run is in the accuracy counters (store/quality.ts); reviews before them are not. */
  qualityCounted?: boolean;
  /**
   * A run of an evaluation (contract-v1.2 §1): which evaluation and item it is, the provider it was asked to use, and
   * the values its answer is scored against in its settlement (store/evaluations.ts). Its money is the evaluation's
   * hold (no hold of its own) and it never enters the review queue.
   */
  evaluation?: RunEvaluation;
  /**
   * True once the run's state is in the usage aggregates (store/usage.ts): set at creation, or by the backfill for runs
   * created before the aggregates. Every later write of the run's state adds to them only when it is set.
   */
  usageCounted?: boolean;
}

/**
 * Whether a run is past its retention (`expiresAtEpoch`, the table's TTL attribute). DynamoDB deletes expired items
 * on its own schedule, days late at times; until then an expired run reads as gone, so that the retention a client
 * sees does not depend on when the deletion happens to run (and a run is never read after its result parts).
 */
export function isExpired(run: Pick<RunRecord, 'expiresAtEpoch'>, now = Date.now()): boolean {
  return run.expiresAtEpoch * 1000 <= now;
}

/** Reads a run; returns null when absent, expired or owned by another tenant (callers answer 404 either way). */
export async function getRunForTenant(jobId: string, tenantId: string): Promise<RunRecord | null> {
  // An id that cannot be one of ours is not found, without a read: a path segment of any length reaches here, and
  // DynamoDB refuses a key over 2 KB with an error (which would be a 500 for an unknown id).
  if (!JOB_ID.test(jobId)) return null;
  const run = await getRun(jobId);
  return run && run.tenantId === tenantId && !isExpired(run) ? run : null;
}

/** What a jobId can look like (create-run issues `run_` + 32 hex digits); anything else is an unknown id. */
export const JOB_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** Reads a run regardless of tenant (worker use). */
export async function getRun(jobId: string): Promise<RunRecord | null> {
  const out = await ddb.send(new GetCommand({ TableName: runsTable(), Key: { jobId }, ConsistentRead: true }));
  return (out.Item as RunRecord | undefined) ?? null;
}

/** Who holds a run (or a group) and until when (epoch ms), as a delivery that stands back reports it. */
export interface Lease {
  holder: string | undefined;
  until: number | undefined;
}

/**
 * What a delivery found when it tried to claim its run (claimRun): `claimed` (process it), `leased` (another delivery
 * holds it: never call the provider twice) or `final`.
 */
export type Claim = { state: 'claimed' } | { state: 'final' } | { state: 'leased'; lease: Lease };

/** A lease as a run item (or a group entry) holds it. */
export function leaseOf(item: { leaseHolder?: string; leaseUntil?: number } | undefined): Lease {
  return { holder: item?.leaseHolder, until: item?.leaseUntil };
}

/**
 * Claims a queued run for one delivery, `holder`, until `leaseUntil` (its heartbeat renews it: renewClaim), and counts
 * the delivery with its SQS receive count. A lease that lapsed unrenewed (its holder died) is taken over.
 * Why: docs/decisions.md#a-lease-per-delivery-renewed-by-a-heartbeat
 */
export async function claimRun(
  jobId: string,
  {
    leaseUntil,
    holder,
    receiveCount,
    now = new Date(),
  }: { leaseUntil: Date; holder: string; receiveCount: number; now?: Date },
): Promise<Claim> {
  const values = { ':now': now.toISOString(), ':one': 1, ':queued': 'queued', ':receive': receiveCount };
  const claimed = await applied(
    ddb.send(
      new UpdateCommand({
        TableName: runsTable(),
        Key: { jobId },
        UpdateExpression:
          'SET #stage = :processing, deliveredAt = :now, lastReceiveCount = :receive, leaseUntil = :lease, ' +
          'leaseHolder = :holder ADD deliveries :one',
        ConditionExpression: '#status = :queued AND (attribute_not_exists(leaseUntil) OR leaseUntil <= :nowMs)',
        ExpressionAttributeNames: { '#stage': 'stage', '#status': 'status' },
        ExpressionAttributeValues: {
          ...values,
          ':processing': 'processing',
          ':lease': leaseUntil.getTime(),
          ':holder': holder,
          ':nowMs': now.getTime(),
        },
      }),
    ),
  );
  if (claimed) return { state: 'claimed' };
  try {
    // Counted (the reconciler reads it) and read back in one write: whose lease this delivery stands back for.
    const out = await ddb.send(
      new UpdateCommand({
        TableName: runsTable(),
        Key: { jobId },
        UpdateExpression: 'SET deliveredAt = :now, lastReceiveCount = :receive ADD deliveries :one',
        ConditionExpression: '#status = :queued',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_NEW',
      }),
    );
    return { state: 'leased', lease: leaseOf(out.Attributes as RunRecord | undefined) };
  } catch (error: unknown) {
    if (error instanceof ConditionalCheckFailedException) return { state: 'final' };
    throw error;
  }
}

/**
 * Renews `holder`'s lease on a queued run to `leaseUntil` (its heartbeat). False when the lease is no longer its own:
 * another delivery took it over after it lapsed, or the run is final; the holder must then stop.
 */
export async function renewClaim(jobId: string, holder: string, leaseUntil: Date): Promise<boolean> {
  return applied(
    ddb.send(
      new UpdateCommand({
        TableName: runsTable(),
        Key: { jobId },
        UpdateExpression: 'SET leaseUntil = :lease',
        ConditionExpression: '#status = :queued AND leaseHolder = :holder',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':lease': leaseUntil.getTime(), ':holder': holder, ':queued': 'queued' },
      }),
    ),
  );
}

/**
 * Gives up `holder`'s lease (a delivery that failed and will be redelivered). Best effort: a lease that stays lapses by
 * itself, and one that another delivery has taken over since is left alone.
 */
export async function releaseClaim(jobId: string, holder: string): Promise<void> {
  try {
    await applied(
      ddb.send(
        new UpdateCommand({
          TableName: runsTable(),
          Key: { jobId },
          UpdateExpression: 'REMOVE leaseUntil, leaseHolder',
          ConditionExpression: 'leaseHolder = :holder',
          ExpressionAttributeValues: { ':holder': holder },
        }),
      ),
    );
  } catch (error: unknown) {
    log.warn('could not release the lease on a run', { jobId, error });
  }
}

/**
 * Parks a batch run whose attempt waits in the batch lane: `stage: batched`, and `holder`'s lease given up, so that the
 * delivery the batcher sends when the request is resolved claims it at once. False when the lease is no longer its own.
 */
export function parkRun(jobId: string, holder: string): Promise<boolean> {
  return applied(
    ddb.send(
      new UpdateCommand({
        TableName: runsTable(),
        Key: { jobId },
        UpdateExpression: 'SET #stage = :batched REMOVE leaseUntil, leaseHolder',
        ConditionExpression: '#status = :queued AND leaseHolder = :holder',
        ExpressionAttributeNames: { '#stage': 'stage', '#status': 'status' },
        ExpressionAttributeValues: { ':batched': 'batched', ':queued': 'queued', ':holder': holder },
      }),
    ),
  );
}

/** The `queued` index's partition for a run: a few shards, so that no single partition takes every new run. */
export function queuedShardOf(jobId: string): string {
  let sum = 0;
  for (const char of jobId) sum = (sum + char.charCodeAt(0)) % reconcileSettings.shards;
  return `q${sum}`;
}

/**
 * One page of the ids of the queued runs of a shard created before `before` (ISO), oldest first, at most `limit`,
 * from `startKey` (the `queued` index is sparse: a settled run has left it; it holds keys only, and may lag a
 * settlement: callers read each run).
 */
export async function listQueuedBefore(
  shard: string,
  before: string,
  limit: number,
  startKey?: Record<string, unknown>,
): Promise<{ jobIds: string[]; nextKey: Record<string, unknown> | undefined }> {
  const out = await ddb.send(
    new QueryCommand({
      TableName: runsTable(),
      IndexName: QUEUED_INDEX,
      KeyConditionExpression: 'queuedShard = :shard AND createdAt < :before',
      ExpressionAttributeValues: { ':shard': shard, ':before': before },
      Limit: limit,
      ...(startKey ? { ExclusiveStartKey: startKey } : {}),
    }),
  );
  return { jobIds: (out.Items ?? []).map((item) => String(item.jobId)), nextKey: out.LastEvaluatedKey };
}

/**
 * Records that the run's message is sent again; only while the run is queued and no delivery happened since the
 * reconciler read it (`deliveredAt`: the last delivery it saw, or none), and at most `maxResends` times. Returns false
 * when the run changed meanwhile (a worker picked it up, or it was settled).
 */
export async function markResent(
  jobId: string,
  maxResends: number,
  now = new Date(),
  deliveredAt?: string,
): Promise<boolean> {
  const unchanged = deliveredAt === undefined ? 'attribute_not_exists(deliveredAt)' : 'deliveredAt = :delivered';
  return applied(
    ddb.send(
      new UpdateCommand({
        TableName: runsTable(),
        Key: { jobId },
        UpdateExpression: 'SET resentAt = :now ADD resends :one',
        ConditionExpression: `#status = :queued AND ${unchanged} AND (attribute_not_exists(resends) OR resends < :max)`,
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':now': now.toISOString(),
          ':one': 1,
          ':queued': 'queued',
          ':max': maxResends,
          ...(deliveredAt === undefined ? {} : { ':delivered': deliveredAt }),
        },
      }),
    ),
  );
}

export interface ListRunsOptions {
  tenantId: string;
  workflow?: string;
  status?: RunRecord['status'];
  /** Only the runs whose review is needed (the review queue), read from the sparse `reviewNeeded` index. */
  reviewNeeded?: boolean;
  limit: number;
  /** Exclusive start key from a previous page. */
  startKey?: Record<string, unknown>;
  createdFrom?: string;
  createdTo?: string;
  /**
   * Only these attributes of each run (dotted paths for nested ones), plus the index key the listing pages by. For
   * readers that need a few fields of many runs: a run item can hold a 200 KB result, and a reader that loads whole
   * items for a month of runs runs out of time and memory. The items then hold only these attributes.
   */
  attributes?: readonly string[];
}

/** The index a listing reads: the review queue, else a workflow's runs, else all the tenant's runs. */
export function listIndexOf(options: Pick<ListRunsOptions, 'workflow' | 'reviewNeeded'>): ListIndex {
  if (options.reviewNeeded) return 'reviewNeeded';
  return options.workflow !== undefined ? 'byTenantWorkflow' : 'byTenant';
}

/** A run's key in the index a listing reads (what DynamoDB returns as LastEvaluatedKey after that run). */
export function runIndexKey(run: RunRecord, index: ListIndex): Record<string, string> {
  const partition = LIST_INDEXES[index];
  const value = index === 'byTenantWorkflow' ? (run.tenantWorkflow ?? '') : run.tenantId;
  return { jobId: run.jobId, [partition]: value, createdAt: run.createdAt };
}

/**
 * Lists a tenant's runs newest first, leaving out expired ones (`isExpired`). Filters (status, expiry, and the
 * workflow when the review queue is read) are applied server-side per query; queries are made until one run more
 * than `limit` is found or the index is exhausted, so `lastKey` is returned only when another run follows: the last
 * page is never an empty one.
 */
export async function listRuns(
  options: ListRunsOptions,
): Promise<{ items: RunRecord[]; lastKey?: Record<string, unknown> }> {
  const index = listIndexOf(options);
  // DynamoDB rejects placeholder names that no expression uses, so each is added with its clause.
  const names: Record<string, string> = { '#pk': LIST_INDEXES[index] };
  const values: Record<string, unknown> = {
    ':pk': index === 'byTenantWorkflow' ? `${options.tenantId}#${options.workflow}` : options.tenantId,
  };
  let keyCondition = '#pk = :pk';
  if (options.createdFrom !== undefined && options.createdTo !== undefined) {
    keyCondition += ' AND #createdAt BETWEEN :from AND :to';
    names['#createdAt'] = 'createdAt';
    values[':from'] = options.createdFrom;
    values[':to'] = options.createdTo;
  }
  let filter = '#expires > :now';
  names['#expires'] = 'expiresAtEpoch';
  values[':now'] = Math.floor(Date.now() / 1000);
  if (options.status !== undefined) {
    filter = `#status = :status AND ${filter}`;
    names['#status'] = 'status';
    values[':status'] = options.status;
  }
  // The review queue is partitioned by tenant only: a workflow narrows it as a filter.
  if (index === 'reviewNeeded' && options.workflow !== undefined) {
    filter = `#workflow = :workflow AND ${filter}`;
    names['#workflow'] = 'tenantWorkflow';
    values[':workflow'] = `${options.tenantId}#${options.workflow}`;
  }

  let projection: string | undefined;
  if (options.attributes !== undefined) {
    const keys = ['jobId', 'createdAt', LIST_INDEXES[index]];
    const paths = [...new Set([...keys, ...options.attributes])];
    projection = paths
      .map((path, i) =>
        path
          .split('.')
          .map((segment, j) => {
            names[`#p${i}_${j}`] = segment;
            return `#p${i}_${j}`;
          })
          .join('.'),
      )
      .join(', ');
  }

  const items: RunRecord[] = [];
  let startKey = options.startKey;
  do {
    const page = await ddb.send(
      new QueryCommand({
        TableName: runsTable(),
        IndexName: index,
        KeyConditionExpression: keyCondition,
        FilterExpression: filter,
        ...(projection !== undefined ? { ProjectionExpression: projection } : {}),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ScanIndexForward: false,
        Limit: options.limit + 1 - items.length,
        ExclusiveStartKey: startKey,
      }),
    );
    items.push(...((page.Items ?? []) as RunRecord[]));
    startKey = page.LastEvaluatedKey;
  } while (startKey && items.length <= options.limit);
  if (items.length <= options.limit) return { items };
  const shown = items.slice(0, options.limit);
  return { items: shown, lastKey: runIndexKey(shown[shown.length - 1] as RunRecord, index) };
}
