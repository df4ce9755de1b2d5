/**
 * One delivery try (shared/events/deliver.ts), with the tables and queues mocked at the SDK clients and a real
 * receiver on 127.0.0.1: a delivered try, a retry as a new delayed message, a wait longer than SQS allows taken in
 * hops, the last try dead-lettered and recorded `failed`, a deleted endpoint dropped, and the URL checked again at
 * delivery (DNS can change).
 */
import { createServer, type Server } from 'node:http';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DeleteCommand, DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { verifyWebhook } from '../../sdk/index.js';
import { ENV } from '../../shared/infra/env.js';
import { webhookQueue, webhookSettings } from '../../shared/infra/resources.js';
import type { EventRecord } from '../../shared/store/events.js';
import type { WebhookRecord } from '../../shared/store/webhooks.js';
import { completedRunItem, mapsAsObjects, tableName } from '../support/aws.js';

process.env[ENV.webhookAllowLocalhost] = 'true';
const { deliverOne, nextDelaySeconds } = await import('../../shared/events/deliver.js');

const ddb = mockClient(DynamoDBDocumentClient);
const sqs = mockClient(SQSClient);
const NOW = Date.parse('2026-11-26T10:00:00.000Z');

let server: Server;
let port = 0;
let status = 200;
const received: { headers: Record<string, string | string[] | undefined>; body: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(status).end('thanks');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  port = typeof address === 'object' && address ? address.port : 0;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const run = completedRunItem();
const event: EventRecord = {
  eventId: 'evt_1',
  type: 'run.completed',
  jobId: run.jobId,
  tenantId: 'tenant-a',
  createdAt: '2026-11-26T09:59:59.000Z',
  expiresAtEpoch: 2_000_000_000,
};
const webhook = (url = `http://127.0.0.1:${port}/hook`): WebhookRecord => ({
  tenantId: 'tenant-a',
  webhookId: 'wh_1',
  url,
  events: ['run.completed', 'run.failed'],
  createdAt: '2026-11-26T00:00:00.000Z',
  secret: { box: 'local-plaintext', value: 'whsec_unit-test-secret-0123' },
});

/** The tenant's delivery slots as the table holds them: `heldUntil` per slot number. */
function arrange(hook: WebhookRecord | null = webhook(), heldUntil: number[] = []) {
  ddb.on(GetCommand, { TableName: tableName('webhooks') }).resolves({ Item: hook ?? undefined });
  ddb.on(GetCommand, { TableName: tableName('events') }).resolves({ Item: event });
  ddb.on(GetCommand, { TableName: tableName('runs') }).resolves({ Item: run });
  ddb.on(QueryCommand, { TableName: tableName('webhooks') }).resolves({
    Items: heldUntil.map((leaseUntil, n) => ({
      tenantId: 'tenant-a',
      webhookId: `#slot#${n}`,
      holder: 'x',
      leaseUntil,
    })),
  });
  ddb.on(PutCommand).resolves({});
  ddb.on(DeleteCommand).resolves({});
  sqs.on(SendMessageCommand).resolves({});
}

const message = (attempt = 1, notBefore?: number) => ({
  eventId: 'evt_1',
  type: 'run.completed' as const,
  jobId: run.jobId,
  createdAt: event.createdAt,
  tenantId: 'tenant-a',
  webhookId: 'wh_1',
  attempt,
  ...(notBefore !== undefined ? { notBefore } : {}),
});
const options = { now: () => NOW, random: () => 0.5 };
const sends = () => sqs.commandCalls(SendMessageCommand).map((c) => c.args[0].input);
const records = () =>
  ddb
    .commandCalls(PutCommand, { TableName: tableName('webhookDeliveries') })
    .map((c) => mapsAsObjects(c.args[0].input.Item) as Record<string, unknown>);
const slotsTaken = () => ddb.commandCalls(PutCommand, { TableName: tableName('webhooks') }).map((c) => c.args[0].input);
const slotsGiven = () => ddb.commandCalls(DeleteCommand).map((c) => c.args[0].input);

beforeEach(() => {
  ddb.reset();
  sqs.reset();
  received.length = 0;
  status = 200;
});

test('a 2xx: delivered, signed with the endpoint secret, the run as GET returns it; no further message', async () => {
  arrange();
  await expect(deliverOne(message(), options)).resolves.toBe('delivered');
  expect(received).toHaveLength(1);
  const delivered = verifyWebhook(
    received[0]?.body ?? '',
    received[0]?.headers['vision-signature'] as string,
    'whsec_unit-test-secret-0123',
    {
      now: NOW,
    },
  );
  expect(delivered).toEqual(
    expect.objectContaining({ id: 'evt_1', type: 'run.completed', createdAt: event.createdAt }),
  );
  expect(delivered.data).toEqual(expect.objectContaining({ jobId: run.jobId, status: 'completed' }));
  expect(received[0]?.headers['vision-event-id']).toBe('evt_1');
  expect(sends()).toEqual([]);
  expect(records()).toEqual([
    expect.objectContaining({
      webhookId: 'wh_1',
      eventId: 'evt_1',
      attempt: 1,
      status: 'delivered',
      statusCode: 200,
      error: null,
      nextTryAt: null,
      response: 'thanks',
    }),
  ]);
  expect(JSON.stringify(records())).not.toContain('whsec_unit-test-secret-0123');
});

test('a failed try with tries left sends the next as a new message delayed by the schedule', async () => {
  arrange();
  status = 500;
  await expect(deliverOne(message(1), options)).resolves.toBe('retrying');
  const first = webhookSettings.retryDelaysSeconds[0] as number;
  expect(sends()).toEqual([
    expect.objectContaining({ QueueUrl: process.env[webhookQueue.envVar], DelaySeconds: first }),
  ]);
  expect(JSON.parse(sends()[0]?.MessageBody ?? '{}')).toEqual({ ...message(2), notBefore: NOW + first * 1000 });
  expect(records()[0]).toEqual(
    expect.objectContaining({
      status: 'retrying',
      statusCode: 500,
      error: 'http_500',
      nextTryAt: new Date(NOW + first * 1000).toISOString(),
    }),
  );
});

test('a wait longer than SQS delays is taken in hops: the early message goes on again, untried', async () => {
  arrange();
  status = 500;
  await deliverOne(message(5), options);
  const wait = webhookSettings.retryDelaysSeconds[4] as number;
  expect(wait).toBeGreaterThan(webhookQueue.maxDelaySeconds);
  expect(sends()[0]?.DelaySeconds).toBe(webhookQueue.maxDelaySeconds);
  const next = JSON.parse(sends()[0]?.MessageBody ?? '{}') as { notBefore: number };
  expect(next.notBefore).toBe(NOW + wait * 1000);

  sqs.reset();
  ddb.resetHistory();
  sqs.on(SendMessageCommand).resolves({});
  received.length = 0;
  const later = NOW + webhookQueue.maxDelaySeconds * 1000;
  await expect(deliverOne(message(6, next.notBefore), { ...options, now: () => later })).resolves.toBe('postponed');
  expect(received).toHaveLength(0);
  expect(records()).toEqual([]);
  expect(sends()).toEqual([expect.objectContaining({ DelaySeconds: webhookQueue.maxDelaySeconds })]);
  expect(JSON.parse(sends()[0]?.MessageBody ?? '{}')).toEqual(message(6, next.notBefore));
});

test('the last try failing sends the message to the dead-letter queue and records the delivery failed', async () => {
  arrange();
  status = 503;
  const last = webhookSettings.retryDelaysSeconds.length + 1;
  await expect(deliverOne(message(last), options)).resolves.toBe('failed');
  expect(sends()).toEqual([
    expect.objectContaining({ QueueUrl: process.env[webhookQueue.deadLetter.envVar], DelaySeconds: 0 }),
  ]);
  expect(records()[0]).toEqual(expect.objectContaining({ status: 'failed', attempt: last, nextTryAt: null }));
});

test('a run that is gone (past its retention) is not delivered', async () => {
  arrange();
  ddb.on(GetCommand, { TableName: tableName('runs') }).resolves({ Item: { ...run, expiresAtEpoch: 1 } });
  await expect(deliverOne(message(1), options)).resolves.toBe('dropped');
  expect(received).toHaveLength(0);
});

test('a deleted endpoint: nothing is POSTed, sent or recorded', async () => {
  arrange(null);
  await expect(deliverOne(message(3), options)).resolves.toBe('dropped');
  expect(received).toHaveLength(0);
  expect(sends()).toEqual([]);
  expect(records()).toEqual([]);
});

test('a URL that now resolves to a private address is not POSTed to: a failed try, retried later', async () => {
  arrange(webhook('https://hooks.example.com/vision'));
  const outcome = await deliverOne(message(1), { ...options, resolve: async () => ['10.0.0.8'] });
  expect(outcome).toBe('retrying');
  expect(received).toHaveLength(0);
  expect(records()[0]).toEqual(expect.objectContaining({ statusCode: null, error: 'url_refused' }));
  // Nothing of the address it resolved to is kept where the tenant reads it.
  expect(JSON.stringify(records())).not.toContain('10.0.0.8');
});

test('a host whose lookup does not answer in time is a timeout try, retried later', async () => {
  arrange(webhook('https://hooks.example.com/vision'));
  const silent = () => new Promise<string[]>(() => undefined);
  const outcome = await deliverOne(message(1), { ...options, resolve: silent, dnsTimeoutMs: 50 });
  expect(outcome).toBe('retrying');
  expect(records()[0]).toEqual(expect.objectContaining({ statusCode: null, error: 'timeout' }));
});

test('waits are jittered within ±20 % of the schedule, and there are at least 8 tries', () => {
  const base = webhookSettings.retryDelaysSeconds[2] as number;
  expect(nextDelaySeconds(3, () => 0)).toBe(Math.round(base * 0.8));
  expect(nextDelaySeconds(3, () => 1)).toBe(Math.round(base * 1.2));
  expect(nextDelaySeconds(webhookSettings.retryDelaysSeconds.length + 1)).toBeUndefined();
  expect(webhookSettings.retryDelaysSeconds.length + 1).toBeGreaterThanOrEqual(8);
});

describe('at most webhookSettings.maxInFlightPerTenant tries of a tenant at once', () => {
  test('a try holds one of its tenant’s slots while it POSTs, and gives it back after, even when it failed', async () => {
    arrange();
    status = 500;
    await expect(deliverOne(message(1), options)).resolves.toBe('retrying');
    const [taken] = slotsTaken();
    expect(taken?.Item).toEqual(
      expect.objectContaining({ tenantId: 'tenant-a', webhookId: expect.stringMatching(/^#slot#[0-4]$/) }),
    );
    expect(taken?.Item?.leaseUntil).toBeGreaterThan(NOW + webhookSettings.timeoutMs);
    expect(taken?.ConditionExpression).toBe('attribute_not_exists(webhookId) OR leaseUntil <= :now');
    expect(slotsGiven()).toEqual([
      expect.objectContaining({
        Key: { tenantId: 'tenant-a', webhookId: taken?.Item?.webhookId },
        ExpressionAttributeValues: { ':holder': taken?.Item?.holder },
      }),
    ]);
  });

  test('every slot held: nothing is POSTed or recorded; the message waits (2 s, then 4 s, …) and comes back', async () => {
    arrange(webhook(), Array(webhookSettings.maxInFlightPerTenant).fill(NOW + 5000));
    await expect(deliverOne(message(2), options)).resolves.toBe('postponed');
    expect(received).toHaveLength(0);
    expect(records()).toEqual([]);
    expect(slotsTaken()).toEqual([]);
    expect(sends()).toEqual([
      expect.objectContaining({
        QueueUrl: process.env[webhookQueue.envVar],
        MessageBody: JSON.stringify({ ...message(2), postponed: 1 }),
        DelaySeconds: 2,
      }),
    ]);
    sqs.resetHistory();
    await deliverOne({ ...message(2), postponed: 1 }, options);
    expect(sends()[0]?.DelaySeconds).toBe(4);
    sqs.resetHistory();
    await deliverOne({ ...message(2), postponed: 9 }, options);
    expect(sends()[0]?.DelaySeconds).toBe(webhookSettings.busyWaitMaxSeconds);
  });

  test('a lease past its time is free again (a deliver function that died mid-try)', async () => {
    arrange(webhook(), Array(webhookSettings.maxInFlightPerTenant).fill(NOW - 1));
    await expect(deliverOne(message(1), options)).resolves.toBe('delivered');
    expect(received).toHaveLength(1);
  });

  test('a slot another try took first is skipped for the next free one', async () => {
    arrange(webhook(), [NOW + 5000, NOW + 5000, NOW + 5000]);
    ddb
      .on(PutCommand, { TableName: tableName('webhooks') })
      .rejectsOnce(new ConditionalCheckFailedException({ message: 'taken', $metadata: {} }))
      .resolves({});
    await expect(deliverOne(message(1), options)).resolves.toBe('delivered');
    const tried = slotsTaken().map((input) => input.Item?.webhookId);
    expect(tried).toHaveLength(2);
    expect(new Set(tried)).toEqual(new Set(['#slot#3', '#slot#4']));
  });
});
