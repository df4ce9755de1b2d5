/** GET /v1/runs — the tenant's runs, newest first, filtered by workflow and status, with a cursor. */
import { listRunsQuery } from '../shared/contract.js';
import { apiHandler } from '../shared/http.js';
import { listRunViews } from '../shared/runs/queries.js';

export const handler = apiHandler('list-runs', { query: listRunsQuery }, async (req) => ({
  statusCode: 200,
  body: await listRunViews(req.auth.tenantId, req.query),
}));
