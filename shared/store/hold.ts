/**
 * Run creation with its hold: the run record, the hold on the tenant and the `{jobId}#hold` ledger entry (plus the
 * idempotency record when a key was sent) in ONE transaction. Only the create-run handler imports this; the worker
 * settles through ledger.ts.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { InsufficientCreditError } from '../errors.js';
import { microsToUsd } from '../money.js';
import { IdempotencyConflict, type IdempotencyRecord, idempotencyPut } from './idempotency.js';
import { ledgerTable, tenantsTable } from './ledger.js';
import { type RunRecord, runsTable } from './runs.js';
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
  return holdAs(run, idempotency, tenant.availableMicros !== undefined, false);
}

/**
 * The transaction for a tenant read as limited or not. `retried`: the tenant's limit changed between the read and the
 * write, and this is the one retry with the fresh state.
 */
async function holdAs(
  run: RunRecord,
  idempotency: IdempotencyRecord | null,
  limited: boolean,
  retried: boolean,
): Promise<RunRecord> {
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
    { Put: { TableName: runsTable(), Item: record, ConditionExpression: 'attribute_not_exists(jobId)' } },
    {
      Update: {
        TableName: tenantsTable(),
        Key: { tenantId: run.tenantId },
        ...tenantUpdate,
        ExpressionAttributeValues: { ':hold': hold },
      },
    },
    {
      Put: {
        TableName: ledgerTable(),
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
    // answers success instead of failing the run's own `attribute_not_exists` condition. The retry after a changed
    // limit is a different transaction, so it has its own token (the same token with other parameters would be
    // refused with IdempotentParameterMismatch).
    const token = `${run.jobId.replace(/^run_/, '')}${retried ? 'r' : ''}`;
    await transactWrite({ TransactItems: items, ClientRequestToken: token });
    return record;
  } catch (error: unknown) {
    if (error instanceof TransactionCanceledException) {
      const reasons = error.CancellationReasons ?? [];
      // First: a concurrent request with the same Idempotency-Key committed (it may also have taken the last credit,
      // failing the tenant's condition too); it is answered with that request's response, not a 402.
      if (reasons[3]?.Code === 'ConditionalCheckFailed') throw new IdempotencyConflict();
      if (reasons[1]?.Code === 'ConditionalCheckFailed') {
        const fresh = await getTenant(run.tenantId);
        if (!fresh) throw new Error(`tenant ${run.tenantId} does not exist`);
        const nowLimited = fresh.availableMicros !== undefined;
        // The tenant's limit changed between the read and the write: retry once with the fresh state.
        if (nowLimited !== limited && !retried) return holdAs(run, idempotency, nowLimited, true);
        throw new InsufficientCreditError(microsToUsd(hold), microsToUsd(fresh.availableMicros ?? 0));
      }
    }
    throw error;
  }
}
