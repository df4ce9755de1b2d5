/**
 * The SQS worker (functions/worker.ts) with scripted provider adapters and DynamoDB/S3 mocked at the client: the
 * settlement written once with the money, fallback across candidates, the budget cap, duplicate deliveries, and what
 * SQS is told to redeliver.
 * Over 400 lines: the worker's whole settlement contract against one set of client mocks; long documents,
 * fan-out and evidence have their own files.
 */
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { ChangeMessageVisibilityCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  DynamoDBDocumentClient,
  GetCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { createWorkerHandler } from '../../functions/worker.js';
import { runQueue } from '../../shared/infra/resources.js';
import { predictAttempt } from '../../shared/planning/estimate.js';
import { chainedPlan } from '../../shared/planning/plan.js';
import { priceFor } from '../../shared/pricing/pricing.js';
import { catalog } from '../../shared/providers/catalog.js';
import type { ProviderAdapter } from '../../shared/providers/types.js';
import { storedBytes } from '../../shared/store/run-results.js';
import type { RunRecord } from '../../shared/store/runs.js';
import type { ProviderId } from '../../shared/task.js';
import { failing, hanging, succeeding, throwing } from '../support/adapters.js';
import {
  completedRunItem,
  conditionalCheckFailed,
  failedRunItem,
  fixture,
  mapsAsObjects,
  runItem,
  s3NoSuchKey,
  serveObject,
  tableName,
  transactionCancelled,
} from '../support/aws.js';
import { lambdaContext, sqsEvent } from '../support/events.js';
import { estimateMicros, priceMicros } from '../support/pricing.js';

const ddb = mockClient(DynamoDBDocumentClient);
const s3 = mockClient(S3Client);
/** The run queue: the worker hides the message it holds for its lease, and says when a handed-back one comes again. */
const sqs = mockClient(SQSClient);
/** What a one-page run holds at today's prices (runItem's default). */
const HOLD = estimateMicros(1);
/** A hold large enough for any provider's worst case on a receipt image (cloud models cost cents, not micros). */
const BIG_HOLD = 200_000;
const FILE = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3, 4]);
/** The condition of the worker's claim on a run (store/runs.ts claimRun). */
const CLAIM_CONDITION = '#status = :queued AND (attribute_not_exists(leaseUntil) OR leaseUntil <= :nowMs)';

beforeEach(() => {
  ddb.reset();
  s3.reset();
  sqs.reset();
  sqs.on(ChangeMessageVisibilityCommand).resolves({});
});

/** Stores `run` (GetCommand), lets the claim and the settlement succeed, and serves the file. */
function arrange(run: RunRecord): void {
  ddb.on(GetCommand, { TableName: tableName('runs'), Key: { jobId: run.jobId } }).resolves({ Item: run });
  ddb.on(UpdateCommand).resolves({});
  ddb.on(TransactWriteCommand).resolves({});
  serveObject(s3, FILE, run.objectKey);
}

async function deliver(
  adapters: Partial<Record<ProviderId, ProviderAdapter>>,
  messages: { body: string; receiveCount?: number; messageId?: string }[] = [{ body: '{"jobId":"run_1"}' }],
  remainingMs = 60_000,
) {
  const handler = createWorkerHandler({ adapters });
  return handler(sqsEvent(messages), lambdaContext(remainingMs));
}

function settlements(): TransactWriteCommandInput[] {
  return ddb.commandCalls(TransactWriteCommand).map((c) => mapsAsObjects(c.args[0].input));
}

/**
 * The one settlement's items, asserting their fixed shape (exactly-once conditions): the run, the tenant, the ledger
 * entry, the usage counters of the run's hour and day, which move by what the run and tenant items book, and the
 * run's event (the outbox), written with the state it announces.
 */
function theSettlement(jobId = 'run_1') {
  const all = settlements();
  expect(all).toHaveLength(1);
  const items = all[0]?.TransactItems ?? [];
  expect(items).toHaveLength(6);
  const event = items[5]?.Put;
  expect(event?.TableName).toBe(tableName('events'));
  expect(event?.ConditionExpression).toBe('attribute_not_exists(eventId)');
  expect(event?.Item).toEqual(
    expect.objectContaining({
      eventId: `evt_${jobId.replace(/^run_/, '')}`,
      jobId,
      type: `run.${items[0]?.Update?.ExpressionAttributeValues?.[':status']}`,
      createdAt: items[0]?.Update?.ExpressionAttributeValues?.[':completedAt'],
      pendingShard: expect.stringMatching(/^p\d$/),
    }),
  );
  const run = items[0]?.Update;
  const tenant = items[1]?.Update;
  const ledger = items[2]?.Put;
  const [hour, day] = [items[3]?.Update, items[4]?.Update];
  expect(run?.TableName).toBe(tableName('runs'));
  expect(run?.Key).toEqual({ jobId });
  expect(run?.ConditionExpression).toBe('#status = :queued AND usageCounted = :counted');
  for (const counter of [hour, day]) {
    expect(counter?.TableName).toBe(tableName('usage'));
    const added = counter?.ExpressionAttributeValues ?? {};
    expect(added[':chargedMicros'] ?? 0).toBe(ledger?.Item?.chargedMicros);
    expect(added[':refundedMicros'] ?? 0).toBe(ledger?.Item?.refundedMicros);
    expect((added[':completed'] ?? 0) + (added[':failed'] ?? 0)).toBe(1);
  }
  expect([hour?.Key?.slot, day?.Key?.slot]).toEqual(['h#2026-11-01T10#', 'd#2026-11-01#']);
  expect(run?.ExpressionAttributeValues?.[':queued']).toBe('queued');
  expect(tenant?.TableName).toBe(tableName('tenants'));
  expect(ledger?.TableName).toBe(tableName('ledger'));
  expect(ledger?.ConditionExpression).toBe('attribute_not_exists(entryId)');
  expect(ledger?.Item?.entryId).toBe(`${jobId}#settle`);
  return {
    // biome-ignore lint/suspicious/noExplicitAny: DynamoDB attribute values are untyped
    values: (run?.ExpressionAttributeValues ?? {}) as Record<string, any>,
    tenant: {
      Key: tenant?.Key,
      UpdateExpression: tenant?.UpdateExpression ?? '',
      ExpressionAttributeValues: tenant?.ExpressionAttributeValues ?? {},
    },
    // biome-ignore lint/suspicious/noExplicitAny: as above
    ledger: (ledger?.Item ?? {}) as Record<string, any>,
  };
}

