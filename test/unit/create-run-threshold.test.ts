/**
 * The cost-confirmation threshold (SERVICE_COST_CONFIRMATION_THRESHOLD_USD). Configuration is read at first use and
 * kept, so this file sets the variable before any test runs (each test file has its own module registry). The
 * threshold is set to exactly the estimate of a one-page text-layer PDF (local reads it at the text-layer price), so
 * invoice.pdf sits on the threshold and the two-page text.pdf (twice that) exceeds it.
 */
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { handler as createRunHandler } from '../../functions/create-run.js';
import { config } from '../../shared/config.js';
import { ENV } from '../../shared/infra/env.js';
import { type ApiHandler, call, expectError } from '../support/api.js';
import { arrangeCreateRun, expectNothingHeldOrQueued, type Mocks, transactions } from '../support/create-run.js';
import { useFakeS3 } from '../support/fake-s3.js';
import { textLayerEstimateMicros as estimateMicros, textLayerEstimateUsd as estimateUsd } from '../support/pricing.js';

const THRESHOLD_USD = estimateUsd(1);
const handler: ApiHandler = createRunHandler;
let configuredThreshold: number;

beforeAll(() => {
  process.env[ENV.confirmationThresholdUsd] = String(THRESHOLD_USD);
  configuredThreshold = config.confirmationThresholdUsd;
});

afterAll(() => {
  delete process.env[ENV.confirmationThresholdUsd];
});

const mocks: Mocks = {
  ddb: mockClient(DynamoDBDocumentClient),
  s3: useFakeS3(),
  sqs: mockClient(SQSClient),
};

beforeEach(() => {
  mocks.ddb.reset();
  mocks.sqs.reset();
});

function create(body: Record<string, unknown>) {
  return call(handler, { method: 'POST', path: '/v1/runs', body: { uploadId: 'upl_1', prompt: 'Read it', ...body } });
}

test('the threshold comes from SERVICE_COST_CONFIRMATION_THRESHOLD_USD', () => {
  expect(configuredThreshold).toBe(THRESHOLD_USD);
});

test('an estimate above the threshold without confirmCost or maxCostUsd answers 402 COST_CONFIRMATION_REQUIRED', async () => {
  arrangeCreateRun(mocks, { file: 'text.pdf' });
  const answer = await create({});
  const error = expectError(answer, 'COST_CONFIRMATION_REQUIRED');
  expect(error.details).toEqual({ estimatedCostUsd: estimateUsd(2), thresholdUsd: THRESHOLD_USD });
  expectNothingHeldOrQueued(mocks);
});

test('confirmCost: false is not a confirmation', async () => {
  arrangeCreateRun(mocks, { file: 'text.pdf' });
  const answer = await create({ confirmCost: false });
  expectError(answer, 'COST_CONFIRMATION_REQUIRED');
  expectNothingHeldOrQueued(mocks);
});

test('confirmCost: true accepts the run (202) and holds the estimate', async () => {
  arrangeCreateRun(mocks, { file: 'text.pdf' });
  const answer = await create({ confirmCost: true });
  expect(answer.status).toBe(202);
  expect(answer.body.estimatedCostUsd).toBe(estimateUsd(2));
  expect(transactions(mocks)[0]?.TransactItems?.[1]?.Update?.ExpressionAttributeValues).toEqual({
    ':hold': estimateMicros(2),
  });
  expect(mocks.sqs).toHaveReceivedCommandTimes(SendMessageCommand, 1);
});

test('a maxCostUsd budget covering the estimate is consent enough (202)', async () => {
  arrangeCreateRun(mocks, { file: 'text.pdf' });
  const answer = await create({ maxCostUsd: 1 });
  expect(answer.status).toBe(202);
});

test('"exceeds" is strictly greater: an estimate equal to the threshold needs no confirmation', async () => {
  arrangeCreateRun(mocks, { file: 'invoice.pdf' });
  const answer = await create({});
  expect(answer.status).toBe(202);
  expect(answer.body.estimatedCostUsd).toBe(THRESHOLD_USD);
});

test('the budget is checked before the threshold: a budget below the estimate answers BUDGET_EXCEEDED', async () => {
  arrangeCreateRun(mocks, { file: 'text.pdf' });
  // Above the threshold, below the estimate.
  const budget = (estimateMicros(2) - 1) / 1_000_000;
  const answer = await create({ maxCostUsd: budget });
  const error = expectError(answer, 'BUDGET_EXCEEDED');
  expect(error.details).toEqual({ estimatedCostUsd: estimateUsd(2), maxCostUsd: budget });
  expectNothingHeldOrQueued(mocks);
});

test('BUDGET_EXCEEDED states the budget as applied, in whole micro-dollars (money to 6 decimals)', async () => {
  arrangeCreateRun(mocks, { file: 'text.pdf' });
  const error = expectError(await create({ maxCostUsd: 0.0000019 }), 'BUDGET_EXCEEDED');
  expect(error.details).toEqual({ estimatedCostUsd: estimateUsd(2), maxCostUsd: 0.000001 });
  expectNothingHeldOrQueued(mocks);
});

test('a budget is rounded down to the micro-dollar: it never allows more than the client wrote', async () => {
  arrangeCreateRun(mocks, { file: 'text.pdf' });
  // The estimate plus half a micro-dollar rounds down to the estimate itself: accepted, held at the estimate.
  const accepted = await create({ maxCostUsd: (estimateMicros(2) + 0.5) / 1_000_000 });
  expect(accepted.status).toBe(202);
  // Just under the estimate + 1 micro, minus half a micro: rounds down below the estimate.
  arrangeCreateRun(mocks, { file: 'text.pdf' });
  const refused = await create({ maxCostUsd: (estimateMicros(2) - 0.5) / 1_000_000 });
  expect(expectError(refused, 'BUDGET_EXCEEDED').details.maxCostUsd).toBe((estimateMicros(2) - 1) / 1_000_000);
});

test('the threshold is checked before the credit hold: an unconfirmed run never reaches the tenant', async () => {
  arrangeCreateRun(mocks, { file: 'text.pdf', tenant: { availableMicros: 0 } });
  const answer = await create({});
  expectError(answer, 'COST_CONFIRMATION_REQUIRED');
  expectNothingHeldOrQueued(mocks);
});
