/** Read-side cores: one run, and the tenant's runs page by page (usage is runs/usage-summary.ts). */
import type { ListRunsQuery, ListRunsResponse, RunResponse } from '../contract.js';
import { InvalidRequestError, NotFoundError } from '../errors.js';
import { withResult } from '../store/run-results.js';
import {
  getRunForTenant,
  JOB_ID,
  LIST_INDEXES,
  listIndexOf,
  listRuns,
  type RunRecord,
  runIndexKey,
} from '../store/runs.js';
import { toRunResponse } from './run-view.js';

export async function getRunView(tenantId: string, jobId: string): Promise<RunResponse> {
  const run = await getRunForTenant(jobId, tenantId);
  if (!run) throw new NotFoundError('run', jobId);
  return toRunResponse(await withResult(run));
}

/**
 * Cursors are the index position, base64url-encoded, with the tenant inside: a cursor from another tenant (or a
 * forged one) is refused rather than used.
 */
// The workflow filter and the review queue are bound too: they select the index, and a key from one index is invalid
// on another (and a review-queue cursor must not page through a workflow it was not made for).
interface Listing {
  tenantId: string;
  workflow: string | undefined;
  reviewNeeded: boolean;
}

function encodeCursor(listing: Listing, key: Record<string, unknown>): string {
  const body = { t: listing.tenantId, w: listing.workflow ?? null, ...(listing.reviewNeeded ? { r: 1 } : {}), k: key };
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

function decodeCursor(listing: Listing, cursor: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as {
      t?: unknown;
      w?: unknown;
      r?: unknown;
      k?: unknown;
    };
    if (
      parsed.t === listing.tenantId &&
      parsed.w === (listing.workflow ?? null) &&
      (parsed.r === 1) === listing.reviewNeeded &&
      isIndexKey(parsed.k, listing)
    ) {
      return parsed.k;
    }
  } catch {
    // fall through to the validation error
  }
  throw new InvalidRequestError('cursor is not valid', [{ path: 'cursor', message: 'unknown or malformed cursor' }]);
}

/**
 * Whether `key` is a position in this tenant's own index partition, as DynamoDB returns it: the table key (jobId),
 * the index key (tenant, tenant#workflow, or the review queue's tenant, and createdAt), all strings, and nothing else.
 * A cursor edited to point elsewhere would otherwise reach DynamoDB, which refuses a start key outside the query's
 * partition with an error (a 500).
 */
function isIndexKey(key: unknown, listing: Listing): key is Record<string, string> {
  if (!key || typeof key !== 'object' || Array.isArray(key)) return false;
  const entries = key as Record<string, unknown>;
  const index = listIndexOf(listing);
  const partition = LIST_INDEXES[index];
  const own = index === 'byTenantWorkflow' ? `${listing.tenantId}#${listing.workflow}` : listing.tenantId;
  return (
    entries[partition] === own &&
    Object.keys(entries).every((name) => name === 'jobId' || name === 'createdAt' || name === partition) &&
    typeof entries.jobId === 'string' &&
    JOB_ID.test(entries.jobId) &&
    typeof entries.createdAt === 'string' &&
    entries.createdAt.length <= 64
  );
}

/**
 * Most serialized bytes of the runs on one page. Lambda's response is at most 6 MB, with the body escaped inside it
 * (each quote and newline of a result takes one byte more), so a page stops after the run that passes 4 MB.
 */
export const LIST_PAGE_MAX_BYTES = 4 * 1024 * 1024;

/** A page of the tenant's runs, or of its review queue (`review=needed`), newest first. */
export async function listRunViews(tenantId: string, query: ListRunsQuery): Promise<ListRunsResponse> {
  const listing: Listing = { tenantId, workflow: query.workflow, reviewNeeded: query.review === 'needed' };
  const page = await listRuns({
    tenantId,
    limit: query.limit,
    ...(query.workflow !== undefined ? { workflow: query.workflow } : {}),
    ...(query.status !== undefined ? { status: query.status } : {}),
    ...(listing.reviewNeeded ? { reviewNeeded: true } : {}),
    ...(query.cursor !== undefined ? { startKey: decodeCursor(listing, query.cursor) } : {}),
  });
  const runs = await Promise.all(page.items.map(withResult));
  // A page of long transcriptions (up to 3 MB each) could pass Lambda's 6 MB response limit and never be listable:
  // the page ends early instead, and the cursor continues after its last run (get-run serves any one run whole).
  const items: RunResponse[] = [];
  let bytes = 0;
  for (const run of runs) {
    const item = toRunResponse(run);
    bytes += Buffer.byteLength(JSON.stringify(item), 'utf8');
    if (items.length > 0 && bytes > LIST_PAGE_MAX_BYTES) {
      const last = page.items[items.length - 1] as RunRecord;
      return {
        items,
        nextCursor: encodeCursor(listing, runIndexKey(last, listIndexOf(listing))),
      };
    }
    items.push(item);
  }
  return { items, nextCursor: page.lastKey ? encodeCursor(listing, page.lastKey) : null };
}
