/** GET /v1/quality?workflow=&schemaId=&from=&to= — accuracy from reviews, per field and provider, with calibration. */
import { qualityQuery } from '../shared/contract.js';
import { qualitySummary } from '../shared/evaluations/quality.js';
import { apiHandler } from '../shared/http.js';
import { checkEnvironment } from '../shared/resource-name.js';

checkEnvironment();

export const handler = apiHandler('quality', { query: qualityQuery }, async (req) => ({
  statusCode: 200,
  body: await qualitySummary(req.auth.tenantId, req.query),
}));
