/** POST /v1/webhooks — register an endpoint; the answer carries its signing secret, shown this once. */
import { createWebhookRequest } from '../shared/contract.js';
import { registerWebhook } from '../shared/events/register.js';
import { apiHandler } from '../shared/http.js';
import { checkEnvironment } from '../shared/resource-name.js';

checkEnvironment();

export const handler = apiHandler('webhooks-create', { body: createWebhookRequest }, async (req) => ({
  statusCode: 201,
  body: await registerWebhook(req.auth.tenantId, req.body),
}));
