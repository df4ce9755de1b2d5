/**
 * Calibration arithmetic: how the service learns, from its own settled runs, how far each prediction is from what the
 * providers really bill. Per key (provider × task kind × step, shared/providers/predict.ts) it keeps the most recent
 * ratios actual ÷ predicted of input and of output tokens, and scales a prediction by a high percentile of them.
 * Kept per tenant, with the deployment's window as the fallback of a tenant with too few runs of a key (contract v1.2
 * §5). Pure functions; the DynamoDB items are shared/store/calibration.ts, the loop is described in docs/pricing.md.
 *
 * Decisions a reader must not undo:
 * - A high percentile, not a mean: the estimate is what the client pays at most, so it must cover most runs; the
 *   percentile is the 95th because the contract asks that at most 5 % of runs exceed their estimate, and with inputs
 *   counted exactly the share of runs over a p90 would be 10 % (docs/pricing.md, "Why p95").
 * - One outlier cannot move it: each sample is clamped before it is kept, a key with few samples is filled with its
 *   seed, and the nearest-rank 95th percentile of at least 20 values ignores the highest one. The factor itself is
 *   clamped, so no history can make an estimate absurd in either direction.
 * - One tenant cannot move another's estimates: a tenant's own window serves only that tenant, and the deployment's
 *   window, which a tenant with few runs of its own falls back on, holds ONE value per tenant (its latest), so a
 *   tenant can move another's factor at most between two values others (or the seeds) put there, however many runs
 *   it sends.
 * - Batch and standard are kept apart: a batch attempt's key is its standard key plus `:batch` (its own samples, its
 *   own windows), and a batch key's prior is its standard key's factors rather than the shipped seed, so a batch
 *   estimate starts from what standard runs taught and moves only with batch runs.
 */
import * as z from '../zod.js';
import seedsRaw from './calibration-seeds.json' with { type: 'json' };

/** What a prediction's input and output tokens are multiplied by. */
export interface Factors {
  input: number;
  output: number;
}

/** The percentile of actual ÷ predicted the estimate uses. */
export const CALIBRATION_PERCENTILE = 0.95;
/** Ratios kept per key: the most recent runs. */
export const CALIBRATION_WINDOW = 50;
/** Below this many real samples, the seed fills the window's place (so one early run cannot set the factor). */
export const MIN_SAMPLES = 20;
/** A sample outside this range is clamped before it is kept (a broken usage block, a runaway answer). */
export const SAMPLE_RANGE = { min: 0.05, max: 10 } as const;
/** The factor's range, whatever the history. */
export const FACTOR_RANGE = { min: 0.2, max: 4 } as const;

const factorsSchema = z.object({ input: z.number().check(z.positive()), output: z.number().check(z.positive()) });
const seedsSchema = z.object({
  $comment: z.optional(z.string()),
  default: factorsSchema,
  /** Per key prefix (`gemini`, `gemini:summary`, `gemini:summary:analyze`): the longest matching prefix wins. */
  keys: z.record(z.string(), factorsSchema),
});

/** The shipped seeds (calibration-seeds.json); a malformed file fails at import. */
export const calibrationSeeds = seedsSchema.parse(seedsRaw);

/** What a batch attempt's calibration key ends with (the rest is its standard key). */
export const BATCH_KEY_SUFFIX = ':batch';

/** The calibration key of a batch attempt whose standard key is `key`. */
export function batchKey(key: string): string {
  return `${key}${BATCH_KEY_SUFFIX}`;
}

/** The shipped seed of a key: its longest matching prefix's, else the default. */
export function seedFor(key: string): Factors {
  const parts = key.split(':');
  for (let n = parts.length; n > 0; n -= 1) {
    const seed = calibrationSeeds.keys[parts.slice(0, n).join(':')];
    if (seed) return seed;
  }
  return calibrationSeeds.default;
}

/** The recent samples of one key, as stored. */
export interface CalibrationState {
  key: string;
  /** Ratios actual ÷ predicted, oldest first, at most CALIBRATION_WINDOW. */
  input: number[];
  output: number[];
}

const clamp = (value: number, range: { min: number; max: number }) => Math.min(range.max, Math.max(range.min, value));

/** Nearest-rank percentile of the values (at least one). */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(p * sorted.length));
  return sorted[rank - 1] as number;
}

function factorOf(samples: readonly number[], seed: number): number {
  const filled =
    samples.length >= MIN_SAMPLES ? samples : [...samples, ...Array(MIN_SAMPLES - samples.length).fill(seed)];
  return clamp(percentile(filled, CALIBRATION_PERCENTILE), FACTOR_RANGE);
}

/**
 * The factors of a key: its samples' percentile (filled with the prior while few), clamped; the prior when nothing is
 * stored. The prior is the key's shipped seed unless given (a batch key's: its standard key's factors).
 */
