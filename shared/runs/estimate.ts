/**
 * POST /v1/estimates (contract v1.2 §4): what a run of this body would cost now and as a batch, without creating
 * anything. The file is an upload (inspected exactly as run creation inspects it) or a declared file (the same limits,
 * the client's word for the rest). Both prices come from the plan creation would make, with the tenant's calibration.
 *
 * Decisions a reader must not undo:
 * - Nothing is written and nothing is held: an estimate is a read (the calibration items it reads are cached).
 * - Same checks, same errors as creation up to the estimate (upload, file, schema); `maxCostUsd` and `confirmCost` are
 *   accepted so a run's body can be sent as it is, and change nothing: the answer is the price, not a decision.
 */
import { config } from '../config.js';
import type { EstimateRequest, EstimateResponse } from '../contract.js';
import type { FileFacts } from '../file-facts.js';
import { batchSettings } from '../infra/resources.js';
import { declaredFacts } from '../inspect/index.js';
import { microsToUsd } from '../money.js';
import { CLASSIFICATION_TASK, packetEstimate } from '../packets/estimate.js';
import { packetRequestOf } from '../packets/request.js';
import { calibrationKeysFor } from '../planning/estimate.js';
import { planRun } from '../planning/plan.js';
import { planFor } from '../planning/plan-for.js';
import { availableProviders } from '../providers/catalog.js';
import { loadFactors } from '../store/calibration.js';
import type { Priority } from '../task.js';
import { inspectTenantUpload, taskOf } from './run-input.js';

/** The facts the prices are for: the upload's as inspected, or the declared file's. */
async function factsOf(tenantId: string, body: EstimateRequest, now: Date): Promise<FileFacts> {
  if (body.uploadId !== undefined) return (await inspectTenantUpload(tenantId, body.uploadId, now)).facts;
  // The contract's schema requires one of uploadId and file.
  const file = body.file as NonNullable<EstimateRequest['file']>;
  return declaredFacts({ ...file, mime: file.type }, config.limits);
}

/** Both prices of a run of `body` for the tenant. */
export async function estimateRun(
  tenantId: string,
  body: EstimateRequest,
  now = new Date(),
): Promise<EstimateResponse> {
  const facts = await factsOf(tenantId, body, now);
  const task = taskOf(body);
  // A packet is priced as run creation holds it: classification of every page plus the dearest extraction.
  const packet = packetRequestOf(body, facts);
  const providers = availableProviders(config.providers);
  const factors = await loadFactors(
    tenantId,
    calibrationKeysFor(providers, packet ? CLASSIFICATION_TASK : task, 'batch'),
  );
  const priceUsd = (priority: Priority) => {
    const options = planFor(factors, priority);
    return microsToUsd(
      packet
        ? packetEstimate(facts, { prompt: body.prompt, ...packet }, providers, options).estimateMicros
        : planRun(facts, task, providers, options).estimateMicros,
    );
  };
  return {
    standard: { estimatedCostUsd: priceUsd('standard') },
    batch: { estimatedCostUsd: priceUsd('batch'), expiresWithinHours: batchSettings.expiresWithinHours },
    file: {
      type: facts.mime,
      sizeBytes: facts.sizeBytes,
      pages: facts.pages,
      ...(facts.width !== undefined ? { width: facts.width } : {}),
      ...(facts.height !== undefined ? { height: facts.height } : {}),
    },
  };
}
