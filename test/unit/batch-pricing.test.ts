/**
 * The batch lane's prices (contract v1.2 §4): each provider's batch discount is data beside its prices, the estimate
 * is computed for the priority asked, and calibration keeps batch and standard apart.
 */

import { batchCodecs } from '../../shared/batching/providers.js';
import type { FileFacts } from '../../shared/file-facts.js';
import { calibrationKeysFor, predictAttempt } from '../../shared/planning/estimate.js';
import { planRun } from '../../shared/planning/plan.js';
import {
  addSample,
  batchKey,
  type CalibrationSample,
  type CalibrationState,
  factorsFrom,
  MIN_SAMPLES,
  tenantFactors,
} from '../../shared/pricing/calibration.js';
import { priceFor } from '../../shared/pricing/pricing.js';
import { batchBlocks, batchTerms, DRIVEN_BATCH_PROVIDERS } from '../../shared/providers/batch-terms.js';
import { calibrationKey } from '../../shared/providers/predict.js';
import { buildTask, registry } from '../../shared/registry/registry.js';
import type { ProviderId } from '../../shared/task.js';

const RECEIPT_TASK = buildTask({
  prompt: 'Extract',
  outputFormat: 'json',
  schemaId: 'receipt',
  schema: registry.get('receipt'),
});
const IMAGE: FileFacts = { mime: 'image/png', kind: 'image', sizeBytes: 13_775, width: 800, height: 834, pages: 1 };
const SCAN = (pages: number): FileFacts => ({
  mime: 'application/pdf',
  kind: 'pdf',
  sizeBytes: 200_000 * pages,
  pages,
});

