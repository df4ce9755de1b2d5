/** GET /v1/runs/{jobId}: 200 in every state, tenant-scoped, money in dollars, 404 that never reveals existence. */
import { DynamoDBDocumentClient, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { handler } from '../../functions/get-run.js';
import { call, expectContractHeaders, expectError } from '../support/api.js';
import { completedRunItem, failedRunItem, runItem, tableName } from '../support/aws.js';

const ddb = mockClient(DynamoDBDocumentClient);

beforeEach(() => {
  ddb.reset();
});

function getRun(jobId: string, tenantId = 'tenant-a') {
  return call(handler, { path: `/v1/runs/${jobId}`, pathParameters: { jobId }, auth: { tenantId } });
}

const creationFields = {
  jobId: 'run_1',
  uploadId: 'upl_1',
  prompt: 'Extract the receipt',
  outputFormat: 'json',
  schemaId: 'receipt',
  estimatedCostUsd: 0.00013,
  metadata: {},
  workflow: null,
  createdAt: '2026-11-01T10:00:00.000Z',
  // Runs stored before the file name was recorded answer name null.
  file: { name: null, type: 'image/png', sizeBytes: 13775, pages: 1, width: 800, height: 834 },
};

describe('not found', () => {
  test('an unknown jobId answers 404 NOT_FOUND', async () => {
    ddb.on(GetCommand).resolves({});
    const answer = await getRun('run_nope');
    expectError(answer, 'NOT_FOUND');
    expect(ddb).toHaveReceivedCommandWith(GetCommand, { TableName: tableName('runs'), Key: { jobId: 'run_nope' } });
  });

  test("another tenant's run answers exactly like an unknown one", async () => {
    ddb.on(GetCommand).resolves({ Item: completedRunItem({ jobId: 'run_x', tenantId: 'tenant-b' }) });
    const theirs = await getRun('run_x', 'tenant-a');
    ddb.on(GetCommand).resolves({});
    const unknown = await getRun('run_x', 'tenant-a');
    expectError(theirs, 'NOT_FOUND');
    const { requestId: _a, ...theirsError } = theirs.body.error;
    const { requestId: _b, ...unknownError } = unknown.body.error;
    expect(theirsError).toEqual(unknownError);
    expect(JSON.stringify(theirs.body)).not.toContain('tenant-b');
    expect(JSON.stringify(theirs.body)).not.toContain('ACME');
  });

  test('a run past its retention answers 404 before DynamoDB gets round to deleting it (and its result parts)', async () => {
    const expiresAtEpoch = Math.floor(Date.now() / 1000) - 1;
    ddb.on(GetCommand).resolves({ Item: completedRunItem({ expiresAtEpoch, resultParts: 2 }) });
    expectError(await getRun('run_1'), 'NOT_FOUND');
    // Its parts are not even read (they may already be gone).
    expect(ddb).not.toHaveReceivedCommand(QueryCommand);
  });

  test('the owner sees the same run', async () => {
    ddb.on(GetCommand).resolves({ Item: completedRunItem({ jobId: 'run_x', tenantId: 'tenant-b' }) });
    const answer = await getRun('run_x', 'tenant-b');
    expect(answer.status).toBe(200);
    expect(answer.body.jobId).toBe('run_x');
  });
});

describe('a queued run', () => {
  test('answers 200 with the creation fields and the progress stage', async () => {
    ddb
      .on(GetCommand)
      .resolves({ Item: runItem({ metadata: { ref: 'A-1' }, workflow: 'expenses', estimateMicros: 130 }) });
    const answer = await getRun('run_1');
    expect(answer.status).toBe(200);
    expectContractHeaders(answer);
    expect(answer.body).toEqual({
      ...creationFields,
      metadata: { ref: 'A-1' },
      workflow: 'expenses',
      status: 'queued',
      stage: 'waiting',
    });
  });

  test('a run a worker is on still reads queued, with stage processing', async () => {
    ddb.on(GetCommand).resolves({ Item: runItem({ stage: 'processing' }) });
    const answer = await getRun('run_1');
    expect(answer.body.status).toBe('queued');
    expect(answer.body.stage).toBe('processing');
  });

  test('internal fields (tenant, object key, hold flags, task) are not exposed', async () => {
    ddb.on(GetCommand).resolves({ Item: runItem() });
    const answer = await getRun('run_1');
    for (const key of ['tenantId', 'objectKey', 'holdFromCredit', 'task', 'candidates', 'estimateMicros', 'fileName']) {
      expect(answer.body).not.toHaveProperty(key);
    }
    expect(Object.keys(answer.body.file).sort()).toEqual(['height', 'name', 'pages', 'sizeBytes', 'type', 'width']);
  });

  test('the file name given at presign is shown', async () => {
    ddb.on(GetCommand).resolves({ Item: runItem({ fileName: 'till-slip.png' }) });
    const answer = await getRun('run_1');
    expect(answer.body.file.name).toBe('till-slip.png');
  });
});

describe('a completed run', () => {
  test('answers 200 with the result envelope: protocolVersion, requests, result, usage in dollars, charge and refund', async () => {
    ddb.on(GetCommand).resolves({ Item: completedRunItem({ metadata: { ref: 'A-1' } }) });
    const answer = await getRun('run_1');
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      ...creationFields,
      metadata: { ref: 'A-1' },
      status: 'completed',
      protocolVersion: '0.1.0',
      requests: 1,
      result: { merchant: 'ACME HARDWARE', total: 42.5 },
      usage: { requests: 1, billableUnits: 1, costUsd: 0.00008, priceUsd: 0.000104 },
      chargedUsd: 0.000104,
      refundedUsd: 0.000026,
      confidence: 0.9,
      strategy: 'ocr_then_analyze',
      attempts: [{ provider: 'local', step: 'ocr', outcome: 'succeeded', latencyMs: 1200 }],
      completedAt: '2026-11-01T10:00:05.000Z',
      // The schema's fields as the run used them: what a review's corrections must name and be.
      expectedFields: [
        { name: 'merchant', type: 'string', required: true },
        { name: 'total', type: 'number', required: true },
      ],
    });
  });

  test('charged + refunded equals the estimate', async () => {
    ddb.on(GetCommand).resolves({ Item: completedRunItem() });
    const { body } = await getRun('run_1');
    expect(Math.round((body.chargedUsd + body.refundedUsd) * 1e6)).toBe(Math.round(body.estimatedCostUsd * 1e6));
  });

  test('a verified run shows its current verification', async () => {
    const verification = {
      accepted: false,
      corrections: { total: 43 },
      note: 'total misread',
      verifiedAt: '2026-11-02T09:00:00.000Z',
      verifiedBy: 'key_a',
    };
    ddb.on(GetCommand).resolves({ Item: completedRunItem({ verification }) });
    const answer = await getRun('run_1');
    expect(answer.body.verification).toEqual(verification);
    expect(answer.body.status).toBe('completed');
  });
});

