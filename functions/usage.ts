/** GET /v1/usage?from=&to=&interval=&workflow= — totals per workflow and per time bucket (runs, charged, refunded, acceptance rate). */
import { usageQuery } from '../shared/contract.js';
import { apiHandler } from '../shared/http.js';
import { checkEnvironment } from '../shared/resource-name.js';
import { usageSummary } from '../shared/runs/usage-summary.js';

checkEnvironment();

export const handler = apiHandler('usage', { query: usageQuery }, async (req) => ({
  statusCode: 200,
  body: await usageSummary(req.auth.tenantId, req.query),
}));
