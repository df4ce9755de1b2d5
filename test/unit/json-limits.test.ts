/**
 * JSON a client may send: bodies nested past any sane depth, `__proto__` keys, and values DynamoDB cannot store as
 * sent (run metadata, verify corrections) are 400 INVALID_REQUEST before any AWS call — they used to pass validation
 * and fail the write (a 500, retryable, for a request that can never succeed) or overflow the stack.
 */
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { handler as createRun } from '../../functions/create-run.js';
import { handler as verifyRun } from '../../functions/verify-run.js';
import { BODY_MAX_DEPTH, jsonProblem, STORED_MAX_DEPTH } from '../../shared/json-limits.js';
import { call, expectError } from '../support/api.js';

const ddb = mockClient(DynamoDBDocumentClient);
beforeEach(() => ddb.reset());

const nested = (levels: number, leaf: unknown = 1): unknown => {
  let value = leaf;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
};

function create(body: Record<string, unknown>) {
  return call(createRun, {
    method: 'POST',
    path: '/v1/runs',
    body: { uploadId: 'upl_1', prompt: 'Extract', confirmCost: true, ...body },
    auth: { tenantId: 'tenant-a' },
  });
}

function verify(body: unknown) {
  return call(verifyRun, {
    method: 'POST',
    path: '/v1/runs/run_1/verify',
    pathParameters: { jobId: 'run_1' },
    body,
    auth: { tenantId: 'tenant-a', keyId: 'key_qa' },
  });
}

describe('run metadata that DynamoDB could not store', () => {
  test.each([
    ['a number above 2^53 - 1', { n: 1e300 }, 'n'],
    ['an integer with 42 digits', { n: Number('123456789012345678901234567890123456789012') }, 'n'],
    ['a number below 1e-130 in magnitude', { n: -1e-200 }, 'n'],
    [`JSON nested deeper than ${STORED_MAX_DEPTH} levels`, { deep: nested(STORED_MAX_DEPTH) }, 'deep'],
  ])('%s answers 400 INVALID_REQUEST naming the value, without touching AWS', async (_what, metadata, key) => {
    const error = expectError(await create({ metadata }), 'INVALID_REQUEST');
    expect(error.details.issues).toEqual([
      expect.objectContaining({ path: expect.stringMatching(`^metadata\\.${key}`) }),
    ]);
    expect(ddb.calls()).toHaveLength(0);
  });

  test('the largest values it can store pass validation (and reach the store)', async () => {
    ddb.on(GetCommand).resolves({});
    const answer = await create({
      metadata: { max: Number.MAX_SAFE_INTEGER, small: 1e-130, zero: 0, deep: nested(STORED_MAX_DEPTH - 1) },
    });
    // Past validation: the upload lookup is the next step (no upload stored here: 404).
    expectError(answer, 'UPLOAD_NOT_FOUND');
  });

  test('a "__proto__" key is refused, not silently dropped', async () => {
    const answer = await call(createRun, {
      method: 'POST',
      path: '/v1/runs',
      rawBody: '{"uploadId":"upl_1","prompt":"p","metadata":{"__proto__":{"x":1}}}',
      headers: { 'content-type': 'application/json' },
      auth: { tenantId: 'tenant-a' },
    });
    const error = expectError(answer, 'INVALID_REQUEST');
    expect(error.details.issues).toEqual([
      { path: 'metadata.__proto__', message: 'the key "__proto__" is not allowed' },
    ]);
  });

  test('two expected fields of one name are refused (they would be one key of the result)', async () => {
    const error = expectError(
      await create({ schema: { label: 'L', expectedFields: ['total', { name: 'date' }, { name: 'total' }] } }),
      'INVALID_REQUEST',
    );
    expect(error.details.issues).toEqual([
      expect.objectContaining({ path: 'schema.expectedFields.2', message: 'duplicate field name "total"' }),
    ]);
  });
});

test('an expected field named "__proto__" is refused (it would vanish from the result)', async () => {
  const error = expectError(
    await create({ schema: { label: 'L', expectedFields: ['total', '__proto__'] } }),
    'INVALID_REQUEST',
  );
  expect(error.details.issues).toEqual([
    expect.objectContaining({ path: 'schema.expectedFields.1', message: 'the field name "__proto__" is not allowed' }),
  ]);
});

test('verify corrections over 64 KiB serialized are refused before the run item could outgrow DynamoDB', async () => {
  const error = expectError(
    await verify({ accepted: false, corrections: { text: 'x'.repeat(70_000) } }),
    'INVALID_REQUEST',
  );
  expect(error.details.issues).toEqual([expect.objectContaining({ path: 'corrections' })]);
  expect(ddb.calls()).toHaveLength(0);
});

describe('any request body', () => {
  test('a body nested 100,000 levels deep is a 400, not a stack overflow', async () => {
    const rawBody = `{"uploadId":"upl_1","prompt":"p","metadata":{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}}`;
    const answer = await call(createRun, {
      method: 'POST',
      path: '/v1/runs',
      rawBody,
      headers: { 'content-type': 'application/json' },
      auth: { tenantId: 'tenant-a' },
    });
    const error = expectError(answer, 'INVALID_REQUEST');
    expect(error.details.issues[0].message).toBe(`JSON may nest at most ${BODY_MAX_DEPTH} levels`);
  });

  test('verify corrections follow the same storage rules', async () => {
    expectError(await verify({ accepted: false, corrections: { total: 1e300 } }), 'INVALID_REQUEST');
    expectError(await verify({ accepted: false, corrections: { a: nested(40) } }), 'INVALID_REQUEST');
    expect(ddb.calls()).toHaveLength(0);
  });
});

describe('jsonProblem', () => {
  test('counts the root container as level 1 and reports the path of the first problem', () => {
    expect(jsonProblem(nested(3), { maxDepth: 3 })).toBeUndefined();
    expect(jsonProblem(nested(4), { maxDepth: 3 })).toEqual({
      path: [0, 0, 0],
      message: 'JSON may nest at most 3 levels',
    });
    expect(jsonProblem({ a: [1, { b: 2 ** 53 }] }, { maxDepth: 9, numbers: true })?.path).toEqual(['a', 1, 'b']);
    // Numbers are only checked where they will be stored.
    expect(jsonProblem({ a: 1e300 }, { maxDepth: 9 })).toBeUndefined();
  });
});
