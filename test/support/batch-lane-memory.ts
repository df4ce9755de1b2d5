/**
 * The batch lane's storage in memory, for unit tests of the lane (test/unit/batch-*.test.ts): the BatchRequests table
 * behind the document client's mock, with the lane's own conditional moves evaluated here; the Runs table's items,
 * updates and settlements; S3 as a Map (an `uploads/` key reads `upload`). Installed before each test, empty. Beside it,
 * what those tests share: a batch run, its attempt's input, an adapter that must not be called, the batcher's limits.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import {
  DynamoDBDocumentClient,
  GetCommand,
  type GetCommandInput,
  PutCommand,
  type PutCommandInput,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { type AwsClientStub, mockClient } from 'aws-sdk-client-mock';
import { configuredLimits } from '../../shared/batching/groups.js';
import type { ProviderAdapter, ProviderInput } from '../../shared/providers/types.js';
import type { RunRecord } from '../../shared/store/runs.js';
import type { ProviderId } from '../../shared/task.js';
import { objectBody, runItem, tableName } from './aws.js';

export interface LaneMemory {
  /** The BatchRequests table by request id. */
  table: Map<string, Record<string, unknown>>;
  /** S3 objects by key. */
  objects: Map<string, string>;
  /** The Runs table's items (read by the worker), its updates (claims, parking) and the settlements written. */
  runs: Map<string, RunRecord>;
  runUpdates: UpdateCommandInput[];
  settlements: TransactWriteCommandInput[];
  /** A chunked run's checkpoints (the Chunks table) by `<jobId>#<first page>`, written by their transactions. */
  chunks: Map<string, Record<string, unknown>>;
  /** The DynamoDB mock, for a test that reads the calls themselves. */
  ddb: AwsClientStub<DynamoDBDocumentClient>;
}

const conditionFailed = () => new ConditionalCheckFailedException({ message: 'conditional', $metadata: {} });

/** The lane's conditions (clauses joined by AND); one it does not know fails the test rather than passing. */
function conditionHolds(input: UpdateCommandInput, item: Record<string, unknown> | undefined): boolean {
  const condition = input.ConditionExpression ?? '';
  const values = input.ExpressionAttributeValues ?? {};
  if (!item) return false;
  return condition.split(' AND ').every((clause) => {
    const inList = /^#state IN \(([^)]*)\)$/.exec(clause);
    if (inList) {
      const allowed = (inList[1] ?? '').split(',').map((k) => values[k.trim()]);
      return allowed.includes(item.state);
    }
    const notExists = /^attribute_not_exists\((\w+)\)$/.exec(clause);
    if (notExists) return item[notExists[1] as string] === undefined;
    if (clause === 'openState = :open') return item.openState === values[':open'];
    if (clause === '') return true;
    throw new Error(`laneMemory: unknown condition ${clause}`);
  });
}

function applyUpdate(input: UpdateCommandInput, item: Record<string, unknown>): void {
  const expression = input.UpdateExpression ?? '';
  const names = input.ExpressionAttributeNames ?? {};
  const values = input.ExpressionAttributeValues ?? {};
  const set = /^SET (.*)$/.exec(expression);
  if (set) {
    for (const part of (set[1] ?? '').split(', ')) {
      const [name, value] = part.split(' = ') as [string, string];
      item[names[name] ?? name] = values[value];
    }
  }
  if (expression === 'REMOVE openState') delete item.openState;
}