describe('a run that succeeds', () => {
  test('the price uses the margin recorded on the run at creation, not a margin configured since', async () => {
    // Created at 50 %: one OCR page (200 µ$ cost) held at 300 µ$.
    arrange(runItem({ marginPct: 50, estimateMicros: 300 }));
    const local = succeeding('local', { result: { total: '1' }, usage: { billableUnits: 1, costMicros: 80 } });
    await deliver({ local });
    const { values } = theSettlement();
    expect(values[':usage'].priceMicros).toBe(120);
    expect(values[':charged']).toBe(120);
    expect(values[':refunded']).toBe(180);
  });

  test('settles completed once: charged = price (under the hold), the rest refunded, result shaped to the schema', async () => {
    arrange(runItem());
    const local = succeeding('local', {
      result: { merchant: 'ACME HARDWARE', total: '42.50', cashier: 'Bob' },
      documentText: 'ACME HARDWARE\nTotal: 42.50',
      nativeConfidence: 0.9,
      usage: { billableUnits: 1, costMicros: 80 },
    });
    const response = await deliver({ local });
    expect(response).toEqual({ batchItemFailures: [] });

    const { values, tenant, ledger } = theSettlement();
    expect(values[':status']).toBe('completed');
    // price = 80 micros cost + margin, under the hold: charge the price, refund the rest.
    const price = priceMicros(80);
    expect(price).toBeLessThan(HOLD);
    expect(values[':usage']).toEqual({ requests: 1, billableUnits: 1, costMicros: 80, priceMicros: price });
    expect(values[':charged']).toBe(price);
    expect(values[':refunded']).toBe(HOLD - price);
    // Exactly the schema's fields, coerced; nothing the schema does not name.
    expect(values[':result']).toEqual({ merchant: 'ACME HARDWARE', total: 42.5 });
    expect(values[':confidence']).toBeGreaterThan(0);
    expect(values[':confidence']).toBeLessThanOrEqual(1);
    expect(values[':attempts']).toEqual([
      { provider: 'local', step: 'vision', outcome: 'succeeded', latencyMs: expect.any(Number) },
    ]);
    expect(tenant.Key).toEqual({ tenantId: 'tenant-a' });
    expect(tenant.ExpressionAttributeValues).toEqual({
      ':negHold': -HOLD,
      ':charged': price,
      ':refunded': HOLD - price,
    });
    expect(tenant.UpdateExpression).not.toContain('availableMicros');
    expect(ledger).toEqual(
      expect.objectContaining({
        tenantId: 'tenant-a',
        jobId: 'run_1',
        kind: 'settle',
        outcome: 'completed',
        holdMicros: HOLD,
        chargedMicros: price,
        refundedMicros: HOLD - price,
      }),
    );
  });

  test('the adapter gets the stored bytes, the file facts and the task', async () => {
    const run = runItem();
    arrange(run);
    const local = succeeding('local');
    await deliver({ local });
    expect(local.calls).toHaveLength(1);
    const input = local.calls[0]?.input;
    expect(Array.from(input?.bytes ?? [])).toEqual(Array.from(FILE));
    expect(input?.facts).toEqual(run.file);
    expect(input?.task).toEqual(run.task);
    expect(s3).toHaveReceivedCommandWith(GetObjectCommand, { Key: run.objectKey });
  });

  test('the run is claimed (only while queued and held by no live delivery) before any provider is called', async () => {
    arrange(runItem());
    await deliver({ local: succeeding('local') });
    expect(ddb).toHaveReceivedCommandTimes(UpdateCommand, 1);
    const update = ddb.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(update?.Key).toEqual({ jobId: 'run_1' });
    expect(update?.ConditionExpression).toBe(CLAIM_CONDITION);
    expect(update?.ExpressionAttributeValues?.[':processing']).toBe('processing');
    // The delivery's own SQS receive count is kept for the reconciler.
    expect(update?.ExpressionAttributeValues?.[':receive']).toBe(1);
  });

  test('a price above the hold is charged only up to the hold; nothing is refunded', async () => {
    arrange(runItem());
    await deliver({ local: succeeding('local', { usage: { billableUnits: 1, costMicros: 500 } }) });
    const { values, ledger } = theSettlement();
    expect(values[':usage'].priceMicros).toBe(priceMicros(500));
    expect(values[':charged']).toBe(HOLD);
    expect(values[':refunded']).toBe(0);
    expect(ledger.chargedMicros).toBe(HOLD);
  });

  test('a text run settles its one page (get-run shows {text, pages})', async () => {
    arrange(runItem({ outputFormat: 'text', task: { ...runItem().task, outputFormat: 'text', fields: null } }));
    await deliver({ local: succeeding('local', { result: { text: 'hello' }, documentText: 'hello' }) });
    expect(theSettlement().values[':result']).toEqual({ pages: [{ page: 1, text: 'hello' }] });
  });

  test("a limited tenant's refund goes back to its available credit", async () => {
    arrange(runItem({ holdFromCredit: true }));
    await deliver({ local: succeeding('local') });
    const { tenant } = theSettlement();
    expect(tenant.UpdateExpression).toContain('availableMicros :refunded');
    expect(tenant.ExpressionAttributeValues?.[':refunded']).toBe(HOLD - priceMicros(80));
  });
});

