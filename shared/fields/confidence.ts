/**
 * The per-field confidence formula and the run's aggregate (docs/confidence.md has the formula, its constants and how
 * they were calibrated on the fixture corpus; test/unit/grounding-calibration.test.ts holds them to it). Pure.
 * Not to undo: a value the document does not print scores at most EVIDENCE_WEIGHT × 0 + NATIVE_WEIGHT × native
 * (≤ 0.25), whatever the provider says of itself: a model's self-assessment never vouches for a value alone.
 */

/** The provider's confidence when it reports none (the worker's run confidence assumes it too: shared/worker/outcome.ts). */
export const DEFAULT_NATIVE = 0.5;

/** conf = EVIDENCE_WEIGHT × evidence + NATIVE_WEIGHT × native, then × the factors below. */
export const EVIDENCE_WEIGHT = 0.75;
export const NATIVE_WEIGHT = 0.25;

/** evidence = quality × (READER_FLOOR + (1 − READER_FLOOR) × reader confidence of the matched words). */
export const READER_FLOOR = 0.6;

/** Evidence factors for the label before the chosen place. */
export const MISLABELLED = 0.7;
export const FOREIGN_LABEL = 0.85;

/** A value not of its field's type (an object where a string was expected). */
export const INVALID_TYPE = 0.5;

/** Per conflicting value a chunked run's merge kept, down to ALTERNATIVES_FLOOR. */
export const PER_ALTERNATIVE = 0.75;
export const ALTERNATIVES_FLOOR = 0.5;

/** A failed cross-field check: the field it blames, the others it involves, or all of them when none is to blame. */
export const CULPRIT = 0.4;
export const ACCOMPLICE = 0.85;
export const UNRESOLVED = 0.6;

/** A null optional field: nothing to ground; it is left out of the run's aggregate. */
export const NULL_OPTIONAL = 0.5;

/** A field grounding had no time for: half the native confidence (nothing was checked), no box. */
export const SKIPPED_SHARE = 0.5;

/** Required fields weigh this much more than optional ones in the run's aggregate. */
export const REQUIRED_WEIGHT = 2;

/** How the words support a value: match quality × how sure the reader was of those words × the label's verdict. */
export function evidenceScore(quality: number, reader: number, labelFactor: number): number {
  return clamp(quality) * (READER_FLOOR + (1 - READER_FLOOR) * clamp(reader)) * labelFactor;
}

/** What a field's confidence is made of. `evidence` null: the value cannot be printed (a boolean), native alone. */
export interface Signals {
  evidence: number | null;
  native: number;
  valid: boolean;
  alternatives: number;
  /** Product of the factors of failed cross-field checks (1 when none failed). */
  checks: number;
}

export function fieldConfidence(s: Signals): number {
  const base =
    s.evidence === null ? clamp(s.native) : EVIDENCE_WEIGHT * clamp(s.evidence) + NATIVE_WEIGHT * clamp(s.native);
  const alternatives = s.alternatives > 0 ? Math.max(ALTERNATIVES_FLOOR, PER_ALTERNATIVE ** s.alternatives) : 1;
  return round3(clamp(base * (s.valid ? 1 : INVALID_TYPE) * alternatives * s.checks));
}

/** One field's part in the aggregate. */
export interface Counted {
  confidence: number;
  required: boolean;
  /** False for a null optional field. */
  counted: boolean;
}

/** The run's confidence: the mean of its counted fields, required ones weighing REQUIRED_WEIGHT; native when none. */
export function aggregate(fields: readonly Counted[], native: number): number {
  let sum = 0;
  let weight = 0;
  for (const f of fields) {
    if (!f.counted) continue;
    const w = f.required ? REQUIRED_WEIGHT : 1;
    sum += w * f.confidence;
    weight += w;
  }
  return round3(weight === 0 ? clamp(native) : sum / weight);
}

export function clamp(x: number): number {
  return Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 0;
}

export function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
