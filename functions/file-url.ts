/**
 * GET /v1/runs/{jobId}/file[?page=N] — a short-lived read address for the run's file, or for one page's image of a
 * PDF run (404 for unknown runs, expired files and pages without an image).
 */
import { fileUrlQuery } from '../shared/contract.js';
import { apiHandler } from '../shared/http.js';
import { checkEnvironment } from '../shared/resource-name.js';
import { fileUrl } from '../shared/runs/file-url.js';

checkEnvironment();

export const handler = apiHandler('file-url', { query: fileUrlQuery }, async (req) => ({
  statusCode: 200,
  body: await fileUrl(req.auth.tenantId, req.pathParameters.jobId ?? '', req.query),
}));
