/**
 * Dispatch: hands a run's event (the outbox item its settlement wrote, store/events.ts) to every endpoint of the
 * tenant that subscribed to its type — one delivery-queue message each — and, deployed, to the EventBridge bus's
 * feed queue; then marks it dispatched. The worker dispatches right after the settlement commits; the sweep (run by
 * the reconciler) dispatches what a crash left pending. A crash between sending and marking sends again: delivery is
 * at least once, and receivers dedupe by event id. Why: docs/decisions.md#run-events-an-outbox-in-the-settlement
 */
import { SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { sqs } from '../aws/sqs.js';
import { eventBus, webhookQueue, webhookSettings } from '../infra/resources.js';
import { log } from '../log.js';
import { checkAtInit, resource } from '../resource-name.js';
import { type EventRecord, eventsTable, getEvent, listPendingBefore, markDispatched } from '../store/events.js';
import { listWebhooks } from '../store/webhooks.js';
import { type DeliveryMessage, deliveryMessageBody } from './messages.js';
import { runData } from './run-data.js';

checkAtInit(eventsTable);
const webhookQueueUrl = resource(webhookQueue.envVar);

/** The bus's feed queue; unset on the local stack, which has no bus. */
function busFeedUrl(): string | undefined {
  return process.env[eventBus.feedQueue.envVar] || undefined;
}

async function sendDeliveries(messages: DeliveryMessage[]): Promise<void> {
  for (let i = 0; i < messages.length; i += 10) {
    const chunk = messages.slice(i, i + 10);
    const out = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: webhookQueueUrl(),
        Entries: chunk.map((message, n) => ({ Id: String(n), MessageBody: deliveryMessageBody(message) })),
      }),
    );
    if ((out.Failed ?? []).length > 0) {
      throw new Error(`the delivery queue refused ${out.Failed?.length} message(s): ${out.Failed?.[0]?.Code}`);
    }
  }
}

/**
 * The bus's event: detail-type and the run with its `tenantId` (the bus carries every tenant's runs: rules route on
 * it, never on names a tenant picks, such as `workflow`); a run over EventBridge's size limit goes without its result
 * and its per-field evidence (`fields`, which can be as large as the result).
 */
export function busMessage(event: EventRecord, run: Record<string, unknown>): string {
  const detailType = eventBus.detailTypes[event.type];
  const detail: Record<string, unknown> = { ...run, tenantId: event.tenantId };
  const whole = JSON.stringify({ detailType, detail });
  // Room for the envelope EventBridge adds (source, ids, time, resources).
  if (Buffer.byteLength(whole) <= eventBus.maxEventBytes - 2048) return whole;
  const { result: _result, fields: _fields, ...rest } = detail;
  return JSON.stringify({ detailType, detail: { ...rest, resultOmitted: true } });
}

/**
 * Dispatches one event unless it already was: by id (read from the outbox), or the record its settlement just wrote
 * (no read). Returns whether it sent anything. Throws when a send fails (the event stays pending; the sweep tries
 * again).
 */
export async function dispatchEvent(which: string | EventRecord): Promise<boolean> {
  const event = typeof which === 'string' ? await getEvent(which) : which;
  if (!event || event.dispatchedAt !== undefined) return false;
  const { eventId } = event;
  const endpoints = (await listWebhooks(event.tenantId)).filter((w) => w.events.includes(event.type));
  const { type, jobId, tenantId, createdAt } = event;
  await sendDeliveries(
    endpoints.map((w) => ({ eventId, type, jobId, createdAt, tenantId, webhookId: w.webhookId, attempt: 1 })),
  );
  const feed = busFeedUrl();
  if (feed !== undefined) {
    const run = await runData(event.jobId, event.tenantId);
    if (run) await sqs.send(new SendMessageCommand({ QueueUrl: feed, MessageBody: busMessage(event, run) }));
  }
  await markDispatched(eventId);
  return true;
}

/**
 * Dispatches a run's event right after its settlement committed (`event`: what the settlement wrote). Never throws:
 * the state is written, and an event this call could not hand on is left pending for the sweep.
 */
export async function dispatchAfterSettle(event: EventRecord): Promise<void> {
  try {
    await dispatchEvent(event);
  } catch (error: unknown) {
    log.warn('could not dispatch a run event; the sweep hands it on', { eventId: event.eventId, error });
  }
}

export interface SweepOptions {
  /** An event pending this long after it was written is taken for one whose dispatcher crashed. */
  afterSeconds: number;
  shards: number;
  pageSize: number;
}

export const DEFAULT_SWEEP_OPTIONS: SweepOptions = {
  afterSeconds: webhookSettings.sweepAfterSeconds,
  shards: webhookSettings.shards,
  pageSize: webhookSettings.sweepPageSize,
};

/** Dispatches the events left pending; returns their ids. Throws after trying them all when some failed. */
export async function sweepPendingEvents(options: SweepOptions = DEFAULT_SWEEP_OPTIONS, now = new Date()) {
  const before = new Date(now.getTime() - options.afterSeconds * 1000).toISOString();
  const dispatched: string[] = [];
  const failed: string[] = [];
  for (let shard = 0; shard < options.shards; shard++) {
    for (const eventId of await listPendingBefore(`p${shard}`, before, options.pageSize)) {
      try {
        if (await dispatchEvent(eventId)) dispatched.push(eventId);
      } catch (error: unknown) {
        log.error('could not dispatch a pending event; the next sweep tries again', { eventId, error });
        failed.push(eventId);
      }
    }
  }
  if (dispatched.length > 0) log.warn('pending run events dispatched by the sweep', { dispatched });
  if (failed.length > 0) throw new Error(`sweep: ${failed.length} event(s) could not be dispatched`);
  return dispatched;
}