describe('fallback', () => {
  test('the first candidate fails, the second succeeds: attempts list both with their outcomes', async () => {
    arrange(runItem({ candidates: ['openai', 'local'], estimateMicros: BIG_HOLD }));
    const openai = failing('openai', 'rate_limited');
    const local = succeeding('local');
    const response = await deliver({ openai, local });
    expect(response.batchItemFailures).toEqual([]);
    const { values } = theSettlement();
    expect(values[':status']).toBe('completed');
    expect(values[':attempts']).toEqual([
      { provider: 'openai', step: 'vision', outcome: 'failed', latencyMs: expect.any(Number), failure: 'rate_limited' },
      { provider: 'local', step: 'vision', outcome: 'succeeded', latencyMs: expect.any(Number) },
    ]);
    expect(values[':usage'].requests).toBe(2);
    expect(openai.calls).toHaveLength(1);
    expect(local.calls).toHaveLength(1);
  });

  test('every candidate failing settles failed PROVIDER_ERROR (502, retryable): nothing charged, the whole hold refunded', async () => {
    arrange(runItem({ candidates: ['openai', 'local'], estimateMicros: BIG_HOLD }));
    const response = await deliver({
      openai: failing('openai', 'timeout'),
      local: throwing('local', new Error('tesseract crashed')),
    });
    expect(response.batchItemFailures).toEqual([]);
    const { values, tenant, ledger } = theSettlement();
    expect(values[':status']).toBe('failed');
    expect(values[':error']).toEqual(
      expect.objectContaining({ code: 'PROVIDER_ERROR', status: 502, retryable: true, message: expect.any(String) }),
    );
    expect(JSON.stringify(values[':error'])).not.toContain('tesseract crashed');
    expect(values[':charged']).toBe(0);
    expect(values[':refunded']).toBe(BIG_HOLD);
    expect(values[':attempts'].map((a: { outcome: string; failure: string }) => [a.outcome, a.failure])).toEqual([
      ['failed', 'timeout'],
      ['failed', 'server'],
    ]);
    expect(values).not.toHaveProperty(':result');
    expect(tenant.ExpressionAttributeValues).toEqual({ ':negHold': -BIG_HOLD, ':charged': 0, ':refunded': BIG_HOLD });
    expect(ledger).toEqual(expect.objectContaining({ outcome: 'failed', chargedMicros: 0, refundedMicros: BIG_HOLD }));
  });

  test('a file no candidate could decode settles failed CORRUPT_FILE (422, not retryable): retrying cannot help', async () => {
    // A PNG whose header passed the checks at creation but whose image data is damaged: every adapter's media
    // preparation fails before any request (shared/media: unreadable_file).
    arrange(runItem({ candidates: ['openai', 'local'], estimateMicros: BIG_HOLD }));
    await deliver({
      openai: failing('openai', 'unreadable_file'),
      local: failing('local', 'unreadable_file'),
    });
    const { values, ledger } = theSettlement();
    expect(values[':status']).toBe('failed');
    expect(values[':error']).toEqual(
      expect.objectContaining({ code: 'CORRUPT_FILE', status: 422, retryable: false, message: expect.any(String) }),
    );
    expect(values[':error'].details).toEqual(expect.objectContaining({ reason: 'undecodable' }));
    expect(values[':charged']).toBe(0);
    expect(values[':refunded']).toBe(BIG_HOLD);
    expect(ledger).toEqual(expect.objectContaining({ outcome: 'failed', chargedMicros: 0, refundedMicros: BIG_HOLD }));
  });

  test('an answer cut off at its output limit by every candidate fails the run 502 with reason "truncated"', async () => {
    arrange(runItem({ candidates: ['openai', 'local'], estimateMicros: BIG_HOLD }));
    await deliver({ openai: failing('openai', 'truncated'), local: failing('local', 'server') });
    const { values } = theSettlement();
    expect(values[':status']).toBe('failed');
    expect(values[':error']).toEqual(expect.objectContaining({ code: 'PROVIDER_ERROR', status: 502, retryable: true }));
    expect(values[':error'].details).toEqual(
      expect.objectContaining({ reason: 'truncated', attempts: expect.arrayContaining([expect.anything()]) }),
    );
  });

  test('a provider failing for its own reasons besides an undecodable file is still PROVIDER_ERROR (retryable)', async () => {
    // The provider that could not be reached might have taken the file as it is; a retry may succeed.
    arrange(runItem({ candidates: ['openai', 'local'], estimateMicros: BIG_HOLD }));
    await deliver({ openai: failing('openai', 'server'), local: failing('local', 'unreadable_file') });
    const { values } = theSettlement();
    expect(values[':error']).toEqual(expect.objectContaining({ code: 'PROVIDER_ERROR', status: 502, retryable: true }));
  });

  test('a failed run that consumed provider usage still charges nothing', async () => {
    arrange(runItem());
    await deliver({ local: failing('local', 'invalid_output', { billableUnits: 1, costMicros: 90 }) });
    const { values } = theSettlement();
    expect(values[':status']).toBe('failed');
    expect(values[':charged']).toBe(0);
    expect(values[':refunded']).toBe(HOLD);
  });

  test('a dearer fallback runs when its predicted price fits the spend limit; the client pays the estimate, the service absorbs the rest', async () => {
    const run = runItem({ candidates: ['local', 'openai'] });
    const predicted = predictAttempt('openai', run.file, run.task, 'vision')?.costMicros ?? Number.NaN;
    // The estimate was local's; OpenAI's predicted price is 1.6 x it: within SERVICE_MAX_OVERRUN_RATIO's default of 2.
    const estimate = Math.ceil(priceFor(predicted) / 1.6);
    arrange({ ...run, estimateMicros: estimate });
    const openai = succeeding('openai', {
      usage: { billableUnits: 1, costMicros: predicted, inputTokens: 1, outputTokens: 1 },
    });
    await deliver({ local: failing('local', 'invalid_output', { billableUnits: 1, costMicros: 80 }), openai });
    expect(openai.calls).toHaveLength(1);
    // The adapter is told what the attempt may cost at most: the limit less what local spent.
    expect(openai.calls[0]?.options.maxCostMicros).toBeGreaterThan(predicted);
    const { values } = theSettlement();
    expect(values[':status']).toBe('completed');
    const price = priceFor(predicted + 80);
    expect(values[':charged']).toBe(estimate);
    expect(values[':refunded']).toBe(0);
    expect(values[':absorbed']).toBe(price - estimate);
  });

  test('a fallback whose predicted price would cross the spend limit is skipped, not called', async () => {
    const run = runItem({ candidates: ['local', 'openai'] });
    const predicted = predictAttempt('openai', run.file, run.task, 'vision')?.costMicros ?? Number.NaN;
    arrange({ ...run, estimateMicros: Math.floor(priceFor(predicted) / 2.5) });
    const openai = succeeding('openai');
    await deliver({ local: failing('local', 'invalid_output', { billableUnits: 1, costMicros: 80 }), openai });
    expect(openai.calls).toHaveLength(0);
    const { values } = theSettlement();
    expect(values[':status']).toBe('failed');
    expect(values[':attempts'][1]).toEqual(
      expect.objectContaining({ provider: 'openai', outcome: 'skipped', failure: 'over_budget' }),
    );
  });

  test('a completed run priced within its estimate absorbs nothing', async () => {
    arrange(runItem({ estimateMicros: BIG_HOLD }));
    await deliver({ local: succeeding('local', { usage: { billableUnits: 1, costMicros: 150 } }) });
    const { values } = theSettlement();
    expect(values[':charged']).toBe(priceMicros(150));
    expect(values[':absorbed']).toBe(0);
  });

  test('a fallback that would push the price past the hold is skipped', async () => {
    // The hold is local's worst case; local failed after spending 80 micros, so OpenAI's worst case cannot fit.
    arrange(runItem({ candidates: ['local', 'openai'] }));
    const openai = succeeding('openai');
    await deliver({ local: failing('local', 'invalid_output', { billableUnits: 1, costMicros: 80 }), openai });
    expect(openai.calls).toHaveLength(0);
    const { values } = theSettlement();
    expect(values[':status']).toBe('failed');
    expect(values[':error'].code).toBe('PROVIDER_ERROR');
    expect(values[':attempts'][1]).toEqual(expect.objectContaining({ provider: 'openai', outcome: 'skipped' }));
  });
});

