/**
 * The margin is configurable per deployment (PRICING_MARGIN_PCT, CDK context `marginPct`). Configuration is read at
 * first use and kept, so this file sets the variable before any test runs (each test file has its own registry).
 */
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { handler as createRunHandler } from '../../functions/create-run.js';
import { ENV } from '../../shared/infra/env.js';
import { priceFor } from '../../shared/pricing/pricing.js';
import raw from '../../shared/pricing/pricing.json' with { type: 'json' };
import { type ApiHandler, call } from '../support/api.js';
import { arrangeCreateRun, type Mocks, transactions } from '../support/create-run.js';
import { useFakeS3 } from '../support/fake-s3.js';
import { OCR_PAGE_COST_MICROS, TEXT_LAYER_PAGE_COST_MICROS } from '../support/pricing.js';

const MARGIN_PCT = 50;
const handler: ApiHandler = createRunHandler;

beforeAll(() => {
  // Differs from the table's default, so the test fails if the variable is ignored.
  expect(raw.marginPct).not.toBe(MARGIN_PCT);
  process.env[ENV.marginPct] = String(MARGIN_PCT);
});

afterAll(() => {
  delete process.env[ENV.marginPct];
});

const mocks: Mocks = {
  ddb: mockClient(DynamoDBDocumentClient),
  s3: useFakeS3(),
  sqs: mockClient(SQSClient),
};

test('prices (what the worker settles) use the configured margin', () => {
  expect(priceFor(1_000)).toBe(1_500);
  expect(priceFor(OCR_PAGE_COST_MICROS)).toBe(Math.ceil(OCR_PAGE_COST_MICROS * 1.5));
});

test('the estimate shown and held at creation uses the same margin', async () => {
  arrangeCreateRun(mocks, { file: 'text.pdf' });
  const answer = await call(handler, {
    method: 'POST',
    path: '/v1/runs',
    body: { uploadId: 'upl_1', prompt: 'Read it', confirmCost: true },
  });
  expect(answer.status).toBe(202);
  // text.pdf: two text-layer pages, which local reads at the text-layer price.
  const held = Math.ceil(2 * TEXT_LAYER_PAGE_COST_MICROS * 1.5);
  expect(answer.body.estimatedCostUsd).toBe(held / 1_000_000);
  expect(transactions(mocks)[0]?.TransactItems?.[1]?.Update?.ExpressionAttributeValues).toEqual({ ':hold': held });
});
