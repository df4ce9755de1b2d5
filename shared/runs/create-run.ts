/**
 * Run creation: the checks in the contract's order, then the run and its hold in one transaction, then the queue.
 *   auth (authorizer) → body (middleware) → upload ownership and presence → size → real type → readability/limits
 *   → schema → estimate → maxCostUsd → threshold → credit hold.
 * The first failing check answers; nothing is written before the hold transaction, and the message is sent only
 * after the run exists, so a rejected request leaves no record, no hold and no message.
 */
import { randomUUID } from 'node:crypto';
import { enqueueRun } from '../aws/run-message.js';
import { config } from '../config.js';
import type { CreateRunRequest, CreateRunResponse } from '../contract.js';
import { BudgetExceededError, CostConfirmationRequiredError, InternalError, runError } from '../errors.js';
import { log } from '../log.js';
import { microsToUsd, usdToMicros, usdToMicrosFloor } from '../money.js';
import { CLASSIFICATION_TASK, packetEstimate } from '../packets/estimate.js';
import { packetRequestOf } from '../packets/request.js';
import { calibrationKeysFor } from '../planning/estimate.js';
import { planRun } from '../planning/plan.js';
import { planFor } from '../planning/plan-for.js';
import { availableProviders } from '../providers/catalog.js';
import { checkAtInit } from '../resource-name.js';
import { loadFactors } from '../store/calibration.js';
import {
  deleteIdempotencyRecord,
  IdempotencyConflict,
  type IdempotencyRecord,
  idempotencyTable,
} from '../store/idempotency.js';
import { createRunWithHold, settleRun } from '../store/ledger.js';
import { queuedShardOf, type RunRecord } from '../store/runs.js';
import { type IdempotentRequest, idempotentRequest, replayOf } from './idempotent.js';
import { priorityFields } from './priority.js';
import { inspectTenantUpload, taskOf } from './run-input.js';
import { toRunResponse } from './run-view.js';

// The idempotency store does not check its table at init (the worker loads it without the grant); creation needs it.
checkAtInit(idempotencyTable);

export interface CreateRunInput {
  tenantId: string;
  body: CreateRunRequest;
  /** Raw `Idempotency-Key` header, if sent. */
  idempotencyKey?: string | undefined;
  /** The creating request's id (x-request-id), recorded on the run. */
  requestId?: string;
}

export interface CreateRunOutcome {
  response: CreateRunResponse;
  /** True when an earlier identical request's response is returned. */
  replayed: boolean;
}

/** Replays a stored response for the same key and body, or refuses a different body under the same key. */
async function replay(request: IdempotentRequest): Promise<CreateRunOutcome | null> {
  const response = await replayOf<CreateRunResponse>(request);
  return response ? { response, replayed: true } : null;
}

