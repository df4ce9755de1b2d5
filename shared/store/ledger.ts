/**
 * The money path. A run is created together with its hold (store/hold.ts), and finished together with its settlement
 * (here), each as ONE DynamoDB transaction keyed by the run id:
 *   create  = put run (must not exist) + take the hold from the tenant + ledger entry `{jobId}#hold` (+ idempotency record)
 *   settle  = final run state (only if still queued) + release the hold / book charge and refund + ledger `{jobId}#settle`
 * The conditions make both exactly-once: a retried request, a duplicate SQS message or a crash between steps either
 * finds the transaction done (and changes nothing) or redoes all of it.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import type { Attempt } from '../contract.js';
import { runError } from '../errors.js';
import { tables } from '../infra/resources.js';
import type { Micros } from '../money.js';
import { resource } from '../resource-name.js';
import { resultPartPuts, splitResult } from './run-results.js';
import { type RunError, type RunRecord, type RunUsage, runsTable } from './runs.js';
import { transactWrite } from './transact.js';

export const tenantsTable = resource(tables.tenants.envVar);
export const ledgerTable = resource(tables.ledger.envVar);

/**
 * The error of a run that no delivery could process (an infrastructure failure on its last delivery, or a message
 * that died in or outlived the queue): the worker and the reconciler both settle with it.
 */
export const PROCESSING_FAILED: Readonly<RunError> = runError('INTERNAL_ERROR', 'The run could not be processed');

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
  // A result too large for the run item goes, in parts, into RunResults in this same transaction.
  const parts = outcome.status === 'completed' ? splitResult(outcome.result, run) : null;
  if (outcome.status === 'completed') {
    update += ', #usage = :usage, confidence = :confidence';
    names['#usage'] = 'usage';
    values[':usage'] = outcome.usage;
    values[':confidence'] = outcome.confidence;
    if (parts) {
      update += ', resultParts = :parts';
      values[':parts'] = parts.length;
    } else {
      update += ', #result = :result';
      names['#result'] = 'result';
      values[':result'] = outcome.result;
    }
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

  // Out of the sparse `queued` index: the reconciler looks only at runs still waiting.
  update += ' REMOVE queuedShard';

  const tenantUpdate = run.holdFromCredit
    ? 'ADD heldMicros :negHold, chargedMicros :charged, refundedMicros :refunded, availableMicros :refunded'
    : 'ADD heldMicros :negHold, chargedMicros :charged, refundedMicros :refunded';

  try {
    await transactWrite({
      TransactItems: [
        {
          Update: {
            TableName: runsTable(),
            Key: { jobId: run.jobId },
            UpdateExpression: update,
            ConditionExpression: '#status = :queued',
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
          },
        },
        {
          Update: {
            TableName: tenantsTable(),
            Key: { tenantId: run.tenantId },
            UpdateExpression: tenantUpdate,
            ExpressionAttributeValues: { ':negHold': -hold, ':charged': charged, ':refunded': refunded },
          },
        },
        {
          Put: {
            TableName: ledgerTable(),
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
        ...(parts ? resultPartPuts(run, parts) : []),
      ],
    });
    return true;
  } catch (error: unknown) {
    if (error instanceof TransactionCanceledException) {
      const reasons = error.CancellationReasons ?? [];
      if (reasons[0]?.Code === 'ConditionalCheckFailed' || reasons[2]?.Code === 'ConditionalCheckFailed') return false;
    }
    throw error;
  }
}
