/**
 * Each provider's published input-token rule, pinned against the examples its documentation gives (sources in
 * shared/providers/tokens.ts and docs/pricing.md), and the prediction and calibration built on them.
 */
import type { FileFacts } from '../../shared/file-facts.js';
import { predictAttempt } from '../../shared/planning/estimate.js';
import {
  addSample,
  CALIBRATION_WINDOW,
  type CalibrationState,
  FACTOR_RANGE,
  factorsOf,
  MIN_SAMPLES,
  percentile,
  seedFor,
  usableSample,
} from '../../shared/pricing/calibration.js';
import { localCost } from '../../shared/pricing/pricing.js';
import { catalog } from '../../shared/providers/catalog.js';
import { calibrationKey, likelyTextLayer, predictAnswerTokens, taskKind } from '../../shared/providers/predict.js';
import {
  anthropicImageTokens,
  novaImageTokens,
  openaiPatchCount,
  openaiPatchTokens,
  openaiTileTokens,
} from '../../shared/providers/tokens.js';
import type { TaskSpec } from '../../shared/task.js';

describe('OpenAI', () => {
  test('patch rule: 1024 x 1024 is 1,024 patches; 1800 x 2400 is scaled to 1,452 (the images-vision guide)', () => {
    expect(openaiPatchCount({ width: 1024, height: 1024 }, 1536)).toBe(1024);
    expect(openaiPatchCount({ width: 1800, height: 2400 }, 1536)).toBe(1452);
    // GPT-4.1 mini's multiplier: 1,452 x 1.62 = 2,352.24 tokens, billed whole.
    expect(openaiPatchTokens({ width: 1800, height: 2400 }, 1536, 1.62)).toBe(2353);
  });

  test('tile rule: 1024 x 1024 is 765 tokens, 2048 x 4096 is 1,105 (GPT-4o: 85 + 170 a tile)', () => {
    expect(openaiTileTokens({ width: 1024, height: 1024 }, 85, 170)).toBe(765);
    expect(openaiTileTokens({ width: 2048, height: 4096 }, 85, 170)).toBe(1105);
  });
});

describe('Anthropic', () => {
  test('width x height / 750: 200 x 200 ~54, 1000 x 1000 ~1,334, 1092 x 1092 ~1,590 (the vision guide)', () => {
    expect(anthropicImageTokens({ width: 200, height: 200 })).toBe(54);
    expect(anthropicImageTokens({ width: 1000, height: 1000 })).toBe(1334);
    expect(anthropicImageTokens({ width: 1092, height: 1092 })).toBe(1590);
  });

  test('a larger image is scaled down first: never more than ~1,600 tokens', () => {
    expect(anthropicImageTokens({ width: 4000, height: 3000 })).toBe(1600);
  });
});

describe('Amazon Nova', () => {
  test.each([
    [900, 450, 800],
    [900, 900, 1300],
    [1400, 900, 1800],
    [1800, 900, 2400],
    [1300, 1300, 2600],
  ])('%i x %i is ~%i tokens (the Nova user guide)', (width, height, tokens) => {
    expect(novaImageTokens({ width, height })).toBe(tokens);
  });

  test('a small image is scaled up to a ~896 px long side before it is counted', () => {
    expect(novaImageTokens({ width: 448, height: 448 })).toBe(novaImageTokens({ width: 896, height: 896 }));
  });
});

const task = (over: Partial<TaskSpec> = {}): TaskSpec => ({
  prompt: 'Extract the receipt',
  outputFormat: 'json',
  fields: [
    { name: 'merchant', type: 'string', required: false },
    { name: 'total', type: 'number', required: false },
  ],
  schemaId: null,
  schemaLabel: null,
  promptScaffold: null,
  ...over,
});
const receipt: FileFacts = { mime: 'image/png', kind: 'image', sizeBytes: 13_775, width: 800, height: 834, pages: 1 };
const pdf = (pages: number, sizeBytes: number): FileFacts => ({
  mime: 'application/pdf',
  kind: 'pdf',
  sizeBytes,
  pages,
});

