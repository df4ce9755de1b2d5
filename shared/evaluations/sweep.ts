/**
 * The reconciler's part for evaluations: every evaluation still open some time after its creation is finished —
 * its runs written and queued if its creating request died after the hold (`materialize` writes only the missing
 * ones; at its `evaluationSettings.materializeTries`-th try, a run that still cannot be written is failed and refunded),
 * its report written if the worker of its last settlement died before writing it. Runs that die are the run
 * reconciler's (shared/worker/reconcile.ts): failed and refunded, they count as failed items.
 */
import { evaluationSettings } from '../infra/resources.js';
import { log } from '../log.js';
import { countMaterializeTry, getEvaluation, listOpenBefore } from '../store/evaluations.js';
import { finishIfDone } from './finish.js';
import { materialize } from './materialize.js';

export interface EvaluationSweepReport {
  materialized: string[];
  finished: string[];
}

export async function sweepEvaluations(
  options: { afterSeconds?: number; now?: Date } = {},
): Promise<EvaluationSweepReport> {
  const now = options.now ?? new Date();
  const before = new Date(now.getTime() - (options.afterSeconds ?? evaluationSettings.sweepAfterSeconds) * 1000);
  const report: EvaluationSweepReport = { materialized: [], finished: [] };
  for (let shard = 0; shard < evaluationSettings.shards; shard++) {
    for (const evaluationId of await listOpenBefore(`o${shard}`, before.toISOString(), 100)) {
      try {
        const evaluation = await getEvaluation(evaluationId);
        if (evaluation?.status !== 'queued') continue;
        if (evaluation.materializedAt === undefined) {
          const tries = await countMaterializeTry(evaluationId);
          await materialize(evaluation, { lastTry: tries >= evaluationSettings.materializeTries });
          report.materialized.push(evaluationId);
        } else if ((await finishIfDone(evaluation, now))?.status !== 'queued') {
          report.finished.push(evaluationId);
        }
      } catch (error: unknown) {
        log.error('could not finish an evaluation; the next sweep tries again', { evaluationId, error });
      }
    }
  }
  return report;
}
