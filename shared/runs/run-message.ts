/**
 * The run queue's message, in one place: create-run sends it for a new run, the reconciler again for a run whose
 * message was lost; the worker (and the local stack's fault seams) read it.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { sqs } from '../aws/sqs.js';
import { runQueue } from '../infra/resources.js';
import { resource } from '../resource-name.js';
import * as z from '../zod.js';

const runQueueUrl = resource(runQueue.envVar);

const runMessage = z.object({ jobId: z.string().check(z.minLength(1)) });

/** Queues a run for the worker. */
export async function enqueueRun(jobId: string): Promise<void> {
  const body: z.infer<typeof runMessage> = { jobId };
  await sqs.send(new SendMessageCommand({ QueueUrl: runQueueUrl(), MessageBody: JSON.stringify(body) }));
}

/** The run a message names; undefined for a malformed message (no retry can mend it). */
export function jobIdOf(messageBody: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(messageBody);
  } catch {
    return undefined;
  }
  const message = runMessage.safeParse(parsed);
  return message.success ? message.data.jobId : undefined;
}
