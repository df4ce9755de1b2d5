/**
 * The money path: a run is created with its hold (`createRunWithHold`) and finished with its settlement (`settleRun`),
 * each ONE DynamoDB transaction keyed by the run id, whose conditions make it exactly-once. Items are named, and a
 * cancellation is read by name (transact.ts). Why: docs/decisions.md#one-transaction-per-money-step
 * Over 400 lines: the hold, the settlement's shape and the settlement's transaction stay together, so one read shows
 * every condition that makes a money step exactly-once.
 */
import type { Attempt } from '../contract.js';
import { InsufficientCreditError, runError } from '../errors.js';
import type { Fields, Review } from '../fields/types.js';
import { tables } from '../infra/resources.js';
import { log } from '../log.js';
import { type Micros, microsToUsd } from '../money.js';
import type { CalibrationSample } from '../pricing/calibration.js';
import { checkAtInit, resource } from '../resource-name.js';
import type { TaskSpec } from '../task.js';
import { type EvaluationRecord, evaluationPut, evaluationSettlement } from './evaluations.js';
import { eventPut } from './events.js';
import { IdempotencyConflict, type IdempotencyRecord, idempotencyPut } from './idempotency.js';
import { answerTooLarge, resultPartPuts, type StoredAnswer, splitAnswer } from './run-results.js';
import { getRun, type RunError, type RunRecord, type RunUsage, runsTable } from './runs.js';
import { getTenant, tenantsTable } from './tenants.js';
import { failedConditions, transactWriteNamed } from './transact.js';
import { countedCondition, createdDelta, settledDelta, usageUpdates } from './usage.js';

export const ledgerTable = resource(tables.ledger.envVar);
// tenants.ts does not check its table at init (the authorizer loads it for the keys only); every function that loads
// the ledger moves money on the tenants, so it checks it here.
checkAtInit(tenantsTable);

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
  // Counted in the usage aggregates from its creation, in this same transaction.
  const record: RunRecord = { ...run, holdFromCredit: limited, usageCounted: true };

  const items = {
    run: { Put: { TableName: runsTable(), Item: record, ConditionExpression: 'attribute_not_exists(jobId)' } },
    tenant: tenantHold(run.tenantId, hold, limited),
    ledger: {
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
    idempotency: idempotency ? idempotencyPut(idempotency) : null,
    usage: usageUpdates(record, createdDelta(record)),
  };

  try {
    // The token makes the transaction idempotent for 10 minutes: if the SDK retries after a lost response, DynamoDB
    // answers success instead of failing the run's own `attribute_not_exists` condition. The retry after a changed
    // limit is a different transaction, so it has its own token (the same token with other parameters would be
    // refused with IdempotentParameterMismatch).
    const token = `${run.jobId.replace(/^run_/, '')}${retried ? 'r' : ''}`;
    await transactWriteNamed(items, { ClientRequestToken: token });
    return record;
  } catch (error: unknown) {
    const failed = failedConditions(error, items);
    // First: a concurrent request with the same Idempotency-Key committed (it may also have taken the last credit,
    // failing the tenant's condition too); it is answered with that request's response, not a 402.
    if (failed.has('idempotency')) throw new IdempotencyConflict();
    if (failed.has('tenant')) {
      const fresh = await getTenant(run.tenantId);
      if (!fresh) throw new Error(`tenant ${run.tenantId} does not exist`);
      const nowLimited = fresh.availableMicros !== undefined;
      // The tenant's limit changed between the read and the write: retry once with the fresh state.
      if (nowLimited !== limited && !retried) return holdAs(run, idempotency, nowLimited, true);
      throw new InsufficientCreditError(microsToUsd(hold), microsToUsd(fresh.availableMicros ?? 0));
    }
    throw error;
  }
}

/**
 * Writes a new evaluation and takes its one hold (the sum of its runs' estimates), with its ledger entry, the
 * idempotency record and the usage counters of every run it will make, in one transaction (its runs are written
 * after it, each with the evaluation's hold: store/evaluations.ts). Throws as `createRunWithHold` does.
 */
