/**
 * tryCandidates: deadlines per attempt, fallback on any failure, the budget cap, what counts as a request, and the
 * estimate's own step and attempt. Over 400 lines: one describe per rule of one function, against one plan factory.
 */
import type { FileFacts } from '../../shared/file-facts.js';
import type { TaskSpec } from '../../shared/task.js';
import { type AttemptsInput, plannedFloor, tryCandidates } from '../../shared/worker/attempts.js';
import { abortable, failing, hanging, rateLimitedThenSucceeding, succeeding, throwing } from '../support/adapters.js';
import { estimateMicros, OCR_PAGE_COST_MICROS, priceMicros } from '../support/pricing.js';

const facts: FileFacts = { mime: 'image/png', kind: 'image', sizeBytes: 100, width: 10, height: 10, pages: 1 };
const task: TaskSpec = {
  prompt: 'p',
  outputFormat: 'json',
  fields: null,
  schemaId: null,
  schemaLabel: null,
  promptScaffold: null,
};

function plan(overrides: Partial<AttemptsInput>): AttemptsInput {
  return {
    candidates: ['local'],
    adapters: {},
    input: { bytes: new Uint8Array([1]), facts, task },
    capMicros: 1_000_000,
    deadlineMs: Date.now() + 10_000,
    // Every scripted provider is bounded like one local OCR page, so the budget arithmetic stays readable.
    costBound: () => OCR_PAGE_COST_MICROS,
    ...overrides,
  };
}

