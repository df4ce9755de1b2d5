/** POST /v1/runs — validate, estimate, hold and queue a run; `Idempotency-Key` replays the first response. */
import { createRunRequest } from '../shared/contract.js';
import { apiHandler } from '../shared/http.js';
import { checkEnvironment } from '../shared/resource-name.js';
import { createRun } from '../shared/runs/create-run.js';

checkEnvironment();

export const handler = apiHandler('create-run', { body: createRunRequest }, async (req) => {
  const { response, replayed } = await createRun({
    tenantId: req.auth.tenantId,
    body: req.body,
    idempotencyKey: req.headers['idempotency-key'],
    requestId: req.requestId,
  });
  return {
    statusCode: 202,
    body: response,
    headers: { location: `/v1/runs/${response.jobId}`, ...(replayed ? { 'idempotent-replayed': 'true' } : {}) },
  };
});
