/**
 * The worker's lease on a run (functions/worker.ts, shared/worker/process-run.ts and heartbeat.ts), with DynamoDB, S3
 * and SQS mocked at the client and a fake clock: a provider slower than the lease keeps the lease renewed and the
 * message hidden, and nothing is renewed after the settlement; a delivery whose lease another took over asks no
 * provider again and settles nothing, even on its last allowed delivery.
 */

import { S3Client } from '@aws-sdk/client-s3';
import { ChangeMessageVisibilityCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { jest } from '@jest/globals';
import { mockClient } from 'aws-sdk-client-mock';
import { createWorkerHandler } from '../../functions/worker.js';
import { runQueue } from '../../shared/infra/resources.js';
import { type LogEntry, setLogSink } from '../../shared/log.js';
import type { ProviderAdapter, ProviderOutput } from '../../shared/providers/types.js';
import type { RunRecord } from '../../shared/store/runs.js';
import { ProviderFailure, type ProviderId } from '../../shared/task.js';
import { conditionalCheckFailed, runItem, serveObject, tableName } from '../support/aws.js';
import { lambdaContext, sqsEvent } from '../support/events.js';

const ddb = mockClient(DynamoDBDocumentClient);
const s3 = mockClient(S3Client);
const sqs = mockClient(SQSClient);
const FILE = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3, 4]);
/** The condition of a heartbeat's renewal (store/runs.ts renewClaim). */
const RENEWAL = '#status = :queued AND leaseHolder = :holder';

/** A queued text run (no grounding OCR), with a hold large enough for a cloud model and the local fallback. */
function textRun(overrides: Partial<RunRecord> = {}): RunRecord {
  const base = runItem();
  return runItem({
    outputFormat: 'text',
    task: { ...base.task, outputFormat: 'text', fields: null },
    candidates: ['openai', 'local'],
    estimateMicros: 200_000,
    ...overrides,
  });
}

beforeEach(() => {
  jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
  ddb.reset();
  s3.reset();
  sqs.reset();
  const run = textRun();
  ddb.on(GetCommand, { TableName: tableName('runs'), Key: { jobId: run.jobId } }).resolves({ Item: run });
  ddb.on(UpdateCommand).resolves({});
  ddb.on(TransactWriteCommand).resolves({});
  serveObject(s3, FILE, run.objectKey);
  sqs.on(ChangeMessageVisibilityCommand).resolves({});
});
afterEach(() => {
  jest.useRealTimers();
});

/** An adapter that answers (or fails) after `afterMs` on the test's clock, recording its calls. */
function answering(id: ProviderId, afterMs: number, fail = false): ProviderAdapter & { calls: number } {
  const adapter = {
    id,
    calls: 0,
    async invoke(): Promise<ProviderOutput> {
      adapter.calls += 1;
      await new Promise((resolve) => setTimeout(resolve, afterMs));
      if (fail) throw new ProviderFailure('server', `${id} scripted failure`);
      return { result: { text: 'the page' }, documentText: 'the page', usage: { billableUnits: 1, costMicros: 80 } };
    },
  };
  return adapter;
}

/** Delivers the run's message with 15 minutes left in the invocation; the test moves the clock. */
function deliver(adapters: Partial<Record<ProviderId, ProviderAdapter>>, receiveCount = 1) {
  return createWorkerHandler({ adapters })(
    sqsEvent([{ body: '{"jobId":"run_1"}', receiveCount, messageId: 'm-1' }]),
    lambdaContext(900_000),
  );
}

const updates = () => ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input);
const renewals = () => updates().filter((u) => u.ConditionExpression === RENEWAL);
const hidden = () => sqs.commandCalls(ChangeMessageVisibilityCommand).map((c) => c.args[0].input.VisibilityTimeout);

/** The heartbeat's renewals are refused from now on: another delivery holds the run. */
function takenOver(): void {
  ddb.on(UpdateCommand, { ConditionExpression: RENEWAL }).rejects(conditionalCheckFailed());
}

test('a provider slower than the lease: the lease is renewed every 20 s and the message hidden as long; nothing after the settlement', async () => {
  const openai = answering('openai', 70_000);
  const pending = deliver({ openai });
  await jest.advanceTimersByTimeAsync(71_000);
  const response = await pending;
  expect(response.batchItemFailures).toEqual([]);
  expect(ddb).toHaveReceivedCommandTimes(TransactWriteCommand, 1);
  // Three beats (20, 40 and 60 s), each by the claim's holder, each a lease from then.
  const claim = updates()[0];
  const holder = claim?.ExpressionAttributeValues?.[':holder'];
  expect(renewals().map((r) => r.ExpressionAttributeValues?.[':holder'])).toEqual([holder, holder, holder]);
  expect(hidden()).toEqual([60, 60, 60, 60]);
  // No renewal once the run is settled, however long the invocation lives on.
  await jest.advanceTimersByTimeAsync(600_000);
  expect(renewals()).toHaveLength(3);
  expect(hidden()).toHaveLength(4);
});

