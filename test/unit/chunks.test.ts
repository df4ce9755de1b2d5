/** Chunk planning (shared/planning/chunks.ts) and the hold of a chunked run (shared/planning/plan.ts). */
import type { FileFacts } from '../../shared/file-facts.js';
import { chunkedCostMicros, chunkRanges, MAX_PAGES_PER_CALL, pagesPerChunk } from '../../shared/planning/chunks.js';
import { predictedCostMicros } from '../../shared/planning/estimate.js';
import { chainedPlan, planRun } from '../../shared/planning/plan.js';
import { priceFor } from '../../shared/pricing/pricing.js';
import { catalog } from '../../shared/providers/catalog.js';
import type { FieldSpec, ProviderId, TaskSpec } from '../../shared/task.js';
import { pagesLeft } from '../../shared/worker/checkpoints.js';

const task = (fields: FieldSpec[] | null, outputFormat: 'json' | 'text' = 'json'): TaskSpec => ({
  prompt: 'Extract',
  outputFormat,
  fields,
  schemaId: null,
  schemaLabel: fields ? 'Test' : null,
  promptScaffold: null,
});
const pdf = (pages: number): FileFacts => ({ mime: 'application/pdf', kind: 'pdf', sizeBytes: 100_000, pages });
const image: FileFacts = { mime: 'image/png', kind: 'image', sizeBytes: 42_000, width: 800, height: 800, pages: 1 };
const field = (name: string, type: FieldSpec['type'] = 'string'): FieldSpec => ({ name, type, required: false });
const TEXT = task(null, 'text');
const SCALARS = task([field('vendor'), field('total', 'number')]);
const LLMS: ProviderId[] = ['openai', 'anthropic', 'gemini', 'bedrock'];

describe('pagesPerChunk', () => {
  test('text output is one page per call, for every provider', () => {
    for (const id of [...LLMS, 'textract', 'local'] as ProviderId[]) expect(pagesPerChunk(pdf(40), TEXT, [id])).toBe(1);
  });

  test('an image or a one-page PDF is one call', () => {
    expect(pagesPerChunk(image, TEXT, ['openai'])).toBe(1);
    expect(pagesPerChunk(pdf(1), SCALARS, ['openai'])).toBe(1);
  });

  test('JSON stays one call while it fits, and is cut at MAX_PAGES_PER_CALL pages beyond', () => {
    expect(pagesPerChunk(pdf(20), SCALARS, LLMS)).toBe(20);
    expect(pagesPerChunk(pdf(300), SCALARS, ['openai', 'local'])).toBe(MAX_PAGES_PER_CALL);
  });

  test("JSON with list fields gets as many pages as every candidate's output cap holds in full", () => {
    // Four list fields: Anthropic allows 512 tokens per page within its 32,000-token ceiling, OpenAI 1,024 per list
    // field and page within 128,000.
    const lists = task(['items', 'payments', 'taxes', 'notes'].map((n) => field(n, 'array')));
    const size = pagesPerChunk(pdf(300), lists, ['openai', 'anthropic']);
    expect(size).toBeGreaterThan(1);
    expect(size).toBeLessThan(MAX_PAGES_PER_CALL);
    for (const id of ['openai', 'anthropic'] as const) {
      const fits = catalog[id]?.outputFits;
      expect(fits?.(pdf(size), lists, 'vision')).toBe(true);
    }
    // The next page more would be cut by one of them.
    expect(
      ['openai', 'anthropic'].some(
        (id) => catalog[id as ProviderId]?.outputFits?.(pdf(size + 1), lists, 'vision') === false,
      ),
    ).toBe(true);
  });
});

describe('chunkRanges', () => {
  test('covers every page once, in order, the last chunk shorter', () => {
    expect(chunkRanges(7, 3)).toEqual([
      { first: 1, last: 3 },
      { first: 4, last: 6 },
      { first: 7, last: 7 },
    ]);
    expect(chunkRanges(3, 1)).toEqual([
      { first: 1, last: 1 },
      { first: 2, last: 2 },
      { first: 3, last: 3 },
    ]);
    expect(chunkRanges(2, 50)).toEqual([{ first: 1, last: 2 }]);
  });
});

describe('the hold of a chunked run', () => {
  // A chunk carries its share of the file's bytes (chunkedCostMicros).
  const share = (facts: FileFacts, pages: number): FileFacts => ({
    ...facts,
    pages,
    sizeBytes: Math.ceil((facts.sizeBytes * pages) / facts.pages),
  });

  test("a 40-page text run holds every page's predicted call", () => {
    const plan = planRun(pdf(40), TEXT, ['openai', 'local'], { explicitOrder: true });
    expect(plan.chunkPages).toBe(1);
    const perPage = predictedCostMicros('openai', share(pdf(40), 1), TEXT) ?? 0;
    expect(perPage).toBeGreaterThan(0);
    expect(plan.estimateMicros).toBe(priceFor(40 * perPage));
  });

  test('a run that fits one call is not chunked and holds its one predicted call', () => {
    const plan = planRun(pdf(20), SCALARS, ['openai', 'local'], { explicitOrder: true });
    expect(plan.chunkPages).toBeUndefined();
    expect(plan.estimateMicros).toBe(priceFor(predictedCostMicros('openai', pdf(20), SCALARS) ?? 0));
  });

  test("a plan in chunks holds the cheaper of every chunk's chain and every chunk's single pass", () => {
    const providers: ProviderId[] = ['textract', 'openai', 'local'];
    const plan = planRun(pdf(120), SCALARS, providers);
    expect(plan.chunkPages).toBe(MAX_PAGES_PER_CALL);
    const chains = chunkedCostMicros(pdf(120), 50, (c) => chainedPlan(c, SCALARS, providers)?.costMicros) ?? 0;
    const primary = plan.ocrCandidates ? undefined : plan.candidates[0];
    const singles =
      primary === undefined
        ? Number.POSITIVE_INFINITY
        : (chunkedCostMicros(pdf(120), 50, (c) => predictedCostMicros(primary, c, SCALARS)) ?? 0);
    expect(plan.estimateMicros).toBe(priceFor(Math.min(chains, singles)));
  });

  test('chunkedCostMicros sums full chunks and the shorter last one', () => {
    const bound = (f: FileFacts) => f.pages * 10 + 1;
    expect(chunkedCostMicros(pdf(7), 3, bound)).toBe(2 * 31 + 11);
    expect(chunkedCostMicros(pdf(6), 3, bound)).toBe(2 * 31);
  });
});

describe('pagesLeft (what a resumed run still asks for)', () => {
  test('pages a checkpoint covers are left out, a chunk covered in pieces (after a split) included', () => {
    const planned = chunkRanges(30, 10);
    const done = [
      { first: 1, last: 10 },
      { first: 11, last: 15 },
      { first: 26, last: 30 },
    ];
    expect(pagesLeft(planned, done)).toEqual([
      { first: 16, last: 20 },
      { first: 21, last: 25 },
    ]);
    expect(pagesLeft(planned, [])).toEqual(planned);
    expect(pagesLeft(planned, planned)).toEqual([]);
  });
});
