/**
 * The runs of an evaluation: each item becomes an ordinary run (tagged with the evaluation, its money the evaluation's
 * hold), written once and queued. Called by the creating request right after the hold, and by the reconciler for an
 * evaluation whose creating request died before it finished (`sweepEvaluations`).
 * Not to undo: a run's id is derived from the evaluation and the item, and its write is conditional, so writing the
 * runs again creates only the missing ones; a run written but never queued is in the `queued` index, where the run
 * reconciler sends its message.
 */
import { createHash } from 'node:crypto';
import { evaluationSettings } from '../infra/resources.js';
import { log } from '../log.js';
import { enqueueRuns } from '../runs/run-message.js';
import {
  type EvaluationItemRecord,
  type EvaluationRecord,
  markMaterialized,
  putItemRun,
  queryItems,
} from '../store/evaluations.js';
import { queuedShardOf, type RunRecord } from '../store/runs.js';

/** The run id of an evaluation's item `n`: the same whoever writes it. */
export function itemJobId(evaluationId: string, n: number): string {
  return `run_${createHash('sha256').update(`${evaluationId}#${n}`).digest('hex').slice(0, 32)}`;
}

/** The run an item is, as it is written: queued, created with the evaluation, holding nothing of its own. */
export function itemRun(evaluation: EvaluationRecord, item: EvaluationItemRecord): RunRecord {
  const plan = item.plan;
  return {
    jobId: item.jobId,
    tenantId: evaluation.tenantId,
    status: 'queued',
    stage: 'waiting',
    uploadId: plan.uploadId,
    objectKey: plan.objectKey,
    ...(plan.objectIdentity ? { objectIdentity: plan.objectIdentity } : {}),
    ...(plan.uploadExpiresAtEpoch !== undefined ? { uploadExpiresAtEpoch: plan.uploadExpiresAtEpoch } : {}),
    prompt: evaluation.task.prompt,
    outputFormat: 'json',
    schemaId: evaluation.schemaId,
    task: evaluation.task,
    workflow: evaluation.workflow,
    ...(evaluation.workflow !== null ? { tenantWorkflow: `${evaluation.tenantId}#${evaluation.workflow}` } : {}),
    metadata: evaluation.metadata,
    file: plan.file,
    ...(plan.fileName !== undefined ? { fileName: plan.fileName } : {}),
    strategy: plan.strategy,
    candidates: plan.candidates,
    ...(plan.ocrCandidates ? { ocrCandidates: plan.ocrCandidates } : {}),
    ...(plan.chunkPages !== undefined
      ? { chunkPages: plan.chunkPages, progress: { pagesTotal: plan.file.pages, pagesDone: 0 } }
      : {}),
    estimateMicros: plan.estimateMicros,
    marginPct: evaluation.marginPct,
    maxCostMicros: null,
    holdFromCredit: evaluation.holdFromCredit,
    // The evaluation's creation time: its usage counters counted the run then.
    createdAt: evaluation.createdAt,
    ...(evaluation.requestId ? { requestId: evaluation.requestId } : {}),
    expiresAtEpoch: evaluation.expiresAtEpoch,
    queuedShard: queuedShardOf(item.jobId),
    usageCounted: true,
    evaluation: {
      evaluationId: evaluation.evaluationId,
      n: item.n,
      index: item.index,
      provider: item.provider,
      expected: item.expected,
    },
  };
}

/**
 * Writes every run of the evaluation that does not exist yet and queues those it wrote, then marks the evaluation's
 * runs written. A failed send is left to the run reconciler (the run is in the `queued` index); a failed write throws
 * (the reconciler calls this again).
 */
export async function materialize(evaluation: EvaluationRecord): Promise<{ written: number; queued: number }> {
  let written = 0;
  let queued = 0;
  let afterN: number | undefined;
  do {
    const page = await queryItems(evaluation.evaluationId, {
      limit: 500,
      ...(afterN !== undefined ? { afterN } : {}),
    });
    const created: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < page.items.length) {
        const item = page.items[next++] as EvaluationItemRecord;
        if (await putItemRun(itemRun(evaluation, item))) created.push(item.jobId);
      }
    };
    await Promise.all(Array.from({ length: evaluationSettings.writeConcurrency }, worker));
    written += created.length;
    try {
      await enqueueRuns(created);
      queued += created.length;
    } catch (error: unknown) {
      log.error('could not queue runs of an evaluation; the reconciler will send them', {
        evaluationId: evaluation.evaluationId,
        error,
      });
    }
    afterN = page.lastN;
  } while (afterN !== undefined);
  await markMaterialized(evaluation.evaluationId);
  return { written, queued };
}
