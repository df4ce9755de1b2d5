/**
 * The HTTP layer every API handler shares (shared/http.ts), driven through real handlers: content type, JSON parsing,
 * strict bodies, body size, authentication and scopes, error mapping and the headers on every answer.
 */
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { handler as createRun } from '../../functions/create-run.js';
import { handler as getRun } from '../../functions/get-run.js';
import { handler as presign } from '../../functions/presign.js';
import { handler as verifyRun } from '../../functions/verify-run.js';
import { call, callEvent, expectContractHeaders, expectError } from '../support/api.js';
import { apiEvent } from '../support/events.js';
import { useFakeS3 } from '../support/fake-s3.js';

const ddb = mockClient(DynamoDBDocumentClient);
const s3 = useFakeS3();
const sqs = mockClient(SQSClient);

beforeEach(() => {
  ddb.reset();
  sqs.reset();
  ddb.on(PutCommand).resolves({});
});

const presignBody = { fileName: 'receipt.png', contentLength: 1234 };

describe('request content type', () => {
  test('a POST whose content-type is not JSON is refused with 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    const answer = await call(presign, {
      method: 'POST',
      rawBody: JSON.stringify(presignBody),
      headers: { 'Content-Type': 'text/plain' },
    });
    const error = expectError(answer, 'UNSUPPORTED_MEDIA_TYPE');
    expect(error.details).toEqual({ received: 'text/plain' });
    expect(ddb).not.toHaveReceivedAnyCommand();
  });

  test('a POST without any content-type is refused with 415', async () => {
    const event = { method: 'POST' as const, rawBody: JSON.stringify(presignBody) };
    // apiEvent adds Content-Type for a body; blank it out the way a client that sends none would.
    const answer = await call(presign, { ...event, headers: { 'Content-Type': '' } });
    expectError(answer, 'UNSUPPORTED_MEDIA_TYPE');
  });

  test('application/json with parameters (charset=utf-8), in any letter case, is accepted', async () => {
    const answer = await call(presign, {
      method: 'POST',
      body: presignBody,
      headers: { 'content-type': 'Application/JSON; charset=utf-8' },
    });
    expect(answer.status).toBe(200);
    expect(answer.body.uploadId).toMatch(/^upl_/);
  });

  test('a look-alike media type such as application/jsonx is refused', async () => {
    const answer = await call(presign, {
      method: 'POST',
      body: presignBody,
      headers: { 'Content-Type': 'application/jsonx' },
    });
    expectError(answer, 'UNSUPPORTED_MEDIA_TYPE');
  });
});

describe('request body', () => {
  test('malformed JSON answers 400 INVALID_REQUEST and writes nothing', async () => {
    const answer = await call(presign, { method: 'POST', rawBody: '{"fileName": "a.png",' });
    const error = expectError(answer, 'INVALID_REQUEST');
    expect(error.details.issues).toEqual([{ path: '(root)', message: expect.stringMatching(/JSON/i) }]);
    expect(ddb).not.toHaveReceivedAnyCommand();
  });

  test('an unknown field is rejected with 400 and details.issues names it', async () => {
    const answer = await call(presign, {
      method: 'POST',
      body: { fileName: 'a.png', contentLength: 10, contentLenght: 10 },
    });
    const error = expectError(answer, 'INVALID_REQUEST');
    expect(Array.isArray(error.details.issues)).toBe(true);
    expect(JSON.stringify(error.details.issues)).toContain('contentLenght');
    expect(ddb).not.toHaveReceivedAnyCommand();
  });

  test('a missing required field is named in details.issues with its path', async () => {
    const answer = await call(presign, { method: 'POST', body: { fileName: 'a.png' } });
    const error = expectError(answer, 'INVALID_REQUEST');
    expect(error.details.issues).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: 'contentLength', message: expect.any(String) })]),
    );
  });

  test('a field of the wrong type is named in details.issues', async () => {
    const answer = await call(presign, { method: 'POST', body: { fileName: 'a.png', contentLength: '10' } });
    const error = expectError(answer, 'INVALID_REQUEST');
    expect(error.details.issues.map((i: { path: string }) => i.path)).toContain('contentLength');
  });

  test('a body over the size limit (256 KiB by default) answers 400 INVALID_REQUEST with the limit', async () => {
    const answer = await call(presign, {
      method: 'POST',
      body: { fileName: `${'a'.repeat(300 * 1024)}.png`, contentLength: 10 },
    });
    const error = expectError(answer, 'INVALID_REQUEST');
    expect(error.details.limitBytes).toBe(256 * 1024);
    expect(ddb).not.toHaveReceivedAnyCommand();
  });

  test('a base64-encoded body (as API Gateway may deliver it) is decoded before parsing', async () => {
    const event = apiEvent({ method: 'POST', body: presignBody });
    event.body = Buffer.from(JSON.stringify(presignBody)).toString('base64');
    event.isBase64Encoded = true;
    const answer = await callEvent(presign, event);
    expect(answer.status).toBe(200);
    expect(ddb).toHaveReceivedCommandWith(PutCommand, { Item: expect.objectContaining({ fileName: 'receipt.png' }) });
  });
});

