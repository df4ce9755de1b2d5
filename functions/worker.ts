/**
 * SQS-triggered worker. Each record is one run, or one group of a fanned-out run (the event source's batch size is 1: a
 * run may use the whole invocation); failures are reported per record (partial batch response). Idempotency is by
 * jobId (and group) inside processRun, not message id. A message handed back is hidden for a lease at most, so it
 * comes again soon after the lease that kept it out ends (docs/decisions.md#a-lease-per-delivery-renewed-by-a-heartbeat).
 */
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { hideMessage, runMessageOf } from '../shared/aws/run-message.js';
import { config } from '../shared/config.js';
import { runQueue } from '../shared/infra/resources.js';
import { log } from '../shared/log.js';
import { adapters } from '../shared/providers/adapters.js';
import { checkEnvironment } from '../shared/resource-name.js';
import { type Held, type ProcessOptions, processRun } from '../shared/worker/process-run.js';

checkEnvironment();

interface WorkerDependencies extends Pick<ProcessOptions, 'adapters' | 'fault'> {
  /** The queue's visibility timeout (the local stack sets its own); Lambda's is runQueue's. */
  visibilityTimeoutSeconds?: number;
}

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
    // A message handed back comes again after this long at most: one lease, or the queue's own (shorter) visibility
    // timeout (the local stack's tests shorten it to see redeliveries).
    const retrySeconds = Math.min(config.leaseSeconds, visibilityTimeoutSeconds);
    const handBack = async (receiptHandle: string, seconds: number) => {
      try {
        await hideMessage(receiptHandle, seconds);
      } catch (error: unknown) {
        // Not fatal: the message comes back when the visibility last set for it ends.
        log.warn('could not set when a handed-back run message comes again', { error });
      }
    };
    for (const record of event.Records) {
      const message = runMessageOf(record.body);
      if (message === undefined) {
        // A malformed message can never succeed; retrying would only move it to the DLQ later.
        log.error('dropping malformed run message', { messageId: record.messageId });
        continue;
      }
      const { jobId, group } = message;
      const about = { jobId, ...(group !== undefined ? { group } : {}) };
      try {
        const receiveCount = Number(record.attributes.ApproximateReceiveCount ?? '1');
        const outcome = await processRun(jobId, {
          ...deps,
          remainingMs: context.getRemainingTimeInMillis(),
          receiveCount,
          maxReceiveCount: runQueue.maxReceiveCount,
          receiptHandle: record.receiptHandle,
          ...(group !== undefined ? { group } : {}),
        });
        if (outcome !== 'lease-lost' && typeof outcome !== 'object') {
          log.info('run processed', { ...about, outcome });
          continue;
        }
        const holder = typeof outcome === 'object' ? outcome : undefined;
        log.warn('run held by another delivery; its message comes back when that lease ends', {
          ...about,
          outcome: 'leased',
          ...heldBy(holder),
        });
        // Another delivery holds the run. The message comes back when that lease would end: the run is then done
        // (dropped), or its holder died (processed then). On the last allowed delivery the message is dropped instead
        // of going to the DLQ: the delivery was counted, and a holder that dies leaves a run the reconciler fails and
        // refunds.
        if (receiveCount < runQueue.maxReceiveCount) {
          await handBack(record.receiptHandle, untilLeaseEnds(holder?.until, retrySeconds));
          batchItemFailures.push({ itemIdentifier: record.messageId });
        }
      } catch (error: unknown) {
        log.error('run processing failed; will be redelivered', { ...about, error });
        await handBack(record.receiptHandle, retrySeconds);
        batchItemFailures.push({ itemIdentifier: record.messageId });
      }
    }
    return { batchItemFailures };
  };
}

/** Whose lease a delivery stood back for, and until when, for the log. */
function heldBy(holder: Held | undefined): Record<string, string> {
  if (holder === undefined) return { heldBy: "the delivery that took this one's lease over" };
  return {
    heldBy: holder.holder ?? 'another delivery',
    ...(holder.until !== undefined ? { heldUntil: new Date(holder.until).toISOString() } : {}),
  };
}

/** Seconds until a lease ends (and a second more), within 1 s and `most`; `most` when unknown. */
function untilLeaseEnds(until: number | undefined, most: number): number {
  if (until === undefined) return most;
  return Math.min(most, Math.max(1, Math.ceil((until - Date.now()) / 1000) + 1));
}

export const handler = createWorkerHandler({ adapters });
