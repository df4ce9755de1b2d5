/**
 * The calibrated prediction of what an attempt costs: the provider's predicted tokens (its own counting rules,
 * shared/providers/tokens.ts; the answer from the task, shared/providers/predict.ts) scaled by the calibration factors
 * of its key (shared/pricing/calibration.ts), priced at the configured model's prices. Providers billed by the page
 * predict their cost directly. The estimate of a run is this for its primary path (shared/planning/plan.ts); the
 * worker uses the same function for its spend limit, and for a page range of a long document (`pages`), so chunked
 * runs can sum their chunks.
 */
import type { FileFacts } from '../file-facts.js';
import type { Micros } from '../money.js';
import { type Factors, type FactorsFor, factorsFrom } from '../pricing/calibration.js';
import { catalog } from '../providers/catalog.js';
import { calibrationKey, likelyLanguageModelStep } from '../providers/predict.js';
import type { TokenCounts } from '../providers/tokens.js';
import type { PredictOptions } from '../providers/types.js';
import type { ProviderId, Step, TaskSpec } from '../task.js';

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

/**
 * The calibrated prediction of one attempt of `step` by a provider, or undefined when this build has no profile for it.
 * `options.documentTextChars` is the text an `analyze` step is given, when known (the worker); `pages` narrows the
 * file to a page range (a chunk of a long document).
 */
export function predictAttempt(
  provider: ProviderId,
  facts: FileFacts,
  task: TaskSpec,
  step: Step,
  factors: FactorsFor = seedFactors,
  options: PredictOptions & { pages?: number } = {},
): AttemptPrediction | undefined {
  const profile = catalog[provider];
  if (!profile) return undefined;
  const scoped = options.pages === undefined ? facts : { ...facts, pages: options.pages };
  if (profile.predictTokens && profile.tokenCostMicros) {
    const key = calibrationKey(provider, task, step);
    const tokens = profile.predictTokens(scoped, task, step, options);
    const cost = profile.tokenCostMicros(calibrated(tokens, factors(key)), options);
    return { costMicros: Math.max(1, Math.ceil(cost - 1e-6)), tokens, key };
  }
  return { costMicros: profile.predictCostMicros?.(scoped, task, step) ?? profile.stepCostMicros(scoped, task, step) };
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
 * billed by the page have none). What creation and the worker read from the calibration store, and nothing more.
 */
export function calibrationKeysFor(providers: readonly ProviderId[], task: TaskSpec): string[] {
  const keys = providers
    .filter((id) => catalog[id]?.predictTokens !== undefined)
    .flatMap((id) => STEPS.map((step) => calibrationKey(id, task, step)));
  return [...new Set(keys)];
}

/** The calibrated prediction of one single-step attempt by a provider, in micros (undefined: no profile). */
export function predictedCostMicros(
  provider: ProviderId,
  facts: FileFacts,
  task: TaskSpec,
  factors: FactorsFor = seedFactors,
): Micros | undefined {
  return predictAttempt(provider, facts, task, likelyStep(provider, facts), factors)?.costMicros;
}
