/**
 * The event outbox: one item per run that reached a final state, written by the settlement's own transaction
 * (ledger.ts `settleRun`, item `events`), so an event exists exactly when its state committed. An item stays in the
 * sparse `pending` index until its dispatch (shared/events/dispatch.ts) has handed it to the delivery queue and the
 * bus; the sweep hands on the events a crash left pending. Why: docs/decisions.md#run-events-an-outbox-in-the-settlement
 */
import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { applied, ddb } from '../aws/dynamodb.js';
import { tables, webhookSettings } from '../infra/resources.js';
import { resource } from '../resource-name.js';
import type { TransactItem } from './transact.js';

// Not checked at init: every function that settles runs loads this module through the ledger, and the API's
// create-run settles nothing; the worker and the reconciler check it through dispatch.ts.
export const eventsTable = resource(tables.events.envVar, { checkAtInit: false });

const PENDING_INDEX = 'pending';

export const RUN_EVENT_TYPES = ['run.completed', 'run.failed'] as const;
export type RunEventType = (typeof RUN_EVENT_TYPES)[number];

export interface EventRecord {
  /** `evt_` + the run id's own part: one event per run, the same id on every retry and every sink. */
  eventId: string;
  type: RunEventType;
  jobId: string;
  tenantId: string;
  /** When the final state was written (the run's `completedAt`). */
  createdAt: string;
  /** Set while the event waits to be dispatched (the `pending` index's partition). */
  pendingShard?: string;
  dispatchedAt?: string;
  expiresAtEpoch: number;
}

/** The event id of a run's final state. */
export function eventIdFor(jobId: string): string {
  return `evt_${jobId.replace(/^run_/, '')}`;
}

/** The `pending` index's partition of an event: a few shards, so no single partition takes every event. */
export function pendingShardOf(eventId: string): string {
  let sum = 0;
  for (const char of eventId) sum = (sum + char.charCodeAt(0)) % webhookSettings.shards;
  return `p${sum}`;
}

/** The outbox item announcing a run's final state, written at `completedAt`. */
export function eventRecord(
  run: { jobId: string; tenantId: string },
  status: 'completed' | 'failed',
  completedAt: string,
): EventRecord {
  const eventId = eventIdFor(run.jobId);
  return {
    eventId,
    type: status === 'completed' ? 'run.completed' : 'run.failed',
    jobId: run.jobId,
    tenantId: run.tenantId,
    createdAt: completedAt,
    pendingShard: pendingShardOf(eventId),
    expiresAtEpoch: Math.floor(Date.parse(completedAt) / 1000) + webhookSettings.eventRetentionDays * 24 * 3600,
  };
}

/** The outbox item as a transaction item (written only with the state it announces). */
export function eventPut(
  run: { jobId: string; tenantId: string },
  status: 'completed' | 'failed',
  completedAt: string,
): TransactItem {
  const item = eventRecord(run, status, completedAt);
  return { Put: { TableName: eventsTable(), Item: item, ConditionExpression: 'attribute_not_exists(eventId)' } };
}

export async function getEvent(eventId: string): Promise<EventRecord | null> {
  const out = await ddb.send(new GetCommand({ TableName: eventsTable(), Key: { eventId }, ConsistentRead: true }));
  return (out.Item as EventRecord | undefined) ?? null;
}

/** Marks an event dispatched (out of the `pending` index); false when it already was. */
export async function markDispatched(eventId: string, now = new Date()): Promise<boolean> {
  return applied(
    ddb.send(
      new UpdateCommand({
        TableName: eventsTable(),
        Key: { eventId },
        UpdateExpression: 'SET dispatchedAt = :now REMOVE pendingShard',
        ConditionExpression: 'attribute_exists(eventId) AND attribute_not_exists(dispatchedAt)',
        ExpressionAttributeValues: { ':now': now.toISOString() },
      }),
    ),
  );
}

/** Ids of a shard's pending events written before `before` (ISO), oldest first (keys only: callers read each). */
export async function listPendingBefore(shard: string, before: string, limit: number): Promise<string[]> {
  const out = await ddb.send(
    new QueryCommand({
      TableName: eventsTable(),
      IndexName: PENDING_INDEX,
      KeyConditionExpression: 'pendingShard = :shard AND createdAt < :before',
      ExpressionAttributeValues: { ':shard': shard, ':before': before },
      Limit: limit,
    }),
  );
  return (out.Items ?? []).map((item) => String(item.eventId));
}
