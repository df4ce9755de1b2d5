/** GET /v1/evaluations/{evaluationId} — progress, money, the report once every run settled, and a page of items. */
import { getEvaluationQuery } from '../shared/contract.js';
import { getEvaluationView } from '../shared/evaluations/queries.js';
import { apiHandler } from '../shared/http.js';
import { checkEnvironment } from '../shared/resource-name.js';

checkEnvironment();

export const handler = apiHandler('evaluations-get', { query: getEvaluationQuery }, async (req) => ({
  statusCode: 200,
  body: await getEvaluationView(req.auth.tenantId, req.pathParameters.evaluationId ?? '', req.query),
}));
