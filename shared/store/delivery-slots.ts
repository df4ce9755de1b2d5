/**
 * A tenant's delivery slots: at most webhookSettings.maxInFlightPerTenant webhook tries of one tenant are in flight at
 * once, across every deliver invocation, so one tenant's slow or hanging receivers cannot take every delivery worker
 * from the others. A slot is an item of the Webhooks table (`webhookId` = `#slot#<n>`, never listed: endpoints are
 * `wh_…`) leased until `leaseUntil` by one try (`holder`).
 * Not to undo: a slot is a lease, not a counter. A deliver function that dies mid-try leaves its slot to expire (the
 * lease outlasts a try's deadlines) instead of leaking it for ever.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { ddb } from '../aws/dynamodb.js';
import { webhookSettings } from '../infra/resources.js';
import { webhooksTable } from './webhooks.js';

const SLOT_PREFIX = '#slot#';

/** A slot a try holds: give it back with releaseDeliverySlot. */
export interface DeliverySlot {
  tenantId: string;
  webhookId: string;
  holder: string;
}

interface SlotItem {
  tenantId: string;
  webhookId: string;
  holder: string;
  leaseUntil: number;
}

/**
 * Takes a free (or expired) slot of `tenantId` for `holder` until `now + leaseMs`; null when all of them are held.
 * One read of the tenant's slots, then a conditional write per free one tried (another try may take it first).
 */
export async function takeDeliverySlot(
  tenantId: string,
  holder: string,
  options: { now?: number; leaseMs?: number; slots?: number; random?: () => number } = {},
): Promise<DeliverySlot | null> {
  const now = options.now ?? Date.now();
  const slots = options.slots ?? webhookSettings.maxInFlightPerTenant;
  const random = options.random ?? Math.random;
  const out = await ddb.send(
    new QueryCommand({
      TableName: webhooksTable(),
      KeyConditionExpression: 'tenantId = :tenant AND begins_with(webhookId, :prefix)',
      ExpressionAttributeValues: { ':tenant': tenantId, ':prefix': SLOT_PREFIX },
      ConsistentRead: true,
    }),
  );
  const held = new Set(
    ((out.Items ?? []) as SlotItem[]).filter((item) => item.leaseUntil > now).map((item) => item.webhookId),
  );
  const free = Array.from({ length: slots }, (_, n) => `${SLOT_PREFIX}${n}`).filter((id) => !held.has(id));
  // From a random one on, so tries racing for the same tenant rarely want the same slot.
  const start = Math.floor(random() * free.length);
  for (const webhookId of [...free.slice(start), ...free.slice(0, start)]) {
    const item: SlotItem = { tenantId, webhookId, holder, leaseUntil: now + (options.leaseMs ?? leaseMs()) };
    try {
      await ddb.send(
        new PutCommand({
          TableName: webhooksTable(),
          Item: item,
          ConditionExpression: 'attribute_not_exists(webhookId) OR leaseUntil <= :now',
          ExpressionAttributeValues: { ':now': now },
        }),
      );
      return { tenantId, webhookId, holder };
    } catch (error: unknown) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }
  return null;
}

/** Gives a slot back (only if this try still holds it: an expired lease may be another try's by now). */
export async function releaseDeliverySlot(slot: DeliverySlot): Promise<void> {
  try {
    await ddb.send(
      new DeleteCommand({
        TableName: webhooksTable(),
        Key: { tenantId: slot.tenantId, webhookId: slot.webhookId },
        ConditionExpression: 'holder = :holder',
        ExpressionAttributeValues: { ':holder': slot.holder },
      }),
    );
  } catch (error: unknown) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  }
}

/** How long a try holds its slot: longer than its lookup and its POST together, so a live try never loses it. */
export function leaseMs(): number {
  return webhookSettings.dnsTimeoutMs + webhookSettings.timeoutMs + 5_000;
}
