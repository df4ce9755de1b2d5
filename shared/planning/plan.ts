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
 * Plans a run. Candidates are the available providers that can run the strategy (providers without a profile in this
 * build stay in the list when explicitly configured: they fail at run time and the plan falls back, as configured).
 * The estimate is the highest candidate price, so any fallback the plan may take is covered by the hold.
 */
export function planRun(facts: FileFacts, task: TaskSpec, providers: readonly ProviderId[]): Plan {
  const strategy = classify(facts, task, providers);
  const candidates = providers.filter((id) => {
    const profile = catalog[id];
    return (
      profile === undefined || profile.strategies.includes(strategy) || strategyFallback(profile.strategies, strategy)
    );
  });
  const estimateMicros = Math.max(
    0,
    ...candidates.map((id) => {
      const profile = catalog[id];
      return profile ? priceFor(profile.maxCostMicros(facts, task)) : 0;
    }),
  );
  return { strategy, candidates, estimateMicros };
}

// A provider that cannot look at pixels can still serve a direct-multimodal plan through OCR.
function strategyFallback(supported: readonly Strategy[], wanted: Strategy): boolean {
  return wanted === 'direct_multimodal' && supported.includes('ocr_then_analyze');
}