describe('a failed run', () => {
  test('answers 200 with the error object, nothing charged and the whole hold refunded', async () => {
    ddb.on(GetCommand).resolves({ Item: failedRunItem() });
    const answer = await getRun('run_1');
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      ...creationFields,
      status: 'failed',
      error: {
        code: 'PROVIDER_ERROR',
        message: 'Every candidate provider in the plan failed',
        status: 502,
        retryable: true,
      },
      chargedUsd: 0,
      refundedUsd: 0.00013,
      attempts: [{ provider: 'local', step: 'ocr', outcome: 'failed', latencyMs: 30, failure: 'server' }],
      completedAt: '2026-11-01T10:00:05.000Z',
    });
    expect(answer.body).not.toHaveProperty('result');
  });

  test("its error carries the contract's requestId: the id of the request that created the run", async () => {
    ddb.on(GetCommand).resolves({ Item: { ...failedRunItem(), requestId: 'req-create-1' } });
    const answer = await getRun('run_1');
    expect(answer.body.error).toEqual(expect.objectContaining({ code: 'PROVIDER_ERROR', requestId: 'req-create-1' }));
  });
});

describe('ids that cannot be ours', () => {
  test('a jobId longer than any we issue (or with other characters) is 404 without a read, not a DynamoDB error', async () => {
    ddb.on(GetCommand).rejects(new Error('Hash primary key values must be under 2048 bytes'));
    for (const jobId of ['x'.repeat(3000), 'run 1', 'run_1/../x']) {
      expectError(await getRun(jobId), 'NOT_FOUND');
    }
    expect(ddb).toHaveReceivedCommandTimes(GetCommand, 0);
  });
});

describe('a result stored in parts (too large for the run item)', () => {
  test('is read back whole, in part order, across query pages', async () => {
    const text = 'é'.repeat(150_000);
    const json = JSON.stringify({ text });
    const { result: _inline, ...stored } = completedRunItem();
    ddb.on(GetCommand).resolves({ Item: { ...stored, resultParts: 3 } });
    const part = (n: number, data: string) => ({ jobId: 'run_1', part: n, data });
    // Pages as DynamoDB may return them; the parts are put back in order whatever the order read.
    ddb
      .on(QueryCommand)
      .resolvesOnce({ Items: [part(2, json.slice(200_000))], LastEvaluatedKey: { jobId: 'run_1', part: 2 } })
      .resolvesOnce({ Items: [part(0, json.slice(0, 100_000)), part(1, json.slice(100_000, 200_000))] });
    const answer = await getRun('run_1');
    expect(answer.status).toBe(200);
    expect(answer.body.result).toEqual({ text });
    expect(answer.body).not.toHaveProperty('resultParts');
    const queries = ddb.commandCalls(QueryCommand).map((c) => c.args[0].input);
    expect(queries[0]).toEqual(expect.objectContaining({ TableName: tableName('runResults'), ConsistentRead: true }));
    expect(queries[1]?.ExclusiveStartKey).toEqual({ jobId: 'run_1', part: 2 });
  });

  test('a missing part is an error, never a truncated result', async () => {
    const { result: _inline, ...stored } = completedRunItem();
    ddb.on(GetCommand).resolves({ Item: { ...stored, resultParts: 2 } });
    ddb.on(QueryCommand).resolves({ Items: [{ jobId: 'run_1', part: 0, data: '{"text":"' }] });
    expectError(await getRun('run_1'), 'INTERNAL_ERROR');
  });
});
