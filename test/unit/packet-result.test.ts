/**
 * A split run's result and review (shared/packets/result.ts), the packet's estimate (shared/packets/estimate.ts) and
 * the split's score against its truth (shared/packets/score.ts).
 */
import type { FileFacts } from '../../shared/file-facts.js';
import { CLASSIFICATION_TASK, packetEstimate } from '../../shared/packets/estimate.js';
import { checkPartition, documentReview, packetResult, packetReview } from '../../shared/packets/result.js';
import { addCounts, countSplit, scoreOf } from '../../shared/packets/score.js';
import { predictAttempt, seedFactors } from '../../shared/planning/estimate.js';
import { planRun } from '../../shared/planning/plan.js';
import { catalog } from '../../shared/providers/catalog.js';
import { buildTask, registry } from '../../shared/registry/registry.js';

const doc = (index: number, schemaId: string, first: number, last: number) => ({
  index,
  schemaId,
  pages: { first, last },
  classification: { confidence: 0.9 },
  ...(schemaId === 'other' ? {} : { result: {}, fields: {}, review: { needed: false, reasons: [] } }),
});

describe('the documents[] result', () => {
  test('a result of documents with their pages, classes and extractions parses; `other` carries no extraction', () => {
    const result = { documents: [doc(0, 'invoice', 1, 2), doc(1, 'other', 3, 3), doc(2, 'receipt', 4, 4)] };
    expect(packetResult.parse(result)).toEqual(result);
    expect(checkPartition(result.documents, 4)).toBeNull();
  });

  test('a schema document without a result, or an `other` one with one, is refused', () => {
    const { result: _dropped, ...bare } = doc(0, 'invoice', 1, 1);
    expect(packetResult.safeParse({ documents: [bare] }).success).toBe(false);
    expect(packetResult.safeParse({ documents: [{ ...doc(0, 'other', 1, 1), result: {} }] }).success).toBe(false);
    expect(packetResult.safeParse({ documents: [] }).success).toBe(false);
  });

  test('checkPartition names a gap, an overlap, a wrong index, and pages left over', () => {
    expect(checkPartition([doc(0, 'invoice', 1, 2), doc(1, 'receipt', 4, 4)], 4)).toMatch(/starts on page 4, not 3/);
    expect(checkPartition([doc(0, 'invoice', 1, 2), doc(1, 'receipt', 2, 4)], 4)).toMatch(/starts on page 2, not 3/);
    expect(checkPartition([doc(0, 'invoice', 1, 2), doc(2, 'receipt', 3, 4)], 4)).toMatch(/has index 2/);
    expect(checkPartition([doc(0, 'invoice', 1, 2)], 4)).toMatch(/cover pages 1-2 of 4/);
  });
});

describe('review', () => {
  test('the run needs review when any document does, and each reason names its document', () => {
    const review = packetReview([
      { ...doc(0, 'invoice', 1, 2), review: { needed: false, reasons: [] } },
      { ...doc(1, 'receipt', 3, 3), review: { needed: true, reasons: ['total: missing'] } },
    ]);
    expect(review).toEqual({ needed: true, reasons: ['document 1 (receipt, pages 3-3): total: missing'] });
    expect(packetReview([doc(0, 'invoice', 1, 2), doc(1, 'other', 3, 3)])).toEqual({ needed: false, reasons: [] });
  });

  test('an uncertain class needs review even when the extraction does not', () => {
    expect(documentReview(0.55, { needed: false, reasons: [] }, 0.7)).toEqual({
      needed: true,
      reasons: ['classification: below 0.7 (0.55)'],
    });
    expect(documentReview(0.9, { needed: true, reasons: ['date: missing'] }, 0.7)).toEqual({
      needed: true,
      reasons: ['date: missing'],
    });
    expect(documentReview(0.9, undefined, 0.7)).toEqual({ needed: false, reasons: [] });
  });
});