describe('duplicates and races', () => {
  test.each([
    ['completed', completedRunItem()],
    ['failed', failedRunItem()],
  ])('a message for an already %s run changes nothing (duplicate delivery)', async (_status, run) => {
    arrange(run);
    const local = succeeding('local');
    const response = await deliver({ local });
    expect(response.batchItemFailures).toEqual([]);
    expect(ddb).not.toHaveReceivedCommand(UpdateCommand);
    expect(ddb).not.toHaveReceivedCommand(TransactWriteCommand);
    expect(s3).not.toHaveReceivedAnyCommand();
    expect(local.calls).toHaveLength(0);
  });

  test('a run another delivery finished between the read and the claim is left alone', async () => {
    arrange(runItem());
    ddb.on(UpdateCommand).rejects(conditionalCheckFailed());
    const local = succeeding('local');
    const response = await deliver({ local });
    expect(response.batchItemFailures).toEqual([]);
    expect(local.calls).toHaveLength(0);
    expect(ddb).not.toHaveReceivedCommand(TransactWriteCommand);
  });

  /** The run's claim fails (another delivery holds it until `until`) while counting the delivery succeeds. */
  function heldByAnotherDelivery(until = Date.now() + 60_000): void {
    ddb.on(UpdateCommand, { ConditionExpression: CLAIM_CONDITION }).rejects(conditionalCheckFailed());
    ddb
      .on(UpdateCommand, { ConditionExpression: '#status = :queued', ReturnValues: 'ALL_NEW' })
      .resolves({ Attributes: runItem({ leaseHolder: 'pid 7 on worker-b #1f', leaseUntil: until }) });
  }

  test('a run another live delivery holds is not processed twice: its message comes back when that lease ends', async () => {
    arrange(runItem());
    heldByAnotherDelivery(Date.now() + 20_000);
    const local = succeeding('local');
    const response = await deliver({ local }, [{ body: '{"jobId":"run_1"}', receiveCount: 2, messageId: 'm-1' }]);
    expect(local.calls).toHaveLength(0);
    expect(ddb).not.toHaveReceivedCommand(TransactWriteCommand);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm-1' }]);
    // Hidden until the holder's lease would end (and a second more), not for the queue's 15-minute visibility timeout.
    const hidden = sqs.commandCalls(ChangeMessageVisibilityCommand).map((c) => c.args[0].input);
    expect(hidden).toHaveLength(1);
    expect(hidden[0]?.ReceiptHandle).toBe('rh-0');
    expect(hidden[0]?.VisibilityTimeout).toBeGreaterThanOrEqual(20);
    expect(hidden[0]?.VisibilityTimeout).toBeLessThanOrEqual(21);
    // The delivery is still counted, with its own receive count, for the reconciler.
    const counted = ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input);
    expect(counted.at(-1)).toMatchObject({
      UpdateExpression: 'SET deliveredAt = :now, lastReceiveCount = :receive ADD deliveries :one',
      ConditionExpression: '#status = :queued',
      ExpressionAttributeValues: expect.objectContaining({ ':receive': 2 }),
    });
  });

  test('on its last allowed delivery a message for a held run is dropped, not sent to the DLQ', async () => {
    arrange(runItem());
    heldByAnotherDelivery();
    const local = succeeding('local');
    const response = await deliver({ local }, [
      { body: '{"jobId":"run_1"}', receiveCount: runQueue.maxReceiveCount, messageId: 'm-1' },
    ]);
    expect(response.batchItemFailures).toEqual([]);
    expect(local.calls).toHaveLength(0);
    expect(ddb).not.toHaveReceivedCommand(TransactWriteCommand);
  });

  test("the claim is a short lease (SERVICE_LEASE_SECONDS, 60 s), never past the invocation's end, and names its holder", async () => {
    const claimOf = () =>
      ddb
        .commandCalls(UpdateCommand)
        .map((c) => c.args[0].input)
        .find((input) => input.UpdateExpression?.includes('leaseUntil'));
    const leaseMs = () =>
      Number(claimOf()?.ExpressionAttributeValues?.[':lease']) -
      Number(claimOf()?.ExpressionAttributeValues?.[':nowMs']);
    arrange(runItem());
    await createWorkerHandler({ adapters: { local: succeeding('local') } })(
      sqsEvent([{ body: '{"jobId":"run_1"}' }]),
      lambdaContext(900_000),
    );
    // 15 minutes left in the invocation: the lease is one minute (the lease and the condition's `now` are read a
    // moment apart: a loaded machine ticks between).
    expect(leaseMs()).toBeGreaterThan(59_900);
    expect(leaseMs()).toBeLessThanOrEqual(60_000);
    expect(claimOf()?.ExpressionAttributeValues?.[':holder']).toMatch(/^pid \d+ on .+ #[0-9a-f]{8}$/);
    ddb.reset();
    arrange(runItem());
    await deliver({ local: succeeding('local') }, [{ body: '{"jobId":"run_1"}' }], 10_000);
    expect(leaseMs()).toBeGreaterThan(9_900);
    expect(leaseMs()).toBeLessThanOrEqual(10_000);
  });

  test('a delivery that fails and will be redelivered gives its lease up, and its message comes back within a lease', async () => {
    arrange(runItem());
    s3.on(GetObjectCommand).rejects(new Error('SlowDown'));
    const response = await deliver({ local: succeeding('local') }, [
      { body: '{"jobId":"run_1"}', receiveCount: 1, messageId: 'm-1' },
    ]);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm-1' }]);
    const updates = ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input);
    const holder = updates[0]?.ExpressionAttributeValues?.[':holder'];
    expect(updates.at(-1)).toMatchObject({
      UpdateExpression: 'REMOVE leaseUntil, leaseHolder',
      ConditionExpression: 'leaseHolder = :holder',
      ExpressionAttributeValues: { ':holder': holder },
    });
    // Hidden for the lease when claimed; handed back for at most a lease (not the 15-minute visibility timeout).
    const hidden = sqs.commandCalls(ChangeMessageVisibilityCommand).map((c) => c.args[0].input.VisibilityTimeout);
    expect(hidden).toEqual([60, 60]);
  });

  test('a settlement cancelled because the run became final meanwhile is not an error and is not redelivered', async () => {
    arrange(runItem());
    ddb.on(TransactWriteCommand).rejects(transactionCancelled(['ConditionalCheckFailed', 'None', 'None']));
    const response = await deliver({ local: succeeding('local') });
    expect(response.batchItemFailures).toEqual([]);
    expect(ddb).toHaveReceivedCommandTimes(TransactWriteCommand, 1);
  });

  test('a run created before the usage counters, counted by the backfill between the read and the settlement, is settled once with its counters', async () => {
    const uncounted = { ...runItem(), usageCounted: undefined };
    ddb
      .on(GetCommand, { TableName: tableName('runs'), Key: { jobId: 'run_1' } })
      .resolvesOnce({ Item: uncounted })
      .resolves({ Item: runItem() });
    ddb.on(UpdateCommand).resolves({});
    ddb
      .on(TransactWriteCommand)
      .rejectsOnce(transactionCancelled(['ConditionalCheckFailed', 'None', 'None']))
      .resolves({});
    serveObject(s3, FILE, 'uploads/tenant-a/upl_1');
    const response = await deliver({ local: succeeding('local') });
    expect(response.batchItemFailures).toEqual([]);
    const [first, second] = settlements();
    // Read uncounted: no counters, on condition it is still uncounted. Then counted: the counters move with it.
    expect(first?.TransactItems).toHaveLength(4);
    expect(first?.TransactItems?.[0]?.Update?.ConditionExpression).toContain('attribute_not_exists(usageCounted)');
    expect(second?.TransactItems).toHaveLength(6);
    expect(second?.TransactItems?.[0]?.Update?.ConditionExpression).toContain('usageCounted = :counted');
  });

  test('a message for a run that does not exist is dropped', async () => {
    ddb.on(GetCommand).resolves({});
    const response = await deliver({ local: succeeding('local') });
    expect(response.batchItemFailures).toEqual([]);
    expect(ddb).not.toHaveReceivedCommand(TransactWriteCommand);
  });
});

