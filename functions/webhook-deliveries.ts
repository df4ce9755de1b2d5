/** GET /v1/webhooks/{webhookId}/deliveries — the endpoint's last 100 delivery attempts, newest first. */
import { listDeliveryViews } from '../shared/events/webhooks.js';
import { apiHandler } from '../shared/http.js';
import { checkEnvironment } from '../shared/resource-name.js';

checkEnvironment();

export const handler = apiHandler('webhook-deliveries', {}, async (req) => ({
  statusCode: 200,
  body: await listDeliveryViews(req.auth.tenantId, req.pathParameters.webhookId ?? ''),
}));