test('a lease taken over while the provider works: the fallback is never asked, nothing is settled, the message is handed back', async () => {
  const openai = answering('openai', 30_000, true);
  const local = answering('local', 0);
  const pending = deliver({ openai, local });
  await jest.advanceTimersByTimeAsync(10_000);
  takenOver();
  await jest.advanceTimersByTimeAsync(30_000);
  const response = await pending;
  expect(openai.calls).toBe(1);
  expect(local.calls).toBe(0);
  expect(ddb).not.toHaveReceivedCommand(TransactWriteCommand);
  // The new holder's lease is left alone (no release), and the message comes back within a lease.
  expect(updates().filter((u) => u.UpdateExpression?.startsWith('REMOVE'))).toEqual([]);
  expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm-1' }]);
  expect(hidden().at(-1)).toBe(60);
});

test('a lease taken over while the provider answers: the answer is not settled here (the new holder settles)', async () => {
  const openai = answering('openai', 30_000);
  const pending = deliver({ openai });
  await jest.advanceTimersByTimeAsync(10_000);
  takenOver();
  await jest.advanceTimersByTimeAsync(30_000);
  expect((await pending).batchItemFailures).toEqual([{ itemIdentifier: 'm-1' }]);
  expect(ddb).not.toHaveReceivedCommand(TransactWriteCommand);
});

test('on its last allowed delivery, a delivery that lost its lease fails nothing: the run is its new holder’s', async () => {
  const openai = answering('openai', 30_000, true);
  const local = answering('local', 0);
  const pending = deliver({ openai, local }, runQueue.maxReceiveCount);
  await jest.advanceTimersByTimeAsync(10_000);
  takenOver();
  await jest.advanceTimersByTimeAsync(30_000);
  const response = await pending;
  expect(local.calls).toBe(0);
  expect(ddb).not.toHaveReceivedCommand(TransactWriteCommand);
  // Dropped rather than dead-lettered, as any last delivery that stood back.
  expect(response.batchItemFailures).toEqual([]);
});

describe('what the log says of a delivery that stands back', () => {
  const logged: LogEntry[] = [];
  const level = process.env.LOG_LEVEL;
  beforeAll(() => {
    process.env.LOG_LEVEL = 'info';
    setLogSink((entry) => logged.push(entry));
  });
  afterAll(() => {
    setLogSink(null);
    if (level === undefined) delete process.env.LOG_LEVEL;
    else process.env.LOG_LEVEL = level;
  });
  beforeEach(() => {
    logged.length = 0;
  });

  test('a warning naming whose lease holds the run and until when, not an info line that reads like success', async () => {
    const until = Date.now() + 45_000;
    ddb.on(UpdateCommand, { ReturnValues: 'ALL_NEW' }).resolves({
      Attributes: textRun({ leaseHolder: 'log stream 2026/11/26/[$LATEST]0abc #1f2e3d4c', leaseUntil: until }),
    });
    ddb
      .on(UpdateCommand, {
        ConditionExpression: '#status = :queued AND (attribute_not_exists(leaseUntil) OR leaseUntil <= :nowMs)',
      })
      .rejects(conditionalCheckFailed());
    const openai = answering('openai', 0);
    const response = await deliver({ openai }, 2);
    expect(openai.calls).toBe(0);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm-1' }]);
    const about = logged.filter((entry) => entry.jobId === 'run_1' && entry.outcome !== undefined);
    expect(about).toEqual([
      expect.objectContaining({
        level: 'warn',
        message: 'run held by another delivery; its message comes back when that lease ends',
        outcome: 'leased',
        heldBy: 'log stream 2026/11/26/[$LATEST]0abc #1f2e3d4c',
        heldUntil: new Date(until).toISOString(),
      }),
    ]);
    // Hidden until that lease ends, and a second more.
    expect(hidden()).toEqual([46]);
  });

  test('a delivery that lost its lease says so, at warning level too', async () => {
    const openai = answering('openai', 30_000);
    const pending = deliver({ openai });
    await jest.advanceTimersByTimeAsync(10_000);
    takenOver();
    await jest.advanceTimersByTimeAsync(30_000);
    await pending;
    const about = logged.filter((entry) => entry.jobId === 'run_1' && entry.outcome !== undefined);
    expect(about).toEqual([
      expect.objectContaining({
        level: 'warn',
        outcome: 'leased',
        heldBy: "the delivery that took this one's lease over",
      }),
    ]);
  });
});
