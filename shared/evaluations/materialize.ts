/**
 * The runs of an evaluation: each item becomes an ordinary run (tagged with the evaluation, its money the evaluation's
 * hold), written once and queued. Called by the creating request right after the hold, and by the reconciler for an
 * evaluation whose creating request died before it finished (`sweepEvaluations`).
 * Not to undo: a run's id is derived from the evaluation and the item, and its write is conditional, so writing the
 * runs again creates only the missing ones; a run written but never queued is in the `queued` index, where the run
 * reconciler sends its message. A run that cannot be written is failed and refunded at the last try, never retried
 * forever (the hold would never be released).
 */
import { createHash } from 'node:crypto';
import { enqueueRuns } from '../aws/run-message.js';
import { evaluationSettings } from '../infra/resources.js';
import { log } from '../log.js';
import { priorityFields } from '../runs/priority.js';
import { failUnwrittenRun } from '../store/evaluation-unwritten.js';
import {
  type EvaluationItemRecord,
  type EvaluationRecord,
  markMaterialized,
  putItemRun,
  queryItems,
} from '../store/evaluations.js';
import { queuedShardOf, type RunRecord } from '../store/runs.js';
import { afterItemSettled } from './finish.js';

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
    // A batch evaluation's runs are batch runs, promised from the evaluation's creation whoever writes them.
    ...priorityFields(evaluation.priority, new Date(evaluation.createdAt)),
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
      ...(evaluation.untypedFields ? { untypedFields: evaluation.untypedFields } : {}),
    },
  };
}

/** True for a write DynamoDB refuses whatever the time (a record too large or invalid): trying again changes nothing. */
function neverWritable(error: unknown): boolean {
  return error instanceof Error && error.name === 'ValidationException';
}

/**
 * Writes every run of the evaluation that does not exist yet and queues those it wrote, then marks the evaluation's
 * runs written. A failed send is left to the run reconciler (the run is in the `queued` index). A run DynamoDB refuses
 * outright, or any run that cannot be written at the `lastTry` (the sweep's last), is failed and its share refunded
 * (`failUnwrittenRun`); another failed write throws after the others are written (the reconciler calls this again).
 */
export async function materialize(
  evaluation: EvaluationRecord,
  options: { lastTry?: boolean } = {},
): Promise<{ written: number; queued: number; failed: number }> {
  let written = 0;
  let queued = 0;
  let failed = 0;
  let retryLater: unknown;
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
        const run = itemRun(evaluation, item);
        try {
          if (await putItemRun(run)) created.push(item.jobId);
        } catch (error: unknown) {
          if (!options.lastTry && !neverWritable(error)) {
            retryLater = error;
            continue;
          }
          log.error('a run of an evaluation cannot be written: its item fails, its share is refunded', {
            evaluationId: evaluation.evaluationId,
            jobId: item.jobId,
            error,
          });
          if (await failUnwrittenRun(run)) failed += 1;
        }
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
  if (retryLater !== undefined) throw retryLater;
  await markMaterialized(evaluation.evaluationId);
  // No run of a failed item will settle: when they were the last, the report is written here.
  if (failed > 0) await afterItemSettled(evaluation.evaluationId);
  return { written, queued, failed };
}
