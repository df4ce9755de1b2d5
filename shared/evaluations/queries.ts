/**
 * Read-side cores of evaluations: one evaluation with a page of its items, and the tenant's evaluations page by page.
 * An evaluation whose every run settled but whose report is missing (the last settlement's worker died) gets it here.
 */
import type {
  EvaluationItemView,
  EvaluationView,
  GetEvaluationQuery,
  ListEvaluationsQuery,
  ListEvaluationsResponse,
} from '../contract.js';
import { InvalidRequestError, NotFoundError } from '../errors.js';
import { microsToUsd } from '../money.js';
import type { Report } from '../scoring/report.js';
import {
  type EvaluationItemRecord,
  type EvaluationRecord,
  getEvaluationForTenant,
  listEvaluations,
  queryItems,
} from '../store/evaluations.js';
import { finishIfDone } from './finish.js';

/** The API's view of an evaluation (without items). */
export function evaluationView(evaluation: EvaluationRecord): EvaluationView {
  return {
    evaluationId: evaluation.evaluationId,
    name: evaluation.name,
    status: evaluation.status,
    schemaId: evaluation.schemaId,
    providers: evaluation.providers,
    workflow: evaluation.workflow,
    metadata: evaluation.metadata as EvaluationView['metadata'],
    progress: { itemsTotal: evaluation.itemsTotal, itemsDone: Math.min(evaluation.itemsDone, evaluation.itemsTotal) },
    estimatedCostUsd: microsToUsd(evaluation.estimateMicros),
    chargedUsd: microsToUsd(evaluation.chargedMicros),
    refundedUsd: microsToUsd(evaluation.refundedMicros),
    createdAt: evaluation.createdAt,
    ...(evaluation.completedAt ? { completedAt: evaluation.completedAt } : {}),
    ...(evaluation.report ? { report: inOrder(evaluation.report) } : {}),
  };
}

/** The report with its fields and providers in name order again (a DynamoDB map keeps no order). */
function inOrder(report: Report): Report {
  const sorted = <T>(record: Record<string, T>) =>
    Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return { ...report, perField: sorted(report.perField), perProvider: sorted(report.perProvider) };
}

/** One item as the API shows it: the run, and once it settled how each field compared. */
export function itemView(item: EvaluationItemRecord): EvaluationItemView {
  return {
    index: item.index,
    uploadId: item.plan.uploadId,
    jobId: item.jobId,
    provider: item.reportedProvider ?? item.provider,
    status: item.status ?? 'queued',
    ...(item.status !== undefined
      ? {
          chargedUsd: microsToUsd(item.chargedMicros ?? 0),
          latencyMs: item.latencyMs ?? null,
          reviewNeeded: item.reviewNeeded ?? null,
          fields: item.fields ?? {},
        }
      : {}),
  };
}

// Cursors carry the tenant and the evaluation they page, so one cannot be used elsewhere.
function encode(value: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

function decode(cursor: string, path: string): Record<string, unknown> {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // Refused below.
  }
  throw new InvalidRequestError(`${path} is not valid`, [{ path, message: 'unknown or malformed cursor' }]);
}

export async function getEvaluationView(
  tenantId: string,
  evaluationId: string,
  query: GetEvaluationQuery,
): Promise<EvaluationView> {
  let evaluation = await getEvaluationForTenant(evaluationId, tenantId);
  if (!evaluation) throw new NotFoundError('evaluation', evaluationId);
  if (evaluation.status === 'queued' && evaluation.itemsDone >= evaluation.itemsTotal) {
    evaluation = (await finishIfDone(evaluation)) ?? evaluation;
  }
  const view = evaluationView(evaluation);
  if (query.itemsLimit === 0) return view;
  let afterN: number | undefined;
  if (query.itemsCursor !== undefined) {
    const cursor = decode(query.itemsCursor, 'itemsCursor');
    if (cursor.t !== tenantId || cursor.e !== evaluationId || !Number.isInteger(cursor.n)) {
      throw new InvalidRequestError('itemsCursor is not valid', [
        { path: 'itemsCursor', message: 'unknown or malformed cursor' },
      ]);
    }
    afterN = cursor.n as number;
  }
  const page = await queryItems(evaluationId, {
    limit: query.itemsLimit,
    ...(afterN !== undefined ? { afterN } : {}),
  });
  return {
    ...view,
    items: page.items.map(itemView),
    nextItemsCursor: page.lastN === undefined ? null : encode({ t: tenantId, e: evaluationId, n: page.lastN }),
  };
}

export async function listEvaluationViews(
  tenantId: string,
  query: ListEvaluationsQuery,
): Promise<ListEvaluationsResponse> {
  let startKey: Record<string, unknown> | undefined;
  if (query.cursor !== undefined) {
    const cursor = decode(query.cursor, 'cursor');
    const key = cursor.k as Record<string, unknown> | undefined;
    if (cursor.t !== tenantId || !key || key.tenantId !== tenantId) {
      throw new InvalidRequestError('cursor is not valid', [
        { path: 'cursor', message: 'unknown or malformed cursor' },
      ]);
    }
    startKey = key;
  }
  const page = await listEvaluations({ tenantId, limit: query.limit, ...(startKey ? { startKey } : {}) });
  return {
    items: page.items.map(evaluationView),
    nextCursor: page.lastKey ? encode({ t: tenantId, k: page.lastKey }) : null,
  };
}