export async function createRun(input: CreateRunInput, now = new Date()): Promise<CreateRunOutcome> {
  const { tenantId, body } = input;

  const idempotency = idempotentRequest(tenantId, input.idempotencyKey, body);
  if (idempotency) {
    const replayed = await replay(idempotency);
    if (replayed) return replayed;
  }

  const { upload, object, facts } = await inspectTenantUpload(tenantId, body.uploadId, now);

  const task = taskOf(body);
  // A packet, whose schemas are chosen per document among `schemaIds` (contract-v1.2 §3).
  const packet = packetRequestOf(body, facts);

  // Estimate, budget, threshold.
  // The estimate is a calibrated prediction: the factors the service learnt from its settled runs (a minute's cache).
  // A batch run is held at its batch estimate (each provider's batch discount, its batch calibration keys).
  const priority = body.priority ?? 'standard';
  const providers = availableProviders(config.providers);
  const keys = calibrationKeysFor(providers, packet ? CLASSIFICATION_TASK : task, priority);
  const planOptions = planFor(await loadFactors(tenantId, keys), priority);
  // The margin is fixed now and recorded on the run: the worker prices with it even if a deploy changes it meanwhile.
  const { marginPct } = planOptions;
  // A packet holds classification of every page plus extraction at the dearest allowed schema; its pages are
  // classified first, so the classification's plan is the one recorded.
  const estimate = packet ? packetEstimate(facts, { prompt: body.prompt, ...packet }, providers, planOptions) : null;
  const plan = estimate ? estimate.classification : planRun(facts, task, providers, planOptions);
  const estimateMicros = estimate ? estimate.estimateMicros : plan.estimateMicros;
  // Rounded down: a budget of $0.0000015 allows 1 micro-dollar, never 2.
  const maxCostMicros = body.maxCostUsd !== undefined ? usdToMicrosFloor(body.maxCostUsd) : null;
  if (maxCostMicros !== null && estimateMicros > maxCostMicros) {
    // The budget as applied (whole micro-dollars), so the amounts in details are money to 6 decimals.
    throw new BudgetExceededError(microsToUsd(estimateMicros), microsToUsd(maxCostMicros));
  }
  const thresholdMicros = usdToMicros(config.confirmationThresholdUsd);
  if (estimateMicros > thresholdMicros && body.confirmCost !== true && maxCostMicros === null) {
    throw new CostConfirmationRequiredError(microsToUsd(estimateMicros), config.confirmationThresholdUsd);
  }

  const jobId = `run_${randomUUID().replaceAll('-', '')}`;
  const createdAt = now.toISOString();
  const run: RunRecord = {
    jobId,
    tenantId,
    status: 'queued',
    stage: 'waiting',
    uploadId: upload.uploadId,
    objectKey: upload.objectKey,
    objectIdentity: object.identity,
    uploadExpiresAtEpoch: upload.expiresAtEpoch,
    prompt: body.prompt,
    outputFormat: body.outputFormat,
    schemaId: body.schemaId ?? null,
    task,
    ...(packet ? { packet } : {}),
    workflow: body.workflow ?? null,
    ...(body.workflow !== undefined ? { tenantWorkflow: `${tenantId}#${body.workflow}` } : {}),
    metadata: body.metadata ?? {},
    file: facts,
    fileName: upload.fileName,
    strategy: plan.strategy,
    candidates: plan.candidates,
    ...(plan.ocrCandidates ? { ocrCandidates: plan.ocrCandidates } : {}),
    // A packet's pages are classified one call each by the worker (shared/worker/packet-run.ts), not in chunks; its
    // progress counts the pages classified (their checkpoints).
    ...(plan.chunkPages !== undefined && !packet ? { chunkPages: plan.chunkPages } : {}),
    ...(plan.chunkPages !== undefined || packet ? { progress: { pagesTotal: facts.pages, pagesDone: 0 } } : {}),
    estimateMicros,
    marginPct,
    maxCostMicros,
    holdFromCredit: false,
    createdAt,
    ...priorityFields(body.priority, now),
    ...(input.requestId ? { requestId: input.requestId } : {}),
    expiresAtEpoch: Math.floor(now.getTime() / 1000) + config.runRetentionDays * 86400,
    // In the sparse `queued` index until settled: the reconciler finds a run whose message is lost by it.
    queuedShard: queuedShardOf(jobId),
  };
  const creation = toRunResponse(run) as CreateRunResponse;

  const idempotencyRecord: IdempotencyRecord | null = idempotency
    ? {
        idempotencyKey: idempotency.key,
        requestHash: idempotency.hash,
        jobId,
        response: creation,
        createdAt,
        expiresAtEpoch: Math.floor(now.getTime() / 1000) + config.idempotencyTtlHours * 3600,
      }
    : null;

  let stored: RunRecord;
  try {
    stored = await createRunWithHold(run, idempotencyRecord);
  } catch (error: unknown) {
    // A concurrent request with the same key won the race: answer as it did (or refuse a different body).
    if (error instanceof IdempotencyConflict && idempotency) {
      const replayed = await replay(idempotency);
      if (replayed) return replayed;
    }
    throw error;
  }

  try {
    await enqueueRun(jobId);
  } catch (error: unknown) {
    // The run may never be processed: fail it and give the hold back, then report the error.
    log.error('enqueue failed; failing the run and refunding the hold', { jobId, error });
    let failedHere: boolean;
    try {
      failedHere = await settleRun(stored, {
        status: 'failed',
        error: runError('INTERNAL_ERROR', 'The run could not be queued'),
        attempts: [],
      });
    } catch (settleError: unknown) {
      // Neither sent nor failed: the run stays queued with its hold, and the reconciler sends its message within
      // minutes (shared/worker/reconcile.ts), so it will be processed and charged. It is answered as accepted: a 500
      // would make the client retry and pay for a second run.
      log.error('could not fail the unqueued run; the reconciler will send it', { jobId, error: settleError });
      return { response: creation, replayed: false };
    }
    if (!failedHere) {
      // Already final: the send failed only on our side (SQS took the message) and a worker settled the run. The
      // run was accepted, so it is answered as accepted; a 500 would make the client retry and pay a second run.
      log.warn('the run was settled by a worker although its enqueue reported an error', { jobId });
      return { response: creation, replayed: false };
    }
    // The client is answered 500, so the same key must not later replay this run as accepted.
    if (idempotency) {
      await deleteIdempotencyRecord(idempotency.key, jobId).catch((e: unknown) => {
        log.error('could not release the idempotency key of an unqueued run', { jobId, error: e });
      });
    }
    throw new InternalError();
  }

  return { response: creation, replayed: false };
}
