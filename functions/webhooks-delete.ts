/** DELETE /v1/webhooks/{webhookId} — 204; no delivery to the endpoint is tried afterwards. */
import { removeWebhook } from '../shared/events/webhooks.js';
import { apiHandler } from '../shared/http.js';
import { checkEnvironment } from '../shared/resource-name.js';

checkEnvironment();

export const handler = apiHandler('webhooks-delete', {}, async (req) => {
  await removeWebhook(req.auth.tenantId, req.pathParameters.webhookId ?? '');
  return { statusCode: 204, text: '' };
});
