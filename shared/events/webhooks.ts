/**
 * The webhook routes' read and delete use cases: list, delete, and an endpoint's latest delivery attempts (the
 * registration is register.ts: only its function may seal secrets). No answer here carries a secret.
 */
import type { ListWebhooksResponse, Webhook, WebhookDeliveriesResponse } from '../contract.js';
import { NotFoundError } from '../errors.js';
import { deleteWebhook, getWebhook, listDeliveries, listWebhooks, type WebhookRecord } from '../store/webhooks.js';

/** The API's view of an endpoint: never its secret. */
export function toWebhook(record: WebhookRecord): Webhook {
  return {
    id: record.webhookId,
    url: record.url,
    events: record.events,
    ...(record.description !== undefined ? { description: record.description } : {}),
    createdAt: record.createdAt,
  };
}

export async function listWebhookViews(tenantId: string): Promise<ListWebhooksResponse> {
  return { items: (await listWebhooks(tenantId)).map(toWebhook) };
}

/** Deletes an endpoint: no delivery of it is tried after this (pending tries find it gone and stop). */
export async function removeWebhook(tenantId: string, webhookId: string): Promise<void> {
  if (!(await deleteWebhook(tenantId, webhookId))) throw new NotFoundError('webhook', webhookId);
}

export async function listDeliveryViews(tenantId: string, webhookId: string): Promise<WebhookDeliveriesResponse> {
  if (!(await getWebhook(tenantId, webhookId))) throw new NotFoundError('webhook', webhookId);
  const records = await listDeliveries(webhookId);
  return {
    items: records.map((r) => ({
      eventId: r.eventId,
      type: r.type,
      attempt: r.attempt,
      status: r.status,
      attemptedAt: r.attemptedAt,
      statusCode: r.statusCode,
      error: r.error,
      latencyMs: r.latencyMs,
      nextTryAt: r.nextTryAt,
      response: r.response,
    })),
  };
}