describe('infrastructure failures and redelivery', () => {
  test('an S3 failure on a delivery that is not the last reports the message for redelivery and settles nothing', async () => {
    arrange(runItem());
    s3.on(GetObjectCommand).rejects(new Error('SlowDown'));
    const response = await deliver({ local: succeeding('local') }, [
      { body: '{"jobId":"run_1"}', receiveCount: 2, messageId: 'm-1' },
    ]);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm-1' }]);
    expect(ddb).not.toHaveReceivedCommand(TransactWriteCommand);
  });

  test('a settlement write failure (not a cancellation) is redelivered', async () => {
    arrange(runItem());
    ddb.on(TransactWriteCommand).rejects(new Error('ProvisionedThroughputExceededException'));
    const response = await deliver({ local: succeeding('local') }, [{ body: '{"jobId":"run_1"}', messageId: 'm-1' }]);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm-1' }]);
  });

  test('a settlement write failing on the last delivery fails the run with the attempts the providers made', async () => {
    arrange(runItem());
    ddb.on(TransactWriteCommand).rejectsOnce(new Error('ProvisionedThroughputExceededException')).resolves({});
    const response = await deliver({ local: succeeding('local') }, [
      { body: '{"jobId":"run_1"}', receiveCount: runQueue.maxReceiveCount, messageId: 'm-1' },
    ]);
    expect(response.batchItemFailures).toEqual([]);
    const [completed, failed] = settlements().map((t) => t.TransactItems?.[0]?.Update?.ExpressionAttributeValues ?? {});
    expect(completed?.[':status']).toBe('completed');
    expect(failed?.[':status']).toBe('failed');
    expect(failed?.[':charged']).toBe(0);
    expect(failed?.[':attempts']).toEqual(completed?.[':attempts']);
    expect(failed?.[':attempts']).toHaveLength(1);
  });

  test('on the last delivery the run is settled failed INTERNAL_ERROR with a full refund, and not redelivered', async () => {
    arrange(runItem());
    s3.on(GetObjectCommand).rejects(new Error('SlowDown'));
    const response = await deliver({ local: succeeding('local') }, [
      { body: '{"jobId":"run_1"}', receiveCount: runQueue.maxReceiveCount, messageId: 'm-1' },
    ]);
    expect(response.batchItemFailures).toEqual([]);
    const { values, tenant } = theSettlement();
    expect(values[':status']).toBe('failed');
    expect(values[':error']).toEqual(expect.objectContaining({ code: 'INTERNAL_ERROR', status: 500, retryable: true }));
    expect(JSON.stringify(values[':error'])).not.toContain('SlowDown');
    expect(values[':charged']).toBe(0);
    expect(values[':refunded']).toBe(HOLD);
    expect(tenant.ExpressionAttributeValues).toEqual({ ':negHold': -HOLD, ':charged': 0, ':refunded': HOLD });
  });

  test('an uploaded file that no longer exists settles failed UPLOAD_NOT_FOUND with a full refund', async () => {
    arrange(runItem());
    s3.on(GetObjectCommand).rejects(s3NoSuchKey());
    const response = await deliver({ local: succeeding('local') });
    expect(response.batchItemFailures).toEqual([]);
    const { values } = theSettlement();
    expect(values[':error']).toEqual(expect.objectContaining({ code: 'UPLOAD_NOT_FOUND', retryable: false }));
    expect(values[':refunded']).toBe(HOLD);
  });

  test('the worker reads the version of the upload creation inspected, and hands it to providers that read S3', async () => {
    arrange(runItem({ objectIdentity: { etag: '"abc"', versionId: 'v-1' } }));
    const local = succeeding('local');
    await deliver({ local });
    const get = s3.commandCalls(GetObjectCommand)[0]?.args[0].input;
    expect(get).toEqual(expect.objectContaining({ VersionId: 'v-1' }));
    expect(get?.IfMatch).toBeUndefined();
    expect(local.calls[0]?.input.source).toEqual(expect.objectContaining({ versionId: 'v-1' }));
  });

  test('without a version, the worker reads the upload only while its ETag is the one inspected', async () => {
    arrange(runItem({ objectIdentity: { etag: '"abc"' } }));
    await deliver({ local: succeeding('local') });
    expect(s3).toHaveReceivedCommandWith(GetObjectCommand, { IfMatch: '"abc"' });
  });

  test('a pinned version that has expired settles failed UPLOAD_NOT_FOUND as an expired file, not a replaced one', async () => {
    arrange(runItem({ objectIdentity: { etag: '"abc"', versionId: 'v-1' } }));
    s3.on(GetObjectCommand).rejects(
      Object.assign(new Error('The specified version does not exist.'), { name: 'NoSuchVersion' }),
    );
    await deliver({ local: succeeding('local') });
    const { values } = theSettlement();
    expect(values[':error']).toEqual(
      expect.objectContaining({ code: 'UPLOAD_NOT_FOUND', message: 'The uploaded file has expired' }),
    );
    expect(values[':refunded']).toBe(HOLD);
  });

  test('an upload replaced after creation settles failed UPLOAD_NOT_FOUND (replaced) with a full refund, calling no provider', async () => {
    arrange(runItem({ objectIdentity: { etag: '"abc"' } }));
    const replaced = Object.assign(new Error('At least one of the pre-conditions you specified did not hold'), {
      name: 'PreconditionFailed',
      $metadata: { httpStatusCode: 412 },
    });
    s3.on(GetObjectCommand).rejects(replaced);
    const local = succeeding('local');
    const response = await deliver({ local });
    expect(response.batchItemFailures).toEqual([]);
    expect(local.calls).toHaveLength(0);
    const { values } = theSettlement();
    expect(values[':error']).toEqual(
      expect.objectContaining({ code: 'UPLOAD_NOT_FOUND', retryable: false, details: { reason: 'replaced' } }),
    );
    expect(values[':charged']).toBe(0);
    expect(values[':refunded']).toBe(HOLD);
  });

  test.each([['not json'], ['{"jobId":""}'], ['{"id":"run_1"}'], ['null'], ['[]']])(
    'a malformed message (%s) is dropped, not redelivered',
    async (body) => {
      const response = await deliver({ local: succeeding('local') }, [{ body, messageId: 'bad' }]);
      expect(response.batchItemFailures).toEqual([]);
      expect(ddb).not.toHaveReceivedAnyCommand();
    },
  );

  test('in a batch, only the failing message is reported; its neighbour is settled', async () => {
    const good = runItem({ jobId: 'run_good', objectKey: 'uploads/tenant-a/good' });
    const bad = runItem({ jobId: 'run_bad', objectKey: 'uploads/tenant-a/bad' });
    arrange(good);
    ddb.on(GetCommand, { TableName: tableName('runs'), Key: { jobId: 'run_bad' } }).resolves({ Item: bad });
    s3.on(GetObjectCommand, { Key: 'uploads/tenant-a/bad' }).rejects(new Error('InternalError'));
    const response = await deliver({ local: succeeding('local') }, [
      { body: '{"jobId":"run_bad"}', messageId: 'm-bad' },
      { body: '{"jobId":"run_good"}', messageId: 'm-good' },
      { body: 'garbage', messageId: 'm-garbage' },
    ]);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm-bad' }]);
    theSettlement('run_good');
  });

  test('an adapter that hangs past the invocation deadline is abandoned and the run settles', async () => {
    arrange(runItem({ candidates: ['openai', 'local'], estimateMicros: BIG_HOLD }));
    const handler = createWorkerHandler({ adapters: { openai: hanging('openai'), local: succeeding('local') } });
    // 5.3 s left, 5 s kept back for the settlement: 300 ms for the providers.
    const response = await handler(sqsEvent([{ body: '{"jobId":"run_1"}' }]), lambdaContext(5_300));
    expect(response.batchItemFailures).toEqual([]);
    const { values } = theSettlement();
    expect(values[':attempts'][0]).toEqual(expect.objectContaining({ provider: 'openai', failure: 'timeout' }));
    expect(values[':status']).toBe('completed');
  });
});

