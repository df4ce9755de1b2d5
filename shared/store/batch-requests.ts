/**
 * The batch lane's items in the BatchRequests table: a provider request a batch run waits on, and a provider batch the
 * batcher submitted. Persistence only; the lane itself is shared/batching/batcher.ts (the batcher) and
 * shared/worker/batch-lane.ts (the worker's side).
 *
 * Not to undo: every change of a request's state is conditional on the state it leaves, so a request is submitted at
 * most once per batcher pass, and answered (or failed, or expired) exactly once whatever a duplicate poll says. A
 * request's id is derived from its run and attempt, so a redelivered run finds the request it already wrote.
 */
import { GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { applied, ddb } from '../aws/dynamodb.js';
import { tables } from '../infra/resources.js';
import { resource } from '../resource-name.js';
import type { FailureKind, ProviderId, Step } from '../task.js';

export const batchRequestsTable = resource(tables.batchRequests.envVar);

/**
 * waiting → submitting → submitted → answered | failed | expired, or waiting → direct (called normally). A request
 * marked `submitting` whose batch a crash left unrecorded goes back to waiting (shared/batching/batcher.ts).
 */
export type BatchRequestState = 'waiting' | 'submitting' | 'submitted' | 'answered' | 'failed' | 'expired' | 'direct';

/** The `open` index's partitions: what the batcher still has to do with an item. */
export type OpenState = 'waiting' | 'submitting' | 'submitted' | 'resolved' | 'polling';

export interface BatchRequestItem {
  /** `<jobId>#<provider>#<step>#<pages>[#<task>]`: one attempt of a run (./batch-requests.ts requestIdOf). */
  requestId: string;
  jobId: string;
  provider: ProviderId;
  /** The model the line is for (a batch runs one model); the provider's id when it has no batch interface. */
  model: string;
  step: Step;
  /** False: its provider has no batch interface; the batcher releases it to be called normally. */
  viaInterface: boolean;
  state: BatchRequestState;
  /** Present while the batcher has something to do with it; removed once its run was sent back to the worker. */
  openState?: OpenState;
  /** When it entered its open state (ISO): the `open` index's sort key. */
  since: string;
  waitingSinceMs: number;
  /** Its run's `expiresAt` (epoch ms). */
  deadlineMs: number;
  /** Size of its line (the request body as JSON). */
  bytes: number;
  /** Where its line is (shared/batching/objects.ts). */
  lineKey?: string;
  /** The fanned-out group of its run that parked it: the batcher sends that group's message back. */
  group?: number;
  /** The provider batch it was submitted in (the batch item's id). */
  batchId?: string;
  /** Where its answer is, once answered. */
  answerKey?: string;
  /** Why it failed, once failed or expired. */
  failure?: { kind: FailureKind; message: string };
  expiresAtEpoch: number;
}

/** A provider batch: what it holds and the provider's reference to poll. */
export interface BatchRecord {
  /** `batch#<provider>#<ref>`. */
  requestId: string;
  provider: ProviderId;
  model: string;
  /** The provider's batch id (OpenAI batch id, Anthropic batch id, Gemini operation name, Bedrock job ARN). */
  ref: string;
  requestIds: string[];
  /** The earliest deadline of its requests' runs (epoch ms): past it less the margin, they expire. */
  deadlineMs?: number;
  openState?: 'polling';
  since: string;
  expiresAtEpoch: number;
  /**
   * When the batcher found every one of its requests resolved for good while it still ran, and asked the provider to
   * cancel it (once, whatever the provider answered): its lines are never read after (shared/batching/batcher.ts).
   */
  cancelRequestedAt?: string;
}

/**
 * The request id of one attempt of a run: the same on every delivery of the run. `task` names what is asked when a
 * run asks the same pages more than once (a packet: a page's classification, then its document's extraction).
 */
export function requestIdOf(
  jobId: string,
  provider: ProviderId,
  step: Step,
  pages?: { first: number; last: number },
  task?: string,
) {
  const id = `${jobId}#${provider}#${step}#${pages ? `${pages.first}-${pages.last}` : 'all'}`;
  return task === undefined ? id : `${id}#${task}`;
}

/** Writes a waiting request unless it exists (a redelivered run). True when this call wrote it. */
export function putWaitingRequest(item: BatchRequestItem): Promise<boolean> {
  return applied(
    ddb.send(
      new PutCommand({
        TableName: batchRequestsTable(),
        Item: item,
        ConditionExpression: 'attribute_not_exists(requestId)',
      }),
    ),
  );
}

export async function getBatchRequest(requestId: string): Promise<BatchRequestItem | null> {
  const out = await ddb.send(
    new GetCommand({ TableName: batchRequestsTable(), Key: { requestId }, ConsistentRead: true }),
  );
  return (out.Item as BatchRequestItem | undefined) ?? null;
}

/** The items in one open state, oldest first (one page of `limit`). */
export async function listOpen<T = BatchRequestItem>(openState: OpenState, limit: number): Promise<T[]> {
  const out = await ddb.send(
    new QueryCommand({
      TableName: batchRequestsTable(),
      IndexName: 'open',
      KeyConditionExpression: 'openState = :open',
      ExpressionAttributeValues: { ':open': openState },
      Limit: limit,
    }),
  );
  return (out.Items ?? []) as T[];
}

/**
 * Moves a request from one of `from` to `to` (with its open state and `set`), once: false when it was not in `from`
 * (another batcher pass, or a duplicate result, moved it first).
 */
export function moveRequest(
  requestId: string,
  from: readonly BatchRequestState[],
  to: { state: BatchRequestState; openState: OpenState; now: Date; set?: Record<string, unknown> },
): Promise<boolean> {
  const names: Record<string, string> = { '#state': 'state' };
  const values: Record<string, unknown> = { ':to': to.state, ':open': to.openState, ':since': to.now.toISOString() };
  const sets = ['#state = :to', 'openState = :open', 'since = :since'];
  for (const [i, [name, value]] of Object.entries(to.set ?? {}).entries()) {
    names[`#s${i}`] = name;
    values[`:s${i}`] = value;
    sets.push(`#s${i} = :s${i}`);
  }
  const fromKeys = from.map((state, i) => {
    values[`:f${i}`] = state;
    return `:f${i}`;
  });
  return applied(
    ddb.send(
      new UpdateCommand({
        TableName: batchRequestsTable(),
        Key: { requestId },
        UpdateExpression: `SET ${sets.join(', ')}`,
        ConditionExpression: `#state IN (${fromKeys.join(', ')})`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    ),
  );
}

/** Takes an item out of the `open` index (a resolved request handed back, a batch fully read). */
export async function closeItem(requestId: string, openState: OpenState): Promise<void> {
  await applied(
    ddb.send(
      new UpdateCommand({
        TableName: batchRequestsTable(),
        Key: { requestId },
        UpdateExpression: 'REMOVE openState',
        ConditionExpression: 'openState = :open',
        ExpressionAttributeValues: { ':open': openState },
      }),
    ),
  );
}

/**
 * Marks a polled batch as cancelled by the batcher, once: false when it already was (another pass, concurrent or
 * earlier, marked it) or is no longer polled.
 */
export function markCancelRequested(batchId: string, now: Date): Promise<boolean> {
  return applied(
    ddb.send(
      new UpdateCommand({
        TableName: batchRequestsTable(),
        Key: { requestId: batchId },
        UpdateExpression: 'SET cancelRequestedAt = :at',
        ConditionExpression: 'openState = :open AND attribute_not_exists(cancelRequestedAt)',
        ExpressionAttributeValues: { ':at': now.toISOString(), ':open': 'polling' },
      }),
    ),
  );
}

/** Records a submitted provider batch (to be polled). */
export async function putBatchRecord(record: BatchRecord): Promise<void> {
  await ddb.send(new PutCommand({ TableName: batchRequestsTable(), Item: record }));
}