describe('batch discounts are data beside the prices', () => {
  test('every price file has a batch block with its source and the date it was read', () => {
    for (const id of ['openai', 'anthropic', 'gemini', 'bedrock', 'textract'] as const) {
      const block = batchBlocks[id];
      expect(block?.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(block?.source).toMatch(/https:\/\//);
    }
  });

  test.each<[ProviderId, NodeJS.ProcessEnv, { viaInterface: boolean; discountPct: number }]>([
    ['openai', {}, { viaInterface: true, discountPct: 50 }],
    ['anthropic', {}, { viaInterface: true, discountPct: 50 }],
    ['gemini', {}, { viaInterface: true, discountPct: 50 }],
    // Bedrock's batch inference is per model: the default Nova 2 Lite is not in its supported table as read.
    ['bedrock', { AWS_REGION: 'us-east-1' }, { viaInterface: false, discountPct: 0 }],
    ['bedrock', { BEDROCK_MODEL_ID: 'us.amazon.nova-lite-v1:0' }, { viaInterface: true, discountPct: 50 }],
    ['textract', {}, { viaInterface: false, discountPct: 0 }],
    ['local', {}, { viaInterface: false, discountPct: 0 }],
  ])('%s (%j) batches at %j', (id, env, terms) => {
    expect(batchTerms(id, env)).toEqual(terms);
  });

  test('the providers priced at a discount are exactly those whose batch codec this build has', () => {
    expect([...DRIVEN_BATCH_PROVIDERS].sort()).toEqual(Object.keys(batchCodecs).sort());
  });
});

describe('the estimate for a priority', () => {
  test.each<ProviderId>(['openai', 'anthropic', 'gemini'])(
    '%s: a batch attempt costs half the standard one, to the micro before rounding',
    (id) => {
      const standard = predictAttempt(id, IMAGE, RECEIPT_TASK, 'vision');
      const batch = predictAttempt(id, IMAGE, RECEIPT_TASK, 'vision', undefined, { priority: 'batch' });
      expect(standard).toBeDefined();
      // The same tokens, half the price: the rounded halves differ from the rounded whole by at most one micro.
      expect(batch?.tokens).toEqual(standard?.tokens);
      expect(Math.abs((batch?.costMicros ?? 0) * 2 - (standard?.costMicros ?? 0))).toBeLessThanOrEqual(2);
      expect(batch?.costMicros).toBeLessThan(standard?.costMicros ?? 0);
    },
  );

  test('a batch run is priced half where its provider discounts 50 %, margin included', () => {
    const standard = planRun(IMAGE, RECEIPT_TASK, ['openai', 'local'], { marginPct: 30 });
    const batch = planRun(IMAGE, RECEIPT_TASK, ['openai', 'local'], { marginPct: 30, priority: 'batch' });
    const cost = predictAttempt('openai', IMAGE, RECEIPT_TASK, 'vision', undefined, { priority: 'batch' });
    expect(batch.estimateMicros).toBe(priceFor(cost?.costMicros ?? 0, 30));
    expect(Math.abs(batch.estimateMicros * 2 - standard.estimateMicros)).toBeLessThanOrEqual(3);
    // The plan itself does not change with the priority.
    expect(batch.candidates).toEqual(standard.candidates);
    expect(batch.strategy).toBe(standard.strategy);
  });

  test('a provider without a batch interface (or without a codec in this build) keeps its normal price', () => {
    for (const providers of [['textract', 'local'], ['local']] as ProviderId[][]) {
      const standard = planRun(SCAN(3), RECEIPT_TASK, providers, { explicitOrder: true });
      const batch = planRun(SCAN(3), RECEIPT_TASK, providers, { explicitOrder: true, priority: 'batch' });
      expect(batch.estimateMicros).toBe(standard.estimateMicros);
    }
    const env = { AWS_REGION: 'us-east-1' };
    const standard = predictAttempt('bedrock', IMAGE, RECEIPT_TASK, 'vision', undefined, { env });
    const batch = predictAttempt('bedrock', IMAGE, RECEIPT_TASK, 'vision', undefined, { env, priority: 'batch' });
    expect(batch).toEqual(standard);
  });

  test('a chained plan discounts only the step whose provider has a batch interface', () => {
    const providers: ProviderId[] = ['textract', 'openai', 'local'];
    const standard = planRun(SCAN(3), RECEIPT_TASK, providers, { marginPct: 0 });
    const batch = planRun(SCAN(3), RECEIPT_TASK, providers, { marginPct: 0, priority: 'batch' });
    expect(standard.ocrCandidates?.[0]).toBe('textract');
    expect(batch.ocrCandidates?.[0]).toBe('textract');
    const ocr = predictAttempt('textract', SCAN(3), RECEIPT_TASK, 'ocr')?.costMicros ?? 0;
    const analyze = (priority: 'standard' | 'batch') =>
      predictAttempt('openai', SCAN(3), RECEIPT_TASK, 'analyze', undefined, { priority })?.costMicros ?? 0;
    expect(standard.estimateMicros).toBe(ocr + analyze('standard'));
    expect(batch.estimateMicros).toBe(ocr + analyze('batch'));
  });
});

describe('calibration keeps batch and standard apart', () => {
  const KEY = calibrationKey('openai', RECEIPT_TASK, 'vision');
  const samples = (key: string, outputRatio: number, n: number): CalibrationState =>
    Array.from({ length: n }).reduce<CalibrationState | undefined>(
      (state) =>
        addSample(state, {
          key,
          predicted: { input: 1000, output: 100 },
          actual: { input: 1000, output: 100 * outputRatio },
        } satisfies CalibrationSample),
      undefined,
    ) as CalibrationState;

  test('a batch key is read only for a batch estimate, beside the standard keys', () => {
    const standard = calibrationKeysFor(['openai', 'textract', 'local'], RECEIPT_TASK);
    const batch = calibrationKeysFor(['openai', 'textract', 'local'], RECEIPT_TASK, 'batch');
    expect(standard).toContain(KEY);
    expect(standard).not.toContain(batchKey(KEY));
    expect(batch).toEqual([...standard, ...standard.map(batchKey)]);
  });

  test('without batch history a batch estimate starts from what standard runs taught', () => {
    const factors = factorsFrom(new Map([[KEY, samples(KEY, 2, MIN_SAMPLES)]]));
    expect(factors(KEY).output).toBeCloseTo(2);
    expect(factors(batchKey(KEY))).toEqual(factors(KEY));
  });

  test('batch runs move the batch estimate and leave the standard one alone', () => {
    const states = new Map([
      [KEY, samples(KEY, 1, MIN_SAMPLES)],
      [batchKey(KEY), samples(batchKey(KEY), 3, MIN_SAMPLES)],
    ]);
    const factors = tenantFactors({ tenant: 't1', own: states, deployment: new Map() });
    expect(factors(KEY).output).toBeCloseTo(1);
    expect(factors(batchKey(KEY)).output).toBeCloseTo(3);
    const standard = predictAttempt('openai', IMAGE, RECEIPT_TASK, 'vision', factors);
    const batch = predictAttempt('openai', IMAGE, RECEIPT_TASK, 'vision', factors, { priority: 'batch' });
    expect(standard?.key).toBe(KEY);
    expect(batch?.key).toBe(batchKey(KEY));
    // Three times the output at half the price: dearer than half the standard estimate.
    expect((batch?.costMicros ?? 0) * 2).toBeGreaterThan((standard?.costMicros ?? 0) + 2);
  });
});
