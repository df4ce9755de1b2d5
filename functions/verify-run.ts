/** POST /v1/runs/{jobId}/verify — accept or correct a completed run's result (QA metadata only). */
import { verifyRequest } from '../shared/contract.js';
import { apiHandler } from '../shared/http.js';
import { checkEnvironment } from '../shared/resource-name.js';
import { verifyRun } from '../shared/runs/verify.js';

checkEnvironment();

export const handler = apiHandler('verify-run', { body: verifyRequest }, async (req) => ({
  statusCode: 200,
  body: await verifyRun(req.auth.tenantId, req.auth, req.pathParameters.jobId ?? '', req.body),
}));
