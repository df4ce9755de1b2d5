/**
 * SQS-triggered deliver function: each record is one try of one event to one endpoint (shared/events/deliver.ts).
 * The batch's records are delivered concurrently, so one slow receiver never holds up another's delivery; a record
 * whose handling threw (the service's own fault, never a receiver's) is reported for redelivery.
 */
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { type DeliverOptions, deliverOne } from '../shared/events/deliver.js';
import { parseDeliveryMessage } from '../shared/events/messages.js';
import { log } from '../shared/log.js';
import { checkEnvironment } from '../shared/resource-name.js';

checkEnvironment();

/** Builds the batch handler (tests and the local stack may pass options). */
export function createDeliverHandler(options: DeliverOptions = {}) {
  return async (event: SQSEvent): Promise<SQSBatchResponse> => {
    const failures = await Promise.all(
      event.Records.map(async (record) => {
        const message = parseDeliveryMessage(record.body);
        if (!message) {
          log.error('dropping malformed webhook message', { messageId: record.messageId });
          return null;
        }
        try {
          await deliverOne(message, options);
          return null;
        } catch (error: unknown) {
          log.error('webhook delivery failed; will be redelivered', { eventId: message.eventId, error });
          return { itemIdentifier: record.messageId };
        }
      }),
    );
    return { batchItemFailures: failures.filter((f) => f !== null) };
  };
}

export const handler = createDeliverHandler();
