/**
 * A run of an evaluation that can never be written (DynamoDB refuses its record, or writing it still fails at the
 * sweep's last try): its item is failed and its share of the evaluation's hold refunded, as a failed run's settlement
 * would do it, so that Σ item charges + refunds = the hold and the evaluation finishes.
 * Not to undo: one transaction whose conditions are the run's absence and its ledger entry `{jobId}#settle`, the
 * one a settlement writes: a retried sweep refunds once, and a run written after all is never settled twice.
 */

import { evaluationSettlement } from './evaluations.js';
import { settleEntryPut } from './ledger.js';
import { type RunRecord, runsTable } from './runs.js';
import { tenantsTable } from './tenants.js';
import { failedConditions, transactWriteNamed } from './transact.js';
import { settledDelta, usageUpdates } from './usage.js';

/** Fails the item of `run` (as built from its evaluation, never written) and refunds its share; false if done before. */
export async function failUnwrittenRun(run: RunRecord, now = new Date()): Promise<boolean> {
  const share = run.estimateMicros;
  const settledAt = now.toISOString();
  const items = {
    run: {
      ConditionCheck: {
        TableName: runsTable(),
        Key: { jobId: run.jobId },
        ConditionExpression: 'attribute_not_exists(jobId)',
      },
    },
    tenant: {
      Update: {
        TableName: tenantsTable(),
        Key: { tenantId: run.tenantId },
        UpdateExpression: run.holdFromCredit
          ? 'ADD heldMicros :negShare, refundedMicros :share, availableMicros :share'
          : 'ADD heldMicros :negShare, refundedMicros :share',
        ExpressionAttributeValues: { ':negShare': -share, ':share': share },
      },
    },
    ledger: settleEntryPut(run, {
      outcome: 'failed',
      holdMicros: share,
      chargedMicros: 0,
      refundedMicros: share,
      createdAt: settledAt,
    }),
    // The evaluation counted the run in usage at its creation: it is settled there as a failed run.
    usage: usageUpdates(run, settledDelta('failed', 0, share, undefined)),
    evaluation: evaluationSettlement(run, {
      status: 'failed',
      attempts: [],
      chargedMicros: 0,
      refundedMicros: share,
      settledAt,
    }),
  };
  try {
    await transactWriteNamed(items);
    return true;
  } catch (error: unknown) {
    const failed = failedConditions(error, items);
    if (failed.has('ledger') || failed.has('run')) return false;
    throw error;
  }
}
