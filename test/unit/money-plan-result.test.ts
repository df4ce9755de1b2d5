/** Money conversions, planning and estimates, result shaping and confidence: the pure parts of the money path. */

import type { FileFacts } from '../../shared/file-facts.js';
import { MICROS_PER_USD, microsToUsd, usdToMicros, usdToMicrosCeil } from '../../shared/money.js';
import { predictAttempt } from '../../shared/planning/estimate.js';
import { classify, planRun } from '../../shared/planning/plan.js';
import { priceFor } from '../../shared/pricing/pricing.js';
import rawPricing from '../../shared/pricing/pricing.json' with { type: 'json' };
import { availableProviders, catalog } from '../../shared/providers/catalog.js';
import { coerce } from '../../shared/providers/result-validation.js';
import type { ProviderOutput } from '../../shared/providers/types.js';
import { viewResult } from '../../shared/runs/run-view.js';
import type { FieldSpec, TaskSpec } from '../../shared/task.js';
import { computeConfidence, shapeResult } from '../../shared/worker/outcome.js';
import { estimateMicros, OCR_PAGE_COST_MICROS } from '../support/pricing.js';

describe('money', () => {
  test('micros and dollars round-trip exactly for every micro amount (6 decimals)', () => {
    const samples = [0, 1, 2, 3, 7, 10, 99, 100, 101, 130, 260, 999, 2600, 123_456, 999_999, 1_000_000, 1_000_001];
    for (let m = 0; m < 5000; m += 7) samples.push(m, m * 1013);
    for (const micros of samples) {
      const usd = microsToUsd(micros);
      expect(usdToMicros(usd)).toBe(micros);
      expect(usdToMicrosCeil(usd)).toBe(micros);
      // At most 6 decimals in the JSON the client sees.
      expect(Number(usd.toFixed(6))).toBe(usd);
    }
  });

  test('dollar amounts round-trip through micros', () => {
    for (const usd of [0, 0.000001, 0.00013, 0.0026, 0.1, 0.3, 1, 1.23, 19.99, 123.456789]) {
      expect(microsToUsd(usdToMicros(usd))).toBe(usd);
    }
  });

  test('never negative, whichever way', () => {
    expect(microsToUsd(-5)).toBe(0);
    expect(usdToMicros(-0.5)).toBe(0);
    expect(usdToMicrosCeil(-0.5)).toBe(0);
    expect(Object.is(microsToUsd(-5), -0)).toBe(false);
  });

  test('estimates round up (never understated), binary noise aside', () => {
    expect(usdToMicrosCeil(0.0000011)).toBe(2);
    expect(usdToMicrosCeil(0.1 * 3)).toBe(300_000);
    expect(usdToMicros(0.0000014)).toBe(1);
    expect(MICROS_PER_USD).toBe(1_000_000);
  });
});

const task = (fields: FieldSpec[] | null = null, outputFormat: 'json' | 'text' = 'json'): TaskSpec => ({
  prompt: 'Extract',
  outputFormat,
  fields,
  schemaId: null,
  schemaLabel: fields ? 'Test' : null,
  promptScaffold: null,
});
// A scan: ~100 KB a page (the planner tells scans from text PDFs by their bytes per page, shared/providers/predict.ts).
const pdf = (pages: number): FileFacts => ({ mime: 'application/pdf', kind: 'pdf', sizeBytes: 100_000 * pages, pages });
const image: FileFacts = { mime: 'image/jpeg', kind: 'image', sizeBytes: 42_294, width: 834, height: 800, pages: 1 };
const f = (name: string, type: FieldSpec['type'] = 'string'): FieldSpec => ({ name, type, required: false });

