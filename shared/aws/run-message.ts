/**
 * The run queue's messages, in one place: create-run sends a run's message (`{jobId}`) for a new run, the reconciler
 * again for a run whose message was lost; the worker sends a fanned-out run's group messages (`{jobId, group}`,
 * shared/worker/fanout.ts), and hides the message it holds for as long as its lease. The worker (and the local stack's
 * fault seams) read them.
 * Not to undo: a message's body depends only on the run and the group, so sending one again is a duplicate the
 * worker already tolerates, never a different request.
 */
import { ChangeMessageVisibilityCommand, SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { runQueue } from '../infra/resources.js';
import { resource } from '../resource-name.js';
import * as z from '../zod.js';
import { sqs } from './sqs.js';

const runQueueUrl = resource(runQueue.envVar);

const runMessage = z.object({
  jobId: z.string().check(z.minLength(1)),
  /** A fanned-out run's group (0-based); absent on the run's own message. */
  group: z.optional(z.number().check(z.int(), z.nonnegative())),
});

export type RunMessage = z.infer<typeof runMessage>;

/** SQS's most messages per SendMessageBatch. */
const BATCH = 10;

/** Queues a run for the worker (one group of a fanned-out run, when given: the batcher's hand-back). */
export async function enqueueRun(jobId: string, group?: number): Promise<void> {
  const body: RunMessage = group === undefined ? { jobId } : { jobId, group };
  await sqs.send(new SendMessageCommand({ QueueUrl: runQueueUrl(), MessageBody: JSON.stringify(body) }));
}

/** Queues the given groups of a fanned-out run, ten to a request; throws when any message was not accepted. */
export async function enqueueGroups(jobId: string, groups: readonly number[]): Promise<void> {
  for (let start = 0; start < groups.length; start += BATCH) {
    const entries = groups.slice(start, start + BATCH).map((group) => {
      const body: RunMessage = { jobId, group };
      return { Id: String(group), MessageBody: JSON.stringify(body) };
    });
    const out = await sqs.send(new SendMessageBatchCommand({ QueueUrl: runQueueUrl(), Entries: entries }));
    const failed = out.Failed ?? [];
    if (failed.length > 0) {
      throw new Error(`run queue refused ${failed.length} group message(s) of ${jobId}: ${failed[0]?.Code ?? ''}`);
    }
  }
}

/** Queues several runs (an evaluation's), ten to a request; throws when any message was not accepted. */
export async function enqueueRuns(jobIds: readonly string[]): Promise<void> {
  for (let start = 0; start < jobIds.length; start += BATCH) {
    const entries = jobIds.slice(start, start + BATCH).map((jobId, i) => {
      const body: RunMessage = { jobId };
      return { Id: String(i), MessageBody: JSON.stringify(body) };
    });
    const out = await sqs.send(new SendMessageBatchCommand({ QueueUrl: runQueueUrl(), Entries: entries }));
    const failed = out.Failed ?? [];
    if (failed.length > 0)
      throw new Error(`run queue refused ${failed.length} run message(s): ${failed[0]?.Code ?? ''}`);
  }
}

/** SQS's longest visibility timeout: 12 hours. */
const MAX_HIDDEN_SECONDS = 43_200;

/**
 * Hides a received run message for `seconds` from now (ChangeMessageVisibility): the worker keeps the message it holds
 * hidden for as long as its lease, and a delivery that hands its message back says when it may come again.
 */
export async function hideMessage(receiptHandle: string, seconds: number): Promise<void> {
  const visibility = Math.min(MAX_HIDDEN_SECONDS, Math.max(0, Math.ceil(seconds)));
  await sqs.send(
    new ChangeMessageVisibilityCommand({
      QueueUrl: runQueueUrl(),
      ReceiptHandle: receiptHandle,
      VisibilityTimeout: visibility,
    }),
  );
}

/** What a message asks; undefined for a malformed message (no retry can mend it). */
export function runMessageOf(messageBody: string): RunMessage | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(messageBody);
  } catch {
    return undefined;
  }
  const message = runMessage.safeParse(parsed);
  return message.success ? message.data : undefined;
}

/** The run a message names (its own or a group's); undefined for a malformed message. */
export function jobIdOf(messageBody: string): string | undefined {
  return runMessageOf(messageBody)?.jobId;
}