export function factorsOf(key: string, state: CalibrationState | undefined, seed: Factors = seedFor(key)): Factors {
  if (!state) return { input: clamp(seed.input, FACTOR_RANGE), output: clamp(seed.output, FACTOR_RANGE) };
  return { input: factorOf(state.input, seed.input), output: factorOf(state.output, seed.output) };
}

/** One settled attempt's predicted and actual tokens (the first request's prediction, before calibration). */
export interface CalibrationSample {
  key: string;
  predicted: { input: number; output: number };
  actual: { input: number; output: number };
}

/** Whether an attempt's token counts can be learned from: positive, finite, and not absurdly far from the prediction. */
export function usableSample(sample: CalibrationSample): boolean {
  const ok = (n: number) => Number.isFinite(n) && n > 0;
  return (
    ok(sample.predicted.input) && ok(sample.predicted.output) && ok(sample.actual.input) && ok(sample.actual.output)
  );
}

/** A sample's ratio actual ÷ predicted, clamped to SAMPLE_RANGE and kept to 4 decimals (small items). */
function ratio(actual: number, predicted: number): number {
  return Math.round(clamp(actual / predicted, SAMPLE_RANGE) * 10_000) / 10_000;
}

/** The state after one more sample: its ratios clamped and appended, the oldest dropped past the window. */
export function addSample(state: CalibrationState | undefined, sample: CalibrationSample): CalibrationState {
  const keep = (values: readonly number[], value: number) => [...values, value].slice(-CALIBRATION_WINDOW);
  return {
    key: sample.key,
    input: keep(state?.input ?? [], ratio(sample.actual.input, sample.predicted.input)),
    output: keep(state?.output ?? [], ratio(sample.actual.output, sample.predicted.output)),
  };
}

/** One tenant's place in the deployment's window of a key: the ratios of its latest settled run. */
export interface TenantEntry {
  tenant: string;
  input: number;
  output: number;
}

/** The deployment's window of a key: the latest ratios of each of the CALIBRATION_WINDOW most recent tenants. */
export interface DeploymentState {
  key: string;
  /** Oldest first, one per tenant. */
  entries: TenantEntry[];
}

/** The deployment's window after a tenant's sample: the tenant's entry replaced by the new one, moved to the end. */
export function addTenantEntry(
  state: DeploymentState | undefined,
  tenant: string,
  sample: CalibrationSample,
): DeploymentState {
  const entry = {
    tenant,
    input: ratio(sample.actual.input, sample.predicted.input),
    output: ratio(sample.actual.output, sample.predicted.output),
  };
  const others = (state?.entries ?? []).filter((e) => e.tenant !== tenant);
  return { key: sample.key, entries: [...others, entry].slice(-CALIBRATION_WINDOW) };
}

/** What one tenant's estimates are calibrated with: its own windows and the deployment's, by key. */
export interface TenantCalibration {
  tenant: string;
  own: ReadonlyMap<string, CalibrationState>;
  deployment: ReadonlyMap<string, DeploymentState>;
}

/**
 * A tenant's factors by key: its own window once that holds MIN_SAMPLES runs of the key; before, its own few ratios
 * together with the deployment's entries of the OTHER tenants (one each), seed-filled like any window with few
 * values. So a new tenant starts from what the deployment learnt, its own first runs still raise its estimates at
 * once, and no other tenant weighs more than one value.
 */
export function tenantFactors(calibration: TenantCalibration): FactorsFor {
  const factors: FactorsFor = (key) => {
    const prior = priorOf(key, factors);
    const own = calibration.own.get(key);
    if (own && own.input.length >= MIN_SAMPLES && own.output.length >= MIN_SAMPLES) return factorsOf(key, own, prior);
    const others = (calibration.deployment.get(key)?.entries ?? []).filter((e) => e.tenant !== calibration.tenant);
    const input = [...(own?.input ?? []), ...others.map((e) => e.input)];
    const output = [...(own?.output ?? []), ...others.map((e) => e.output)];
    return factorsOf(key, input.length === 0 ? undefined : { key, input, output }, prior);
  };
  return factors;
}

/** A key's prior: a batch key starts from its standard key's factors (as `factors` gives them), others from the seed. */
function priorOf(key: string, factors: FactorsFor): Factors {
  return key.endsWith(BATCH_KEY_SUFFIX) ? factors(key.slice(0, -BATCH_KEY_SUFFIX.length)) : seedFor(key);
}

/** Factors by key, as the planner reads them (unknown keys: their seed). */
export type FactorsFor = (key: string) => Factors;

/** The factors of every key in `states`, others from the seeds. */
export function factorsFrom(states: ReadonlyMap<string, CalibrationState>): FactorsFor {
  const factors: FactorsFor = (key) => factorsOf(key, states.get(key), priorOf(key, factors));
  return factors;
}