describe('planRun', () => {
  test('a 20-page PDF is estimated at 20 x the local OCR page price with margin', () => {
    const plan = planRun(pdf(20), task(), ['local']);
    // 20 x the table's OCR page cost, plus the table's margin.
    expect(plan.estimateMicros).toBe(Math.ceil(20 * OCR_PAGE_COST_MICROS * (1 + rawPricing.marginPct / 100) - 1e-9));
    expect(plan.estimateMicros).toBe(estimateMicros(20));
    expect(plan.strategy).toBe('ocr_then_analyze');
    expect(plan.candidates).toEqual(['local']);
  });

  test('an image is one page', () => {
    const plan = planRun(image, task([f('total', 'number')]), ['local']);
    expect(plan.estimateMicros).toBe(estimateMicros(1));
  });

  test('the estimate grows with the page count', () => {
    expect(planRun(pdf(2), task(), ['local']).estimateMicros).toBe(
      2 * planRun(pdf(1), task(), ['local']).estimateMicros,
    );
  });

  test("configured candidates keep their order and the estimate is the primary path's worst case", () => {
    const plan = planRun(image, task([f('total')]), ['openai', 'local'], { explicitOrder: true });
    expect(plan.candidates).toEqual(['openai', 'local']);
    expect(plan.estimateMicros).toBeGreaterThan(planRun(image, task([f('total')]), ['local']).estimateMicros);
    expect(availableProviders(['openai'])).toEqual(['openai']);
  });

  test("the estimate is the primary path's prediction alone: a later fallback holds no reserve", () => {
    const fields = task([f('total')]);
    const alone = (id: 'textract' | 'openai' | 'local') => planRun(image, fields, [id]).estimateMicros;
    expect(planRun(image, fields, ['textract', 'local'], { explicitOrder: true }).estimateMicros).toBe(
      alone('textract'),
    );
    expect(planRun(image, fields, ['openai', 'textract'], { explicitOrder: true }).estimateMicros).toBe(
      alone('openai'),
    );
    expect(planRun(image, fields, ['local', 'openai'], { explicitOrder: true }).estimateMicros).toBe(alone('local'));
    expect(alone('local')).toBe(estimateMicros(1));
  });

  test('prices are exact in integers: cost x (1 + margin), rounded up to the micro, never one micro more', () => {
    // 42 500 x 1.1 is 46 750.000000000007 in floating point.
    expect(priceFor(42_500, 10)).toBe(46_750);
    expect(priceFor(1, 30)).toBe(2);
    expect(priceFor(0, 30)).toBe(0);
    expect(priceFor(1_000, 33.33)).toBe(1_334);
  });

  test('at any margin, after a primary billed as predicted, local still fits the default spend limit (2 x estimate)', () => {
    const fields = task([f('total')]);
    for (const marginPct of [0, 7, 10, 30, 33.3]) {
      for (let pages = 1; pages <= 200; pages += 1) {
        const facts = pdf(pages);
        const plan = planRun(facts, fields, ['textract', 'local'], { explicitOrder: true, marginPct });
        const spent = catalog.textract?.maxCostMicros(facts, fields) ?? 0;
        const local = catalog.local?.maxCostMicros(facts, fields) ?? 0;
        // The worker's check before the fallback (shared/worker/attempts.ts), at SERVICE_MAX_OVERRUN_RATIO's default.
        expect(priceFor(spent + local, marginPct)).toBeLessThanOrEqual(2 * plan.estimateMicros);
      }
    }
  });

  test('without configured order, cloud candidates are cheapest first for the file and local is last', () => {
    const plan = planRun(image, task([f('total')]), ['local', 'openai', 'bedrock']);
    expect(plan.candidates).toEqual(['bedrock', 'openai', 'local']);
    const reversed = planRun(image, task([f('total')]), ['openai', 'local', 'bedrock']);
    expect(reversed.candidates).toEqual(plan.candidates);
  });

  test('keyed providers are available when their key is set, IAM providers when AWS credentials are', () => {
    expect(availableProviders(undefined, { OPENAI_API_KEY: 'x' })).toEqual(['openai', 'local']);
    expect(availableProviders(undefined, { AWS_ACCESS_KEY_ID: 'x', AWS_REGION: 'us-east-1' })).toEqual([
      'bedrock',
      'textract',
      'local',
    ]);
    expect(availableProviders(undefined, { AWS_ACCESS_KEY_ID: 'x', VISION_DISABLE_IAM_PROVIDERS: 'true' })).toEqual([
      'local',
    ]);
  });

  test('without configuration, local is always available (and providers without credentials are not)', () => {
    expect(availableProviders(undefined, {})).toEqual(['local']);
  });

  test('strategies: PDFs go through OCR; open-ended image prompts get the generic summary', () => {
    expect(classify(pdf(1), task([f('a')]), ['local'])).toBe('ocr_then_analyze');
    expect(classify(image, task(null), ['local'])).toBe('generic_vision_summary');
    // A schema on an image with only a non-vision provider: OCR first.
    expect(classify(image, task([f('a')]), ['local'])).toBe('ocr_then_analyze');
  });
});