/** Mocks DynamoDB, S3 and SQS for the test file and installs empty storage before each test. */
export function laneMemory(upload: Uint8Array): LaneMemory {
  const ddb = mockClient(DynamoDBDocumentClient);
  const s3 = mockClient(S3Client);
  mockClient(SQSClient);
  const memory: LaneMemory = {
    table: new Map(),
    objects: new Map(),
    runs: new Map(),
    runUpdates: [],
    settlements: [],
    chunks: new Map(),
    ddb,
  };
  const { table, objects, runs, runUpdates, settlements, chunks } = memory;

  beforeEach(() => {
    table.clear();
    objects.clear();
    runs.clear();
    runUpdates.length = 0;
    settlements.length = 0;
    chunks.clear();
    ddb.reset();
    s3.reset();
    ddb.on(PutCommand).callsFake((input: PutCommandInput) => {
      const item = input.Item as Record<string, unknown>;
      if (input.ConditionExpression && table.has(String(item.requestId))) throw conditionFailed();
      table.set(String(item.requestId), structuredClone(item));
      return {};
    });
    ddb
      .on(GetCommand)
      .callsFake((input: GetCommandInput) =>
        input.TableName === tableName('runs')
          ? { Item: structuredClone(runs.get(String(input.Key?.jobId))) }
          : { Item: structuredClone(table.get(String(input.Key?.requestId))) },
      );
    ddb.on(TransactWriteCommand).callsFake((input: TransactWriteCommandInput) => {
      const checkpoints = (input.TransactItems ?? []).flatMap((i) =>
        i.Put?.TableName === tableName('runChunks') ? [i.Put.Item as Record<string, unknown>] : [],
      );
      if (checkpoints.length === 0) settlements.push(input);
      for (const item of checkpoints) chunks.set(`${item.jobId}#${item.first}`, structuredClone(item));
      return {};
    });
    ddb.on(UpdateCommand).callsFake((input: UpdateCommandInput) => {
      if (input.TableName === tableName('runs')) {
        runUpdates.push(input);
        return {};
      }
      const item = table.get(String(input.Key?.requestId));
      if (!conditionHolds(input, item)) throw conditionFailed();
      applyUpdate(input, item as Record<string, unknown>);
      return {};
    });
    ddb.on(QueryCommand).callsFake((input: QueryCommandInput) => {
      if (input.TableName !== tableName('runChunks')) return openItems(input);
      const values = input.ExpressionAttributeValues ?? {};
      const within = (first: number) =>
        values[':first'] === undefined || (first >= Number(values[':first']) && first <= Number(values[':last']));
      return {
        Items: [...chunks.values()]
          .filter((c) => c.jobId === values[':jobId'] && within(Number(c.first)))
          .sort((a, b) => Number(a.first) - Number(b.first))
          .map((c) => structuredClone(c)),
      };
    });
    const openItems = (input: QueryCommandInput) => ({
      Items: [...table.values()]
        .filter((i) => i.openState === input.ExpressionAttributeValues?.[':open'])
        .sort((a, b) => String(a.since).localeCompare(String(b.since)))
        .map((i) => structuredClone(i)),
    });
    s3.on(PutObjectCommand).callsFake((input) => {
      objects.set(String(input.Key), String(input.Body));
      return {};
    });
    s3.on(GetObjectCommand).callsFake((input) => {
      if (String(input.Key).startsWith('uploads/')) return { Body: objectBody(upload), ContentLength: upload.length };
      const body = objects.get(String(input.Key));
      if (body === undefined) throw Object.assign(new Error('no such key'), { name: 'NoSuchKey' });
      return { Body: { transformToString: async () => body } };
    });
  });
  return memory;
}

/** A queued batch run of the one-page receipt, due in 24 hours, planned `first` then local. */
export function batchRun(jobId: string, first: ProviderId): RunRecord {
  return runItem({
    jobId,
    priority: 'batch',
    expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    candidates: [first, 'local'],
    strategy: 'direct_multimodal',
    estimateMicros: 100_000,
  });
}

/** The run's single attempt, on `bytes`. */
export const attemptInput = (run: RunRecord, bytes: Uint8Array): ProviderInput => ({
  bytes,
  facts: run.file,
  task: run.task,
  step: 'vision',
});

/** A provider with a batch interface must never be called inline for a batch run. */
export const notInline = (id: ProviderId): ProviderAdapter => ({
  id,
  invoke: async () => {
    throw new Error('called inline');
  },
});

/** The batcher's limits in these tests: a group is sent at once. */
export const sendAtOnce = configuredLimits({ maxRequests: 100, maxWaitMs: 0, directMarginMs: 3_600_000 });