export async function createEvaluationWithHold(
  evaluation: EvaluationRecord,
  idempotency: IdempotencyRecord | null,
): Promise<EvaluationRecord> {
  const tenant = await getTenant(evaluation.tenantId);
  if (!tenant) throw new Error(`tenant ${evaluation.tenantId} does not exist`);
  let limited = tenant.availableMicros !== undefined;
  for (let retried = false; ; retried = true) {
    const record: EvaluationRecord = { ...evaluation, holdFromCredit: limited };
    const hold = record.estimateMicros;
    const items = {
      evaluation: evaluationPut(record),
      tenant: tenantHold(record.tenantId, hold, limited),
      ledger: {
        Put: {
          TableName: ledgerTable(),
          Item: {
            tenantId: record.tenantId,
            entryId: `${record.evaluationId}#hold`,
            evaluationId: record.evaluationId,
            kind: 'hold',
            amountMicros: hold,
            createdAt: record.createdAt,
          },
          ConditionExpression: 'attribute_not_exists(entryId)',
        },
      },
      idempotency: idempotency ? idempotencyPut(idempotency) : null,
      // Every run it will make counts from now, as a run counts from its creation (they share its creation time).
      usage: usageUpdates(
        { ...record, usageCounted: true },
        { runs: record.itemsTotal, estimatedMicros: record.estimateMicros },
      ),
    };
    try {
      await transactWriteNamed(items, {
        ClientRequestToken: `${record.evaluationId.replace(/^eval_/, '')}${retried ? 'r' : ''}`,
      });
      return record;
    } catch (error: unknown) {
      const failed = failedConditions(error, items);
      if (failed.has('idempotency')) throw new IdempotencyConflict();
      if (!failed.has('tenant')) throw error;
      const fresh = await getTenant(record.tenantId);
      if (!fresh) throw new Error(`tenant ${record.tenantId} does not exist`);
      const nowLimited = fresh.availableMicros !== undefined;
      if (nowLimited === limited || retried) {
        throw new InsufficientCreditError(microsToUsd(hold), microsToUsd(fresh.availableMicros ?? 0));
      }
      limited = nowLimited;
    }
  }
}

/** The tenant's side of a hold: from its available credit when it is limited, else only counted as held. */
function tenantHold(tenantId: string, hold: Micros, limited: boolean) {
  return {
    Update: {
      TableName: tenantsTable(),
      Key: { tenantId },
      ...(limited
        ? {
            UpdateExpression: 'SET availableMicros = availableMicros - :hold ADD heldMicros :hold',
            ConditionExpression: 'attribute_exists(availableMicros) AND availableMicros >= :hold',
          }
        : {
            UpdateExpression: 'ADD heldMicros :hold',
            ConditionExpression: 'attribute_exists(tenantId) AND attribute_not_exists(availableMicros)',
          }),
      ExpressionAttributeValues: { ':hold': hold },
    },
  };
}

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
      /** A chunked run's fields whose chunks read different values (shared/worker/merge.ts), kept for `fields`. */
      alternatives?: Record<string, Array<{ value: unknown; page?: number }>>;
      /** The answering model's predicted and actual tokens, recorded on the run and fed to calibration. */
      calibration?: CalibrationSample;
      /** Per-field evidence of a json result (contract-v1.1 §3), keyed like the result's top level. */
      fields?: Fields;
      /** Whether a person must check the result; `needed` puts the run in the tenant's review queue. */
      review?: Review;
      /**
       * `schemaId: "auto"` (contract-v1.2 §3): the schema the worker classed the file as, how sure it is, and the task
       * it extracted with: recorded on the run (`classification`, and `task` in place of the schema-less one).
       */
      classified?: { schemaId: string; confidence: number; task: TaskSpec };
    }
  | { status: 'failed'; error: RunError; usage?: RunUsage; attempts: Attempt[] };

/**
 * What a completed run stores of its answer: the result, and its fields unless the two together would not fit in the
 * settlement's transaction (then the run is kept without its fields: evidence never fails a run).
 */
function storedAnswer(run: RunRecord, outcome: Extract<Settlement, { status: 'completed' }>): StoredAnswer {
  if (!outcome.fields) return { result: outcome.result };
  const answer = { result: outcome.result, fields: outcome.fields };
  if (!answerTooLarge(answer)) return answer;
  log.warn('the fields of a run are too large to store with its result; stored without them', { jobId: run.jobId });
  return { result: outcome.result };
}

/**
 * Writes the final state, the money, the usage counters and the run's event (the outbox, events.ts) in one
 * transaction, only if the run is still queued.
 * chargedUsd = min(priceUsd, estimate) for a completed run, 0 for a failed one; the rest of the hold is refunded.
 * What a completed run's price exceeds its estimate by is the service's: `absorbedMicros` on the run record and in
 * the usage counters (operators only; never in a tenant's envelope).
 * Returns false (and changes nothing) when the run was already final — a duplicate delivery.
 */
export async function settleRun(run: RunRecord, outcome: Settlement, now = new Date()): Promise<boolean> {
  const settled = await settleAs(run, outcome, now);
  if (settled !== 'recount') return settled;
  // The usage backfill counted the run since it was read: settle once more with the run as it is now.
  const fresh = await getRun(run.jobId);
  return fresh !== null && fresh.status === 'queued' && (await settleAs(fresh, outcome, now)) === true;
}