describe('planRun: chained OCR-then-analyze plans and providers that answer the task', () => {
  const step = (id: 'textract' | 'local' | 'openai', facts: FileFacts, t: TaskSpec, s: 'ocr' | 'analyze') =>
    catalog[id]?.stepCostMicros(facts, t, s) ?? Number.NaN;

  test('an open question on a 20-page scan: Textract reads, a language model answers, each step predicted', () => {
    const facts = pdf(20);
    const question = task(null);
    const plan = planRun(facts, question, ['openai', 'textract', 'local']);
    expect(plan.strategy).toBe('ocr_then_analyze');
    expect(plan.ocrCandidates).toEqual(['textract', 'local']);
    expect(plan.candidates).toEqual(['openai', 'local']);
    const held =
      step('textract', facts, question, 'ocr') +
      (predictAttempt('openai', facts, question, 'analyze')?.costMicros ?? 0);
    expect(plan.estimateMicros).toBe(priceFor(held));
    // Cheaper than the language model reading the 20 pages itself, which is what the plan would otherwise be.
    expect(plan.estimateMicros).toBeLessThan(planRun(facts, question, ['openai', 'local']).estimateMicros);
  });

  test('the chain is chosen only when cheaper: a one-page transcription stays with Textract alone', () => {
    const plan = planRun(pdf(1), task(null, 'text'), ['openai', 'textract', 'local']);
    expect(plan.ocrCandidates).toBeUndefined();
    expect(plan.candidates).toEqual(['textract', 'openai', 'local']);
  });

  test('no chain without a cloud OCR engine: local tesseract never stands between a model and the pages', () => {
    const plan = planRun(pdf(20), task(null), ['openai', 'local']);
    expect(plan.ocrCandidates).toBeUndefined();
    expect(plan.candidates).toEqual(['openai', 'local']);
  });

  test('no chain for images: a vision model reads the picture directly', () => {
    expect(planRun(image, task([f('total')]), ['openai', 'textract', 'local']).ocrCandidates).toBeUndefined();
  });

  test('a provider that would only return the text comes after those that answer, however cheap', () => {
    // "Describe this photo": Textract is cheapest but would answer with the words it finds.
    const plan = planRun(image, task(null), ['textract', 'openai', 'local']);
    expect(plan.candidates).toEqual(['openai', 'textract', 'local']);
    // A receipt: AnalyzeExpense answers natively, so Textract keeps its place by price.
    const receipt = { ...task([f('merchant'), f('total', 'number')]), schemaId: 'receipt' };
    expect(planRun(image, receipt, ['openai', 'textract', 'local']).candidates[0]).toBe('textract');
  });

  test('VISION_PROVIDERS order is kept as written: no reordering, and no chain putting an OCR engine first', () => {
    const plan = planRun(image, task(null), ['textract', 'openai', 'local'], { explicitOrder: true });
    expect(plan.candidates).toEqual(['textract', 'openai', 'local']);
    // The 20-page open question that gets a chain without VISION_PROVIDERS (above) stays one pass, in order.
    const scan = planRun(pdf(20), task(null), ['openai', 'textract', 'local'], { explicitOrder: true });
    expect(scan.ocrCandidates).toBeUndefined();
    expect(scan.candidates).toEqual(['openai', 'textract', 'local']);
  });

  test("in a chain, local's analysis is held at its text-layer price (it is given the text)", () => {
    expect(catalog.local?.stepCostMicros(pdf(3), task(null), 'analyze')).toBe(
      3 * Math.round(rawPricing.providers.local.textLayerPageUsd * 1_000_000),
    );
    expect(catalog.local?.stepCostMicros(pdf(3), task(null), 'ocr')).toBe(3 * OCR_PAGE_COST_MICROS);
  });
});

function output(result: Record<string, unknown>, extra: Partial<ProviderOutput> = {}): ProviderOutput {
  return { result, usage: { billableUnits: 1, costMicros: 100 }, ...extra };
}