describe('output prediction', () => {
  test('task kinds: fields, an open question, a transcription and a summary', () => {
    expect(taskKind(task())).toBe('fields');
    expect(taskKind(task({ fields: null }))).toBe('open');
    expect(taskKind(task({ outputFormat: 'text', fields: null, prompt: 'Transcribe the page' }))).toBe('text');
    expect(taskKind(task({ outputFormat: 'text', fields: null, prompt: 'Summarise the document' }))).toBe('summary');
  });

  test('a list field grows with the pages; a transcription with the text it is given', () => {
    const lines = task({ fields: [{ name: 'lineItems', type: 'array', required: false }] });
    expect(predictAnswerTokens(pdf(4, 400_000), lines, 'vision')).toBeGreaterThan(
      3 * predictAnswerTokens(pdf(1, 100_000), lines, 'vision'),
    );
    const transcribe = task({ outputFormat: 'text', fields: null, prompt: 'Transcribe' });
    expect(predictAnswerTokens(pdf(1, 1000), transcribe, 'analyze', { documentTextChars: 4000 })).toBe(1005);
  });

  test('a PDF of a few KB a page is taken for text, a larger one for a scan', () => {
    expect(likelyTextLayer(pdf(20, 12_000))).toBe(true);
    expect(likelyTextLayer(pdf(1, 25_875))).toBe(false);
  });

  test('local: a text-layer PDF is predicted at the text-layer page price, a scan or an image at the OCR price', () => {
    const price = (facts: FileFacts) => predictAttempt('local', facts, task(), 'vision')?.costMicros;
    const ocrPage = localCost.ocrPageMicros;
    // twenty-pages.pdf and scanned.pdf as the local provider bills them (local-provider.ts).
    expect(price(pdf(20, 11_948))).toBe(20 * localCost.textLayerPageMicros);
    expect(price(pdf(1, 25_875))).toBe(ocrPage);
    expect(price(receipt)).toBe(ocrPage);
    // The hold still covers OCR of every page, whatever the guess.
    expect(catalog.local?.maxCostMicros(pdf(20, 11_948), task())).toBe(20 * ocrPage);
  });

  test("a receipt's predicted cost is a fraction of the profile's worst case (which the estimate used to be)", () => {
    for (const provider of ['openai', 'anthropic', 'gemini', 'bedrock'] as const) {
      const predicted = predictAttempt(provider, receipt, task(), 'vision')?.costMicros ?? Number.NaN;
      const bound = catalog[provider]?.maxCostMicros(receipt, task()) ?? Number.NaN;
      expect(predicted).toBeGreaterThan(0);
      expect(predicted * 4).toBeLessThan(bound);
    }
  });
});

describe('calibration', () => {
  const key = calibrationKey('openai', task(), 'vision');
  const sample = (output: number) => ({
    key,
    predicted: { input: 1000, output: 100 },
    actual: { input: 1000, output },
  });
  const feed = (state: CalibrationState | undefined, outputs: number[]) =>
    outputs.reduce((s, o) => addSample(s, sample(o)), state);

  test('without history a key uses its shipped seed', () => {
    expect(factorsOf(key, undefined)).toEqual(seedFor(key));
  });

  test('one outlier among few runs does not move the factor: the seed fills the window', () => {
    const state = feed(undefined, [1000]);
    expect(factorsOf(key, state).output).toBe(seedFor(key).output);
  });

  test('one outlier among many runs does not move the 95th percentile either', () => {
    const steady = feed(undefined, Array(MIN_SAMPLES * 2).fill(110));
    expect(factorsOf(key, feed(steady, [5000])).output).toBeCloseTo(1.1);
  });

  test('answers systematically 40 % longer move the factor up within a few runs', () => {
    const steady = feed(undefined, Array(CALIBRATION_WINDOW).fill(100));
    expect(factorsOf(key, steady).output).toBeCloseTo(1);
    expect(factorsOf(key, feed(steady, [140, 140, 140])).output).toBeCloseTo(1.4);
  });

  test('the factor is clamped whatever the history; the window keeps the most recent runs', () => {
    const huge = feed(undefined, Array(CALIBRATION_WINDOW + 10).fill(100_000));
    expect(factorsOf(key, huge).output).toBe(FACTOR_RANGE.max);
    expect(huge?.output).toHaveLength(CALIBRATION_WINDOW);
  });

  test('a sample with missing or nonsensical counts is not learnt from', () => {
    expect(usableSample({ ...sample(100), actual: { input: Number.NaN, output: 10 } })).toBe(false);
    expect(usableSample({ ...sample(100), actual: { input: 0, output: 10 } })).toBe(false);
    expect(usableSample(sample(100))).toBe(true);
  });

  test('percentile is nearest-rank', () => {
    expect(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.95)).toBe(10);
    expect(
      percentile(
        [...Array(20).keys()].map((n) => n + 1),
        0.95,
      ),
    ).toBe(19);
  });
});