describe('PDF text layers', () => {
  function arrangePdf(file: string, pages: number): void {
    const run = runItem({
      candidates: ['openai', 'local'],
      estimateMicros: BIG_HOLD,
      file: { mime: 'application/pdf', kind: 'pdf', sizeBytes: fixture(file).length, pages },
    });
    arrange(run);
    s3.reset();
    serveObject(s3, fixture(file), run.objectKey);
  }

  test('a PDF with a text layer on every page goes to language models as text (analyze), not as pages to OCR', async () => {
    arrangePdf('text.pdf', 2);
    const openai = succeeding('openai');
    await deliver({ openai, local: succeeding('local') });
    expect(openai.calls[0]?.input.step).toBe('analyze');
    expect(openai.calls[0]?.input.documentText).toContain('INV-2001');
  });

  test('a scanned PDF goes to language models as the file (vision)', async () => {
    arrangePdf('scanned.pdf', 1);
    const openai = succeeding('openai');
    await deliver({ openai, local: succeeding('local') });
    expect(openai.calls[0]?.input.step).toBe('vision');
    expect(openai.calls[0]?.input.documentText).toBeUndefined();
  });

  test('the local provider reads the layer itself and always runs its own pass', async () => {
    arrangePdf('text.pdf', 2);
    const local = succeeding('local');
    await deliver({ openai: failing('openai'), local });
    expect(local.calls[0]?.input.step).toBe('vision');
  });
});

