/**
 * An evaluation at batch priority (contract v1.2 §4 on §1): each of its runs is written as a batch run, promised from
 * the evaluation's creation, whoever writes it (the creating request or the reconciler's sweep); a standard evaluation's
 * runs carry neither field. The hold at the batch price is checked end to end in test/integration/batch.test.ts.
 */
import { itemRun } from '../../shared/evaluations/materialize.js';
import type { EvaluationItemRecord, EvaluationRecord } from '../../shared/store/evaluations.js';

const CREATED = '2026-11-25T11:00:00.000Z';

const evaluation = (extra: Partial<EvaluationRecord> = {}): EvaluationRecord => ({
  evaluationId: `eval_${'b'.repeat(32)}`,
  tenantId: 'tenant-a',
  name: 'nightly',
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
  providers: ['openai'],
  workflow: null,
  metadata: {},
  documents: 1,
  itemsTotal: 1,
  itemsDone: 0,
  estimateMicros: 500,
  maxCostMicros: null,
  chargedMicros: 0,
  refundedMicros: 0,
  holdFromCredit: false,
  marginPct: 0,
  createdAt: CREATED,
  openShard: 'o0',
  expiresAtEpoch: 2_000_000_000,
  ...extra,
});

const item: EvaluationItemRecord = {
  evaluationId: `eval_${'b'.repeat(32)}`,
  n: 0,
  index: 0,
  jobId: `run_${'0'.repeat(32)}`,
  provider: 'openai',
  expected: { total: 42.5 },
  plan: {
    uploadId: 'upl_0',
    objectKey: 'uploads/tenant-a/upl_0',
    file: { mime: 'image/png', kind: 'image', sizeBytes: 1000, pages: 1, width: 100, height: 100 },
    strategy: 'direct_multimodal',
    candidates: ['openai'],
    estimateMicros: 500,
  },
  expiresAtEpoch: 2_000_000_000,
};

test('a batch evaluation writes batch runs due 24 hours after the evaluation was created', () => {
  const run = itemRun(evaluation({ priority: 'batch' }), item);
  expect(run.priority).toBe('batch');
  expect(run.expiresAt).toBe('2026-11-26T11:00:00.000Z');
  // Written again later (the sweep), the run is the same.
  expect(itemRun(evaluation({ priority: 'batch' }), item)).toEqual(run);
});

test('a standard evaluation writes standard runs', () => {
  const run = itemRun(evaluation(), item);
  expect(run).not.toHaveProperty('priority');
  expect(run).not.toHaveProperty('expiresAt');
});
