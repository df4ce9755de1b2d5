/**
 * Does confidence rank errors? Over a set of values, each with the answer's confidence and whether it was right:
 * AUROC (the probability that a right value's confidence is above a wrong one's, ties counting half), ECE over 10
 * equal-width bins, the Brier score, and the bins themselves (a reliability diagram). Pure.
 * Points carry a weight, so that counters (GET /v1/quality keeps how many values were right and wrong at each
 * confidence) and single values go through the same arithmetic. A figure without data is null (contract-v1.2 §1).
 */
import { round } from './compare.js';

export interface CalibrationPoint {
  confidence: number;
  right: boolean;
  /** How many values this point stands for (1 for a single value). */
  weight?: number;
}

export interface CalibrationBin {
  from: number;
  to: number;
  count: number;
  /** Share of the bin's values that were right; null for an empty bin. */
  accuracy: number | null;
}

export interface Calibration {
  auroc: number | null;
  ece: number | null;
  brier: number | null;
  bins: CalibrationBin[];
}

export const BIN_COUNT = 10;

/** The bin of a confidence: [0, 0.1), [0.1, 0.2), … [0.9, 1.0] (1.0 in the last). */
export function binOf(confidence: number): number {
  return Math.min(BIN_COUNT - 1, Math.max(0, Math.floor(confidence * BIN_COUNT)));
}

export function calibrate(points: readonly CalibrationPoint[]): Calibration {
  const valid = points.filter((p) => Number.isFinite(p.confidence) && (p.weight ?? 1) > 0);
  const bins = Array.from({ length: BIN_COUNT }, () => ({ count: 0, right: 0, confidence: 0 }));
  let total = 0;
  let brier = 0;
  for (const p of valid) {
    const w = p.weight ?? 1;
    const c = Math.min(1, Math.max(0, p.confidence));
    const bin = bins[binOf(c)];
    if (bin) {
      bin.count += w;
      bin.right += p.right ? w : 0;
      bin.confidence += c * w;
    }
    total += w;
    brier += w * (c - (p.right ? 1 : 0)) ** 2;
  }
  const ece =
    total === 0
      ? null
      : bins.reduce(
          (sum, b) =>
            b.count === 0 ? sum : sum + (b.count / total) * Math.abs(b.right / b.count - b.confidence / b.count),
          0,
        );
  return {
    auroc: auroc(valid),
    ece: ece === null ? null : round(ece),
    brier: total === 0 ? null : round(brier / total),
    bins: bins.map((b, i) => ({
      from: round(i / BIN_COUNT),
      to: round((i + 1) / BIN_COUNT),
      count: b.count,
      accuracy: b.count === 0 ? null : round(b.right / b.count),
    })),
  };
}

/**
 * P(confidence of a right value > confidence of a wrong one) + ½ P(equal), by the rank sum (Mann–Whitney): sorted
 * once, ties grouped. Null without both right and wrong values.
 */
function auroc(points: readonly CalibrationPoint[]): number | null {
  const sorted = [...points].sort((a, b) => a.confidence - b.confidence);
  let rightTotal = 0;
  let wrongTotal = 0;
  for (const p of sorted) {
    if (p.right) rightTotal += p.weight ?? 1;
    else wrongTotal += p.weight ?? 1;
  }
  if (rightTotal === 0 || wrongTotal === 0) return null;
  // For each group of equal confidence: its right values beat every wrong value below, and tie half its own wrongs.
  let wrongBelow = 0;
  let wins = 0;
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    let right = 0;
    let wrong = 0;
    while (j < sorted.length && sorted[j]?.confidence === sorted[i]?.confidence) {
      const p = sorted[j] as CalibrationPoint;
      if (p.right) right += p.weight ?? 1;
      else wrong += p.weight ?? 1;
      j += 1;
    }
    wins += right * (wrongBelow + wrong / 2);
    wrongBelow += wrong;
    i = j;
  }
  return round(wins / (rightTotal * wrongTotal));
}
