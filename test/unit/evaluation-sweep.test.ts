/**
 * The sweep of an evaluation whose runs cannot be written (shared/evaluations/sweep.ts, materialize.ts): it tries
 * again a bounded number of times, then fails each run it still cannot write, refunding that run's share in the
 * settlement's own shape (a ledger entry `{jobId}#settle` that can be written once), so the hold is never kept for
 * ever. The same transaction sent twice (a retried sweep) is refused by its condition: nothing is refunded twice.
 */

import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { sweepEvaluations } from '../../shared/evaluations/sweep.js';
import { evaluationSettings } from '../../shared/infra/resources.js';
import type { EvaluationItemRecord, EvaluationRecord } from '../../shared/store/evaluations.js';
import { tableName, transactionCancelled } from '../support/aws.js';

const ddb = mockClient(DynamoDBDocumentClient);
const sqs = mockClient(SQSClient);

const CREATED = '2026-11-25T11:00:00.000Z';
const NOW = new Date('2026-11-25T12:00:00.000Z');
const EVALUATION_ID = `eval_${'a'.repeat(32)}`;
const SHARE = 1_300;

const evaluation: EvaluationRecord = {
  evaluationId: EVALUATION_ID,
  tenantId: 'tenant-a',
  name: 'stuck',
  status: 'queued',
  schemaId: 'receipt',
  task: {
    prompt: 'p',
    outputFormat: 'json',
    fields: [{ name: 'total', type: 'number', required: true }],
    schemaId: 'receipt',
    schemaLabel: 'Receipt',
    promptScaffold: null,
  },
  providers: null,
  workflow: null,
  metadata: {},
  documents: 2,
  itemsTotal: 2,
  itemsDone: 0,
  estimateMicros: 2 * SHARE,
  maxCostMicros: null,
  chargedMicros: 0,
  refundedMicros: 0,
  holdFromCredit: true,
  marginPct: 0,
  createdAt: CREATED,
  openShard: 'o0',
  expiresAtEpoch: 2_000_000_000,
};

const item = (n: number): EvaluationItemRecord => ({
  evaluationId: EVALUATION_ID,
  n,
  index: n,
  jobId: `run_${String(n).repeat(32)}`,
  provider: null,
  expected: { total: 42.5 },
  plan: {
    uploadId: `upl_${n}`,
    objectKey: `uploads/tenant-a/upl_${n}`,
    file: { kind: 'image', mimeType: 'image/png', sizeBytes: 1000, pages: 1, width: 100, height: 100 } as never,
    strategy: 'single-pass' as never,
    candidates: ['local'],
    estimateMicros: SHARE,
  },
  expiresAtEpoch: 2_000_000_000,
});

/** The open index lists the evaluation in shard o0; its items read back; the sweep has tried `tries` times before. */
function arrange(tries: number, putError: Error): void {
  ddb
    .on(QueryCommand)
    .callsFake(
      (input: { TableName?: string; IndexName?: string; ExpressionAttributeValues?: Record<string, unknown> }) => {
        if (input.IndexName === 'open')
          return {
            Items: input.ExpressionAttributeValues?.[':shard'] === 'o0' ? [{ evaluationId: EVALUATION_ID }] : [],
          };
        return { Items: [item(0), item(1)] };
      },
    );
  ddb.on(GetCommand).resolves({ Item: evaluation });
  ddb
    .on(UpdateCommand, { UpdateExpression: 'ADD materializeTries :one' })
    .resolves({ Attributes: { materializeTries: tries + 1 } });
  ddb.on(UpdateCommand, { UpdateExpression: 'SET materializedAt = :now' }).resolves({});
  ddb.on(PutCommand).rejects(putError);
  ddb.on(TransactWriteCommand).resolves({});
  sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
}

const transactions = () => ddb.commandCalls(TransactWriteCommand).map((c) => c.args[0].input.TransactItems ?? []);
const serviceError = (name: string) => Object.assign(new Error(name), { name, $metadata: {} });

beforeEach(() => {
  ddb.reset();
  sqs.reset();
});

test('a run that fails to write for a passing cause is tried again, and nothing is refunded before the last try', async () => {
  arrange(0, serviceError('InternalServerError'));
  const report = await sweepEvaluations({ afterSeconds: 120, now: NOW });
  expect(report.materialized).toEqual([]);
  expect(transactions()).toEqual([]);
  // Not marked written: the next sweep tries again.
  expect(ddb.commandCalls(UpdateCommand, { UpdateExpression: 'SET materializedAt = :now' })).toHaveLength(0);
});

test('at the last try each run still unwritten is failed and its share refunded, once per run', async () => {
  arrange(evaluationSettings.materializeTries - 1, serviceError('InternalServerError'));
  const report = await sweepEvaluations({ afterSeconds: 120, now: NOW });
  expect(report.materialized).toEqual([EVALUATION_ID]);
  const sent = transactions();
  expect(sent).toHaveLength(2);
  for (const [i, items] of sent.entries()) {
    const jobId = item(i).jobId;
    const ledger = items.find((t) => t.Put?.TableName === tableName('ledger'))?.Put?.Item;
    expect(ledger).toMatchObject({
      entryId: `${jobId}#settle`,
      kind: 'settle',
      outcome: 'failed',
      chargedMicros: 0,
      refundedMicros: SHARE,
    });
    expect(items.find((t) => t.Put?.TableName === tableName('ledger'))?.Put?.ConditionExpression).toBe(
      'attribute_not_exists(entryId)',
    );
    // The run must not exist; the tenant gets its share back (its credit too: the hold came from it).
    expect(items.find((t) => t.ConditionCheck)?.ConditionCheck).toMatchObject({
      TableName: tableName('runs'),
      Key: { jobId },
    });
    const tenant = items.find((t) => t.Update?.TableName === tableName('tenants'))?.Update;
    expect(tenant?.UpdateExpression).toContain('availableMicros :share');
    expect(tenant?.ExpressionAttributeValues).toEqual({ ':negShare': -SHARE, ':share': SHARE });
    // The item is failed and the evaluation counts it done, with its share refunded.
    const evaluationMove = items.find((t) => t.Update?.TableName === tableName('evaluations'))?.Update;
    expect(evaluationMove?.ExpressionAttributeValues).toMatchObject({ ':one': 1, ':charged': 0, ':refunded': SHARE });
    const scored = items.find((t) => t.Update?.TableName === tableName('evaluationItems'))?.Update;
    expect(scored?.ExpressionAttributeValues?.[':status']).toBe('failed');
  }
  expect(ddb.commandCalls(UpdateCommand, { UpdateExpression: 'SET materializedAt = :now' })).toHaveLength(1);
});

test('a run DynamoDB refuses outright is failed at the first try', async () => {
  arrange(0, serviceError('ValidationException'));
  await sweepEvaluations({ afterSeconds: 120, now: NOW });
  expect(transactions()).toHaveLength(2);
});

test('a retried sweep whose refund was already booked refunds nothing more and still finishes', async () => {
  arrange(evaluationSettings.materializeTries, serviceError('ValidationException'));
  ddb
    .on(TransactWriteCommand)
    .rejects(transactionCancelled(['ConditionalCheckFailed', 'None', 'ConditionalCheckFailed']));
  const report = await sweepEvaluations({ afterSeconds: 120, now: NOW });
  expect(report.materialized).toEqual([EVALUATION_ID]);
  expect(ddb.commandCalls(UpdateCommand, { UpdateExpression: 'SET materializedAt = :now' })).toHaveLength(1);
});
