/**
 * The money path. A run is created together with its hold, and finished together with its settlement, each as ONE
 * DynamoDB transaction keyed by the run id:
 *   create  = put run (must not exist) + take the hold from the tenant + ledger entry `{jobId}#hold` (+ idempotency record)
 *   settle  = final run state (only if still queued) + release the hold / book charge and refund + ledger `{jobId}#settle`
 * The conditions make both exactly-once: a retried request, a duplicate SQS message or a crash between steps either
 * finds the transaction done (and changes nothing) or redoes all of it.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { ddb } from '../aws.js';
import { resourceName } from '../config.js';
import type { Attempt } from '../contract.js';
import { InsufficientCreditError } from '../errors.js';
import { tables } from '../infra/resources.js';
import { type Micros, microsToUsd } from '../money.js';
import { RUNS_TABLE, type RunError, type RunRecord, type RunUsage } from './runs.js';
import { getTenant } from './tenants.js';

const TENANTS_TABLE = resourceName(tables.tenants.envVar);
const LEDGER_TABLE = resourceName(tables.ledger.envVar);
const IDEMPOTENCY_TABLE = resourceName(tables.idempotency.envVar);

/** The stored outcome of an idempotent creation. */
export interface IdempotencyRecord {
  idempotencyKey: string;
  requestHash: string;
  jobId: string;
  response: unknown;
  createdAt: string;
  expiresAtEpoch: number;
}

export class IdempotencyConflict extends Error {
  constructor() {
    super('idempotency record written concurrently');
    this.name = 'IdempotencyConflict';
  }
}

/** Reads a live (unexpired) idempotency record. DynamoDB TTL deletes lazily, so expiry is checked here too. */
export async function getIdempotencyRecord(idempotencyKey: string): Promise<IdempotencyRecord | null> {
  const out = await ddb.send(
    new GetCommand({ TableName: IDEMPOTENCY_TABLE, Key: { idempotencyKey }, ConsistentRead: true }),
  );
  const record = out.Item as IdempotencyRecord | undefined;
  if (!record || record.expiresAtEpoch <= Math.floor(Date.now() / 1000)) return null;
  return record;
}

/**
 * Writes the run, takes the hold and (optionally) records the idempotency key, atomically.
 * Throws InsufficientCreditError when a limited tenant cannot cover the hold, IdempotencyConflict when the same key
 * was committed concurrently. Returns the record as written.
 */
export async function createRunWithHold(run: RunRecord, idempotency: IdempotencyRecord | null): Promise<RunRecord> {
  const tenant = await getTenant(run.tenantId);
  if (!tenant) throw new Error(`tenant ${run.tenantId} does not exist`);
  const limited = tenant.availableMicros !== undefined;
  const hold = run.estimateMicros;
  const record: RunRecord = { ...run, holdFromCredit: limited };

  const tenantUpdate = limited
    ? {
        UpdateExpression: 'SET availableMicros = availableMicros - :hold ADD heldMicros :hold',
        ConditionExpression: 'attribute_exists(availableMicros) AND availableMicros >= :hold',
      }
    : {
        UpdateExpression: 'ADD heldMicros :hold',
        ConditionExpression: 'attribute_exists(tenantId) AND attribute_not_exists(availableMicros)',
      };

  const items = [
    { Put: { TableName: RUNS_TABLE, Item: record, ConditionExpression: 'attribute_not_exists(jobId)' } },
    {
      Update: {
        TableName: TENANTS_TABLE,
        Key: { tenantId: run.tenantId },
        ...tenantUpdate,
        ExpressionAttributeValues: { ':hold': hold },
      },
    },
    {
      Put: {
        TableName: LEDGER_TABLE,
        Item: {
          tenantId: run.tenantId,
          entryId: `${run.jobId}#hold`,
          jobId: run.jobId,
          kind: 'hold',
          amountMicros: hold,
          createdAt: run.createdAt,
        },
        ConditionExpression: 'attribute_not_exists(entryId)',
      },
    },
    ...(idempotency
      ? [
          {
            Put: {
              TableName: IDEMPOTENCY_TABLE,
              Item: idempotency,
              // An expired record (TTL not yet swept) may be replaced.
              ConditionExpression: 'attribute_not_exists(idempotencyKey) OR expiresAtEpoch <= :now',
              ExpressionAttributeValues: { ':now': Math.floor(Date.now() / 1000) },
            },
          },
        ]
      : []),
  ];

  try {
    await ddb.send(new TransactWriteCommand({ TransactItems: items }));
    return record;
  } catch (error: unknown) {
    if (error instanceof TransactionCanceledException) {
      const reasons = error.CancellationReasons ?? [];
      if (reasons[1]?.Code === 'ConditionalCheckFailed') {
        const fresh = await getTenant(run.tenantId);
        // The tenant's limit may have changed between the read and the write: retry once with the fresh state.
        if (fresh && (fresh.availableMicros !== undefined) !== limited) return createRunWithHold(run, idempotency);
        throw new InsufficientCreditError(microsToUsd(hold), microsToUsd(fresh?.availableMicros ?? 0));
      }
      if (reasons[3]?.Code === 'ConditionalCheckFailed') throw new IdempotencyConflict();
    }
    throw error;
  }
}