describe('authentication and scopes', () => {
  test('a call without an authorizer context answers 401 UNAUTHORIZED', async () => {
    const answer = await call(presign, { method: 'POST', body: presignBody, auth: null });
    expectError(answer, 'UNAUTHORIZED');
    expect(ddb).not.toHaveReceivedAnyCommand();
  });

  test('a GET without an authorizer context answers 401 as well', async () => {
    const answer = await call(getRun, { pathParameters: { jobId: 'run_1' }, auth: null });
    expectError(answer, 'UNAUTHORIZED');
    expect(ddb).not.toHaveReceivedAnyCommand();
  });

  test('authentication is checked before the content type', async () => {
    const answer = await call(presign, {
      method: 'POST',
      rawBody: 'x',
      headers: { 'Content-Type': 'text/plain' },
      auth: null,
    });
    expectError(answer, 'UNAUTHORIZED');
  });

  test('a read-only key cannot create runs: 403 FORBIDDEN names the missing scope, nothing is read or written', async () => {
    const answer = await call(createRun, {
      method: 'POST',
      body: { uploadId: 'upl_1', prompt: 'Summarise' },
      auth: { tenantId: 'tenant-a', scopes: ['runs:read'] },
    });
    const error = expectError(answer, 'FORBIDDEN');
    expect(error.details).toEqual({ requiredScope: 'runs:write' });
    expect(ddb).not.toHaveReceivedAnyCommand();
    expect(s3.requests).toEqual([]);
    expect(sqs).not.toHaveReceivedAnyCommand();
  });

  test('a key without runs:verify cannot verify', async () => {
    const answer = await call(verifyRun, {
      method: 'POST',
      body: { accepted: true },
      pathParameters: { jobId: 'run_1' },
      auth: { tenantId: 'tenant-a', scopes: ['runs:read', 'runs:write'] },
    });
    expectError(answer, 'FORBIDDEN');
  });

  test('a key without any scope is refused', async () => {
    const answer = await call(getRun, { pathParameters: { jobId: 'run_1' }, auth: { tenantId: 't', scopes: [] } });
    expectError(answer, 'FORBIDDEN');
  });

  test('the admin scope passes every route', async () => {
    const presigned = await call(presign, {
      method: 'POST',
      body: presignBody,
      auth: { tenantId: 'tenant-a', scopes: ['admin'] },
    });
    expect(presigned.status).toBe(200);

    ddb.on(GetCommand).resolves({});
    const read = await call(getRun, {
      pathParameters: { jobId: 'run_1' },
      auth: { tenantId: 'tenant-a', scopes: ['admin'] },
    });
    expectError(read, 'NOT_FOUND');
  });
});

describe('unexpected failures', () => {
  test('an SDK error answers 500 INTERNAL_ERROR without leaking the underlying message', async () => {
    ddb
      .on(PutCommand)
      .rejects(new Error('AccessDeniedException: arn:aws:dynamodb:us-east-1:123456789012:table/secret-uploads'));
    const answer = await call(presign, { method: 'POST', body: presignBody });
    const error = expectError(answer, 'INTERNAL_ERROR');
    const text = JSON.stringify(answer.body);
    expect(text).not.toContain('AccessDenied');
    expect(text).not.toContain('arn:aws');
    expect(text).not.toContain('secret-uploads');
    expect(error.details).toBeUndefined();
  });

  test('a non-Error throw is also a clean 500', async () => {
    ddb.on(GetCommand).callsFake(() => {
      throw 'raw string failure';
    });
    const answer = await call(getRun, { pathParameters: { jobId: 'run_1' } });
    expectError(answer, 'INTERNAL_ERROR');
    expect(JSON.stringify(answer.body)).not.toContain('raw string failure');
  });
});

describe('headers on every answer', () => {
  test('a success carries x-request-id (the API Gateway request id) and the JSON content type', async () => {
    const answer = await call(presign, { method: 'POST', body: presignBody });
    expect(answer.status).toBe(200);
    expectContractHeaders(answer);
    expect(answer.headers['x-request-id']).toMatch(/^req-/);
  });

  test('each request gets its own id', async () => {
    const first = await call(presign, { method: 'POST', body: presignBody });
    const second = await call(presign, { method: 'POST', body: presignBody });
    expect(first.headers['x-request-id']).not.toBe(second.headers['x-request-id']);
  });

  test('an error carries the same id in the header and in error.requestId', async () => {
    const answer = await call(presign, { method: 'POST', rawBody: 'nope' });
    expect(answer.headers['x-request-id']).toBe(answer.body.error.requestId);
  });
});
