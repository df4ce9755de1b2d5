/** GET /v1/runs/{jobId} — the run in its current state (200 in every state; 404 for unknown or other tenants' runs). */
import { apiHandler } from '../shared/http.js';
import { checkEnvironment } from '../shared/resource-name.js';
import { getRunView } from '../shared/runs/queries.js';

checkEnvironment();

export const handler = apiHandler('get-run', {}, async (req) => ({
  statusCode: 200,
  body: await getRunView(req.auth.tenantId, req.pathParameters.jobId ?? ''),
}));