/** The final outcome of a run, written once by `settleRun`. */
export type Settlement =
  | {
      status: 'completed';
      result: Record<string, unknown>;
      usage: RunUsage;
      confidence: number;
      attempts: Attempt[];
    }
  | { status: 'failed'; error: RunError; usage?: RunUsage; attempts: Attempt[] };

/**
 * Writes the final state and the money in one transaction, only if the run is still queued.
 * chargedUsd = min(priceUsd, estimate) for a completed run, 0 for a failed one; the rest of the hold is refunded.
 * Returns false (and changes nothing) when the run was already final — a duplicate delivery.
 */
export async function settleRun(run: RunRecord, outcome: Settlement, now = new Date()): Promise<boolean> {
  const hold = run.estimateMicros;
  const charged: Micros = outcome.status === 'completed' ? Math.min(outcome.usage.priceMicros, hold) : 0;
  const refunded: Micros = hold - charged;
  const completedAt = now.toISOString();

  // DynamoDB rejects unused placeholder names, so names are added with the clauses that use them.
  const names: Record<string, string> = { '#status': 'status', '#stage': 'stage' };
  const values: Record<string, unknown> = {
    ':queued': 'queued',
    ':status': outcome.status,
    ':done': 'done',
    ':completedAt': completedAt,
    ':charged': charged,
    ':refunded': refunded,
    ':attempts': outcome.attempts,
  };
  let update =
    'SET #status = :status, #stage = :done, completedAt = :completedAt, chargedMicros = :charged, refundedMicros = :refunded, attempts = :attempts';
  if (outcome.status === 'completed') {
    update += ', #result = :result, #usage = :usage, confidence = :confidence';
    names['#result'] = 'result';
    names['#usage'] = 'usage';
    values[':result'] = outcome.result;
    values[':usage'] = outcome.usage;
    values[':confidence'] = outcome.confidence;
  } else {
    update += ', #error = :error';
    names['#error'] = 'error';
    values[':error'] = outcome.error;
    if (outcome.usage) {
      update += ', #usage = :usage';
      names['#usage'] = 'usage';
      values[':usage'] = outcome.usage;
    }
  }

  const tenantUpdate = run.holdFromCredit
    ? 'ADD heldMicros :negHold, chargedMicros :charged, refundedMicros :refunded, availableMicros :refunded'
    : 'ADD heldMicros :negHold, chargedMicros :charged, refundedMicros :refunded';

  try {
    await ddb.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: RUNS_TABLE,
              Key: { jobId: run.jobId },
              UpdateExpression: update,
              ConditionExpression: '#status = :queued',
              ExpressionAttributeNames: names,
              ExpressionAttributeValues: values,
            },
          },
          {
            Update: {
              TableName: TENANTS_TABLE,
              Key: { tenantId: run.tenantId },
              UpdateExpression: tenantUpdate,
              ExpressionAttributeValues: { ':negHold': -hold, ':charged': charged, ':refunded': refunded },
            },
          },
          {
            Put: {
              TableName: LEDGER_TABLE,
              Item: {
                tenantId: run.tenantId,
                entryId: `${run.jobId}#settle`,
                jobId: run.jobId,
                kind: 'settle',
                outcome: outcome.status,
                holdMicros: hold,
                chargedMicros: charged,
                refundedMicros: refunded,
                createdAt: completedAt,
              },
              ConditionExpression: 'attribute_not_exists(entryId)',
            },
          },
        ],
      }),
    );
    return true;
  } catch (error: unknown) {
    if (error instanceof TransactionCanceledException) {
      const reasons = error.CancellationReasons ?? [];
      if (reasons[0]?.Code === 'ConditionalCheckFailed' || reasons[2]?.Code === 'ConditionalCheckFailed') return false;
    }
    throw error;
  }
}