async function settleAs(run: RunRecord, outcome: Settlement, now: Date): Promise<boolean | 'recount'> {
  const hold = run.estimateMicros;
  const charged: Micros = outcome.status === 'completed' ? Math.min(outcome.usage.priceMicros, hold) : 0;
  const refunded: Micros = hold - charged;
  const absorbed: Micros = outcome.status === 'completed' ? Math.max(0, outcome.usage.priceMicros - hold) : 0;
  const completedAt = now.toISOString();

  // DynamoDB rejects unused placeholder names, so names are added with the clauses that use them.
  const names: Record<string, string> = { '#status': 'status', '#stage': 'stage' };
  const counted = countedCondition(run);
  const values: Record<string, unknown> = {
    ...counted.values,
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
  // A result too large for the run item goes (with its fields), in parts, into RunResults in this same transaction.
  const answer = outcome.status === 'completed' ? storedAnswer(run, outcome) : null;
  const review = outcome.status === 'completed' ? outcome.review : undefined;
  const split = answer ? splitAnswer(answer, run, review ?? null) : null;
  const parts = split?.parts ?? null;
  if (outcome.status === 'completed') {
    update += ', #usage = :usage, confidence = :confidence, absorbedMicros = :absorbed';
    names['#usage'] = 'usage';
    values[':usage'] = outcome.usage;
    values[':confidence'] = outcome.confidence;
    values[':absorbed'] = absorbed;
    if (outcome.alternatives) {
      update += ', alternatives = :alternatives';
      values[':alternatives'] = outcome.alternatives;
    }
    if (outcome.calibration) {
      update += ', calibration = :calibration';
      values[':calibration'] = outcome.calibration;
    }
    if (outcome.classified) {
      const { task, ...classification } = outcome.classified;
      update += ', classification = :classification, task = :task';
      values[':classification'] = classification;
      values[':task'] = task;
    }
    if (split) {
      update += ', resultParts = :parts';
      values[':parts'] = split.parts.length;
      if (split.fieldsInParts) {
        update += ', fieldsInParts = :true';
        values[':true'] = true;
      }
    } else {
      update += ', #result = :result';
      names['#result'] = 'result';
      values[':result'] = outcome.result;
      if (answer?.fields) {
        update += ', #fields = :fields';
        names['#fields'] = 'fields';
        values[':fields'] = answer.fields;
      }
    }
    if (review) {
      update += ', #review = :review';
      names['#review'] = 'review';
      values[':review'] = review;
      // Into the tenant's review queue (the sparse `reviewNeeded` index) while a person must check it; an evaluation's
      // run never is (its expected values are known: the evaluation scores it).
      if (review.needed && !run.evaluation) {
        update += ', reviewTenant = :tenant';
        values[':tenant'] = run.tenantId;
      }
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

  const items = {
    run: {
      Update: {
        TableName: runsTable(),
        Key: { jobId: run.jobId },
        UpdateExpression: update,
        ConditionExpression: `#status = :queued AND ${counted.expression}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      },
    },
    tenant: {
      Update: {
        TableName: tenantsTable(),
        Key: { tenantId: run.tenantId },
        UpdateExpression: tenantUpdate,
        ExpressionAttributeValues: { ':negHold': -hold, ':charged': charged, ':refunded': refunded },
      },
    },
    ledger: settleEntryPut(run, {
      outcome: outcome.status,
      holdMicros: hold,
      chargedMicros: charged,
      refundedMicros: refunded,
      createdAt: completedAt,
    }),
    resultParts: parts ? resultPartPuts(run, parts) : null,
    usage: usageUpdates(
      run,
      settledDelta(
        outcome.status,
        charged,
        refunded,
        outcome.status === 'completed' ? outcome.confidence : undefined,
        absorbed,
      ),
    ),
    // The event announcing this state: committed with it or not at all (docs/decisions.md#run-events-an-outbox-in-the-settlement).
    events: eventPut(run, outcome.status, completedAt),
    // A run of an evaluation: scored, and its evaluation's progress and money moved, with its own settlement.
    evaluation: evaluationSettlement(run, {
      status: outcome.status,
      ...(outcome.status === 'completed'
        ? {
            result: outcome.result,
            ...(answer?.fields ? { fields: answer.fields } : {}),
            ...(review ? { review } : {}),
          }
        : {}),
      attempts: outcome.attempts,
      chargedMicros: charged,
      refundedMicros: refunded,
      settledAt: completedAt,
    }),
  };

  try {
    await transactWriteNamed(items);
    return true;
  } catch (error: unknown) {
    // The run was already final, or its settlement already booked: a duplicate delivery, which changes nothing. A run
    // still queued whose condition failed was counted by the usage backfill meanwhile: `recount`.
    const failed = failedConditions(error, items);
    if (failed.has('ledger') || failed.has('events')) return false;
    if (failed.has('run')) return run.usageCounted === true ? false : 'recount';
    throw error;
  }
}

/** The run's one settlement entry, put only if absent: every path that settles a run writes it, so it settles once. */
export function settleEntryPut(
  run: Pick<RunRecord, 'tenantId' | 'jobId'>,
  entry: { outcome: string; holdMicros: number; chargedMicros: number; refundedMicros: number; createdAt: string },
) {
  return {
    Put: {
      TableName: ledgerTable(),
      Item: { tenantId: run.tenantId, entryId: `${run.jobId}#settle`, jobId: run.jobId, kind: 'settle', ...entry },
      ConditionExpression: 'attribute_not_exists(entryId)',
    },
  };
}
