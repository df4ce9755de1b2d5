/**
 * Run creation with its hold: the run record, the hold on the tenant and the `{jobId}#hold` ledger entry (plus the
 * idempotency record when a key was sent) in ONE transaction. Only the create-run handler imports this; the worker
 * settles through ledger.ts.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { InsufficientCreditError } from '../errors.js';
import { microsToUsd } from '../money.js';
import { IdempotencyConflict, type IdempotencyRecord, idempotencyPut } from './idempotency.js';
import { LEDGER_TABLE, TENANTS_TABLE } from './ledger.js';
import { RUNS_TABLE, type RunRecord } from './runs.js';
import { getTenant } from './tenants.js';
import { transactWrite } from './transact.js';

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
    ...(idempotency ? [idempotencyPut(idempotency)] : []),
  ];

  try {
    // The token makes the transaction idempotent for 10 minutes: if the SDK retries after a lost response, DynamoDB
    // answers success instead of failing the run's own `attribute_not_exists` condition.
    await transactWrite({ TransactItems: items, ClientRequestToken: run.jobId.replace(/^run_/, '') });
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
