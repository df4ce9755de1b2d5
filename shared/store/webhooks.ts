/**
 * Webhook endpoints, per tenant, and their delivery attempts. A registration and a deletion are each one transaction
 * with the tenant's counter item (`webhookId` = `#count`), whose condition keeps a tenant at most
 * webhookSettings.maxEndpoints endpoints however many requests race. The signing secret is stored sealed
 * (shared/events/secrets.ts decides how); this module never sees it in clear.
 */
import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { ddb } from '../aws/dynamodb.js';
import { tables, webhookSettings } from '../infra/resources.js';
import { resource } from '../resource-name.js';
import type { RunEventType } from './events.js';
import { failedConditions, transactWriteNamed } from './transact.js';

export const webhooksTable = resource(tables.webhooks.envVar);
// Read by the deliveries route and written by the deliver function only.
const deliveriesTable = resource(tables.webhookDeliveries.envVar, { checkAtInit: false });

const COUNTER = '#count';
const WEBHOOK_ID_PREFIX = 'wh_';

/** A signing secret as stored: encrypted under a key of the deployment, or (the local stack) as it is. */
export type SealedSecret =
  | { box: 'aes-256-gcm'; keyVersion: string; data: string }
  | { box: 'local-plaintext'; value: string };

export interface WebhookRecord {
  tenantId: string;
  webhookId: string;
  url: string;
  events: RunEventType[];
  description?: string;
  createdAt: string;
  secret: SealedSecret;
}

/** Thrown when the tenant already has webhookSettings.maxEndpoints endpoints. */
export class TooManyWebhooks extends Error {}

/** Stores a new endpoint; throws TooManyWebhooks when the tenant has its maximum already. */
export async function putWebhook(record: WebhookRecord): Promise<void> {
  const items = {
    counter: {
      Update: {
        TableName: webhooksTable(),
        Key: { tenantId: record.tenantId, webhookId: COUNTER },
        UpdateExpression: 'ADD endpoints :one',
        ConditionExpression: 'attribute_not_exists(endpoints) OR endpoints < :max',
        ExpressionAttributeValues: { ':one': 1, ':max': webhookSettings.maxEndpoints },
      },
    },
    webhook: {
      Put: { TableName: webhooksTable(), Item: record, ConditionExpression: 'attribute_not_exists(webhookId)' },
    },
  };
  try {
    await transactWriteNamed(items);
  } catch (error: unknown) {
    if (failedConditions(error, items).has('counter')) throw new TooManyWebhooks();
    throw error;
  }
}

/** Deletes an endpoint; false when the tenant has none of that id. */
export async function deleteWebhook(tenantId: string, webhookId: string): Promise<boolean> {
  if (!webhookId.startsWith(WEBHOOK_ID_PREFIX)) return false;
  const items = {
    webhook: {
      Delete: {
        TableName: webhooksTable(),
        Key: { tenantId, webhookId },
        ConditionExpression: 'attribute_exists(webhookId)',
      },
    },
    counter: {
      Update: {
        TableName: webhooksTable(),
        Key: { tenantId, webhookId: COUNTER },
        UpdateExpression: 'ADD endpoints :minus',
        ExpressionAttributeValues: { ':minus': -1 },
      },
    },
  };
  try {
    await transactWriteNamed(items);
    return true;
  } catch (error: unknown) {
    if (failedConditions(error, items).has('webhook')) return false;
    throw error;
  }
}

export async function getWebhook(tenantId: string, webhookId: string): Promise<WebhookRecord | null> {
  if (!webhookId.startsWith(WEBHOOK_ID_PREFIX)) return null;
  const out = await ddb.send(
    new GetCommand({ TableName: webhooksTable(), Key: { tenantId, webhookId }, ConsistentRead: true }),
  );
  return (out.Item as WebhookRecord | undefined) ?? null;
}

/** The tenant's endpoints, oldest first (at most webhookSettings.maxEndpoints: one page). */
export async function listWebhooks(tenantId: string): Promise<WebhookRecord[]> {
  const out = await ddb.send(
    new QueryCommand({
      TableName: webhooksTable(),
      KeyConditionExpression: 'tenantId = :tenant AND begins_with(webhookId, :prefix)',
      ExpressionAttributeValues: { ':tenant': tenantId, ':prefix': WEBHOOK_ID_PREFIX },
      ConsistentRead: true,
    }),
  );
  const items = (out.Items ?? []) as WebhookRecord[];
  return items.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
}

/** A new endpoint id: `wh_` + 20 hex digits. */
export function newWebhookId(random: string): string {
  return `${WEBHOOK_ID_PREFIX}${random}`;
}

// ---------- delivery attempts ----------

export type DeliveryStatus = 'delivered' | 'retrying' | 'failed';

export interface DeliveryRecord {
  webhookId: string;
  /** `<attemptedAt>#<eventId>#<attempt>`: sorts by time. */
  attemptKey: string;
  tenantId: string;
  eventId: string;
  type: RunEventType;
  /** 1 for the first try. */
  attempt: number;
  status: DeliveryStatus;
  attemptedAt: string;
  /** The receiver's HTTP status, when it answered. */
  statusCode: number | null;
  /**
   * Why the try failed, when it did: a coarse class (shared/events/post.ts: `connect_failed`, `tls_error`, `timeout`,
   * `url_refused`, `http_<status>`); attempts recorded before these classes may carry older words.
   */
  error: string | null;
  latencyMs: number;
  /** When the next try is due; null once delivered or failed. */
  nextTryAt: string | null;
  /** At most webhookSettings.responseStoredMaxBytes of the receiver's answer. */
  response: string;
  expiresAtEpoch: number;
}

export async function putDelivery(record: Omit<DeliveryRecord, 'attemptKey' | 'expiresAtEpoch'>): Promise<void> {
  const item: DeliveryRecord = {
    ...record,
    attemptKey: `${record.attemptedAt}#${record.eventId}#${String(record.attempt).padStart(3, '0')}`,
    expiresAtEpoch:
      Math.floor(Date.parse(record.attemptedAt) / 1000) + webhookSettings.deliveryRetentionDays * 24 * 3600,
  };
  await ddb.send(new PutCommand({ TableName: deliveriesTable(), Item: item }));
}

/** The endpoint's latest attempts, newest first. */
export async function listDeliveries(
  webhookId: string,
  limit: number = webhookSettings.deliveriesListed,
): Promise<DeliveryRecord[]> {
  const out = await ddb.send(
    new QueryCommand({
      TableName: deliveriesTable(),
      KeyConditionExpression: 'webhookId = :id',
      ExpressionAttributeValues: { ':id': webhookId },
      ScanIndexForward: false,
      Limit: limit,
      ConsistentRead: true,
    }),
  );
  return (out.Items ?? []) as DeliveryRecord[];
}
