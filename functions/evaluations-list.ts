/** GET /v1/evaluations — the tenant's evaluations, newest first, with a cursor. */
import { listEvaluationsQuery } from '../shared/contract.js';
import { listEvaluationViews } from '../shared/evaluations/queries.js';
import { apiHandler } from '../shared/http.js';
import { checkEnvironment } from '../shared/resource-name.js';

checkEnvironment();

export const handler = apiHandler('evaluations-list', { query: listEvaluationsQuery }, async (req) => ({
  statusCode: 200,
  body: await listEvaluationViews(req.auth.tenantId, req.query),
}));