describe('packetEstimate', () => {
  const pdf: FileFacts = { mime: 'application/pdf', kind: 'pdf', sizeBytes: 600_000, pages: 12 };
  const plan = (schemaId: string) => {
    const schema = registry.get(schemaId);
    const task = buildTask({ prompt: 'Extract', outputFormat: 'json', schemaId, schema });
    return planRun(pdf, task, ['openai']).estimateMicros;
  };

  test('classification of every page plus extraction at the dearest allowed schema', () => {
    const estimate = packetEstimate(pdf, { prompt: 'Extract', schemaIds: [...registry.keys()] }, ['openai']);
    const dearest = Math.max(...[...registry.keys()].map(plan));
    expect(estimate.classification.estimateMicros).toBe(planRun(pdf, CLASSIFICATION_TASK, ['openai']).estimateMicros);
    expect(estimate.extraction.plan.estimateMicros).toBe(dearest);
    expect(estimate.estimateMicros).toBe(estimate.classification.estimateMicros + dearest);
    // Some schemas cost more than others (array fields scale with pages): the dearest is not simply the first.
    expect(new Set([...registry.keys()].map(plan)).size).toBeGreaterThan(1);
  });

  test('fewer allowed schemas hold no more, and the dearest of them is the one named', () => {
    const all = packetEstimate(pdf, { prompt: 'Extract', schemaIds: [...registry.keys()] }, ['openai']);
    const cheap = packetEstimate(pdf, { prompt: 'Extract', schemaIds: ['business_card'] }, ['openai']);
    expect(cheap.extraction.schemaId).toBe('business_card');
    expect(cheap.estimateMicros).toBeLessThan(all.estimateMicros);
  });

  test.each([
    ['openai', { OPENAI_MODEL: 'gpt-5.4-nano' }],
    ['gemini', { GEMINI_MODEL: 'gemini-3.1-flash-lite' }],
  ] as const)('%s: classification is priced at the provider’s smaller model, as its calls run', (provider, small) => {
    const { modelTier: _, ...asDefault } = CLASSIFICATION_TASK;
    for (const step of ['vision', 'analyze'] as const) {
      // The prediction and the bound of a classification call are the small model's, not the configured one's.
      const classify = predictAttempt(provider, pdf, CLASSIFICATION_TASK, step)?.costMicros;
      expect(classify).toBe(predictAttempt(provider, pdf, asDefault, step, seedFactors, { env: small })?.costMicros);
      expect(classify).toBeLessThan(predictAttempt(provider, pdf, asDefault, step)?.costMicros ?? 0);
      const bound = catalog[provider]?.stepCostMicros(pdf, CLASSIFICATION_TASK, step);
      expect(bound).toBe(catalog[provider]?.stepCostMicros(pdf, asDefault, step, { env: small }));
    }
    // So the packet's hold for classifying its pages is the small model's.
    const estimate = packetEstimate(pdf, { prompt: 'Extract', schemaIds: ['invoice'] }, [provider]);
    expect(estimate.classification.estimateMicros).toBeLessThan(planRun(pdf, asDefault, [provider]).estimateMicros);
  });

  test('a provider without a smaller model (Anthropic: Haiku is its default) classifies on its own model', () => {
    const { modelTier: _, ...asDefault } = CLASSIFICATION_TASK;
    expect(predictAttempt('anthropic', pdf, CLASSIFICATION_TASK, 'vision')?.costMicros).toBe(
      predictAttempt('anthropic', pdf, asDefault, 'vision')?.costMicros,
    );
  });

  test('an id outside the registry is a caller’s bug', () => {
    expect(() => packetEstimate(pdf, { prompt: 'x', schemaIds: ['payslip'] }, ['openai'])).toThrow(/payslip/);
  });
});

describe('scoring a split', () => {
  const truth = [
    { schemaId: 'invoice', pages: { first: 1, last: 2 } },
    { schemaId: 'receipt', pages: { first: 3, last: 3 } },
    { schemaId: 'bank_statement', pages: { first: 4, last: 6 } },
  ];

  test('a perfect split scores 1 everywhere', () => {
    expect(scoreOf(countSplit(truth, truth))).toMatchObject({ precision: 1, recall: 1, f1: 1, pageAccuracy: 1 });
  });

  test('a statement cut in two: one boundary invented (precision), its pages still of the right class', () => {
    const found = [
      truth[0],
      truth[1],
      { schemaId: 'bank_statement', pages: { first: 4, last: 4 } },
      { schemaId: 'bank_statement', pages: { first: 5, last: 6 } },
    ] as typeof truth;
    const s = scoreOf(countSplit(found, truth));
    expect(s).toMatchObject({ boundariesRight: 2, boundariesFound: 3, boundariesTrue: 2, pagesRight: 6 });
    expect(s.precision).toBeCloseTo(2 / 3);
    expect(s.recall).toBe(1);
    expect(s.documentsExact).toBe(2);
  });

  test('a receipt merged into the invoice: a boundary missed (recall), its page of the wrong class', () => {
    const found = [{ schemaId: 'invoice', pages: { first: 1, last: 3 } }, truth[2]] as typeof truth;
    const s = scoreOf(countSplit(found, truth));
    expect(s.recall).toBe(0.5);
    expect(s.precision).toBe(1);
    expect(s.pageAccuracy).toBeCloseTo(5 / 6);
  });

  test('counts add up over packets', () => {
    const one = countSplit(truth, truth);
    expect(addCounts(one, one)).toEqual(Object.fromEntries(Object.entries(one).map(([k, v]) => [k, v * 2])));
  });
});
