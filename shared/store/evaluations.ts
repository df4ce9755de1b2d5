/**
 * Evaluations in DynamoDB (contract-v1.2 §1): the evaluation item (its hold, progress, money and report) and one item
 * per run (a document × a provider: what the run is made from, the expected values, and its scored fields).
 * Not to undo: a run of an evaluation is scored, and moves its evaluation's progress and money, inside its own
 * settlement transaction (`evaluationSettlement`, called by ledger.ts), so a duplicate delivery, a retry or a crash
 * counts it once or not at all; the report is then one read of the items, never of the runs.
 * Why: docs/decisions.md#evaluations-one-hold-runs-that-score-themselves
 * Over 400 lines: every read and write of the two evaluation items, kept beside the conditions that make them once.
 */
import { BatchWriteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { applied, ddb } from '../aws/dynamodb.js';
import type { Attempt } from '../contract.js';
import type { Fields, Review } from '../fields/types.js';
import type { FileFacts } from '../file-facts.js';
import { evaluationSettings, tables } from '../infra/resources.js';
import type { Micros } from '../money.js';
import { resource } from '../resource-name.js';
import { type FieldScore, scoreDocument } from '../scoring/compare.js';
import type { Report, ScoredItem } from '../scoring/report.js';
import type { ProviderId, Strategy, TaskSpec } from '../task.js';
import type { RunRecord } from './runs.js';
import { plainObjectsAsMaps, type TransactItem } from './transact.js';

export const evaluationsTable = resource(tables.evaluations.envVar, { checkAtInit: false });
export const evaluationItemsTable = resource(tables.evaluationItems.envVar, { checkAtInit: false });
// The runs of an evaluation are written from here (creation and the reconciler, which have the grant); the reads
// (evaluations-get, -list) load this module without it, so it is not checked at init here.
const runsTable = resource(tables.runs.envVar, { checkAtInit: false });

/** An evaluation as stored. Money is integer micros, as on runs. */
export interface EvaluationRecord {
  evaluationId: string;
  tenantId: string;
  name: string;
  status: 'queued' | 'completed' | 'failed';
  schemaId: string | null;
  task: TaskSpec;
  /** Fields an inline schema gave no type: scored by what their expected values look like (`auto`), not as text. */
  untypedFields?: string[];
  providers: ProviderId[] | null;
  workflow: string | null;
  metadata: Record<string, unknown>;
  /** Documents in the request, and runs (documents × providers). */
  documents: number;
  itemsTotal: number;
  /** Runs settled: moved by each run's settlement. */
  itemsDone: number;
  /** The hold: the sum of its runs' estimates. */
  estimateMicros: Micros;
  maxCostMicros: Micros | null;
  /** Moved by each run's settlement: Σ charged and Σ refunded; with every run settled they add up to the hold. */
  chargedMicros: Micros;
  refundedMicros: Micros;
  holdFromCredit: boolean;
  marginPct: number;
  createdAt: string;
  /** A batch evaluation (contract-v1.2 §4): its runs are batch runs, promised by createdAt + the batch window. */
  priority?: 'batch';
  requestId?: string;
  /** When every run was written (and its message sent, or left to the reconciler): absent while they are not. */
  materializedAt?: string;
  /** The sweep's tries at writing its runs (`countMaterializeTry`): bounded by `evaluationSettings.materializeTries`. */
  materializeTries?: number;
  completedAt?: string;
  report?: Report;
  /** Present until the report is written: the partition of the sparse `open` index the reconciler sweeps. */
  openShard?: string;
  expiresAtEpoch: number;
}

/** What one run of an evaluation is made from: its upload as inspected and its plan, fixed at creation. */
export interface ItemPlan {
  uploadId: string;
  objectKey: string;
  objectIdentity?: { etag?: string; versionId?: string };
  uploadExpiresAtEpoch?: number;
  fileName?: string;
  file: FileFacts;
  strategy: Strategy;
  candidates: ProviderId[];
  ocrCandidates?: ProviderId[];
  chunkPages?: number;
  estimateMicros: Micros;
}

/** One run of an evaluation as stored: before its settlement, and after (status and score). */
export interface EvaluationItemRecord {
  evaluationId: string;
  n: number;
  index: number;
  jobId: string;
  /** The listed provider; null for the normal plan. */
  provider: ProviderId | null;
  expected: Record<string, unknown>;
  plan: ItemPlan;
  expiresAtEpoch: number;
  // Written by the run's settlement.
  status?: 'completed' | 'failed';
  /** The provider the report counts the run under: the listed one, or the one that answered. */
  reportedProvider?: string;
  chargedMicros?: Micros;
  latencyMs?: number | null;
  reviewNeeded?: boolean | null;
  fields?: Record<string, FieldScore>;
  settledAt?: string;
}

/** The `open` index's partition of an evaluation. */
export function openShardOf(evaluationId: string): string {
  let sum = 0;
  for (const char of evaluationId) sum = (sum + char.charCodeAt(0)) % evaluationSettings.shards;
  return `o${sum}`;
}

/** What an evaluation id can look like (`eval_` + 32 hex digits); anything else is an unknown id. */
export const EVALUATION_ID = /^eval_[0-9a-f]{32}$/;

export async function getEvaluation(evaluationId: string): Promise<EvaluationRecord | null> {
  if (!EVALUATION_ID.test(evaluationId)) return null;
  const out = await ddb.send(
    new GetCommand({ TableName: evaluationsTable(), Key: { evaluationId }, ConsistentRead: true }),
  );
  return (out.Item as EvaluationRecord | undefined) ?? null;
}

/** The evaluation when it is the tenant's and not past its retention; null otherwise (answered 404 alike). */
export async function getEvaluationForTenant(evaluationId: string, tenantId: string): Promise<EvaluationRecord | null> {
  const evaluation = await getEvaluation(evaluationId);
  if (!evaluation || evaluation.tenantId !== tenantId) return null;
  return evaluation.expiresAtEpoch * 1000 > Date.now() ? evaluation : null;
}

/** The transaction item that writes a new evaluation (only if its id is new). */
export function evaluationPut(record: EvaluationRecord): TransactItem {
  return {
    Put: { TableName: evaluationsTable(), Item: record, ConditionExpression: 'attribute_not_exists(evaluationId)' },
  };
}

/** Writes the items of a new evaluation, 25 to a request, a few requests at once. */
export async function putItems(items: readonly EvaluationItemRecord[]): Promise<void> {
  // Expected values are a client's JSON: marshalled as maps whatever their keys (transact.ts, plainObjectsAsMaps).
  await writeBatches(items.map((Item) => ({ PutRequest: { Item: itemAsMaps(Item) } })));
}

/** Removes the items of an evaluation whose hold was refused (best effort by the caller; they expire anyway). */
export async function deleteItems(items: readonly Pick<EvaluationItemRecord, 'evaluationId' | 'n'>[]): Promise<void> {
  await writeBatches(items.map(({ evaluationId, n }) => ({ DeleteRequest: { Key: { evaluationId, n } } })));
}

type WriteRequest = { PutRequest: { Item: object } } | { DeleteRequest: { Key: Record<string, unknown> } };

async function writeBatches(requests: readonly WriteRequest[]): Promise<void> {
  const batches: WriteRequest[][] = [];
  for (let i = 0; i < requests.length; i += 25) batches.push(requests.slice(i, i + 25));
  let next = 0;
  const worker = async () => {
    while (next < batches.length) {
      let pending = batches[next++] ?? [];
      for (let attempt = 0; pending.length > 0; attempt++) {
        if (attempt > 8) throw new Error('DynamoDB left evaluation items unprocessed');
        if (attempt > 0) await new Promise((r) => setTimeout(r, 20 * 2 ** attempt));
        const out = await ddb.send(
          new BatchWriteCommand({ RequestItems: { [evaluationItemsTable()]: pending as never[] } }),
        );
        pending = (out.UnprocessedItems?.[evaluationItemsTable()] ?? []) as WriteRequest[];
      }
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
}

/** One page of an evaluation's items in order of `n`, from `startN` (exclusive). */
export async function queryItems(
  evaluationId: string,
  options: { limit?: number; afterN?: number; attributes?: readonly string[] } = {},
): Promise<{ items: EvaluationItemRecord[]; lastN: number | undefined }> {
  const items: EvaluationItemRecord[] = [];
  let startKey: Record<string, unknown> | undefined =
    options.afterN === undefined ? undefined : { evaluationId, n: options.afterN };
  const names: Record<string, string> = {};
  const projection = options.attributes?.map((a, i) => {
    names[`#a${i}`] = a;
    return `#a${i}`;
  });
  do {
    const page = await ddb.send(
      new QueryCommand({
        TableName: evaluationItemsTable(),
        KeyConditionExpression: 'evaluationId = :id',
        ExpressionAttributeValues: { ':id': evaluationId },
        ...(projection ? { ProjectionExpression: projection.join(', '), ExpressionAttributeNames: names } : {}),
        ...(options.limit !== undefined ? { Limit: options.limit - items.length } : {}),
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
      }),
    );
    items.push(...((page.Items ?? []) as EvaluationItemRecord[]));
    startKey = page.LastEvaluatedKey;
  } while (startKey && (options.limit === undefined || items.length < options.limit));
  const more = startKey !== undefined;
  return { items, lastN: more ? items[items.length - 1]?.n : undefined };
}

/** Every item of an evaluation (the report's read: its scores, not its plans or values). */
export async function allScoredItems(evaluationId: string): Promise<EvaluationItemRecord[]> {
  const { items } = await queryItems(evaluationId, {
    attributes: [
      'evaluationId',
      'n',
      'index',
      'jobId',
      'provider',
      'status',
      'reportedProvider',
      'chargedMicros',
      'latencyMs',
      'reviewNeeded',
      'fields',
    ],
  });
  return items;
}

/** A settled item as the report module reads it; null while its run is unsettled. */
export function scoredItemOf(item: EvaluationItemRecord): ScoredItem | null {
  if (item.status === undefined) return null;
  return {
    jobId: item.jobId,
    index: item.index,
    provider: item.reportedProvider ?? item.provider ?? 'unknown',
    status: item.status,
    chargedMicros: item.chargedMicros ?? 0,
    latencyMs: item.latencyMs ?? null,
    reviewNeeded: item.reviewNeeded ?? null,
    fields: item.fields ?? {},
  };
}

/** Marks an evaluation's runs written; false when it already was. */
export async function markMaterialized(evaluationId: string, now = new Date()): Promise<boolean> {
  return applied(
    ddb.send(
      new UpdateCommand({
        TableName: evaluationsTable(),
        Key: { evaluationId },
        UpdateExpression: 'SET materializedAt = :now',
        ConditionExpression: 'attribute_exists(evaluationId) AND attribute_not_exists(materializedAt)',
        ExpressionAttributeValues: { ':now': now.toISOString() },
      }),
    ),
  );
}

/** Counts one more of the sweep's tries at writing an evaluation's runs; returns how many there have been. */
export async function countMaterializeTry(evaluationId: string): Promise<number> {
  const out = await ddb.send(
    new UpdateCommand({
      TableName: evaluationsTable(),
      Key: { evaluationId },
      UpdateExpression: 'ADD materializeTries :one',
      ConditionExpression: 'attribute_exists(evaluationId)',
      ExpressionAttributeValues: { ':one': 1 },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  return Number(out.Attributes?.materializeTries ?? 1);
}

/** Writes the report and the final status, once (only while the evaluation is queued). */
export async function writeReport(
  evaluationId: string,
  report: Report,
  status: 'completed' | 'failed',
  now = new Date(),
): Promise<boolean> {
  return applied(
    ddb.send(
      new UpdateCommand({
        TableName: evaluationsTable(),
        Key: { evaluationId },
        UpdateExpression: 'SET #status = :status, report = :report, completedAt = :now REMOVE openShard',
        ConditionExpression: '#status = :queued',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':status': status,
          // Keyed by the schema's field names, which may be anything (`constructor`): marshalled as maps.
          ':report': plainObjectsAsMaps(report),
          ':now': now.toISOString(),
          ':queued': 'queued',
        },
      }),
    ),
  );
}

/** One page of a tenant's evaluations, newest first. */
export async function listEvaluations(options: {
  tenantId: string;
  limit: number;
  startKey?: Record<string, unknown>;
}): Promise<{ items: EvaluationRecord[]; lastKey?: Record<string, unknown> }> {
  const items: EvaluationRecord[] = [];
  let startKey = options.startKey;
  do {
    const page = await ddb.send(
      new QueryCommand({
        TableName: evaluationsTable(),
        IndexName: 'byTenant',
        KeyConditionExpression: 'tenantId = :t',
        FilterExpression: 'expiresAtEpoch > :now',
        ExpressionAttributeValues: { ':t': options.tenantId, ':now': Math.floor(Date.now() / 1000) },
        ScanIndexForward: false,
        Limit: options.limit + 1 - items.length,
        ExclusiveStartKey: startKey,
      }),
    );
    items.push(...((page.Items ?? []) as EvaluationRecord[]));
    startKey = page.LastEvaluatedKey;
  } while (startKey && items.length <= options.limit);
  if (items.length <= options.limit) return { items };
  const shown = items.slice(0, options.limit);
  const last = shown[shown.length - 1] as EvaluationRecord;
  return {
    items: shown,
    lastKey: { evaluationId: last.evaluationId, tenantId: last.tenantId, createdAt: last.createdAt },
  };
}

/** Ids of the open evaluations of a shard created before `before` (ISO), oldest first. */
export async function listOpenBefore(shard: string, before: string, limit: number): Promise<string[]> {
  const out = await ddb.send(
    new QueryCommand({
      TableName: evaluationsTable(),
      IndexName: 'open',
      KeyConditionExpression: 'openShard = :shard AND createdAt < :before',
      ExpressionAttributeValues: { ':shard': shard, ':before': before },
      Limit: limit,
    }),
  );
  return (out.Items ?? []).map((item) => String(item.evaluationId));
}

/** A record's top-level attributes with every plain object in them a Map, so a client's JSON always marshals. */
function itemAsMaps(record: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).map(([name, value]) => [name, plainObjectsAsMaps(value)]));
}

/** Writes a run of an evaluation (once: a run that exists is left as it is); true when this call wrote it. */
export async function putItemRun(run: RunRecord): Promise<boolean> {
  return applied(
    ddb.send(
      new PutCommand({
        TableName: runsTable(),
        // Its metadata and expected values are a client's JSON (a key `constructor` must not make it unwritable).
        Item: itemAsMaps(run),
        ConditionExpression: 'attribute_not_exists(jobId)',
      }),
    ),
  );
}

// ---------- in the run's settlement ----------

/** Largest scored fields kept with an item; past it the values are left out (the run itself has them). */
const SCORED_MAX_BYTES = 100_000;

/** The provider that answered: the last successful attempt's. */
function answeredBy(attempts: readonly Attempt[]): string | undefined {
  return [...attempts].reverse().find((a) => a.outcome === 'succeeded')?.provider;
}

export interface SettledAnswer {
  status: 'completed' | 'failed';
  result?: Record<string, unknown>;
  fields?: Fields;
  review?: Review;
  attempts: Attempt[];
  chargedMicros: Micros;
  refundedMicros: Micros;
  settledAt: string;
}

/**
 * The two updates a run of an evaluation adds to its settlement transaction: its item, scored against the expected
 * values, and its evaluation's progress and money. Unconditional: the settlement's own conditions (the run still
 * queued, its ledger entry new) make the whole transaction happen once.
 */
export function evaluationSettlement(run: RunRecord, answer: SettledAnswer): TransactItem[] | null {
  const evaluation = run.evaluation;
  if (!evaluation) return null;
  let fields = scoreDocument({
    fields: run.task.fields,
    ...(evaluation.untypedFields ? { untyped: evaluation.untypedFields } : {}),
    expected: evaluation.expected,
    got: answer.status === 'completed' ? (answer.result ?? {}) : null,
    evidence: answer.fields ?? null,
  });
  if (Buffer.byteLength(JSON.stringify(fields)) > SCORED_MAX_BYTES) {
    fields = Object.fromEntries(
      Object.entries(fields).map(([name, f]) => [name, { ...f, expected: null, got: null, valuesOmitted: true }]),
    );
  }
  const latencies = answer.attempts.filter((a) => a.outcome !== 'skipped').map((a) => a.latencyMs);
  const reported = evaluation.provider ?? answeredBy(answer.attempts) ?? run.candidates[0] ?? 'unknown';
  const reviewNeeded = answer.status === 'completed' && answer.review ? answer.review.needed : null;
  return [
    {
      Update: {
        TableName: evaluationItemsTable(),
        Key: { evaluationId: evaluation.evaluationId, n: evaluation.n },
        UpdateExpression:
          'SET #status = :status, reportedProvider = :provider, chargedMicros = :charged, latencyMs = :latency, ' +
          'reviewNeeded = :review, #fields = :fields, settledAt = :at',
        ExpressionAttributeNames: { '#status': 'status', '#fields': 'fields' },
        ExpressionAttributeValues: {
          ':status': answer.status,
          ':provider': reported,
          ':charged': answer.chargedMicros,
          ':latency': latencies.length > 0 ? latencies.reduce((a, b) => a + b, 0) : null,
          ':review': reviewNeeded,
          ':fields': fields,
          ':at': answer.settledAt,
        },
      },
    },
    {
      Update: {
        TableName: evaluationsTable(),
        Key: { evaluationId: evaluation.evaluationId },
        UpdateExpression: 'ADD itemsDone :one, chargedMicros :charged, refundedMicros :refunded',
        ExpressionAttributeValues: { ':one': 1, ':charged': answer.chargedMicros, ':refunded': answer.refundedMicros },
      },
    },
  ];
}
