/**
 * Classification and planning: from the file's facts and the task, pick one of the interface's strategies and an
 * ordered candidate list, and compute the estimate (the calibrated prediction of the run's price, held at creation and
 * the most the client pays). Pure functions: the same plan is computed by the API at creation and recorded on the run
 * for the worker.
 */
import type { FileFacts } from '../file-facts.js';
import type { Micros } from '../money.js';
import type { FactorsFor } from '../pricing/calibration.js';
import { priceFor } from '../pricing/pricing.js';
import { catalog } from '../providers/catalog.js';
import type { Priority, ProviderId, Strategy, TaskSpec } from '../task.js';
import { chunkedCostMicros, pagesPerChunk } from './chunks.js';
import { predictAttempt, predictedCostMicros, seedFactors } from './estimate.js';

export interface Plan {
  strategy: Strategy;
  /** The providers of the plan's (last) step, in order: each runs the whole task, or analyzes the OCR step's text. */
  candidates: ProviderId[];
  /**
   * Only in a chained OCR-then-analyze plan: the OCR engines of its first step, in order. The first that reads the
   * document gives its text to the `analyze` step, whose candidates are `candidates` (language models, then `local`).
   */
  ocrCandidates?: ProviderId[];
  /** The calibrated prediction of the primary path's price, in micros (what is held, and charged at most). */
  estimateMicros: Micros;
  /**
   * Only for a PDF run in page chunks (./chunks.ts): the pages one call carries. The estimate is then the sum of every
   * chunk's primary path (for a chain, both steps'), so the hold covers each chunk's calls and its fallback reserve.
   */
  chunkPages?: number;
}

/** What a plan is made with beyond the file, the task and the providers (./plan-for.ts: this deployment's). */
export interface PlanOptions {
  /** Keep the providers' order as given (VISION_PROVIDERS, or a provider named by the request). */
  explicitOrder?: boolean;
  marginPct?: number;
  /** Calibration factors by key (default: the shipped seeds). */
  factors?: FactorsFor;
  priority?: Priority;
}

/** Picks the strategy the interface describes for this file and task. */
export function classify(facts: FileFacts, task: TaskSpec, providers: readonly ProviderId[]): Strategy {
  if (facts.kind === 'pdf') return 'ocr_then_analyze';
  if (task.fields === null) return 'generic_vision_summary';
  const visionCapable = providers.some((id) => catalog[id]?.strategies.includes('direct_multimodal'));
  return visionCapable ? 'direct_multimodal' : 'ocr_then_analyze';
}

type Bound = (id: ProviderId) => Micros | undefined;

/**
 * Orders candidates: as given when `VISION_PROVIDERS` set the order; otherwise the providers that answer the task
 * (`answers`: a language model, or an OCR engine with a native API for it) before those that would only return the
 * document's text, each group cheapest worst case first, and `local` last (it needs no credentials and is always up:
 * the last resort). Without `answers` (a chain step) the order is by cost alone.
 */
function order(
  ids: readonly ProviderId[],
  bound: Bound,
  explicitOrder: boolean,
  answers: (id: ProviderId) => boolean = () => true,
): ProviderId[] {
  if (explicitOrder) return [...ids];
  const rank = (id: ProviderId) => (answers(id) ? 0 : 1);
  const cost = (id: ProviderId) => bound(id) ?? Number.MAX_SAFE_INTEGER;
  return [
    ...ids.filter((id) => id !== 'local').sort((a, b) => rank(a) - rank(b) || cost(a) - cost(b)),
    ...ids.filter((id) => id === 'local'),
  ];
}

/**
 * Worst-case cost of one step's primary path: the first candidate with a cost model, plus the last resort's reserve
 * (`local` needs no credentials and is always up, so when it follows the primary its small per-page worst case is
 * held too: a primary that fails after being billed — a timeout, an unreadable answer — can still fall back to it
 * instead of the run failing over budget). Undefined when no candidate has a cost model.
 */
export function primaryPathCost(candidates: readonly ProviderId[], bound: Bound): Micros | undefined {
  const primaryIndex = candidates.findIndex((id) => bound(id) !== undefined);
  if (primaryIndex < 0) return undefined;
  const primary = bound(candidates[primaryIndex] as ProviderId) ?? 0;
  const reserve = candidates.slice(primaryIndex + 1).includes('local') ? (bound('local') ?? 0) : 0;
  return primary + reserve;
}

/**
 * Plans a run. Candidates are the available providers that can run the strategy, in the configured order when
 * `VISION_PROVIDERS` is set, otherwise cheapest worst case first for this file (with `local` last). Providers without a
 * profile in this build stay in the list when explicitly configured: they fail at run time and the plan falls back.
 * The estimate is the calibrated prediction of the primary path's price (the first candidate with a cost model):
 * `factors` are the calibration factors by key (shared/pricing/calibration.ts; default: the shipped seeds). Fallbacks
 * run within the spend limit, SERVICE_MAX_OVERRUN_RATIO x the estimate (shared/worker/attempts.ts).
 *
 * Without `VISION_PROVIDERS`, a PDF may instead get a chained plan (`chainedPlan`): an OCR engine reads the pages, a
 * language model analyzes the text. It is chosen when its primary path is predicted cheaper than the single-step one.
 * `priority: "batch"` prices every attempt at its provider's batch discount (shared/planning/estimate.ts); the
 * candidates and their order do not change with it.
 */
