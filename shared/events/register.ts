/**
 * POST /v1/webhooks: checks the URL (url-safety.ts), generates the signing secret and seals it (secrets.ts), and
 * stores the endpoint within the tenant's limit. The answer is the only place the secret is ever shown.
 */
import { randomBytes } from 'node:crypto';
import { config } from '../config.js';
import type { CreateWebhookRequest, CreateWebhookResponse } from '../contract.js';
import { InvalidRequestError } from '../errors.js';
import { webhookSettings } from '../infra/resources.js';
import { RUN_EVENT_TYPES } from '../store/events.js';
import { newWebhookId, putWebhook, TooManyWebhooks, type WebhookRecord } from '../store/webhooks.js';
import { generateWebhookSecret, sealSecret } from './secrets.js';
import { checkWebhookUrl, UnsafeUrlError } from './url-safety.js';
import { toWebhook } from './webhooks.js';

export interface RegisterOptions {
  /** Resolves host names (tests). */
  resolve?: (host: string) => Promise<string[]>;
}

export async function registerWebhook(
  tenantId: string,
  request: CreateWebhookRequest,
  options: RegisterOptions = {},
): Promise<CreateWebhookResponse> {
  let url: URL;
  try {
    ({ url } = await checkWebhookUrl(request.url, {
      allowLocalhost: config.webhookAllowLocalhost,
      ...(options.resolve ? { resolve: options.resolve } : {}),
    }));
  } catch (error: unknown) {
    if (!(error instanceof UnsafeUrlError)) throw error;
    throw new InvalidRequestError(`url is not allowed: ${error.message}`, [{ path: 'url', message: error.message }], {
      reason: error.message,
    });
  }
  const webhookId = newWebhookId(randomBytes(10).toString('hex'));
  const secret = generateWebhookSecret();
  const record: WebhookRecord = {
    tenantId,
    webhookId,
    // As the URL standard normalises it: what is listed is exactly what is checked and POSTed to.
    url: url.href,
    events: request.events ?? [...RUN_EVENT_TYPES],
    ...(request.description !== undefined ? { description: request.description } : {}),
    createdAt: new Date().toISOString(),
    secret: await sealSecret(secret, tenantId, webhookId),
  };
  try {
    await putWebhook(record);
  } catch (error: unknown) {
    if (!(error instanceof TooManyWebhooks)) throw error;
    const reason = `a tenant may have at most ${webhookSettings.maxEndpoints} webhook endpoints; delete one first`;
    throw new InvalidRequestError(reason, [{ path: '(root)', message: reason }], {
      reason,
      limit: webhookSettings.maxEndpoints,
    });
  }
  return { ...toWebhook(record), secret };
}
