/**
 * Evaluation creation (contract-v1.2 §1): every document checked as run creation checks an upload, every run planned
 * and estimated as a run is, then the cost contract applied to the whole (maxCostUsd, the confirmation threshold,
 * one credit hold), then the runs written and queued.
 * Not to undo: the items are written before the hold and the evaluation with its hold in one transaction after them,
 * so the reconciler can always finish an evaluation that exists (its runs are made from its items); a refused hold
 * leaves no evaluation, no hold, no run and no message (its items are removed, and expire in any case).
 */
import { randomUUID } from 'node:crypto';
import { config } from '../config.js';
import type { CreateEvaluationRequest, CreateEvaluationResponse } from '../contract.js';
import {
  ApiError,
  BudgetExceededError,
  CostConfirmationRequiredError,
  InvalidRequestError,
  UnknownSchemaError,
  type ValidationIssue,
} from '../errors.js';
import { evaluationSettings } from '../infra/resources.js';
import { log } from '../log.js';
import { microsToUsd, usdToMicros, usdToMicrosFloor } from '../money.js';
import { calibrationKeysFor } from '../planning/estimate.js';
import { planRun } from '../planning/plan.js';
import { planFor } from '../planning/plan-for.js';
import { pricing } from '../pricing/pricing.js';
import { availableProviders } from '../providers/catalog.js';
import { buildTask, registry } from '../registry/registry.js';
import { type IdempotentRequest, idempotentRequest, replayOf } from '../runs/idempotent.js';
import { priorityFields } from '../runs/priority.js';
import { inspectTenantUpload } from '../runs/run-input.js';
import { loadFactors } from '../store/calibration.js';
import {
  deleteItems,
  type EvaluationItemRecord,
  type EvaluationRecord,
  type ItemPlan,
  openShardOf,
  putItems,
} from '../store/evaluations.js';
import { IdempotencyConflict, type IdempotencyRecord } from '../store/idempotency.js';
import { createEvaluationWithHold } from '../store/ledger.js';
import type { ProviderId } from '../task.js';
import { itemJobId, materialize } from './materialize.js';

export interface CreateEvaluationInput {
  tenantId: string;
  body: CreateEvaluationRequest;
  idempotencyKey?: string | undefined;
  requestId?: string;
}

export interface CreateEvaluationOutcome {
  response: CreateEvaluationResponse;
  replayed: boolean;
}

async function replay(request: IdempotentRequest): Promise<CreateEvaluationOutcome | null> {
  const response = await replayOf<CreateEvaluationResponse>(request);
  return response ? { response, replayed: true } : null;
}

/** Runs `fn` over `items`, `concurrency` at a time, in order of the results. */
async function mapLimit<T, R>(items: readonly T[], concurrency: number, fn: (item: T, i: number) => Promise<R>) {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await fn(items[i] as T, i);
      }
    }),
  );
  return results;
}

/** The error of one item's upload, naming the item (`details.item`), as the contract's code. */
function forItem(error: unknown, index: number): unknown {
  if (!(error instanceof ApiError)) return error;
  return new ApiError(error.code, `items[${index}]: ${error.message}`, { ...error.details, item: index });
}

