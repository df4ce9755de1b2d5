/**
 * Checkpoints of a run in page chunks, in the RunChunks table: one item per finished chunk (its answer, usage and
 * attempts), written in one transaction with the run's `progress.pagesDone`, before the worker moves on. A redelivered
 * or crashed run reads them back and asks the providers only for the pages no checkpoint covers.
 * Not to undo: a checkpoint is written once (a second write for the same pages is refused), and only while the run is
 * queued, so a settled run's progress never moves again.
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { ddb } from '../aws/dynamodb.js';
import type { Attempt } from '../contract.js';
import { tables } from '../infra/resources.js';
import { log } from '../log.js';
import type { Micros } from '../money.js';
import { resource } from '../resource-name.js';
import type { ProviderId } from '../task.js';
import { runsTable } from './runs.js';
import { failedConditions, transactWriteNamed } from './transact.js';

// Only the worker reads and writes checkpoints (it alone has the grant).
const chunksTable = resource(tables.runChunks.envVar, { checkAtInit: false });

/** What a finished chunk's provider answered (stored as JSON text: any answer a provider gives is storable). */
export interface ChunkOutput {
  result: Record<string, unknown>;
  documentText?: string;
  nativeConfidence?: number;
  billableUnits: number;
}

/** One finished chunk: pages `first`..`last` (1-based), who answered, and everything its attempts used. */
export interface ChunkCheckpoint {
  first: number;
  last: number;
  provider: ProviderId;
  output: ChunkOutput;
  attempts: Attempt[];
  requests: number;
  costMicros: Micros;
}

/** A checkpoint item stays well inside DynamoDB's 400 KB item limit. */
const CHECKPOINT_MAX_BYTES = 350 * 1024;

interface StoredChunk {
  jobId: string;
  first: number;
  last: number;
  provider: ProviderId;
  answer: string;
  attempts: Attempt[];
  requests: number;
  costMicros: Micros;
  expiresAtEpoch: number;
}

/** Every checkpoint of a run in page order; only those that begin within `pages` when given (a fanned-out group's). */
export async function listCheckpoints(
  jobId: string,
  pages?: { first: number; last: number },
): Promise<ChunkCheckpoint[]> {
  const items: StoredChunk[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await ddb.send(
      new QueryCommand({
        TableName: chunksTable(),
        ...(pages
          ? {
              KeyConditionExpression: 'jobId = :jobId AND #first BETWEEN :first AND :last',
              ExpressionAttributeNames: { '#first': 'first' },
              ExpressionAttributeValues: { ':jobId': jobId, ':first': pages.first, ':last': pages.last },
            }
          : { KeyConditionExpression: 'jobId = :jobId', ExpressionAttributeValues: { ':jobId': jobId } }),
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
      }),
    );
    items.push(...((page.Items ?? []) as StoredChunk[]));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items.map((item) => ({
    first: item.first,
    last: item.last,
    provider: item.provider,
    output: JSON.parse(item.answer) as ChunkOutput,
    attempts: item.attempts,
    requests: item.requests,
    costMicros: item.costMicros,
  }));
}

/**
 * Stores a finished chunk and counts its pages done, in one transaction. Returns false when nothing was written: the
 * run is no longer queued, the pages were already checkpointed, or the answer is too large for an item (logged: the
 * chunk is then asked again should the run be redelivered; it is still merged into this delivery's result).
 */
export async function saveCheckpoint(
  run: { jobId: string; expiresAtEpoch: number },
  checkpoint: ChunkCheckpoint,
): Promise<boolean> {
  const answer = JSON.stringify(checkpoint.output);
  if (Buffer.byteLength(answer, 'utf8') > CHECKPOINT_MAX_BYTES) {
    log.warn('chunk answer too large to checkpoint', { jobId: run.jobId, first: checkpoint.first });
    return false;
  }
  const item: StoredChunk = {
    jobId: run.jobId,
    first: checkpoint.first,
    last: checkpoint.last,
    provider: checkpoint.provider,
    answer,
    attempts: checkpoint.attempts,
    requests: checkpoint.requests,
    costMicros: checkpoint.costMicros,
    expiresAtEpoch: run.expiresAtEpoch,
  };
  const items = {
    chunk: {
      Put: { TableName: chunksTable(), Item: item, ConditionExpression: 'attribute_not_exists(jobId)' },
    },
    run: {
      Update: {
        TableName: runsTable(),
        Key: { jobId: run.jobId },
        UpdateExpression: 'ADD progress.pagesDone :pages',
        ConditionExpression: '#status = :queued AND attribute_exists(progress)',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':pages': checkpoint.last - checkpoint.first + 1, ':queued': 'queued' },
      },
    },
  };
  try {
    await transactWriteNamed(items);
    return true;
  } catch (error: unknown) {
    const failed = failedConditions(error, items);
    if (failed.size > 0) {
      log.warn('chunk checkpoint not written', { jobId: run.jobId, first: checkpoint.first, failed: [...failed] });
      return false;
    }
    throw error;
  }
}
