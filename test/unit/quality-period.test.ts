/**
 * The period of `GET /v1/quality` (contract-v1.2 §1): counted by whole UTC days (the counters are per day), and the
 * answer says which days were counted; an empty or inverted period is the client's error (400), never a DynamoDB
 * refusal surfacing as a retryable 500.
 */
import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { handler as quality } from '../../functions/quality.js';
import { call, expectError } from '../support/api.js';

const ddb = mockClient(DynamoDBDocumentClient);
beforeEach(() => {
  ddb.reset();
  ddb.on(QueryCommand).resolves({ Items: [] });
});

const read = (query: Record<string, string>) =>
  call(quality, { query, auth: { tenantId: 'tenant-a', scopes: ['runs:read'] } });

test('a from later than now (to defaults to now) is 400 INVALID_REQUEST naming from, and nothing is read', async () => {
  const answer = await read({ from: '2999-01-01T00:00:00Z' });
  expect(expectError(answer, 'INVALID_REQUEST').details).toMatchObject({
    issues: [expect.objectContaining({ path: 'from' })],
  });
  expect(ddb).not.toHaveReceivedAnyCommand();
});

test('the answer names the whole UTC days it counted, and reads exactly those days', async () => {
  const answer = await read({ from: '2026-11-02T10:30:00Z', to: '2026-11-04T09:00:00Z' });
  expect(answer.status).toBe(200);
  expect(answer.body).toMatchObject({ from: '2026-11-02T00:00:00.000Z', to: '2026-11-05T00:00:00.000Z' });
  const values = ddb.commandCalls(QueryCommand)[0]?.args[0].input.ExpressionAttributeValues;
  expect(values?.[':first']).toMatch(/#2026-11-02$/);
  expect(values?.[':last']).toMatch(/#2026-11-04$/);
});

test('a to at midnight is exclusive: that day is not counted', async () => {
  const answer = await read({ from: '2026-11-02T00:00:00Z', to: '2026-11-04T00:00:00Z' });
  expect(answer.body).toMatchObject({ from: '2026-11-02T00:00:00.000Z', to: '2026-11-04T00:00:00.000Z' });
  const values = ddb.commandCalls(QueryCommand)[0]?.args[0].input.ExpressionAttributeValues;
  expect(values?.[':last']).toMatch(/#2026-11-03$/);
});
