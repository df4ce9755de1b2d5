/**
 * The deliver function's core: one message, one try. It finds the endpoint (deleted: nothing to do), builds the
 * event body (the run as GET /v1/runs/{jobId} answers it), checks the URL again (DNS can change), signs and POSTs
 * it (post.ts), and records the attempt. A failed try is followed by a new message for the next one after the
 * schedule's jittered wait; after the last try the message goes to the dead-letter queue and the attempt is recorded
 * `failed`. Receivers' failures are outcomes, never thrown: only the service's own faults (a table unreachable) throw,
 * and SQS redelivers the message. A try holds one of its tenant's delivery slots (store/delivery-slots.ts) while it
 * resolves and POSTs; when they are all held the message waits and comes back, untried and unrecorded.
 */
import { randomUUID } from 'node:crypto';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { sqs } from '../aws/sqs.js';
import { config } from '../config.js';
import { webhookQueue, webhookSettings } from '../infra/resources.js';
import { log } from '../log.js';
import { resource } from '../resource-name.js';
import { releaseDeliverySlot, takeDeliverySlot } from '../store/delivery-slots.js';
import { type DeliveryStatus, getWebhook, putDelivery, type WebhookRecord } from '../store/webhooks.js';
import { type DeliveryMessage, deliveryMessageBody } from './messages.js';
import { type PostOutcome, postWebhook } from './post.js';
import { runData } from './run-data.js';
import { openSecret } from './secrets.js';
import { EVENT_ID_HEADER, SIGNATURE_HEADER, signatureHeader } from './signature.js';
import { checkWebhookUrl, type SafeTarget, UnsafeUrlError } from './url-safety.js';

const webhookQueueUrl = resource(webhookQueue.envVar);
const deadLetterUrl = resource(webhookQueue.deadLetter.envVar);

/** The waits between tries, in seconds: one fewer than the tries. */
export function retryDelays(): readonly number[] {
  return config.webhookRetryDelaysSeconds ?? webhookSettings.retryDelaysSeconds;
}

/** The wait after failed try `attempt` (1-based), jittered by ±webhookSettings.jitter; undefined after the last. */
export function nextDelaySeconds(attempt: number, random: () => number = Math.random): number | undefined {
  const base = retryDelays()[attempt - 1];
  if (base === undefined) return undefined;
  const factor = 1 - webhookSettings.jitter + 2 * webhookSettings.jitter * random();
  return Math.max(0, Math.round(base * factor));
}

export type DeliverResult = 'delivered' | 'retrying' | 'failed' | 'postponed' | 'dropped';

export interface DeliverOptions {
  /** Resolves host names (tests). */
  resolve?: (host: string) => Promise<string[]>;
  /** The lookup's deadline (tests; default webhookSettings.dnsTimeoutMs). */
  dnsTimeoutMs?: number;
  now?: () => number;
  random?: () => number;
}

async function send(queueUrl: string, message: DeliveryMessage, delaySeconds: number): Promise<void> {
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: queueUrl,
      MessageBody: deliveryMessageBody(message),
      DelaySeconds: Math.min(webhookQueue.maxDelaySeconds, Math.max(0, Math.ceil(delaySeconds))),
    }),
  );
}

/** Checks the endpoint's URL again, then signs and POSTs the body: the try's outcome. */
async function tryPost(
  webhook: WebhookRecord,
  eventId: string,
  rawBody: string,
  options: DeliverOptions,
  now: () => number,
): Promise<PostOutcome> {
  let target: SafeTarget;
  try {
    target = await checkWebhookUrl(webhook.url, {
      allowLocalhost: config.webhookAllowLocalhost,
      ...(options.resolve ? { resolve: options.resolve } : {}),
      ...(options.dnsTimeoutMs !== undefined ? { dnsTimeoutMs: options.dnsTimeoutMs } : {}),
    });
  } catch (error: unknown) {
    if (!(error instanceof UnsafeUrlError)) throw error;
    const why = error.kind === 'timeout' ? 'timeout' : 'url_refused';
    return { ok: false, statusCode: null, error: why, latencyMs: 0, response: '' };
  }
  const secret = await openSecret(webhook.secret, webhook.tenantId, webhook.webhookId);
  return postWebhook(target, rawBody, {
    'content-type': 'application/json',
    'user-agent': 'vision-webhooks/1',
    [EVENT_ID_HEADER]: eventId,
    [SIGNATURE_HEADER]: signatureHeader(secret, rawBody, Math.floor(now() / 1000)),
  });
}

