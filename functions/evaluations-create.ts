/** POST /v1/evaluations — check every document, estimate, hold once, write and queue the runs; `Idempotency-Key` replays. */
import { createEvaluationRequest } from '../shared/contract.js';
import { createEvaluation } from '../shared/evaluations/create.js';
import { apiHandler } from '../shared/http.js';
import { evaluationSettings } from '../shared/infra/resources.js';
import { checkEnvironment } from '../shared/resource-name.js';

checkEnvironment();

export const handler = apiHandler(
  'evaluations-create',
  { body: createEvaluationRequest, maxBodyBytes: evaluationSettings.maxBodyBytes },
  async (req) => {
    const { response, replayed } = await createEvaluation({
      tenantId: req.auth.tenantId,
      body: req.body,
      idempotencyKey: req.headers['idempotency-key'],
      requestId: req.requestId,
    });
    return {
      statusCode: 202,
      body: response,
      headers: {
        location: `/v1/evaluations/${response.evaluationId}`,
        ...(replayed ? { 'idempotent-replayed': 'true' } : {}),
      },
    };
  },
);
