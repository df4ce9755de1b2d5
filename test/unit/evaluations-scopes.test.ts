/**
 * The scopes of the evaluation and quality routes (contract-v1.2 §1): creating an evaluation spends, so it needs
 * `runs:write`; reading evaluations and accuracy from reviews needs `runs:read`. A key without the scope gets
 * 403 FORBIDDEN naming it, and nothing is read or written.
 */
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { handler as createEvaluation } from '../../functions/evaluations-create.js';
import { handler as getEvaluation } from '../../functions/evaluations-get.js';
import { handler as listEvaluations } from '../../functions/evaluations-list.js';
import { handler as quality } from '../../functions/quality.js';
import { call, expectError } from '../support/api.js';

const ddb = mockClient(DynamoDBDocumentClient);
beforeEach(() => ddb.reset());

test('a read-only key cannot create an evaluation: 403 naming runs:write, nothing touched', async () => {
  const answer = await call(createEvaluation, {
    method: 'POST',
    body: { name: 'set', schemaId: 'receipt', items: [{ uploadId: 'upl_1', expected: { total: 1 } }] },
    auth: { tenantId: 'tenant-a', scopes: ['runs:read'] },
  });
  expect(expectError(answer, 'FORBIDDEN').details).toEqual({ requiredScope: 'runs:write' });
  expect(ddb).not.toHaveReceivedAnyCommand();
});

test.each([
  ['GET /v1/evaluations/{id}', getEvaluation, { pathParameters: { evaluationId: 'eval_1' } }],
  ['GET /v1/evaluations', listEvaluations, {}],
  ['GET /v1/quality', quality, {}],
] as const)('%s needs runs:read: a write-only key gets 403, nothing read', async (_, handler, input) => {
  const answer = await call(handler, { ...input, auth: { tenantId: 'tenant-a', scopes: ['runs:write'] } });
  expect(expectError(answer, 'FORBIDDEN').details).toEqual({ requiredScope: 'runs:read' });
  expect(ddb).not.toHaveReceivedAnyCommand();
});
