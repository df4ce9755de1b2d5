/**
 * Checkpoints of a run in page chunks, in the RunChunks table: one item per finished chunk (its answer, usage and
 * attempts), written with the run's `progress.pagesDone` in one transaction per wave of chunks finished meanwhile
 * (shared/worker/checkpoints.ts). A redelivered or crashed run reads them back and asks the providers only for the
 * pages no checkpoint covers.
 * Not to undo: a checkpoint is written once (a second write for the same pages is refused), and only while the run is
 * queued, so a settled run's progress never moves again; its pages are counted in the transaction that writes it.
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
import { failedConditions, type NamedItems, transactWriteNamed } from './transact.js';

// Only the worker reads and writes checkpoints (it alone has the grant).
const chunksTable = resource(tables.runChunks.envVar, { checkAtInit: false });

/** What a finished chunk's provider answered (stored as JSON text: any answer a provider gives is storable). */
export interface ChunkOutput {
  result: Record<string, unknown>;
  documentText?: string;
  nativeConfidence?: number;
  /** The provider's confidence in each top-level value (ProviderOutput.valueConfidence), when it gave one. */
  valueConfidence?: Record<string, number>;
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
  /**
   * Pages this checkpoint adds to the run's `progress.pagesDone` (not stored); default its pages. A packet document's
   * extraction adds none: its pages were counted when classified (shared/worker/packet-checkpoints.ts).
   */
  pagesDone?: number;
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

/** A transaction holds at most 100 items (the run's update and 99 checkpoints) and 4 MB; a wave stays well within. */
const WAVE_MAX_CHECKPOINTS = 99;
const WAVE_MAX_BYTES = 3 * 1024 * 1024;

/**
 * Stores finished chunks and counts their pages done, a wave of them per transaction (as many as one transaction
 * holds; more go in the next). Returns the checkpoints written. Not written: any while the run is no longer queued,
 * pages already checkpointed (the others of their wave are then written without them), and an answer too large for
 * an item (logged: the chunk is then asked again should the run be redelivered; it is still merged into this
 * delivery's result).
 */
export async function saveCheckpoints(
  run: { jobId: string; expiresAtEpoch: number },
  checkpoints: readonly ChunkCheckpoint[],
): Promise<ChunkCheckpoint[]> {
  const storable: { checkpoint: ChunkCheckpoint; item: StoredChunk; bytes: number }[] = [];
  for (const checkpoint of checkpoints) {
    const answer = JSON.stringify(checkpoint.output);
    const bytes = Buffer.byteLength(answer, 'utf8');
    if (bytes > CHECKPOINT_MAX_BYTES) {
      log.warn('chunk answer too large to checkpoint', { jobId: run.jobId, first: checkpoint.first });
      continue;
    }
    storable.push({ checkpoint, item: storedChunk(run, checkpoint, answer), bytes });
  }
  const written: ChunkCheckpoint[] = [];
  while (storable.length > 0) {
    let size = 0;
    let count = 0;
    while (count < storable.length && count < WAVE_MAX_CHECKPOINTS) {
      const next = (storable[count]?.bytes ?? 0) + JSON.stringify(storable[count]?.item.attempts).length;
      if (count > 0 && size + next > WAVE_MAX_BYTES) break;
      size += next;
      count += 1;
    }
    const wave = storable.splice(0, count);
    const stored = await writeWave(run.jobId, wave);
    if (stored === 'run-final') return written;
    written.push(...stored);
  }
  return written;
}

function storedChunk(run: { jobId: string; expiresAtEpoch: number }, c: ChunkCheckpoint, answer: string): StoredChunk {
  return {
    jobId: run.jobId,
    first: c.first,
    last: c.last,
    provider: c.provider,
    answer,
    attempts: c.attempts,
    requests: c.requests,
    costMicros: c.costMicros,
    expiresAtEpoch: run.expiresAtEpoch,
  };
}

/**
 * One transaction: the wave's checkpoints, each only if its pages have none yet, and their pages added to the run's
 * `progress.pagesDone` only while it is queued. A checkpoint refused (its pages were checkpointed meanwhile) is left
 * out and the rest sent again; a run no longer queued writes nothing.
 */
async function writeWave(
  jobId: string,
  wave: readonly { checkpoint: ChunkCheckpoint; item: StoredChunk }[],
): Promise<ChunkCheckpoint[] | 'run-final'> {
  let left = [...wave];
  while (left.length > 0) {
    const pages = left.reduce((sum, { checkpoint: c }) => sum + (c.pagesDone ?? c.last - c.first + 1), 0);
    const items: NamedItems<string> = {
      run: {
        Update: {
          TableName: runsTable(),
          Key: { jobId },
          UpdateExpression: 'ADD progress.pagesDone :pages',
          ConditionExpression: '#status = :queued AND attribute_exists(progress)',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':pages': pages, ':queued': 'queued' },
        },
      },
    };
    for (const { item } of left) {
      items[`chunk ${item.first}`] = {
        Put: { TableName: chunksTable(), Item: item, ConditionExpression: 'attribute_not_exists(jobId)' },
      };
    }
    try {
      await transactWriteNamed(items);
      return left.map(({ checkpoint }) => checkpoint);
    } catch (error: unknown) {
      const failed = failedConditions(error, items);
      if (failed.size === 0) throw error;
      log.warn('chunk checkpoint not written', { jobId, failed: [...failed] });
      if (failed.has('run')) return 'run-final';
      left = left.filter(({ item }) => !failed.has(`chunk ${item.first}`));
    }
  }
  return [];
}
