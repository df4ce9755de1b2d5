/**
 * What parts of a run in page chunks keep of its spend limit while it executes (shared/worker/chunk-spend.ts): each
 * chunk its primary path's predicted cost, as the plan held it, and each fanned-out group its chunks' share of the
 * limit. Pure.
 */
import type { FileFacts } from '../file-facts.js';
import type { Micros } from '../money.js';
import type { FactorsFor } from '../pricing/calibration.js';
import type { Priority, ProviderId, TaskSpec } from '../task.js';
import { chunkFacts, chunkRanges, type PageRange } from './chunks.js';
import { predictAttempt, predictedCostMicros } from './estimate.js';
import { primaryPathCost } from './plan.js';

/** What a chunked run was planned as (the run record's fields of its plan). */
export interface ChunkedRunPlan {
  file: FileFacts;
  task: TaskSpec;
  candidates: readonly ProviderId[];
  ocrCandidates?: readonly ProviderId[];
  chunkPages?: number;
  /** A batch run's chunks are reserved at their batch price, as its estimate was made. */
  priority?: Priority;
}

/** What a chunk keeps reserved until it ends: its primary path's predicted cost (for a chain, both steps'). */
export function chunkReservation(run: ChunkedRunPlan, range: PageRange, factors?: FactorsFor): Micros {
  const facts = chunkFacts(run.file, range);
  const priority = run.priority ?? 'standard';
  if (!run.ocrCandidates) {
    return primaryPathCost(run.candidates, (id) => predictedCostMicros(id, facts, run.task, factors, priority)) ?? 0;
  }
  // A chain: both steps' primary paths, as the plan held them (./plan.ts chainedPlan).
  const step = (s: 'ocr' | 'analyze') => (id: ProviderId) =>
    predictAttempt(id, facts, run.task, s, factors, { priority })?.costMicros;
  return (
    (primaryPathCost(run.ocrCandidates, step('ocr')) ?? 0) + (primaryPathCost(run.candidates, step('analyze')) ?? 0)
  );
}

/**
 * A group's share of the run's spend limit: `capMicros` in the proportion of its chunks' reservations (their primary
 * paths) to the whole run's, by pages when nothing is reserved. The shares never add up to more than the limit.
 */
export function groupCapMicros(run: ChunkedRunPlan, range: PageRange, capMicros: Micros): Micros {
  const chunks = chunkRanges(run.file.pages, run.chunkPages ?? run.file.pages);
  let all = 0;
  let mine = 0;
  for (const chunk of chunks) {
    const reserved = chunkReservation(run, chunk);
    all += reserved;
    if (chunk.first >= range.first && chunk.last <= range.last) mine += reserved;
  }
  if (all <= 0) return Math.floor((capMicros * (range.last - range.first + 1)) / Math.max(1, run.file.pages));
  return Math.floor((capMicros * mine) / all);
}
