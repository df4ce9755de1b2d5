/**
 * The webhook delivery queue's message: one event, one endpoint, one try. It carries what the body needs besides the
 * run (the event's id, type, time and run), so a try reads only the endpoint and the run. A retry is a new message
 * with the next try's number and `notBefore` (deliver.ts); a message that arrives before it (SQS delays at most 15
 * minutes) is sent on again, untried.
 */
import * as z from '../zod.js';

const deliveryMessage = z.object({
  eventId: z.string().check(z.minLength(1)),
  type: z.enum(['run.completed', 'run.failed']),
  jobId: z.string().check(z.minLength(1)),
  createdAt: z.string(),
  tenantId: z.string().check(z.minLength(1)),
  webhookId: z.string().check(z.minLength(1)),
  attempt: z.number().check(z.int(), z.minimum(1)),
  /** Epoch milliseconds before which the try is not due. */
  notBefore: z.optional(z.number()),
  /** How many times this try found its tenant's delivery slots all held and was sent on to wait (not a try). */
  postponed: z.optional(z.number().check(z.int(), z.minimum(1))),
});

export type DeliveryMessage = z.infer<typeof deliveryMessage>;

export function deliveryMessageBody(message: DeliveryMessage): string {
  return JSON.stringify(message);
}

/** The message, or undefined for a malformed one (no retry can mend it). */
export function parseDeliveryMessage(body: string): DeliveryMessage | undefined {
  try {
    const parsed = deliveryMessage.safeParse(JSON.parse(body));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
