/** GET /v1/runs/{jobId}/file — a short-lived read address for the run's file (404 for unknown runs or expired files). */
import { apiHandler } from '../shared/http.js';
import { checkEnvironment } from '../shared/resource-name.js';
import { fileUrl } from '../shared/runs/file-url.js';

checkEnvironment();

export const handler = apiHandler('file-url', {}, async (req) => ({
  statusCode: 200,
  body: await fileUrl(req.auth.tenantId, req.pathParameters.jobId ?? ''),
}));
