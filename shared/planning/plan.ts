/**
 * Classification and planning: from the file's facts and the task, pick one of the interface's strategies and an
 * ordered candidate list, and compute the estimate (what the client may be charged at most, held at creation).
 * Pure functions: the same plan is computed by the API at creation and recorded on the run for the worker.
 */
import type { FileFacts } from '../file-facts.js';
import type { Micros } from '../money.js';
import { priceFor } from '../pricing/pricing.js';
import { catalog } from '../providers/catalog.js';
import type { ProviderId, Strategy, TaskSpec } from '../providers/types.js';

export interface Plan {
  strategy: Strategy;
  candidates: ProviderId[];
  /** Client price upper bound over all candidates, in micros (what is held). */
  estimateMicros: Micros;
}

/** Picks the strategy the interface describes for this file and task. */
export function classify(facts: FileFacts, task: TaskSpec, providers: readonly ProviderId[]): Strategy {
  if (facts.kind === 'pdf') return 'ocr_then_analyze';
  if (task.fields === null) return 'generic_vision_summary';
  const visionCapable = providers.some((id) => catalog[id]?.strategies.includes('direct_multimodal'));
  return visionCapable ? 'direct_multimodal' : 'ocr_then_analyze';
}

/**
 * Plans a run. Candidates are the available providers that can run the strategy, in the configured order when
 * `VISION_PROVIDERS` is set, otherwise cheapest first for this file (with `local` last). Providers without a profile
 * in this build stay in the list when explicitly configured: they fail at run time and the plan falls back.
 * The estimate is the worst-case price of the primary path (the first candidate with a cost model), plus the worst
 * case of `local` when it is a later fallback (the last resort's reserve, below). A fallback whose worst case would
 * push the price past that hold (or past maxCostUsd) is skipped at execution time.
 */
export function planRun(
  facts: FileFacts,
  task: TaskSpec,
  providers: readonly ProviderId[],
  options: { explicitOrder?: boolean; marginPct?: number } = {},
): Plan {
  const strategy = classify(facts, task, providers);
  const worstCost = (id: ProviderId): Micros | undefined => catalog[id]?.maxCostMicros(facts, task);
  const worstCase = (id: ProviderId): Micros | undefined => {
    const cost = worstCost(id);
    return cost === undefined ? undefined : priceFor(cost, options.marginPct);
  };
  const eligible = providers.filter((id) => {
    const profile = catalog[id];
    return (
      profile === undefined || profile.strategies.includes(strategy) || strategyFallback(profile.strategies, strategy)
    );
  });
  const candidates = options.explicitOrder
    ? eligible
    : [
        ...eligible
          .filter((id) => id !== 'local')
          .sort((a, b) => (worstCase(a) ?? Number.MAX_SAFE_INTEGER) - (worstCase(b) ?? Number.MAX_SAFE_INTEGER)),
        ...eligible.filter((id) => id === 'local'),
      ];
  const primaryIndex = candidates.findIndex((id) => worstCost(id) !== undefined);
  if (primaryIndex < 0) return { strategy, candidates, estimateMicros: 0 };
  const primary = worstCost(candidates[primaryIndex] as ProviderId) ?? 0;
  // The last resort's reserve: `local` needs no credentials and is always up, so when it follows the primary its
  // (small, per-page) worst case is held too. A primary that fails after being billed (a timeout, an unreadable
  // answer) can then still fall back to it instead of the run failing over budget. Priced once, as the worker
  // prices what was spent plus a fallback's bound (shared/worker/execute.ts), so the two always agree.
  const reserve = candidates.slice(primaryIndex + 1).includes('local') ? (worstCost('local') ?? 0) : 0;
  return { strategy, candidates, estimateMicros: priceFor(primary + reserve, options.marginPct) };
}

// A provider that cannot look at pixels can still serve a direct-multimodal plan through OCR.
function strategyFallback(supported: readonly Strategy[], wanted: Strategy): boolean {
  return wanted === 'direct_multimodal' && supported.includes('ocr_then_analyze');
}