describe('a chained OCR-then-analyze plan', () => {
  /** A scanned or text PDF whose plan is Textract OCR (local as OCR fallback) → OpenAI analysis (local last). */
  function arrangeChain(file: string, overrides: Partial<RunRecord> = {}): void {
    const run = runItem({
      ocrCandidates: ['textract', 'local'],
      candidates: ['openai', 'local'],
      estimateMicros: BIG_HOLD,
      file: { mime: 'application/pdf', kind: 'pdf', sizeBytes: fixture(file).length, pages: 1 },
      ...overrides,
    });
    arrange(run);
    s3.reset();
    serveObject(s3, fixture(file), run.objectKey);
  }
  const read = (text: string, costMicros: number, nativeConfidence = 0.9) => ({
    result: { text },
    documentText: text,
    nativeConfidence,
    usage: { billableUnits: 1, costMicros },
  });

  test('the OCR engine reads the scan, the language model analyzes its text; one settlement prices both steps', async () => {
    arrangeChain('scanned.pdf');
    const word = (text: string, bbox: [number, number, number, number]) => ({ text, bbox, confidence: 0.95 });
    const textract = succeeding('textract', {
      ...read('ACME Market\nTOTAL 42.50', 1500, 0.95),
      words: [
        {
          page: 1,
          source: 'textract' as const,
          words: [
            word('ACME', [0.1, 0.1, 0.2, 0.14]),
            word('Market', [0.22, 0.1, 0.35, 0.14]),
            word('TOTAL', [0.1, 0.5, 0.2, 0.54]),
            word('42.50', [0.6, 0.5, 0.7, 0.54]),
          ],
        },
      ],
    });
    const openai = succeeding('openai', {
      result: { merchant: 'ACME Market', total: 42.5 },
      nativeConfidence: 0.99,
      usage: { billableUnits: 1, costMicros: 700 },
    });
    await deliver({ textract, openai, local: succeeding('local') });

    expect(textract.calls[0]?.input.step).toBe('ocr');
    expect(openai.calls[0]?.input.step).toBe('analyze');
    expect(openai.calls[0]?.input.documentText).toBe('ACME Market\nTOTAL 42.50');
    const { values } = theSettlement();
    expect(values[':status']).toBe('completed');
    expect(values[':result']).toEqual({ merchant: 'ACME Market', total: 42.5 });
    expect(values[':attempts']).toEqual([
      { provider: 'textract', step: 'ocr', outcome: 'succeeded', latencyMs: expect.any(Number) },
      { provider: 'openai', step: 'analyze', outcome: 'succeeded', latencyMs: expect.any(Number) },
    ]);
    expect(values[':usage']).toEqual(
      expect.objectContaining({ requests: 2, billableUnits: 1, costMicros: 2200, priceMicros: priceMicros(2200) }),
    );
    expect(values[':charged']).toBe(priceMicros(2200));
    expect(values[':refunded']).toBe(BIG_HOLD - priceMicros(2200));
    // Both values stand on the page Textract read: each field carries its box, and the run is sure enough.
    expect(values[':fields']).toEqual({
      merchant: expect.objectContaining({ page: 1, bbox: [0.1, 0.1, 0.35, 0.14], source: 'ACME Market' }),
      total: expect.objectContaining({ page: 1, bbox: [0.6, 0.5, 0.7, 0.54] }),
    });
    expect(values[':review']).toEqual({ needed: false, reasons: [] });
    expect(values[':confidence']).toBeGreaterThan(0.9);
  });

  test('each step falls back on its own: local OCRs when Textract fails, then the model analyzes local text', async () => {
    arrangeChain('scanned.pdf');
    const local = succeeding('local', read('ACME\nTOTAL 9.99', 260, 0.7));
    const openai = succeeding('openai', { result: { merchant: 'ACME', total: 9.99 } });
    await deliver({ textract: failing('textract', 'server'), local, openai });
    expect(local.calls[0]?.input.step).toBe('ocr');
    expect(openai.calls[0]?.input.documentText).toBe('ACME\nTOTAL 9.99');
    const { values } = theSettlement();
    expect(values[':attempts'].map((a: { provider: string; step: string; outcome: string }) => a)).toEqual([
      expect.objectContaining({ provider: 'textract', step: 'ocr', outcome: 'failed' }),
      expect.objectContaining({ provider: 'local', step: 'ocr', outcome: 'succeeded' }),
      expect.objectContaining({ provider: 'openai', step: 'analyze', outcome: 'succeeded' }),
    ]);
    expect(values[':usage'].costMicros).toBe(260 + 80);
  });

  test('a PDF with a full text layer skips the OCR step: the layer is the text, and the OCR hold is refunded', async () => {
    arrangeChain('text.pdf', { file: { mime: 'application/pdf', kind: 'pdf', sizeBytes: 0, pages: 2 } });
    const textract = succeeding('textract', read('never', 1500));
    const openai = succeeding('openai', { result: { merchant: 'X', total: 1 } });
    await deliver({ textract, openai, local: succeeding('local') });
    expect(textract.calls).toHaveLength(0);
    expect(openai.calls[0]?.input.step).toBe('analyze');
    expect(openai.calls[0]?.input.documentText).toContain('INV-2001');
    const { values } = theSettlement();
    expect(values[':attempts']).toEqual([
      { provider: 'openai', step: 'analyze', outcome: 'succeeded', latencyMs: expect.any(Number) },
    ]);
    expect(values[':charged']).toBe(priceMicros(80));
  });

  test('a chain whose steps cost more than predicted still completes within the spend limit; the client pays the estimate', async () => {
    const file: RunRecord['file'] = { mime: 'application/pdf', kind: 'pdf', sizeBytes: 100_000, pages: 1 };
    const task = runItem().task;
    const plan = chainedPlan(file, task, ['openai', 'textract', 'local']);
    expect(plan).toEqual(expect.objectContaining({ ocr: ['textract', 'local'], analyze: ['openai', 'local'] }));
    const hold = priceFor(plan?.costMicros ?? 0);
    arrangeChain('scanned.pdf', { file, estimateMicros: hold });
    const textractCost = catalog.textract?.stepCostMicros(file, task, 'ocr') ?? Number.NaN;
    // The reading costs what was predicted, the analysis 50 % more: over the estimate, within twice it.
    const analysis = Math.ceil((predictAttempt('openai', file, task, 'analyze')?.costMicros ?? Number.NaN) * 1.5);
    const textract = succeeding('textract', read('ACME TOTAL 1', textractCost));
    const openai = succeeding('openai', {
      result: { merchant: 'ACME', total: 1 },
      usage: { billableUnits: 1, costMicros: analysis, inputTokens: 1, outputTokens: 1 },
    });
    await deliver({ textract, openai });
    const { values } = theSettlement();
    expect(values[':status']).toBe('completed');
    expect(values[':charged']).toBe(Math.min(hold, priceFor(textractCost + analysis)));
    expect(values[':charged'] + values[':refunded']).toBe(hold);
    expect(values[':absorbed']).toBe(Math.max(0, priceFor(textractCost + analysis) - hold));
  });

  test('a reading with no text is a failed OCR attempt: the next engine reads, and its text is analyzed', async () => {
    arrangeChain('scanned.pdf');
    const local = succeeding('local', read('ACME TOTAL 1', 260, 0.7));
    const openai = succeeding('openai', { result: { merchant: 'ACME', total: 1 } });
    await deliver({ textract: succeeding('textract', read('  \n ', 1500)), local, openai });
    expect(openai.calls[0]?.input.documentText).toBe('ACME TOTAL 1');
    const { values } = theSettlement();
    expect(values[':attempts'][0]).toEqual(
      expect.objectContaining({ provider: 'textract', step: 'ocr', outcome: 'failed', failure: 'invalid_output' }),
    );
    // The blank reading was billed: it counts in the run's cost.
    expect(values[':usage'].costMicros).toBe(1500 + 260 + 80);
  });

  test('when no engine reads any text the run fails with nothing to analyze, nothing charged', async () => {
    arrangeChain('scanned.pdf');
    const openai = succeeding('openai');
    await deliver({
      textract: succeeding('textract', read('', 1500)),
      local: succeeding('local', read('', 260)),
      openai,
    });
    expect(openai.calls).toHaveLength(0);
    const { values } = theSettlement();
    expect(values[':status']).toBe('failed');
    expect(values[':error'].details.attempts).toEqual([
      { provider: 'textract', step: 'ocr', outcome: 'failed', failure: 'invalid_output' },
      { provider: 'local', step: 'ocr', outcome: 'failed', failure: 'invalid_output' },
    ]);
    expect(values[':charged']).toBe(0);
  });

  test('the analyze step counts what the OCR step spent against the cap', async () => {
    // The cap leaves OpenAI's analysis room on its own but not after Textract's reading: it must be skipped.
    const file: RunRecord['file'] = { mime: 'application/pdf', kind: 'pdf', sizeBytes: 100_000, pages: 1 };
    const task = runItem().task;
    // A page of text read (~500 tokens): each analysis is predicted for the text it is given.
    const page = 'ACME HARDWARE TOTAL 42.50 '.repeat(77);
    const predicted = (id: ProviderId) =>
      predictAttempt(id, file, task, 'analyze', undefined, { documentTextChars: page.length })?.costMicros ??
      Number.NaN;
    const textractCost = catalog.textract?.stepCostMicros(file, task, 'ocr') ?? Number.NaN;
    expect(predicted('anthropic')).toBeLessThan(predicted('openai') - 1);
    arrangeChain('scanned.pdf', {
      file,
      // The spend limit (2 x the estimate) leaves room for OpenAI's analysis alone, not after Textract's reading.
      estimateMicros: Math.floor((priceFor(textractCost + predicted('openai')) - 1) / 2),
      ocrCandidates: ['textract'],
      candidates: ['anthropic', 'openai', 'local'],
    });
    const openai = succeeding('openai');
    const local = succeeding('local', { result: { merchant: 'ACME', total: 1 } });
    await deliver({
      textract: succeeding('textract', read(page, textractCost)),
      anthropic: failing('anthropic', 'server'),
      openai,
      local,
    });
    expect(openai.calls).toHaveLength(0);
    const { values } = theSettlement();
    expect(values[':attempts'].map((a: { provider: string; outcome: string }) => `${a.provider}:${a.outcome}`)).toEqual(
      ['textract:succeeded', 'anthropic:failed', 'openai:skipped', 'local:succeeded'],
    );
  });

  test('every OCR engine failing fails the run (PROVIDER_ERROR) without calling the analyzers; nothing is charged', async () => {
    arrangeChain('scanned.pdf');
    const openai = succeeding('openai');
    await deliver({
      textract: failing('textract', 'timeout', { billableUnits: 1, costMicros: 1500 }),
      local: failing('local', 'server'),
      openai,
    });
    expect(openai.calls).toHaveLength(0);
    const { values } = theSettlement();
    expect(values[':status']).toBe('failed');
    expect(values[':error'].code).toBe('PROVIDER_ERROR');
    expect(values[':usage'].costMicros).toBe(1500);
    expect(values[':charged']).toBe(0);
    expect(values[':refunded']).toBe(BIG_HOLD);
  });

  test('every analyzer failing after a successful OCR also fails the run, and charges nothing for the reading', async () => {
    arrangeChain('scanned.pdf');
    await deliver({
      textract: succeeding('textract', read('ACME', 1500)),
      openai: failing('openai', 'invalid_output', { billableUnits: 1, costMicros: 400 }),
      local: failing('local', 'server'),
    });
    const { values } = theSettlement();
    expect(values[':status']).toBe('failed');
    expect(values[':attempts'].map((a: { step: string; outcome: string }) => `${a.step}:${a.outcome}`)).toEqual([
      'ocr:succeeded',
      'analyze:failed',
      'analyze:failed',
    ]);
    expect(values[':usage'].costMicros).toBe(1900);
    expect(values[':charged']).toBe(0);
  });
});