describe('shapeResult', () => {
  const fields = [f('merchant'), f('total', 'number'), f('date', 'date'), f('paid', 'boolean'), f('items', 'array')];

  test('keeps exactly the schema fields, with null for what is missing, and drops extras', () => {
    const shaped = shapeResult(
      task(fields),
      output({ merchant: 'ACME', total: '$1,042.50', unexpected: 'x', paid: 'yes' }),
    );
    expect(shaped).toEqual({ merchant: 'ACME', total: 1042.5, date: null, paid: true, items: null });
    expect(Object.keys(shaped)).toEqual(['merchant', 'total', 'date', 'paid', 'items']);
  });

  test('never invents a value: an uncoercible value becomes null', () => {
    const shaped = shapeResult(
      task(fields),
      output({ total: 'about twelve', paid: 'maybe', items: 'a, b', date: '  ' }),
    );
    expect(shaped).toEqual({ merchant: null, total: null, date: null, paid: null, items: null });
  });

  test('a number field takes an amount as printed, never digits picked out of other text', () => {
    expect(coerce('$1,042.50', 'number')).toBe(1042.5);
    expect(coerce('42,50 €', 'number')).toBe(42.5);
    expect(coerce('(12.00)', 'number')).toBe(-12);
    expect(coerce('1.234,56', 'number')).toBe(1234.56);
    // An IBAN, a phone number, a date: not amounts (this once became 89370400440532013000).
    expect(coerce('DE89 3704 0044 0532 0130 00', 'number')).toBeNull();
    expect(coerce('+1 (555) 010-9999', 'number')).toBeNull();
    expect(coerce('2026-11-02', 'number')).toBeNull();
    expect(coerce('3 items 42.50', 'number')).toBeNull();
  });

  test('integers stay integers or become null', () => {
    expect(coerce('12', 'integer')).toBe(12);
    expect(coerce(12.5, 'integer')).toBeNull();
    expect(coerce({ a: 1 }, 'object')).toEqual({ a: 1 });
    expect(coerce([1], 'object')).toBeNull();
  });

  test('text output is its one page, from the provider text or else the document text (get-run joins the text)', () => {
    const page = (text: string) => ({ pages: [{ page: 1, text }] });
    expect(shapeResult(task(null, 'text'), output({ text: 'hello' }))).toEqual(page('hello'));
    expect(shapeResult(task([f('a')], 'text'), output({ a: 1 }, { documentText: 'doc' }))).toEqual(page('doc'));
    expect(shapeResult(task(null, 'text'), output({}))).toEqual(page(''));
    // What the API shows for it: {text, pages} (contract-v1.1 §2), for one page as for many.
    expect(viewResult('text', page('hello'))).toEqual({ text: 'hello', pages: [{ page: 1, text: 'hello' }] });
    // A one-page run settled before, stored as {text}: shown with its one page too.
    expect(viewResult('text', { text: 'hello' })).toEqual({ text: 'hello', pages: [{ page: 1, text: 'hello' }] });
  });

  test('without a schema the provider result passes through', () => {
    expect(shapeResult(task(null), output({ summary: 'a receipt' }))).toEqual({ summary: 'a receipt' });
  });
});

describe('computeConfidence', () => {
  const fields = [f('merchant'), f('total', 'number'), f('date'), f('tax', 'number')];
  const doc = 'ACME HARDWARE\nDate: 2026-11-02\nTax: 4.00\nTotal: 42.50';

  test('stays within [0, 1] whatever the provider reports', () => {
    for (const native of [-3, -0.1, 0, 0.3, 1, 1.7, Number.NaN, Number.POSITIVE_INFINITY, undefined]) {
      for (const result of [{}, { merchant: 'ACME HARDWARE', total: 42.5, date: '2026-11-02', tax: 4 }]) {
        const extra = native === undefined ? {} : { nativeConfidence: native };
        for (const value of [
          computeConfidence(fields, result, output(result, { ...extra, documentText: doc })),
          computeConfidence(null, result, output(result, extra)),
        ]) {
          expect(value).toBeGreaterThanOrEqual(0);
          expect(value).toBeLessThanOrEqual(1);
        }
      }
    }
  });

  test('rises with coverage (more fields found)', () => {
    const few = { merchant: 'ACME HARDWARE', total: null, date: null, tax: null };
    const more = { merchant: 'ACME HARDWARE', total: 42.5, date: null, tax: null };
    const all = { merchant: 'ACME HARDWARE', total: 42.5, date: '2026-11-02', tax: 4 };
    const c = (r: Record<string, unknown>) =>
      computeConfidence(fields, r, output(r, { nativeConfidence: 0.8, documentText: doc }));
    expect(c(more)).toBeGreaterThan(c(few));
    expect(c(all)).toBeGreaterThan(c(more));
  });

  test('rises with grounding (values found in the document text)', () => {
    const grounded = { merchant: 'ACME HARDWARE', total: 42.5, date: '2026-11-02', tax: 4 };
    const invented = { merchant: 'Globex', total: 99.99, date: '1999-01-01', tax: 7 };
    const c = (r: Record<string, unknown>) =>
      computeConfidence(fields, r, output(r, { nativeConfidence: 0.8, documentText: doc }));
    expect(c(grounded)).toBeGreaterThan(c(invented));
  });

  test('rises with the provider native confidence', () => {
    const r = { merchant: 'ACME HARDWARE', total: 42.5, date: null, tax: null };
    const low = computeConfidence(fields, r, output(r, { nativeConfidence: 0.2, documentText: doc }));
    const high = computeConfidence(fields, r, output(r, { nativeConfidence: 0.9, documentText: doc }));
    expect(high).toBeGreaterThan(low);
  });

  test('nothing found scores below anything found', () => {
    const none = { merchant: null, total: null, date: null, tax: null };
    const one = { merchant: 'ACME HARDWARE', total: null, date: null, tax: null };
    expect(computeConfidence(fields, none, output(none))).toBeLessThan(computeConfidence(fields, one, output(one)));
  });
});
