/**
 * An evaluation's report, written once when its last run has settled: by the worker that settled it, else by the next
 * read of the evaluation or the reconciler's sweep (whichever comes first; the write is conditional, so one wins).
 * The report is computed from the scored items alone (store/evaluations.ts): one query, never a read of the runs.
 */

import { log } from '../log.js';
import { buildReport } from '../scoring/report.js';
import {
  allScoredItems,
  type EvaluationRecord,
  getEvaluation,
  scoredItemOf,
  writeReport,
} from '../store/evaluations.js';

/** Writes the report when every run has settled; returns the evaluation as it now stands (null: unknown id). */
export async function finishIfDone(
  evaluation: EvaluationRecord | string,
  now = new Date(),
): Promise<EvaluationRecord | null> {
  const current = typeof evaluation === 'string' ? await getEvaluation(evaluation) : evaluation;
  if (current?.status !== 'queued' || current.itemsDone < current.itemsTotal) return current;
  const scored = (await allScoredItems(current.evaluationId)).map(scoredItemOf);
  const items = scored.filter((item) => item !== null);
  if (items.length < current.itemsTotal) {
    // The counter and the items move in one transaction: a gap means a read of an index that lags, not a lost item.
    log.warn('an evaluation counted every run settled but not every item scored yet', {
      evaluationId: current.evaluationId,
    });
    return current;
  }
  const report = buildReport(items);
  // Failed only when no run gave an answer at all; failed runs otherwise count in the report.
  const status = items.every((item) => item.status === 'failed') ? 'failed' : 'completed';
  await writeReport(current.evaluationId, report, status, now);
  return getEvaluation(current.evaluationId);
}

/** After a run's settlement: the report, if it was the evaluation's last run. Never throws (the sweep finishes it). */
export async function afterItemSettled(evaluationId: string): Promise<void> {
  try {
    await finishIfDone(evaluationId);
  } catch (error: unknown) {
    log.warn('could not write the report of an evaluation; a read or the reconciler will', { evaluationId, error });
  }
}