/** The wait of a try postponed for the `postponed`-th time: 2, 4, 8, … seconds up to busyWaitMaxSeconds, jittered. */
export function busyDelaySeconds(postponed: number, random: () => number = Math.random): number {
  const base = Math.min(webhookSettings.busyWaitMaxSeconds, 2 ** postponed);
  return Math.max(1, Math.round(base * (1 - webhookSettings.jitter + 2 * webhookSettings.jitter * random())));
}

/** Delivers one message's try. */
export async function deliverOne(message: DeliveryMessage, options: DeliverOptions = {}): Promise<DeliverResult> {
  const now = options.now ?? Date.now;
  // Early (a wait longer than SQS's longest delay): on again, untried.
  if (message.notBefore !== undefined && message.notBefore - now() > 1000) {
    await send(webhookQueueUrl(), message, (message.notBefore - now()) / 1000);
    return 'postponed';
  }
  // The two reads at once: a try's latency is mostly its round trips.
  const [webhook, data] = await Promise.all([
    getWebhook(message.tenantId, message.webhookId),
    runData(message.jobId, message.tenantId),
  ]);
  if (!webhook) return 'dropped';
  if (!data) {
    log.warn('webhook delivery for a run that is gone; dropped', { eventId: message.eventId });
    return 'dropped';
  }
  const rawBody = JSON.stringify({ id: message.eventId, type: message.type, createdAt: message.createdAt, data });
  const holder = `${message.eventId}#${message.webhookId}#${message.attempt}#${randomUUID()}`;
  const slot = await takeDeliverySlot(webhook.tenantId, holder, { now: now() });
  if (!slot) {
    const postponed = (message.postponed ?? 0) + 1;
    await send(webhookQueueUrl(), { ...message, postponed }, busyDelaySeconds(postponed, options.random));
    return 'postponed';
  }
  let result: PostOutcome;
  try {
    result = await tryPost(webhook, message.eventId, rawBody, options, now);
  } finally {
    // A slot not given back expires with its lease: never a reason to try again.
    await releaseDeliverySlot(slot).catch((error: unknown) => log.warn('could not release a delivery slot', { error }));
  }

  let status: DeliveryStatus;
  let nextTryAt: string | null = null;
  if (result.ok) {
    status = 'delivered';
  } else {
    const delay = nextDelaySeconds(message.attempt, options.random);
    if (delay === undefined) {
      status = 'failed';
      // The next try (or the dead letter) is sent before the attempt is recorded: a crash between the two repeats
      // the try, never loses the delivery.
      await send(deadLetterUrl(), message, 0);
    } else {
      status = 'retrying';
      const notBefore = now() + delay * 1000;
      nextTryAt = new Date(notBefore).toISOString();
      await send(webhookQueueUrl(), { ...message, attempt: message.attempt + 1, notBefore }, delay);
    }
  }
  await putDelivery({
    webhookId: webhook.webhookId,
    tenantId: webhook.tenantId,
    eventId: message.eventId,
    type: message.type,
    attempt: message.attempt,
    status,
    attemptedAt: new Date(now() - result.latencyMs).toISOString(),
    statusCode: result.statusCode,
    error: result.error,
    latencyMs: result.latencyMs,
    nextTryAt,
    response: result.response,
  });
  return status;
}