export function planRun(
  facts: FileFacts,
  task: TaskSpec,
  providers: readonly ProviderId[],
  options: PlanOptions = {},
): Plan {
  const factors = options.factors ?? seedFactors;
  const priority = options.priority ?? 'standard';
  const strategy = classify(facts, task, providers);
  const bound: Bound = (id) => catalog[id]?.maxCostMicros(facts, task);
  const eligible = providers.filter((id) => {
    const profile = catalog[id];
    return (
      profile === undefined || profile.strategies.includes(strategy) || strategyFallback(profile.strategies, strategy)
    );
  });
  const answers = (id: ProviderId) => catalog[id]?.answers(task) ?? true;
  const candidates = order(eligible, bound, options.explicitOrder ?? false, answers);
  // A multi-page PDF runs in page chunks: its estimate is the sum of every chunk's predicted primary path.
  const size = pagesPerChunk(facts, task, candidates);
  const chunked = size < Math.max(1, facts.pages);
  const primary = candidates.find((id) => catalog[id] !== undefined);
  const predict = (chunk: typeof facts) =>
    primary === undefined ? undefined : predictedCostMicros(primary, chunk, task, factors, priority);
  const single = chunked ? chunkedCostMicros(facts, size, predict) : predict(facts);
  // VISION_PROVIDERS is an exact order of preference for one pass: a chain would put an OCR engine before it.
  const chain =
    strategy === 'ocr_then_analyze' && !options.explicitOrder
      ? chainedPlan(facts, task, providers, factors, priority)
      : undefined;
  // A chunked chain reads and analyzes each chunk on its own: its estimate is every chunk's chain.
  const chainCost =
    chain && chunked
      ? chunkedCostMicros(facts, size, (chunk) => chainedPlan(chunk, task, providers, factors, priority)?.costMicros)
      : chain?.costMicros;
  if (chain && chainCost !== undefined && (single === undefined || chainCost < single)) {
    return {
      strategy,
      candidates: chain.analyze,
      ocrCandidates: chain.ocr,
      estimateMicros: priceFor(chainCost, options.marginPct),
      ...(chunked ? { chunkPages: size } : {}),
    };
  }
  return {
    strategy,
    candidates,
    estimateMicros: single === undefined ? 0 : priceFor(single, options.marginPct),
    ...(chunked ? { chunkPages: size } : {}),
  };
}

/**
 * OCR then analyze as two steps: a cloud OCR engine (Textract) reads every page and a language model analyzes its
 * text. For a scanned PDF this is usually far cheaper than a language model reading the pages as images, and an
 * OCR engine's text is what the model would have had to read anyway. Only with a cloud OCR engine: `local`'s
 * tesseract is kept as the OCR fallback, but a plan that could only OCR locally lets the language model read the
 * pages itself (better reading beats a cheaper one). `local` also closes the analyze step (field extraction by
 * labels and patterns from the OCR text). The estimate is the predicted cost of each step's primary.
 */
export function chainedPlan(
  facts: FileFacts,
  task: TaskSpec,
  providers: readonly ProviderId[],
  factors: FactorsFor = seedFactors,
  priority: Priority = 'standard',
): { ocr: ProviderId[]; analyze: ProviderId[]; costMicros: Micros } | undefined {
  const stepBound =
    (step: 'ocr' | 'analyze'): Bound =>
    (id) =>
      catalog[id]?.stepCostMicros(facts, task, step);
  const withRole = (role: 'ocr_engine' | 'language_model') =>
    providers.filter((id) => catalog[id]?.role === role && id !== 'local');
  const engines = withRole('ocr_engine');
  const models = withRole('language_model');
  if (engines.length === 0 || models.length === 0) return undefined;
  const withLocal = (ids: ProviderId[]) => (providers.includes('local') ? [...ids, 'local' as const] : ids);
  const ocr = order(withLocal(engines), stepBound('ocr'), false);
  const analyze = order(withLocal(models), stepBound('analyze'), false);
  // The predicted cost of each step's primary (the first with a cost model): OCR of every page, then the analysis.
  const predicted = (ids: ProviderId[], step: 'ocr' | 'analyze') => {
    const primary = ids.find((id) => catalog[id] !== undefined);
    return primary === undefined
      ? undefined
      : predictAttempt(primary, facts, task, step, factors, { priority })?.costMicros;
  };
  const ocrCost = predicted(ocr, 'ocr');
  const analyzeCost = predicted(analyze, 'analyze');
  if (ocrCost === undefined || analyzeCost === undefined) return undefined;
  return { ocr, analyze, costMicros: ocrCost + analyzeCost };
}

// A provider that cannot look at pixels can still serve a direct-multimodal plan through OCR.
function strategyFallback(supported: readonly Strategy[], wanted: Strategy): boolean {
  return wanted === 'direct_multimodal' && supported.includes('ocr_then_analyze');
}
