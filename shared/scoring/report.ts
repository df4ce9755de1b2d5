/**
 * An evaluation's report (contract-v1.2 §1) from its scored items: accuracy per field and per provider, calibration
 * over every value that came with a confidence, and how well the review flag caught the runs with a wrong field. Pure.
 * Not to undo: the items are put in jobId order before anything is summed, so a report is the same number for number
 * whatever order its items were read in (the API from its table, the bench from the runs).
 */
import { microsToUsd } from '../money.js';
import { type Calibration, calibrate } from './calibration.js';
import { type FieldScore, round } from './compare.js';

/** One run of an evaluation (one document, one provider), scored. */
export interface ScoredItem {
  jobId: string;
  /** The document's position in the evaluation's request. */
  index: number;
  /** The provider the item ran on: the listed one, or the one that answered (normal plan). */
  provider: string;
  status: 'completed' | 'failed';
  /** What the run charged (micro-dollars). */
  chargedMicros: number;
  /** The providers' time for the run (its attempts' latencies summed); null when it made none. */
  latencyMs: number | null;
  /** Whether the run's review was needed; null for a run without one (failed, or text output). */
  reviewNeeded: boolean | null;
  fields: Record<string, FieldScore>;
}

export interface FieldReport {
  compared: number;
  right: number;
  accuracy: number | null;
  missing: number;
  extra: number;
  meanScore: number | null;
}

export interface ProviderReport {
  accuracy: number | null;
  runs: number;
  failed: number;
  costUsd: number;
  p50LatencyMs: number | null;
}

export interface Report {
  perField: Record<string, FieldReport>;
  perProvider: Record<string, ProviderReport>;
  calibration: Calibration;
  review: { wrongRuns: number; wrongFlagged: number; rightRuns: number; rightFlagged: number };
  /** Right values over compared values, every field and item together. */
  accuracy: number | null;
  costUsd: number;
}

const share = (part: number, whole: number) => (whole === 0 ? null : round(part / whole));

/** The median (the lower middle value of an even count), or null. */
function p50(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.ceil(sorted.length / 2) - 1] ?? null;
}

/** Builds the report of a set of scored items (in any order). */
export function buildReport(items: readonly ScoredItem[]): Report {
  const ordered = [...items].sort((a, b) => (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0));
  const fields = new Map<string, FieldReport & { scoreSum: number }>();
  const providers = new Map<
    string,
    { right: number; compared: number; runs: number; failed: number; charged: number; latencies: number[] }
  >();
  const review = { wrongRuns: 0, wrongFlagged: 0, rightRuns: 0, rightFlagged: 0 };
  const points: { confidence: number; right: boolean }[] = [];
  let right = 0;
  let compared = 0;
  let charged = 0;

  for (const item of ordered) {
    const provider = providers.get(item.provider) ?? {
      right: 0,
      compared: 0,
      runs: 0,
      failed: 0,
      charged: 0,
      latencies: [],
    };
    providers.set(item.provider, provider);
    provider.runs += 1;
    if (item.status === 'failed') provider.failed += 1;
    provider.charged += item.chargedMicros;
    if (item.latencyMs !== null) provider.latencies.push(item.latencyMs);
    charged += item.chargedMicros;

    let allRight = true;
    for (const [name, score] of Object.entries(item.fields).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const field = fields.get(name) ?? {
        compared: 0,
        right: 0,
        accuracy: null,
        missing: 0,
        extra: 0,
        meanScore: null,
        scoreSum: 0,
      };
      fields.set(name, field);
      const isRight = score.outcome === 'right';
      field.compared += 1;
      field.right += isRight ? 1 : 0;
      field.missing += score.outcome === 'missing' ? 1 : 0;
      field.extra += score.outcome === 'extra' ? 1 : 0;
      field.scoreSum += score.score;
      provider.compared += 1;
      provider.right += isRight ? 1 : 0;
      compared += 1;
      right += isRight ? 1 : 0;
      allRight &&= isRight;
      if (score.confidence !== null) points.push({ confidence: score.confidence, right: isRight });
    }
    if (item.status === 'completed' && item.reviewNeeded !== null) {
      if (allRight) {
        review.rightRuns += 1;
        review.rightFlagged += item.reviewNeeded ? 1 : 0;
      } else {
        review.wrongRuns += 1;
        review.wrongFlagged += item.reviewNeeded ? 1 : 0;
      }
    }
  }

  return {
    perField: Object.fromEntries(
      [...fields.entries()]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([name, { scoreSum, ...f }]) => [
          name,
          { ...f, accuracy: share(f.right, f.compared), meanScore: share(scoreSum, f.compared) },
        ]),
    ),
    perProvider: Object.fromEntries(
      [...providers.entries()]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([id, p]) => [
          id,
          {
            accuracy: share(p.right, p.compared),
            runs: p.runs,
            failed: p.failed,
            costUsd: microsToUsd(p.charged),
            p50LatencyMs: p50(p.latencies),
          },
        ]),
    ),
    calibration: calibrate(points),
    review,
    accuracy: share(right, compared),
    costUsd: microsToUsd(charged),
  };
}
