/** GET /v1/webhooks — the tenant's endpoints (never their secrets). */
import { listWebhookViews } from '../shared/events/webhooks.js';
import { apiHandler } from '../shared/http.js';
import { checkEnvironment } from '../shared/resource-name.js';

checkEnvironment();

export const handler = apiHandler('webhooks-list', {}, async (req) => ({
  statusCode: 200,
  body: await listWebhookViews(req.auth.tenantId),
}));
