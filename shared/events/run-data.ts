/** What an event carries as `data`: the run as GET /v1/runs/{jobId} answers its tenant at that moment. */
import type { RunResponse } from '../contract.js';
import { toRunResponse } from '../runs/run-view.js';
import { withResult } from '../store/run-results.js';
import { getRunForTenant } from '../store/runs.js';

/** The run as its tenant reads it now; null when it is gone (past its retention) or not the tenant's. */
export async function runData(jobId: string, tenantId: string): Promise<RunResponse | null> {
  const run = await getRunForTenant(jobId, tenantId);
  return run ? toRunResponse(await withResult(run)) : null;
}
