/**
 * The API's view of a run: what get-run, list-runs and create-run answer, derived from the stored record (micros become
 * the contract's dollars here and nowhere else).
 */
import type { RunResponse } from '../contract.js';
import { microsToUsd } from '../money.js';
import type { RunRecord } from '../store/runs.js';

export const PROTOCOL_VERSION = '0.1.0';

/** Separator of pages in a text result: a form feed on a line of its own (contract v1.1 §2). */
export const PAGE_SEPARATOR = '\n\f\n';

/**
 * The result as the contract shows it: a text run's is `{text, pages}` (contract-v1.1 §2). A text run stores only its
 * `pages` (the joined text would double a long document's result, and a result travels in one 4 MB settlement
 * transaction); `text` is joined here. A one-page run settled before that stored `{text}` alone: its one page.
 */
export function viewResult(outputFormat: RunRecord['outputFormat'], result: Record<string, unknown>) {
  const pages = result.pages;
  if (outputFormat === 'text' && typeof result.text === 'string' && !Array.isArray(pages)) {
    return { text: result.text, pages: [{ page: 1, text: result.text }] };
  }
  if (outputFormat !== 'text' || result.text !== undefined || !Array.isArray(pages)) return result;
  const text = pages.map((p: { text?: unknown }) => (typeof p?.text === 'string' ? p.text : '')).join(PAGE_SEPARATOR);
  return { text, pages };
}

/**
 * A completed json run's `fields` and `review` (contract-v1.1 §3), when its settlement recorded them (runs settled
 * before per-field evidence have neither). The review is shown as `{needed, reasons}` and nothing else.
 */
function evidenceView(run: RunRecord): Pick<Extract<RunResponse, { status: 'completed' }>, 'fields' | 'review'> {
  if (run.outputFormat !== 'json') return {};
  return {
    ...(run.fields ? { fields: run.fields } : {}),
    ...(run.review ? { review: { needed: run.review.needed, reasons: run.review.reasons } } : {}),
  };
}

/** The contract's view of a run in its current state. */
export function toRunResponse(run: RunRecord): RunResponse {
  const base = {
    jobId: run.jobId,
    uploadId: run.uploadId,
    prompt: run.prompt,
    outputFormat: run.outputFormat,
    schemaId: run.schemaId,
    estimatedCostUsd: microsToUsd(run.estimateMicros),
    metadata: run.metadata as RunResponse['metadata'],
    workflow: run.workflow,
    createdAt: run.createdAt,
    file: {
      name: run.fileName ?? null,
      type: run.file.mime,
      sizeBytes: run.file.sizeBytes,
      pages: run.file.pages,
      ...(run.file.width !== undefined ? { width: run.file.width } : {}),
      ...(run.file.height !== undefined ? { height: run.file.height } : {}),
    },
    ...(run.evaluation ? { evaluationId: run.evaluation.evaluationId } : {}),
    ...(run.priority === 'batch' ? { priority: run.priority } : {}),
    ...(run.expiresAt !== undefined ? { expiresAt: run.expiresAt } : {}),
  };
  if (run.status === 'completed' && run.usage && run.result) {
    return {
      ...base,
      status: 'completed',
      protocolVersion: PROTOCOL_VERSION,
      requests: run.usage.requests,
      result: viewResult(run.outputFormat, run.result),
      usage: {
        requests: run.usage.requests,
        billableUnits: run.usage.billableUnits,
        costUsd: microsToUsd(run.usage.costMicros),
        priceUsd: microsToUsd(run.usage.priceMicros),
      },
      chargedUsd: microsToUsd(run.chargedMicros ?? 0),
      refundedUsd: microsToUsd(run.refundedMicros ?? 0),
      confidence: run.confidence ?? 0,
      strategy: run.strategy,
      attempts: run.attempts ?? [],
      completedAt: run.completedAt ?? run.createdAt,
      ...(run.verification ? { verification: run.verification } : {}),
      ...evidenceView(run),
      ...(run.classification
        ? { classification: { schemaId: run.classification.schemaId, confidence: run.classification.confidence } }
        : {}),
      ...(run.task.fields
        ? {
            expectedFields: run.task.fields.map((f) => ({
              name: f.name,
              type: f.type,
              ...(f.description !== undefined ? { description: f.description } : {}),
              required: f.required,
            })),
          }
        : {}),
    };
  }
  if (run.status === 'failed' && run.error) {
    return {
      ...base,
      status: 'failed',
      // The contract's error object names a request: for a run that failed in the worker, the one that created it.
      error: run.requestId ? { ...run.error, requestId: run.requestId } : run.error,
      chargedUsd: microsToUsd(run.chargedMicros ?? 0),
      refundedUsd: microsToUsd(run.refundedMicros ?? 0),
      attempts: run.attempts ?? [],
      completedAt: run.completedAt ?? run.createdAt,
    };
  }
  const stage: 'waiting' | 'processing' | 'batched' =
    run.stage === 'processing' || run.stage === 'batched' ? run.stage : 'waiting';
  // A batch run shows its progress whether chunked or not: `progress.stage` says `batched` while it waits (v1.2 §4).
  const pages = run.progress ?? (run.priority === 'batch' ? { pagesTotal: run.file.pages, pagesDone: 0 } : undefined);
  const progress = pages && {
    pagesTotal: pages.pagesTotal,
    // A chunk asked again after a crash whose checkpoint could not be written counts twice: never past the total.
    pagesDone: Math.min(pages.pagesDone, pages.pagesTotal),
    stage,
  };
  return { ...base, status: 'queued', stage, ...(progress ? { progress } : {}) };
}