export async function createEvaluation(
  input: CreateEvaluationInput,
  now = new Date(),
): Promise<CreateEvaluationOutcome> {
  const { tenantId, body } = input;

  // The route is part of the fingerprint: a key sent to create a run is not replayed here.
  const idempotency = idempotentRequest(tenantId, input.idempotencyKey, { evaluation: body });
  if (idempotency) {
    const replayed = await replay(idempotency);
    if (replayed) return replayed;
  }

  // Schema, and expected values that name its fields.
  let schema = body.schema;
  if (body.schemaId !== undefined) {
    const entry = registry.get(body.schemaId);
    if (!entry) throw new UnknownSchemaError(body.schemaId, [...registry.keys()]);
    schema = entry;
  }
  const label = schema?.label ?? 'document';
  const task = buildTask({
    prompt: body.prompt ?? `Extract the ${label.toLowerCase()}`,
    outputFormat: 'json',
    schemaId: body.schemaId,
    schema,
  });
  const names = new Set((task.fields ?? []).map((f) => f.name));
  // A field named without a type is extracted as text, but its value may be a date or an amount: scored `auto`.
  const untyped = (body.schema?.expectedFields ?? []).flatMap((f) =>
    typeof f === 'string' ? [f] : f.type === undefined ? [f.name] : [],
  );
  const issues: ValidationIssue[] = body.items.flatMap((item, i) =>
    Object.keys(item.expected)
      .filter((name) => !names.has(name))
      .map((name) => ({ path: `items.${i}.expected.${name}`, message: `not a field of the schema "${label}"` })),
  );
  if (issues.length > 0) {
    throw new InvalidRequestError('Expected values name fields the schema does not have', issues.slice(0, 50), {
      fields: [...names],
    });
  }

  // Providers: each listed one must be a candidate in this deployment; each item then runs with it alone.
  const available = availableProviders(config.providers);
  const missing = (body.providers ?? []).filter((p) => !available.includes(p));
  if (missing.length > 0) {
    throw new InvalidRequestError(
      'Providers not available in this deployment',
      missing.map((p) => ({ path: 'providers', message: `"${p}" is not available` })),
      { available },
    );
  }
  const runProviders: (ProviderId | null)[] = body.providers ?? [null];

  // Every document, as run creation checks an upload (an upload used twice is inspected once).
  const uploadIds = [...new Set(body.items.map((item) => item.uploadId))];
  const inspected = new Map(
    await mapLimit(uploadIds, evaluationSettings.inspectConcurrency, async (uploadId) => {
      try {
        return [uploadId, await inspectTenantUpload(tenantId, uploadId, now)] as const;
      } catch (error: unknown) {
        throw forItem(
          error,
          body.items.findIndex((item) => item.uploadId === uploadId),
        );
      }
    }),
  );

  // Plans and estimates, as for a run: with the listed provider alone, or the normal plan.
  const marginPct = pricing.marginPct;
  // Calibrated as a run of this tenant's is (its own window once it has enough runs, else the deployment's).
  // A batch evaluation's runs are batch runs: planned, estimated and held at the batch price (contract-v1.2 §4).
  const priority = body.priority ?? 'standard';
  const factors = await loadFactors(tenantId, calibrationKeysFor(available, task, priority));
  const evaluationId = `eval_${randomUUID().replaceAll('-', '')}`;
  const createdAt = now.toISOString();
  const expiresAtEpoch = Math.floor(now.getTime() / 1000) + config.runRetentionDays * 86400;
  const items: EvaluationItemRecord[] = [];
  for (const [index, item] of body.items.entries()) {
    const { upload, object, facts } = inspected.get(item.uploadId) as NonNullable<ReturnType<typeof inspected.get>>;
    for (const provider of runProviders) {
      const plan = planRun(
        facts,
        task,
        provider ? [provider] : available,
        planFor(factors, priority, provider !== null),
      );
      const n = items.length;
      const itemPlan: ItemPlan = {
        uploadId: upload.uploadId,
        objectKey: upload.objectKey,
        ...(object.identity ? { objectIdentity: object.identity } : {}),
        uploadExpiresAtEpoch: upload.expiresAtEpoch,
        ...(upload.fileName !== undefined ? { fileName: upload.fileName } : {}),
        file: facts,
        strategy: plan.strategy,
        candidates: plan.candidates,
        ...(plan.ocrCandidates ? { ocrCandidates: plan.ocrCandidates } : {}),
        ...(plan.chunkPages !== undefined ? { chunkPages: plan.chunkPages } : {}),
        estimateMicros: plan.estimateMicros,
      };
      items.push({
        evaluationId,
        n,
        index,
        jobId: itemJobId(evaluationId, n),
        provider,
        expected: item.expected,
        plan: itemPlan,
        expiresAtEpoch,
      });
    }
  }
  const estimateMicros = items.reduce((sum, item) => sum + item.plan.estimateMicros, 0);

  // The cost contract, on the whole evaluation.
  const maxCostMicros = body.maxCostUsd !== undefined ? usdToMicrosFloor(body.maxCostUsd) : null;
  if (maxCostMicros !== null && estimateMicros > maxCostMicros) {
    throw new BudgetExceededError(microsToUsd(estimateMicros), microsToUsd(maxCostMicros));
  }
  if (
    estimateMicros > usdToMicros(config.confirmationThresholdUsd) &&
    body.confirmCost !== true &&
    maxCostMicros === null
  ) {
    throw new CostConfirmationRequiredError(microsToUsd(estimateMicros), config.confirmationThresholdUsd);
  }

  const evaluation: EvaluationRecord = {
    evaluationId,
    tenantId,
    name: body.name,
    status: 'queued',
    schemaId: body.schemaId ?? null,
    task,
    ...(untyped.length > 0 ? { untypedFields: untyped } : {}),
    providers: body.providers ?? null,
    workflow: body.workflow ?? null,
    metadata: body.metadata ?? {},
    documents: body.items.length,
    itemsTotal: items.length,
    itemsDone: 0,
    estimateMicros,
    maxCostMicros,
    chargedMicros: 0,
    refundedMicros: 0,
    holdFromCredit: false,
    marginPct,
    createdAt,
    ...(priority === 'batch' ? { priority } : {}),
    ...(input.requestId ? { requestId: input.requestId } : {}),
    openShard: openShardOf(evaluationId),
    expiresAtEpoch,
  };
  const response: CreateEvaluationResponse = {
    evaluationId,
    status: 'queued',
    name: body.name,
    items: items.length,
    documents: body.items.length,
    providers: body.providers ?? null,
    estimatedCostUsd: microsToUsd(estimateMicros),
    createdAt,
    ...priorityFields(body.priority, now),
  };
  const idempotencyRecord: IdempotencyRecord | null = idempotency
    ? {
        idempotencyKey: idempotency.key,
        requestHash: idempotency.hash,
        jobId: evaluationId,
        response,
        createdAt,
        expiresAtEpoch: Math.floor(now.getTime() / 1000) + config.idempotencyTtlHours * 3600,
      }
    : null;

  await putItems(items);
  let held: EvaluationRecord;
  try {
    held = await createEvaluationWithHold(evaluation, idempotencyRecord);
  } catch (error: unknown) {
    await deleteItems(items).catch((e: unknown) => {
      log.warn('could not remove the items of a refused evaluation (they expire)', { evaluationId, error: e });
    });
    if (error instanceof IdempotencyConflict && idempotency) {
      const replayed = await replay(idempotency);
      if (replayed) return replayed;
    }
    throw error;
  }

  // The runs: written and queued now; a failure here is the reconciler's to finish (the hold and items exist).
  try {
    await materialize(held);
  } catch (error: unknown) {
    log.error('could not write the runs of an evaluation; the reconciler will', { evaluationId, error });
  }
  return { response, replayed: false };
}
