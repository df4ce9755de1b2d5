/** POST /v1/uploads/presign — reserve an upload slot and return a signed PUT address. */
import { presignRequest } from '../shared/contract.js';
import { apiHandler } from '../shared/http.js';
import { checkEnvironment } from '../shared/resource-name.js';
import { presignUpload } from '../shared/runs/presign.js';

checkEnvironment();

export const handler = apiHandler('presign', { body: presignRequest }, async (req) => ({
  statusCode: 200,
  body: await presignUpload(req.auth.tenantId, req.body),
}));
