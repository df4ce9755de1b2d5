/**
 * Drives the worker from the queue the way Lambda's SQS event source mapping does: long-poll batches, invoke the
 * handler, delete the messages that succeeded, and leave the reported failures to reappear after the visibility
 * timeout (the queue's redrive policy moves them to the DLQ after maxReceiveCount).
 * Not to undo: receives wait up to 20 s, as the event source mapping's do, and stopping aborts them. fauxqs answers a
 * waiting receive the moment a message is sent or becomes visible again, so the wait costs no latency; polling every
 * second instead kept an idle stack busy (a dozen pollers, ~6 % of a core: docs/decisions.md, "The test suite's
 * phases").
 */
import { DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { log } from '../../shared/log.js';

type WorkerHandler = (event: SQSEvent, context: Pick<Context, 'getRemainingTimeInMillis'>) => Promise<SQSBatchResponse>;

export interface WorkerRunnerOptions {
  queueUrl: string;
  queueArn: string;
  handler: WorkerHandler;
  batchSize: number;
  timeoutSeconds: number;
  /** Parallel pollers (Lambda's concurrency). */
  concurrency: number;
}

/** SQS's longest receive wait, the one Lambda's event source mapping uses. */
const RECEIVE_WAIT_SECONDS = 20;

export interface WorkerRunner {
  /**
   * Stops receiving, and waits up to `graceMs` for the invocations in flight; resolves with how many are still running
   * then. Those are abandoned, as a Lambda environment shut down under them: what they hold comes back to the queue.
   */
  stop(graceMs?: number): Promise<number>;
}

export function startWorkerRunner(options: WorkerRunnerOptions): WorkerRunner {
  const sqs = new SQSClient({ useQueueUrlAsEndpoint: false });
  let running = true;
  let inFlight = 0;
  /** Ends the receives waiting at stop. */
  const stopped = new AbortController();

  async function poll(): Promise<void> {
    while (running) {
      try {
        const received = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: options.queueUrl,
            MaxNumberOfMessages: options.batchSize,
            WaitTimeSeconds: RECEIVE_WAIT_SECONDS,
            MessageSystemAttributeNames: ['All'],
          }),
          { abortSignal: stopped.signal },
        );
        const messages = received.Messages ?? [];
        if (messages.length === 0) continue;
        const event: SQSEvent = {
          Records: messages.map((m) => ({
            messageId: m.MessageId ?? '',
            receiptHandle: m.ReceiptHandle ?? '',
            body: m.Body ?? '',
            attributes: {
              ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? '1',
              SentTimestamp: m.Attributes?.SentTimestamp ?? String(Date.now()),
              SenderId: m.Attributes?.SenderId ?? 'local',
              ApproximateFirstReceiveTimestamp: m.Attributes?.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
            },
            messageAttributes: {},
            md5OfBody: m.MD5OfBody ?? '',
            eventSource: 'aws:sqs',
            eventSourceARN: options.queueArn,
            awsRegion: process.env.AWS_REGION ?? 'us-east-1',
          })),
        };
        const deadline = Date.now() + options.timeoutSeconds * 1000;
        let failed = new Set<string>();
        inFlight += 1;
        try {
          const response = await options.handler(event, {
            getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
          });
          failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
        } catch (error: unknown) {
          // A thrown handler error fails the whole batch, as with Lambda.
          log.error('worker invocation failed', { error });
          failed = new Set(messages.map((m) => m.MessageId ?? ''));
        } finally {
          inFlight -= 1;
        }
        const done = messages.filter((m) => !failed.has(m.MessageId ?? ''));
        if (done.length > 0) {
          await sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: options.queueUrl,
              Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
            }),
          );
        }
      } catch (error: unknown) {
        if (running) {
          log.error('worker poller error', { error });
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    }
  }

  const pollers = Array.from({ length: options.concurrency }, () => poll());
  return {
    stop: async (graceMs = Number.POSITIVE_INFINITY) => {
      running = false;
      stopped.abort();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const grace = new Promise<void>((resolve) => {
        if (Number.isFinite(graceMs)) timer = setTimeout(resolve, graceMs);
      });
      await Promise.race([Promise.allSettled(pollers), grace]);
      clearTimeout(timer);
      const left = inFlight;
      sqs.destroy();
      return left;
    },
  };
}
