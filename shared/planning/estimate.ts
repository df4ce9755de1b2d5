/**
 * The calibrated prediction of what an attempt costs: the provider's predicted tokens (its own counting rules,
 * shared/providers/tokens.ts; the answer from the task, shared/providers/predict.ts) scaled by the calibration factors
 * of its key (shared/pricing/calibration.ts), priced at the configured model's prices. Providers billed by the page
 * predict their cost directly. The estimate of a run is this for its primary path (shared/planning/plan.ts); the
 * worker uses the same function for its spend limit, and for a page range of a long document (`pages`), so chunked
 * runs can sum their chunks. A `batch` priority prices each attempt at the batch discount its provider promises
 * (shared/providers/batch-terms.ts `promisedTerms`) with the batch calibration key (shared/pricing/calibration.ts).
 */
import type { FileFacts } from '../file-facts.js';
import type { Micros } from '../money.js';
import { batchKey, type Factors, type FactorsFor, factorsFrom } from '../pricing/calibration.js';
import { discounted, promisedTerms } from '../providers/batch-terms.js';
import { catalog } from '../providers/catalog.js';
import { calibrationKey, likelyLanguageModelStep } from '../providers/predict.js';
import type { TokenCounts } from '../providers/tokens.js';
import type { PredictOptions } from '../providers/types.js';
import type { Priority, ProviderId, Step, TaskSpec } from '../task.js';

/** Factors from the shipped seeds only (no history): what a plan uses when it is given none. */
export const seedFactors: FactorsFor = factorsFrom(new Map());

/** Tokens scaled by calibration factors, rounded up. */
export function calibrated(tokens: TokenCounts, factors: Factors): TokenCounts {
  return { input: Math.ceil(tokens.input * factors.input), output: Math.ceil(tokens.output * factors.output) };
}

/** A prediction of one attempt: its cost in micros and, for a language model, the tokens it was priced from. */
export interface AttemptPrediction {
  costMicros: Micros;
  /** The uncalibrated prediction (what calibration compares the actual counts with), for language models. */
  tokens?: TokenCounts;
  key?: string;
}

/** What a prediction may be told beyond the file, the task and the step. */
export interface AttemptOptions extends PredictOptions {
  /** A page range's size (a chunk of a long document). */
  pages?: number;
  /** Default `standard`. A `batch` attempt is priced at its provider's batch discount, with its own calibration key. */
  priority?: Priority;
}

/** A cost in micros rounded up to a whole micro, at least 1 (the 1e-6 absorbs float noise such as 42.000000000001). */
const wholeMicros = (cost: number): Micros => Math.max(1, Math.ceil(cost - 1e-6));

/**
 * The calibrated prediction of one attempt of `step` by a provider, or undefined when this build has no profile for it.
 * `options.documentTextChars` is the text an `analyze` step is given, when known (the worker).
 */
export function predictAttempt(
  provider: ProviderId,
  facts: FileFacts,
  task: TaskSpec,
  step: Step,
  factors: FactorsFor = seedFactors,
  options: AttemptOptions = {},
): AttemptPrediction | undefined {
  const profile = catalog[provider];
  if (!profile) return undefined;
  const scoped = options.pages === undefined ? facts : { ...facts, pages: options.pages };
  // A batch attempt without a batch interface is an ordinary call in the next window: standard key and price.
  const terms = options.priority === 'batch' ? promisedTerms(provider, options.env) : undefined;
  const batch = terms?.viaInterface ? terms : undefined;
  if (profile.predictTokens && profile.tokenCostMicros) {
    const standardKey = calibrationKey(provider, task, step);
    const key = batch ? batchKey(standardKey) : standardKey;
    const tokens = profile.predictTokens(scoped, task, step, options);
    const tier = task.modelTier !== undefined ? { modelTier: task.modelTier } : {};
    const cost = profile.tokenCostMicros(calibrated(tokens, factors(key)), { ...options, ...tier });
    return { costMicros: wholeMicros(batch ? discounted(cost, batch) : cost), tokens, key };
  }
  const cost = profile.predictCostMicros?.(scoped, task, step) ?? profile.stepCostMicros(scoped, task, step);
  return { costMicros: batch ? wholeMicros(discounted(cost, batch)) : cost };
}

/**
 * The step a single-step plan most likely runs a provider for on this file: a language model reads a PDF that most
 * likely has a text layer as text (`analyze`), anything else from the file (`vision`); OCR engines read the file.
 */
export function likelyStep(provider: ProviderId, facts: FileFacts): Step {
  return catalog[provider]?.role === 'language_model' ? likelyLanguageModelStep(facts) : 'vision';
}

/** The steps a provider's attempt can run, each with its own calibration key. */
const STEPS: readonly Step[] = ['vision', 'analyze', 'ocr'];

/**
 * Every calibration key a plan of these providers can price this task with: each language model's steps (providers
 * billed by the page have none), and with `batch` their batch keys too (a batch key's prior is its standard key). What
 * creation and the worker read from the calibration store, and nothing more.
 */
export function calibrationKeysFor(
  providers: readonly ProviderId[],
  task: TaskSpec,
  priority: Priority = 'standard',
): string[] {
  const keys = providers
    .filter((id) => catalog[id]?.predictTokens !== undefined)
    .flatMap((id) => STEPS.map((step) => calibrationKey(id, task, step)));
  return [...new Set(priority === 'batch' ? [...keys, ...keys.map(batchKey)] : keys)];
}

/** The calibrated prediction of one single-step attempt by a provider, in micros (undefined: no profile). */
export function predictedCostMicros(
  provider: ProviderId,
  facts: FileFacts,
  task: TaskSpec,
  factors: FactorsFor = seedFactors,
  priority: Priority = 'standard',
): Micros | undefined {
  return predictAttempt(provider, facts, task, likelyStep(provider, facts), factors, { priority })?.costMicros;
}
