/** GET /v1/whoami — the calling key (id, label, tenant, scopes), so a client can show who it acts as and what it may do. */
import { apiHandler } from '../shared/http.js';
import { checkEnvironment } from '../shared/resource-name.js';

checkEnvironment();

export const handler = apiHandler('whoami', {}, async (req) => ({
  statusCode: 200,
  body: {
    keyId: req.auth.keyId,
    label: req.auth.keyLabel,
    tenantId: req.auth.tenantId,
    scopes: req.auth.scopes,
  },
}));
