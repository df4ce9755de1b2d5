/** The API-key authorizer: keys looked up by hash, revoked and unknown keys denied, the tenant and scopes passed on. */
import { createHash } from 'node:crypto';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { authorize, wildcardResource } from '../../functions/authorizer.js';
import { tableName } from '../support/aws.js';

const ddb = mockClient(DynamoDBDocumentClient);

const KEY = 'vk_s3cr3t-plaintext-key-that-must-never-be-stored-000000000';
const KEY_HASH = createHash('sha256').update(KEY).digest('hex');
const METHOD_ARN = 'arn:aws:execute-api:eu-west-1:123456789012:abc123def4/prod/POST/v1/runs';

function authorizerEvent(headers: Record<string, string> | null): APIGatewayRequestAuthorizerEvent {
  return {
    type: 'REQUEST',
    methodArn: METHOD_ARN,
    resource: '/v1/runs',
    path: '/v1/runs',
    httpMethod: 'POST',
    headers,
    multiValueHeaders: null,
    pathParameters: null,
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    stageVariables: null,
    requestContext: {} as APIGatewayRequestAuthorizerEvent['requestContext'],
  };
}

function keyRecord(overrides: Record<string, unknown> = {}) {
  return {
    keyHash: KEY_HASH,
    keyId: 'key_0123456789abcdef',
    tenantId: 'tenant-a',
    scopes: ['runs:read', 'runs:write'],
    status: 'active',
    label: 'backend',
    createdAt: '2026-01-01T00:00:00.000Z',
    ...overrides,
  };
}

beforeEach(() => {
  ddb.reset();
});

test('a request without x-api-key is denied as Unauthorized without a lookup', async () => {
  await expect(authorize(authorizerEvent({}))).rejects.toThrow('Unauthorized');
  await expect(authorize(authorizerEvent(null))).rejects.toThrow('Unauthorized');
  await expect(authorize(authorizerEvent({ 'x-api-key': '' }))).rejects.toThrow('Unauthorized');
  expect(ddb).not.toHaveReceivedAnyCommand();
});

test('an unknown key is denied as Unauthorized', async () => {
  ddb.on(GetCommand).resolves({});
  await expect(authorize(authorizerEvent({ 'x-api-key': KEY }))).rejects.toThrow('Unauthorized');
});

test('a revoked key is denied as Unauthorized', async () => {
  ddb.on(GetCommand).resolves({ Item: keyRecord({ status: 'revoked', revokedAt: '2026-02-01T00:00:00.000Z' }) });
  await expect(authorize(authorizerEvent({ 'x-api-key': KEY }))).rejects.toThrow('Unauthorized');
});

test('an active key is allowed on every route of the stage, with tenant, key id, label and scopes in the context', async () => {
  ddb.on(GetCommand).resolves({ Item: keyRecord() });
  const result = await authorize(authorizerEvent({ 'x-api-key': KEY }));
  expect(result.principalId).toBe('key_0123456789abcdef');
  expect(result.policyDocument).toEqual({
    Version: '2012-10-17',
    Statement: [
      {
        Action: 'execute-api:Invoke',
        Effect: 'Allow',
        Resource: 'arn:aws:execute-api:eu-west-1:123456789012:abc123def4/prod/*',
      },
    ],
  });
  expect(result.context).toEqual({
    tenantId: 'tenant-a',
    keyId: 'key_0123456789abcdef',
    keyLabel: 'backend',
    scopes: 'runs:read,runs:write',
  });
});

test('a key with a usage-plan key names it as usageIdentifierKey, so the usage plan throttles that key', async () => {
  const usagePlanKeyValue = 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678';
  ddb.on(GetCommand).resolves({ Item: keyRecord({ usagePlanKeyId: 'abcde12345', usagePlanKeyValue }) });
  const result = await authorize(authorizerEvent({ 'x-api-key': KEY }));
  expect(result.usageIdentifierKey).toBe(usagePlanKeyValue);
  // Only the value API Gateway needs: not the client's key, not the API key's id, nothing in the context.
  expect(result.usageIdentifierKey).not.toBe(KEY);
  expect(result.context).toEqual({
    tenantId: 'tenant-a',
    keyId: 'key_0123456789abcdef',
    keyLabel: 'backend',
    scopes: 'runs:read,runs:write',
  });
  expect(JSON.stringify(result.context)).not.toContain(usagePlanKeyValue);
});

test('a key without a usage-plan key (the local stack) gets no usageIdentifierKey at all', async () => {
  ddb.on(GetCommand).resolves({ Item: keyRecord() });
  const result = await authorize(authorizerEvent({ 'x-api-key': KEY }));
  expect(result).not.toHaveProperty('usageIdentifierKey');
  ddb.on(GetCommand).resolves({ Item: keyRecord({ usagePlanKeyValue: '' }) });
  expect(await authorize(authorizerEvent({ 'x-api-key': KEY }))).not.toHaveProperty('usageIdentifierKey');
});

test('a revoked key is denied even if it still has a usage-plan key', async () => {
  ddb.on(GetCommand).resolves({
    Item: keyRecord({ status: 'revoked', usagePlanKeyId: 'abcde12345', usagePlanKeyValue: 'f'.repeat(40) }),
  });
  await expect(authorize(authorizerEvent({ 'x-api-key': KEY }))).rejects.toThrow('Unauthorized');
});

test('the header name is matched case-insensitively', async () => {
  ddb.on(GetCommand).resolves({ Item: keyRecord() });
  const result = await authorize(authorizerEvent({ 'X-API-Key': KEY }));
  expect(result.context?.tenantId).toBe('tenant-a');
});

test('the key is looked up by its SHA-256 hash; the plaintext never reaches the database', async () => {
  ddb.on(GetCommand).resolves({ Item: keyRecord() });
  await authorize(authorizerEvent({ 'x-api-key': KEY }));
  expect(ddb).toHaveReceivedCommandTimes(GetCommand, 1);
  const input = ddb.commandCalls(GetCommand)[0]?.args[0].input;
  expect(input?.TableName).toBe(tableName('apiKeys'));
  expect(input?.Key).toEqual({ keyHash: KEY_HASH });
  expect(JSON.stringify(input)).not.toContain(KEY);
});

test('a record whose stored hash does not match the presented key is not accepted', async () => {
  ddb.on(GetCommand).resolves({ Item: keyRecord({ keyHash: createHash('sha256').update('other').digest('hex') }) });
  await expect(authorize(authorizerEvent({ 'x-api-key': KEY }))).rejects.toThrow('Unauthorized');
});

test('the cached policy covers every method and path of the stage, whichever route was called first', () => {
  const expected = 'arn:aws:execute-api:eu-west-1:123456789012:abc123def4/prod/*';
  expect(wildcardResource(METHOD_ARN)).toBe(expected);
  expect(wildcardResource('arn:aws:execute-api:eu-west-1:123456789012:abc123def4/prod/GET/v1/runs/run_1')).toBe(
    expected,
  );
  expect(wildcardResource('arn:aws:execute-api:eu-west-1:123456789012:abc123def4/prod/GET/health')).toBe(expected);
});
