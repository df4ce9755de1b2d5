/** POST /v1/estimates — what a run of this body would cost now and as a batch; creates and holds nothing. */
import { estimateRequest } from '../shared/contract.js';
import { apiHandler } from '../shared/http.js';
import { checkEnvironment } from '../shared/resource-name.js';
import { estimateRun } from '../shared/runs/estimate.js';

checkEnvironment();

export const handler = apiHandler('estimates', { body: estimateRequest }, async (req) => ({
  statusCode: 200,
  body: await estimateRun(req.auth.tenantId, req.body),
}));
