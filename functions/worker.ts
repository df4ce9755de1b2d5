/**
 * SQS-triggered worker. Each record is one run, or one group of a fanned-out run (the event source's batch size is 1: a
 * run may use the whole invocation); failures are reported per record (partial batch response). Idempotency is by
 * jobId (and group) inside processRun, not message id.
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { runQueue } from '../shared/infra/resources.js';
import { log } from '../shared/log.js';
import { adapters } from '../shared/providers/adapters.js';
import { checkEnvironment } from '../shared/resource-name.js';
import { runMessageOf } from '../shared/runs/run-message.js';
import { type ProcessOptions, processRun } from '../shared/worker/process-run.js';

checkEnvironment();

type WorkerDependencies = Pick<ProcessOptions, 'adapters' | 'fault'> &
  Partial<Pick<ProcessOptions, 'visibilityTimeoutSeconds'>>;

/**
 * Builds the batch handler; the local stack passes a fault hook for crash tests and its own visibility timeout,
 * Lambda uses the defaults.
 */
export function createWorkerHandler({
  visibilityTimeoutSeconds = runQueue.visibilityTimeoutSeconds,
  ...deps
}: WorkerDependencies) {
  return async (event: SQSEvent, context: Pick<Context, 'getRemainingTimeInMillis'>): Promise<SQSBatchResponse> => {
    const batchItemFailures: SQSBatchResponse['batchItemFailures'] = [];
    for (const record of event.Records) {
      const message = runMessageOf(record.body);
      if (message === undefined) {
        // A malformed message can never succeed; retrying would only move it to the DLQ later.
        log.error('dropping malformed run message', { messageId: record.messageId });
        continue;
      }
      const { jobId, group } = message;
      try {
        const receiveCount = Number(record.attributes.ApproximateReceiveCount ?? '1');
        const outcome = await processRun(jobId, {
          ...deps,
          remainingMs: context.getRemainingTimeInMillis(),
          receiveCount,
          maxReceiveCount: runQueue.maxReceiveCount,
          visibilityTimeoutSeconds,
          ...(group !== undefined ? { group } : {}),
        });
        log.info('run processed', { jobId, ...(group !== undefined ? { group } : {}), outcome });
        // Another invocation holds the run. Its claim ends before this message would come back, so handing it back
        // means the run is looked at again later: done by then (dropped), or its holder died (processed then). On
        // the last allowed delivery the message is dropped instead of going to the DLQ: the delivery was counted,
        // and a holder that dies leaves a run the reconciler fails and refunds.
        if (outcome === 'leased' && receiveCount < runQueue.maxReceiveCount) {
          batchItemFailures.push({ itemIdentifier: record.messageId });
        }
      } catch (error: unknown) {
        log.error('run processing failed; will be redelivered', { jobId, group, error });
        batchItemFailures.push({ itemIdentifier: record.messageId });
      }
    }
    return { batchItemFailures };
  };
}

export const handler = createWorkerHandler({ adapters });