describe('the attempt deadline', () => {
  test('aborts an adapter that hangs and ignores its signal, recording a timeout', async () => {
    const started = Date.now();
    const outcome = await tryCandidates(
      // Long enough that a loaded machine still starts the candidate before the deadline (else it is `skipped`).
      plan({ candidates: ['openai'], adapters: { openai: hanging('openai') }, deadlineMs: Date.now() + 500 }),
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(outcome.output).toBeNull();
    expect(outcome.attempts).toEqual([
      { provider: 'openai', step: 'vision', outcome: 'failed', latencyMs: expect.any(Number), failure: 'timeout' },
    ]);
    expect(outcome.attempts[0]?.latencyMs).toBeGreaterThanOrEqual(40);
  });

  test('aborts an adapter that honours its signal, recording a timeout', async () => {
    const adapter = abortable('openai');
    const outcome = await tryCandidates(
      plan({ candidates: ['openai'], adapters: { openai: adapter }, deadlineMs: Date.now() + 60 }),
    );
    expect(outcome.attempts[0]?.failure).toBe('timeout');
    expect(adapter.calls[0]?.options.signal.aborted).toBe(true);
  });

  test('a timed-out candidate falls back to the next one, which gets the remaining time', async () => {
    const overall = Date.now() + 400;
    const openai = hanging('openai');
    const local = succeeding('local');
    const outcome = await tryCandidates(
      plan({ candidates: ['openai', 'local'], adapters: { openai, local }, deadlineMs: overall }),
    );
    expect(outcome.provider).toBe('local');
    expect(outcome.attempts.map((a) => [a.provider, a.outcome, a.failure])).toEqual([
      ['openai', 'failed', 'timeout'],
      ['local', 'succeeded', undefined],
    ]);
    // The first attempt's own deadline left time for the fallback.
    expect(openai.calls[0]?.options.deadlineMs).toBeLessThan(overall);
    expect(local.calls[0]?.options.deadlineMs).toBeLessThanOrEqual(overall + 5);
  });

  test('no time is kept back for a later candidate the cap already rules out', async () => {
    const overall = Date.now() + 60_000;
    const openai = succeeding('openai');
    // local's worst case does not fit the cap: it will be skipped, so openai may use all the time.
    await tryCandidates(
      plan({
        candidates: ['openai', 'local'],
        adapters: { openai, local: succeeding('local') },
        deadlineMs: overall,
        capMicros: priceMicros(OCR_PAGE_COST_MICROS),
        costBound: (p) => (p === 'local' ? 10 * OCR_PAGE_COST_MICROS : OCR_PAGE_COST_MICROS),
      }),
    );
    expect(openai.calls[0]?.options.deadlineMs).toBeGreaterThan(overall - 1_000);
    // With a later candidate that fits, the first leaves it time (a slice of 15 s).
    const first = succeeding('openai');
    await tryCandidates(
      plan({
        candidates: ['openai', 'local'],
        adapters: { openai: first, local: succeeding('local') },
        deadlineMs: overall,
      }),
    );
    expect(first.calls[0]?.options.deadlineMs).toBeLessThanOrEqual(overall - 14_000);
  });

  test('when the time is used up, later candidates are skipped without being called', async () => {
    const local = succeeding('local');
    const outcome = await tryCandidates(
      plan({ candidates: ['local'], adapters: { local }, deadlineMs: Date.now() - 1 }),
    );
    expect(local.calls).toHaveLength(0);
    expect(outcome.attempts).toEqual([
      { provider: 'local', step: 'vision', outcome: 'skipped', latencyMs: 0, failure: 'timeout' },
    ]);
    expect(outcome.requests).toBe(0);
  });
});

describe('fallback and accounting', () => {
  test('every failure kind moves on to the next candidate; the first success ends the plan', async () => {
    const anthropic = succeeding('anthropic');
    const gemini = succeeding('gemini');
    const outcome = await tryCandidates(
      plan({
        candidates: ['openai', 'bedrock', 'anthropic', 'gemini'],
        adapters: {
          openai: failing('openai', 'auth'),
          bedrock: throwing('bedrock', new TypeError('x is undefined')),
          anthropic,
          gemini,
        },
      }),
    );
    expect(outcome.provider).toBe('anthropic');
    expect(outcome.attempts.map((a) => [a.provider, a.outcome, a.failure])).toEqual([
      ['openai', 'failed', 'auth'],
      ['bedrock', 'failed', 'server'],
      ['anthropic', 'succeeded', undefined],
    ]);
    expect(gemini.calls).toHaveLength(0);
    expect(outcome.requests).toBe(3);
  });

  test('requests counts invocations only: skipped candidates and providers absent from the build are not requests', async () => {
    const outcome = await tryCandidates(
      plan({
        candidates: ['openai', 'gemini', 'local', 'anthropic'],
        adapters: {
          openai: failing('openai', 'server', { billableUnits: 1, costMicros: 80 }),
          // gemini: no adapter in this build
          local: succeeding('local'),
          anthropic: succeeding('anthropic', { usage: { billableUnits: 1, costMicros: 10 } }),
        },
        // Local alone would fit the cap exactly, but not after the 80 micros openai spent: skipped.
        capMicros: estimateMicros(1),
        // The others are bounded by the little they cost, so only local's bound is at stake.
        costBound: (provider) => (provider === 'local' ? OCR_PAGE_COST_MICROS : 10),
      }),
    );
    expect(outcome.attempts.map((a) => [a.provider, a.outcome, a.failure])).toEqual([
      ['openai', 'failed', 'server'],
      ['gemini', 'failed', 'client'],
      ['local', 'skipped', 'over_budget'],
      ['anthropic', 'succeeded', undefined],
    ]);
    expect(priceMicros(80 + OCR_PAGE_COST_MICROS)).toBeGreaterThan(estimateMicros(1));
    expect(outcome.requests).toBe(2);
    // The failed attempt's reported usage is part of the run's cost.
    expect(outcome.costMicros).toBe(90);
  });

  test('with every candidate failing there is no output and the attempts say why', async () => {
    const outcome = await tryCandidates(
      plan({
        candidates: ['openai', 'local'],
        adapters: { openai: failing('openai', 'refusal'), local: failing('local') },
      }),
    );
    expect(outcome.output).toBeNull();
    expect(outcome.provider).toBeNull();
    expect(outcome.attempts.map((a) => a.failure)).toEqual(['refusal', 'server']);
    expect(outcome.requests).toBe(2);
  });

  test('a candidate within the cap is called; exactly at the cap is within it', async () => {
    // local, one page: its worst case is one OCR'd page at the client's price.
    const local = succeeding('local');
    const outcome = await tryCandidates(
      plan({ candidates: ['local'], adapters: { local }, capMicros: estimateMicros(1) }),
    );
    expect(local.calls).toHaveLength(1);
    expect(outcome.provider).toBe('local');
  });

  test('a candidate one micro over the cap is skipped', async () => {
    const local = succeeding('local');
    const outcome = await tryCandidates(
      plan({ candidates: ['local'], adapters: { local }, capMicros: estimateMicros(1) - 1 }),
    );
    expect(local.calls).toHaveLength(0);
    expect(outcome.attempts[0]).toEqual(expect.objectContaining({ outcome: 'skipped', failure: 'over_budget' }));
  });
});

describe('rejected answers', () => {
  test('an answer the step rejects is a failed attempt (invalid_output, its cost counted) and the plan moves on', async () => {
    const textract = succeeding('textract', { result: { text: '' }, usage: { billableUnits: 1, costMicros: 70 } });
    const local = succeeding('local', { result: { text: 'words' } });
    const outcome = await tryCandidates(
      plan({
        candidates: ['textract', 'local'],
        adapters: { textract, local },
        reject: (output) => (output.result.text === '' ? 'no text' : undefined),
      }),
    );
    expect(outcome.provider).toBe('local');
    expect(outcome.attempts.map((a) => [a.provider, a.outcome, a.failure])).toEqual([
      ['textract', 'failed', 'invalid_output'],
      ['local', 'succeeded', undefined],
    ]);
    expect(outcome.costMicros).toBe(70 + 80);
  });
});

describe('earlier and later steps of a chained plan', () => {
  test("what an earlier step spent counts against the cap, and is not part of this step's cost", async () => {
    const local = succeeding('local', { usage: { billableUnits: 1, costMicros: 50 } });
    const cap = priceMicros(100 + OCR_PAGE_COST_MICROS);
    const fits = await tryCandidates(
      plan({ candidates: ['local'], adapters: { local }, capMicros: cap, spentMicros: 100 }),
    );
    expect(fits.costMicros).toBe(50);
    const over = await tryCandidates(
      plan({ candidates: ['local'], adapters: { local }, capMicros: cap, spentMicros: 101 }),
    );
    expect(over.attempts[0]).toEqual(expect.objectContaining({ outcome: 'skipped', failure: 'over_budget' }));
  });

  test('a candidate whose worst case would eat into what a later step keeps back is skipped', async () => {
    const local = succeeding('local');
    const cap = priceMicros(OCR_PAGE_COST_MICROS + 500);
    const fits = await tryCandidates(
      plan({ candidates: ['local'], adapters: { local }, capMicros: cap, reservedMicros: 500 }),
    );
    expect(fits.provider).toBe('local');
    const over = await tryCandidates(
      plan({ candidates: ['local'], adapters: { local }, capMicros: cap, reservedMicros: 501 }),
    );
    expect(over.output).toBeNull();
    expect(local.calls).toHaveLength(1);
  });
});

describe('cost bounds', () => {
  test('by default each candidate is bounded by its own cost model from the catalog', async () => {
    // A receipt image through OpenAI can cost far more than one local OCR page: with a local-sized cap it is skipped.
    const openai = succeeding('openai');
    const local = succeeding('local');
    const { costBound: _ignored, ...withoutBound } = plan({});
    const outcome = await tryCandidates({
      ...withoutBound,
      candidates: ['openai', 'local'],
      adapters: { openai, local },
      capMicros: estimateMicros(1),
    });
    expect(openai.calls).toHaveLength(0);
    expect(outcome.attempts.map((a) => [a.provider, a.outcome, a.failure])).toEqual([
      ['openai', 'skipped', 'over_budget'],
      ['local', 'succeeded', undefined],
    ]);
  });
});

describe('Retry-After', () => {
  test('a 429 whose Retry-After fits the deadline is waited out once and retried on the same provider', async () => {
    const openai = rateLimitedThenSucceeding('openai', 50);
    const started = Date.now();
    const outcome = await tryCandidates(
      plan({
        candidates: ['openai', 'local'],
        adapters: { openai, local: succeeding('local') },
        deadlineMs: Date.now() + 60_000,
      }),
    );
    expect(outcome.provider).toBe('openai');
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    expect(outcome.requests).toBe(2);
    expect(outcome.attempts.map((a) => [a.provider, a.outcome, a.failure])).toEqual([
      ['openai', 'failed', 'rate_limited'],
      ['openai', 'succeeded', undefined],
    ]);
  });

  test('a Retry-After longer than the time left moves straight to the next candidate', async () => {
    const openai = rateLimitedThenSucceeding('openai', 120_000);
    const outcome = await tryCandidates(
      plan({
        candidates: ['openai', 'local'],
        adapters: { openai, local: succeeding('local') },
        deadlineMs: Date.now() + 30_000,
      }),
    );
    expect(outcome.provider).toBe('local');
    expect(openai.calls).toHaveLength(1);
  });

  test('no retry after a 429 when what the first try was billed leaves no room for another worst case', async () => {
    // The cap holds one worst case (one OCR page): a 429 that still billed 1 micro cannot be retried within it.
    const openai = rateLimitedThenSucceeding('openai', 10, 1, { billableUnits: 1, costMicros: 1 });
    const local = succeeding('local');
    const outcome = await tryCandidates(
      plan({ candidates: ['openai'], adapters: { openai, local }, capMicros: priceMicros(OCR_PAGE_COST_MICROS) }),
    );
    expect(openai.calls).toHaveLength(1);
    expect(outcome.output).toBeNull();
    // With room for both tries it is retried.
    const again = rateLimitedThenSucceeding('openai', 10, 1, { billableUnits: 1, costMicros: 1 });
    const retried = await tryCandidates(
      plan({ candidates: ['openai'], adapters: { openai: again }, capMicros: priceMicros(OCR_PAGE_COST_MICROS + 1) }),
    );
    expect(again.calls).toHaveLength(2);
    expect(retried.costMicros).toBe(81);
  });

  test('a provider is retried at most once, even if it keeps answering 429', async () => {
    const openai = rateLimitedThenSucceeding('openai', 10, 5);
    const outcome = await tryCandidates(
      plan({
        candidates: ['openai', 'local'],
        adapters: { openai, local: succeeding('local') },
        deadlineMs: Date.now() + 60_000,
      }),
    );
    expect(openai.calls).toHaveLength(2);
    expect(outcome.provider).toBe('local');
  });
});

describe("the estimate's step and attempt (contract v1.2 §5)", () => {
  // openai's `vision` is bounded at 3 OCR pages, its `analyze` at 1: a cap of 2 pages holds only the analysis.
  const bySteps = (_provider: string, step: string) => (step === 'vision' ? 3 : 1) * OCR_PAGE_COST_MICROS;
  const cap = priceMicros(2 * OCR_PAGE_COST_MICROS);

  test('a step that would cross the spend limit gives way to the cheaper step, which alone is given the text', async () => {
    const openai = succeeding('openai');
    const outcome = await tryCandidates(
      plan({
        candidates: ['openai'],
        adapters: { openai },
        input: { bytes: new Uint8Array([1]), facts, task, documentText: 'the text layer' },
        capMicros: cap,
        costBound: bySteps,
        stepFor: () => 'vision',
        cheaperStep: () => 'analyze',
      }),
    );
    expect(outcome.attempts).toEqual([expect.objectContaining({ provider: 'openai', step: 'analyze' })]);
    expect(openai.calls[0]?.input).toEqual(
      expect.objectContaining({ step: 'analyze', documentText: 'the text layer' }),
    );
  });

  test('a step that fits runs as asked, reading the file: the text goes only to an analyze step', async () => {
    const openai = succeeding('openai');
    await tryCandidates(
      plan({
        candidates: ['openai'],
        adapters: { openai },
        input: { bytes: new Uint8Array([1]), facts, task, documentText: 'the text layer' },
        capMicros: priceMicros(3 * OCR_PAGE_COST_MICROS),
        costBound: bySteps,
        stepFor: () => 'vision',
        cheaperStep: () => 'analyze',
      }),
    );
    expect(openai.calls[0]?.input.step).toBe('vision');
    expect(openai.calls[0]?.input.documentText).toBeUndefined();
  });

  test("the estimate's attempt runs even when predicted over the limit; other candidates are still checked", async () => {
    const openai = failing('openai', 'server');
    const anthropic = succeeding('anthropic');
    const outcome = await tryCandidates(
      plan({
        candidates: ['openai', 'anthropic'],
        adapters: { openai, anthropic },
        capMicros: cap,
        costBound: () => 3 * OCR_PAGE_COST_MICROS,
        planned: { provider: 'openai', step: 'vision' },
      }),
    );
    expect(openai.calls).toHaveLength(1);
    // Told it may spend its own prediction (with the adapters' input margin), not the limit its estimate set.
    expect(openai.calls[0]?.options.maxCostMicros).toBe(plannedFloor(3 * OCR_PAGE_COST_MICROS));
    expect(anthropic.calls).toHaveLength(0);
    expect(outcome.attempts.map((a) => [a.provider, a.outcome, a.failure])).toEqual([
      ['openai', 'failed', 'server'],
      ['anthropic', 'skipped', 'over_budget'],
    ]);
  });

  test("the exemption is the estimate's step only, and ends once this call has spent something", async () => {
    // Another step of the same provider is checked as usual.
    const other = succeeding('openai');
    const skipped = await tryCandidates(
      plan({
        candidates: ['openai'],
        adapters: { openai: other },
        capMicros: cap,
        costBound: () => 3 * OCR_PAGE_COST_MICROS,
        planned: { provider: 'openai', step: 'analyze' },
      }),
    );
    expect(other.calls).toHaveLength(0);
    expect(skipped.attempts[0]).toEqual(expect.objectContaining({ step: 'vision', failure: 'over_budget' }));
    // A retry after a 429 that was billed is checked like any attempt.
    const billed = rateLimitedThenSucceeding('openai', 10, 1, { billableUnits: 1, costMicros: 1 });
    await tryCandidates(
      plan({
        candidates: ['openai'],
        adapters: { openai: billed },
        capMicros: cap,
        costBound: () => 3 * OCR_PAGE_COST_MICROS,
        planned: { provider: 'openai', step: 'vision' },
      }),
    );
    expect(billed.calls).toHaveLength(1);
  });
});