describe('a result too large for the run item', () => {
  /** The settlement's RunResults puts, after checking the run item records their count and holds no result. */
  function storedParts() {
    const items = settlements()[0]?.TransactItems ?? [];
    const run = items[0]?.Update;
    expect(run?.ExpressionAttributeValues?.[':result']).toBeUndefined();
    expect(run?.UpdateExpression).toContain('resultParts = :parts');
    const puts = items.slice(3).flatMap((i) => (i.Put?.TableName === tableName('runResults') ? [i.Put] : []));
    expect(run?.ExpressionAttributeValues?.[':parts']).toBe(puts.length);
    return puts;
  }

  test('is written in parts in the settlement transaction; the run item records how many', async () => {
    arrange(runItem({ task: { ...runItem().task, outputFormat: 'text', fields: null } }));
    // ~1 MB: the transcription of a dense 200-page PDF (5 KB a page), with characters of 2, 3 and 4 UTF-8 bytes.
    const text = `${'Lorem ipsum dolor sit amet, ünïcödé 東京 😀.\n'.repeat(21_000)}`;
    await deliver({ local: succeeding('local', { result: { text } }) });
    const puts = storedParts();
    const bytes = Buffer.byteLength(JSON.stringify({ text }));
    expect(bytes).toBeGreaterThan(1_000_000);
    // Parts of up to 350 KB of UTF-8 (they used to be 100,000 characters each, and 10 at most: ~1 MB in all).
    expect(puts.length).toBe(Math.ceil(bytes / (350 * 1024)));
    for (const [part, put] of puts.entries()) {
      expect(put?.TableName).toBe(tableName('runResults'));
      // Parts outlive their run: each table's TTL deletes on its own schedule, and a run must not outlive its result.
      expect(put?.Item).toEqual(
        expect.objectContaining({ jobId: 'run_1', part, expiresAtEpoch: runItem().expiresAtEpoch + 30 * 86400 }),
      );
      // Under DynamoDB's 400 KB item, counted in UTF-8 bytes, and never cut inside a character.
      expect(Buffer.byteLength(String(put?.Item?.data))).toBeLessThanOrEqual(350 * 1024);
      expect(String(put?.Item?.data)).not.toContain('\uFFFD');
    }
    expect(JSON.parse(puts.map((p) => p?.Item?.data).join(''))).toEqual({ pages: [{ page: 1, text }] });
  });

  test('a result DynamoDB cannot hold as a map (a number beyond 2^53, nesting past 16 levels) goes in parts, as JSON', async () => {
    const open = { task: { ...runItem().task, fields: null } };
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 20; i++) deep = { deep };
    for (const result of [{ account: Number('89370400440532013000') }, { tiny: 1e-200 }, deep]) {
      ddb.reset();
      arrange(runItem(open));
      await deliver({ local: succeeding('local', { result }) });
      const puts = storedParts();
      expect(puts).toHaveLength(1);
      // A json run's parts hold its result and the fields grounded on it (store/run-results.ts).
      const stored = JSON.parse(String(puts[0]?.Item?.data));
      expect(stored.result).toEqual(result);
      expect(Object.keys(stored.fields)).toEqual(Object.keys(result));
    }
  });

  test('a run item that already holds a large inline schema keeps a smaller result off it', async () => {
    const description = 'd'.repeat(240 * 1024);
    const fields = [{ name: 'notes', type: 'string' as const, required: false, description }];
    arrange(runItem({ task: { ...runItem().task, fields } }));
    // 100 KB would fit the 200 KB inline limit, but not in the ~80 KB this item has left (400 KB - 240 KB - the
    // room a later verification needs).
    await deliver({ local: succeeding('local', { result: { notes: 'n'.repeat(100 * 1024) } }) });
    expect(storedParts()).toHaveLength(1);
  });

  test('a result under the inline limit in JSON but over it as DynamoDB counts (lists of small numbers) goes in parts', async () => {
    // 30,000 single-digit pairs: `[1,2],` is 6 JSON bytes and 10 stored (element, list, two numbers), so ~180 KB of
    // JSON is ~300 KB in the item; with the rest of the item and a later verification it would pass 400 KB.
    const result = { cells: Array.from({ length: 30_000 }, (_, i) => [i % 10, (i + 1) % 10]) };
    expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThan(200 * 1024);
    expect(storedBytes(result)).toBeGreaterThan(290 * 1024);
    arrange(runItem({ task: { ...runItem().task, fields: null } }));
    await deliver({ local: succeeding('local', { result }) });
    const puts = storedParts();
    expect(JSON.parse(puts.map((p) => p?.Item?.data).join('')).result).toEqual(result);
  });

  test('storedBytes counts as DynamoDB documents it', () => {
    expect(storedBytes('héllo')).toBe(6);
    expect(storedBytes(null)).toBe(1);
    expect(storedBytes(true)).toBe(1);
    // Digit pairs aligned on the decimal point, plus 1, plus 1 when negative; leading and trailing zeros do not count.
    expect(storedBytes(7)).toBe(2);
    expect(storedBytes(12_345)).toBe(4);
    expect(storedBytes(1000)).toBe(2);
    expect(storedBytes(1.5)).toBe(3);
    expect(storedBytes(-1)).toBe(3);
    expect(storedBytes(-0.0025)).toBe(3);
    expect(storedBytes(0)).toBe(2);
    // A list or map: 3 bytes, plus 1 per element, plus the elements (and a map's keys).
    expect(storedBytes([])).toBe(3);
    expect(storedBytes([1, 2])).toBe(3 + 2 * (1 + 2));
    expect(storedBytes({ ab: 'xyz', skipped: undefined })).toBe(3 + 1 + 2 + 3);
  });

  test('a small result stays on the run item, with no parts', async () => {
    arrange(runItem());
    await deliver({ local: succeeding('local', { result: { merchant: 'ACME', total: 1 } }) });
    const { values } = theSettlement();
    expect(values[':result']).toEqual({ merchant: 'ACME', total: 1 });
    expect(values[':parts']).toBeUndefined();
  });

  test('over 3 MB it fails the run cleanly (nothing charged, no redelivery) instead of a write DynamoDB refuses', async () => {
    arrange(runItem({ task: { ...runItem().task, outputFormat: 'text', fields: null } }));
    const response = await deliver({ local: succeeding('local', { result: { text: 'x'.repeat(3_200_000) } }) });
    expect(response.batchItemFailures).toEqual([]);
    const { values } = theSettlement();
    expect(values[':status']).toBe('failed');
    expect(values[':error']).toEqual(expect.objectContaining({ code: 'INTERNAL_ERROR' }));
    expect(values[':charged']).toBe(0);
  });
});
