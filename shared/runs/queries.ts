/** Read-side cores: one run, and the tenant's runs page by page (usage is runs/usage-summary.ts). */
import type { ListRunsQuery, ListRunsResponse, RunResponse } from '../contract.js';
import { InvalidRequestError, NotFoundError } from '../errors.js';
import { withResult } from '../store/run-results.js';
import { getRunForTenant, JOB_ID, listRuns, type RunRecord, runIndexKey } from '../store/runs.js';
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
// The workflow filter is bound too: it selects the index, and a key from one index is invalid on the other.
function encodeCursor(tenantId: string, workflow: string | undefined, key: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify({ t: tenantId, w: workflow ?? null, k: key })).toString('base64url');
}

function decodeCursor(tenantId: string, workflow: string | undefined, cursor: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as {
      t?: unknown;
      w?: unknown;
      k?: unknown;
    };
    if (parsed.t === tenantId && parsed.w === (workflow ?? null) && isIndexKey(parsed.k, tenantId, workflow)) {
      return parsed.k;
    }
  } catch {
    // fall through to the validation error
  }
  throw new InvalidRequestError('cursor is not valid', [{ path: 'cursor', message: 'unknown or malformed cursor' }]);
}

/**
 * Whether `key` is a position in this tenant's own index partition, as DynamoDB returns it: the table key (jobId),
 * the index key (tenant, or tenant#workflow, and createdAt), all strings, and nothing else but the tenant itself. A
 * cursor edited to point elsewhere would otherwise reach DynamoDB, which refuses a start key outside the query's
 * partition with an error (a 500).
 */
function isIndexKey(key: unknown, tenantId: string, workflow: string | undefined): key is Record<string, string> {
  if (!key || typeof key !== 'object' || Array.isArray(key)) return false;
  const entries = key as Record<string, unknown>;
  const own: Record<string, string> = { tenantId };
  if (workflow !== undefined) own.tenantWorkflow = `${tenantId}#${workflow}`;
  const partition = workflow === undefined ? 'tenantId' : 'tenantWorkflow';
  return (
    entries[partition] === own[partition] &&
    Object.entries(entries).every(([name, value]) =>
      name === 'jobId' || name === 'createdAt' ? true : Object.hasOwn(own, name) && value === own[name],
    ) &&
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

export async function listRunViews(tenantId: string, query: ListRunsQuery): Promise<ListRunsResponse> {
  const page = await listRuns({
    tenantId,
    limit: query.limit,
    ...(query.workflow !== undefined ? { workflow: query.workflow } : {}),
    ...(query.status !== undefined ? { status: query.status } : {}),
    ...(query.cursor !== undefined ? { startKey: decodeCursor(tenantId, query.workflow, query.cursor) } : {}),
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
        nextCursor: encodeCursor(tenantId, query.workflow, runIndexKey(last, query.workflow !== undefined)),
      };
    }
    items.push(item);
  }
  return { items, nextCursor: page.lastKey ? encodeCursor(tenantId, query.workflow, page.lastKey) : null };
}
