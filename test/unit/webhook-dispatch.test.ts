/**
 * Dispatch (shared/events/dispatch.ts): a run's event goes to every endpoint of its tenant that subscribed to its type
 * (one delivery message each) and, deployed, to the bus's feed queue, then leaves the pending index; an event already
 * dispatched is left alone, and one whose sends failed stays pending for the sweep.
 */
import { SendMessageBatchCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { busMessage, dispatchEvent, sweepPendingEvents } from '../../shared/events/dispatch.js';
import { eventBus, webhookSettings } from '../../shared/infra/resources.js';
import type { EventRecord } from '../../shared/store/events.js';
import { completedRunItem, tableName } from '../support/aws.js';

const ddb = mockClient(DynamoDBDocumentClient);
const sqs = mockClient(SQSClient);
const FEED = 'https://sqs.us-east-1.amazonaws.com/000000000000/feed';

const run = completedRunItem();
const pending: EventRecord = {
  eventId: 'evt_1',
  type: 'run.completed',
  jobId: run.jobId,
  tenantId: 'tenant-a',
  createdAt: '2026-11-26T09:59:59.000Z',
  pendingShard: 'p1',
  expiresAtEpoch: 2_000_000_000,
};
const hook = (webhookId: string, events: string[]) => ({
  tenantId: 'tenant-a',
  webhookId,
  url: 'https://x',
  events,
  createdAt: '2026-11-26T00:00:00.000Z',
});

function arrange(event: EventRecord | null = pending) {
  ddb.on(GetCommand, { TableName: tableName('events') }).resolves({ Item: event ?? undefined });
  ddb.on(GetCommand, { TableName: tableName('runs') }).resolves({ Item: run });
  ddb.on(QueryCommand, { TableName: tableName('webhooks') }).resolves({
    Items: [
      hook('wh_all', ['run.completed', 'run.failed']),
      hook('wh_failed', ['run.failed']),
      hook('wh_done', ['run.completed']),
    ],
  });
  ddb.on(UpdateCommand).resolves({});
  sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
  sqs.on(SendMessageCommand).resolves({});
}

beforeEach(() => {
  ddb.reset();
  sqs.reset();
  delete process.env[eventBus.feedQueue.envVar];
});

test('one delivery message per subscribed endpoint, then the event leaves the pending index', async () => {
  arrange();
  await expect(dispatchEvent('evt_1')).resolves.toBe(true);
  const entries = sqs.commandCalls(SendMessageBatchCommand).flatMap((c) => c.args[0].input.Entries ?? []);
  const common = { eventId: 'evt_1', type: 'run.completed', jobId: run.jobId, createdAt: pending.createdAt };
  expect(entries.map((e) => JSON.parse(e.MessageBody ?? '{}'))).toEqual([
    { ...common, tenantId: 'tenant-a', webhookId: 'wh_all', attempt: 1 },
    { ...common, tenantId: 'tenant-a', webhookId: 'wh_done', attempt: 1 },
  ]);
  // The local stack has no bus.
  expect(sqs.commandCalls(SendMessageCommand)).toHaveLength(0);
  const mark = ddb.commandCalls(UpdateCommand)[0]?.args[0].input;
  expect(mark).toEqual(
    expect.objectContaining({
      Key: { eventId: 'evt_1' },
      UpdateExpression: 'SET dispatchedAt = :now REMOVE pendingShard',
      ConditionExpression: 'attribute_exists(eventId) AND attribute_not_exists(dispatchedAt)',
    }),
  );
});

test('deployed, the run also goes to the bus feed with its detail-type', async () => {
  process.env[eventBus.feedQueue.envVar] = FEED;
  arrange();
  await dispatchEvent('evt_1');
  const feed = sqs.commandCalls(SendMessageCommand)[0]?.args[0].input;
  expect(feed?.QueueUrl).toBe(FEED);
  expect(JSON.parse(feed?.MessageBody ?? '{}')).toEqual({
    detailType: 'Run Completed',
    detail: expect.objectContaining({ jobId: run.jobId, status: 'completed', result: run.result }),
  });
});

test('the bus event names the run’s tenant in its detail (rules route on it, not on a workflow name)', async () => {
  process.env[eventBus.feedQueue.envVar] = FEED;
  arrange();
  await dispatchEvent('evt_1');
  const feed = JSON.parse(sqs.commandCalls(SendMessageCommand)[0]?.args[0].input.MessageBody ?? '{}');
  expect(feed.detail.tenantId).toBe('tenant-a');
  // Even without its result (too large), and whatever the run says: the tenant is the event's own.
  const large = { jobId: 'run_1', tenantId: 'tenant-b', result: { text: 'x'.repeat(eventBus.maxEventBytes) } };
  expect(JSON.parse(busMessage(pending, large)).detail).toEqual({
    jobId: 'run_1',
    tenantId: 'tenant-a',
    resultOmitted: true,
  });
});

test('an event already dispatched is left alone', async () => {
  arrange({ ...pending, pendingShard: undefined, dispatchedAt: '2026-11-26T10:00:00.000Z' });
  await expect(dispatchEvent('evt_1')).resolves.toBe(false);
  expect(sqs.calls()).toHaveLength(0);
  expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
});

test('a refused send leaves the event pending (the sweep tries again)', async () => {
  arrange();
  sqs.on(SendMessageBatchCommand).resolves({ Failed: [{ Id: '0', Code: 'Throttled', SenderFault: false }] });
  await expect(dispatchEvent('evt_1')).rejects.toThrow(/refused/);
  expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
});

test('the sweep reads every shard of the pending index, only events older than its wait', async () => {
  arrange();
  ddb
    .on(QueryCommand, { IndexName: 'pending' })
    .callsFake((input: { ExpressionAttributeValues: Record<string, string> }) => ({
      Items: input.ExpressionAttributeValues[':shard'] === 'p1' ? [{ eventId: 'evt_1' }] : [],
    }));
  const now = new Date('2026-11-26T10:05:00.000Z');
  await expect(sweepPendingEvents(undefined, now)).resolves.toEqual(['evt_1']);
  const queries = ddb.commandCalls(QueryCommand, { IndexName: 'pending' }).map((c) => c.args[0].input);
  expect(queries).toHaveLength(webhookSettings.shards);
  expect(queries[0]?.ExpressionAttributeValues?.[':before']).toBe(
    new Date(now.getTime() - webhookSettings.sweepAfterSeconds * 1000).toISOString(),
  );
});

test('a run too large for an EventBridge event goes without its result, flagged', () => {
  const small = { jobId: 'run_1', result: { a: 1 } };
  expect(JSON.parse(busMessage(pending, small))).toEqual({
    detailType: 'Run Completed',
    detail: { tenantId: 'tenant-a', ...small },
  });
  const large = { jobId: 'run_1', result: { text: 'x'.repeat(eventBus.maxEventBytes) } };
  expect(JSON.parse(busMessage({ ...pending, type: 'run.failed' }, large))).toEqual({
    detailType: 'Run Failed',
    detail: { tenantId: 'tenant-a', jobId: 'run_1', resultOmitted: true },
  });
  // Per-field evidence can be as large as the result (a box and the source text per value): it goes with it.
  const evidence = Object.fromEntries(
    Array.from({ length: 600 }, (_, i) => [`f${i}`, { confidence: 0.9, source: 'y'.repeat(450) }]),
  );
  const withFields = { jobId: 'run_1', result: { a: 1 }, fields: evidence, review: { needed: true, reasons: ['r'] } };
  const sent = busMessage(pending, withFields);
  expect(Buffer.byteLength(sent)).toBeLessThan(eventBus.maxEventBytes);
  expect(JSON.parse(sent).detail).toEqual({
    tenantId: 'tenant-a',
    jobId: 'run_1',
    review: { needed: true, reasons: ['r'] },
    resultOmitted: true,
  });
});
