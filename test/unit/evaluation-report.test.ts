/** An evaluation's report from scored items, and calibration (shared/scoring/report.ts, calibration.ts). */
import fc from 'fast-check';
import { calibrate } from '../../shared/scoring/calibration.js';
import type { FieldScore, Outcome } from '../../shared/scoring/compare.js';
import { buildReport, type ScoredItem } from '../../shared/scoring/report.js';

const field = (outcome: Outcome, confidence: number | null, score = outcome === 'right' ? 1 : 0): FieldScore => ({
  expected: 'x',
  got: outcome === 'missing' ? null : 'y',
  outcome,
  score,
  confidence,
});

function item(overrides: Partial<ScoredItem> & Pick<ScoredItem, 'jobId' | 'fields'>): ScoredItem {
  return {
    index: 0,
    provider: 'local',
    status: 'completed',
    chargedMicros: 100,
    latencyMs: 1000,
    reviewNeeded: false,
    ...overrides,
  };
}

describe('calibration', () => {
  test('AUROC is the share of (right, wrong) pairs the confidence orders right, ties counting half', () => {
    const c = calibrate([
      { confidence: 0.9, right: true },
      { confidence: 0.8, right: true },
      { confidence: 0.8, right: false },
      { confidence: 0.3, right: false },
    ]);
    // Pairs: (0.9, 0.8) win, (0.9, 0.3) win, (0.8, 0.8) tie, (0.8, 0.3) win → 3.5 / 4.
    expect(c.auroc).toBe(0.875);
    // Brier: (0.1² + 0.2² + 0.8² + 0.3²) / 4.
    expect(c.brier).toBeCloseTo((0.01 + 0.04 + 0.64 + 0.09) / 4, 6);
    expect(c.bins[8]).toEqual({ from: 0.8, to: 0.9, count: 2, accuracy: 0.5 });
    expect(c.bins[9]).toEqual({ from: 0.9, to: 1, count: 1, accuracy: 1 });
    expect(c.bins[0]).toEqual({ from: 0, to: 0.1, count: 0, accuracy: null });
    // ECE: bin 0.3 (1 value, acc 0, conf 0.3), bin 0.8 (2, acc 0.5, conf 0.8), bin 0.9 (1, acc 1, conf 0.9).
    expect(c.ece).toBeCloseTo((1 / 4) * 0.3 + (2 / 4) * 0.3 + (1 / 4) * 0.1, 6);
  });

  test('a figure without data is null: no wrong values, or no values at all', () => {
    expect(calibrate([{ confidence: 0.9, right: true }]).auroc).toBeNull();
    expect(calibrate([])).toMatchObject({ auroc: null, ece: null, brier: null });
  });

  test('weighted points give what the same values one by one give (the quality counters rely on it)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            milli: fc.integer({ min: 0, max: 1000 }),
            right: fc.boolean(),
            weight: fc.integer({ min: 1, max: 4 }),
          }),
          {
            maxLength: 40,
          },
        ),
        (points) => {
          const weighted = calibrate(
            points.map((p) => ({ confidence: p.milli / 1000, right: p.right, weight: p.weight })),
          );
          const single = calibrate(
            points.flatMap((p) =>
              Array.from({ length: p.weight }, () => ({ confidence: p.milli / 1000, right: p.right })),
            ),
          );
          // Equal up to the last rounded decimal (floating sums of c·w and of c, w times, may differ in it).
          const close = (a: number | null, b: number | null) =>
            a === null ? b === null : b !== null && Math.abs(a - b) <= 2e-6;
          return (
            JSON.stringify([weighted.auroc, weighted.bins]) === JSON.stringify([single.auroc, single.bins]) &&
            close(weighted.ece, single.ece) &&
            close(weighted.brier, single.brier)
          );
        },
      ),
    );
  });

  test('property: AUROC is 1 when every right value is more confident than every wrong one', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0.51, max: 1, noNaN: true }), { minLength: 1, maxLength: 20 }),
        fc.array(fc.double({ min: 0, max: 0.5, noNaN: true }), { minLength: 1, maxLength: 20 }),
        (rights, wrongs) =>
          calibrate([
            ...rights.map((confidence) => ({ confidence, right: true })),
            ...wrongs.map((confidence) => ({ confidence, right: false })),
          ]).auroc === 1,
      ),
    );
  });
});

describe('the report', () => {
  const items: ScoredItem[] = [
    item({
      jobId: 'run_a',
      fields: { merchant: field('right', 0.9), total: field('right', 0.95) },
      chargedMicros: 120,
      latencyMs: 800,
    }),
    item({
      jobId: 'run_b',
      index: 1,
      fields: { merchant: field('wrong', 0.4, 0.5), total: field('right', 0.9) },
      reviewNeeded: true,
      latencyMs: 1200,
    }),
    item({
      jobId: 'run_c',
      index: 2,
      fields: { merchant: field('right', 0.85), total: field('extra', 0.3) },
      reviewNeeded: false,
      latencyMs: 3000,
    }),
    // A failed run: every field missing, counted in accuracy and in its provider's failures, not in the review.
    item({
      jobId: 'run_d',
      index: 3,
      status: 'failed',
      chargedMicros: 0,
      latencyMs: null,
      reviewNeeded: null,
      fields: { merchant: field('missing', null), total: field('missing', null) },
    }),
  ];

  test('per field, per provider, review catch rate, accuracy and cost', () => {
    const report = buildReport(items);
    expect(report.perField).toEqual({
      merchant: { compared: 4, right: 2, accuracy: 0.5, missing: 1, extra: 0, meanScore: 0.625 },
      total: { compared: 4, right: 2, accuracy: 0.5, missing: 1, extra: 1, meanScore: 0.5 },
    });
    expect(report.perProvider).toEqual({
      local: { accuracy: 0.5, runs: 4, failed: 1, costUsd: 0.00032, p50LatencyMs: 1200 },
    });
    expect(report.review).toEqual({ wrongRuns: 2, wrongFlagged: 1, rightRuns: 1, rightFlagged: 0 });
    expect(report.accuracy).toBe(0.5);
    expect(report.costUsd).toBe(0.00032);
    // Calibration over the six values that came with a confidence (the failed run's have none).
    expect(report.calibration.bins.reduce((n, b) => n + b.count, 0)).toBe(6);
  });

  test('per provider side by side', () => {
    const report = buildReport([
      ...items,
      item({
        jobId: 'run_e',
        provider: 'openai',
        fields: { merchant: field('right', 0.99), total: field('right', 0.99) },
      }),
    ]);
    expect(Object.keys(report.perProvider)).toEqual(['local', 'openai']);
    expect(report.perProvider.openai).toEqual({ accuracy: 1, runs: 1, failed: 0, costUsd: 0.0001, p50LatencyMs: 1000 });
  });

  test('property: the report does not depend on the order of its items', () => {
    fc.assert(
      fc.property(fc.shuffledSubarray(items, { minLength: items.length, maxLength: items.length }), (shuffled) => {
        return JSON.stringify(buildReport(shuffled)) === JSON.stringify(buildReport(items));
      }),
    );
  });

  test('an empty evaluation reports nulls, not zeros', () => {
    expect(buildReport([])).toMatchObject({ accuracy: null, perField: {}, perProvider: {}, costUsd: 0 });
  });
});
