/** GET /v1/runs — the tenant's runs, newest first, filtered by workflow and status, with a cursor. */
import { listRunsQuery } from '../shared/contract.js';
import { apiHandler } from '../shared/http.js';
import { checkEnvironment } from '../shared/resource-name.js';
import { listRunViews } from '../shared/runs/queries.js';

checkEnvironment();

export const handler = apiHandler('list-runs', { query: listRunsQuery }, async (req) => ({
  statusCode: 200,
  body: await listRunViews(req.auth.tenantId, req.query),
}));
