/**
 * Webhook signing secrets: generated here (`whsec_` + 32 random bytes, base64url), shown once, and stored sealed.
 * Deployed, sealed with AES-256-GCM under a key held in one Secrets Manager secret (WEBHOOK_SECRET_STORE is its ARN;
 * the key is the SHA-256 of its value, read once per version and kept), with the tenant and endpoint as additional
 * data so a sealed secret copied to another item does not open. The local stack (`local-table`) keeps the secret as
 * it is. A signing secret cannot be hashed: the deliver function needs it to sign.
 * Why this and not KMS or a secret per endpoint: docs/decisions.md#webhook-secrets-sealed-under-one-key
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { GetSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import { secretsManager } from '../aws/secrets-manager.js';
import { ENV } from '../infra/env.js';
import { resource } from '../resource-name.js';
import type { SealedSecret } from '../store/webhooks.js';

/** The local stack's setting: secrets kept as they are in the webhooks table. */
export const LOCAL_SECRET_STORE = 'local-table';

const secretStore = resource(ENV.webhookSecretStore);

/** A new signing secret. */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/** Keys by secret version; the promise is dropped when the read fails, so the next call reads again. */
const keys = new Map<string, Promise<{ version: string; key: Buffer }>>();

function readKey(arn: string, version: string | undefined): Promise<{ version: string; key: Buffer }> {
  const cacheKey = version ?? 'AWSCURRENT';
  let entry = keys.get(cacheKey);
  if (entry === undefined) {
    entry = secretsManager
      .send(new GetSecretValueCommand({ SecretId: arn, ...(version !== undefined ? { VersionId: version } : {}) }))
      .then((out) => {
        if (!out.SecretString || !out.VersionId) throw new Error('the webhook secret key has no value');
        return { version: out.VersionId, key: createHash('sha256').update(out.SecretString, 'utf8').digest() };
      });
    entry.catch(() => keys.delete(cacheKey));
    keys.set(cacheKey, entry);
  }
  return entry;
}

/** Seals a secret for storage on endpoint `webhookId` of `tenantId`. */
export async function sealSecret(secret: string, tenantId: string, webhookId: string): Promise<SealedSecret> {
  const store = secretStore();
  if (store === LOCAL_SECRET_STORE) return { box: 'local-plaintext', value: secret };
  const { version, key } = await readKey(store, undefined);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(`${tenantId}#${webhookId}`, 'utf8'));
  const data = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return {
    box: 'aes-256-gcm',
    keyVersion: version,
    data: Buffer.concat([iv, cipher.getAuthTag(), data]).toString('base64'),
  };
}

/** The secret in clear, for signing. Throws when it cannot be opened (another key, other additional data). */
export async function openSecret(sealed: SealedSecret, tenantId: string, webhookId: string): Promise<string> {
  const store = secretStore();
  if (sealed.box === 'local-plaintext') {
    // A secret in clear belongs to the local stack only: a deployment never wrote one, so it never trusts one.
    if (store !== LOCAL_SECRET_STORE) throw new Error('a webhook secret stored in clear outside the local stack');
    return sealed.value;
  }
  const { key } = await readKey(store, sealed.keyVersion);
  const raw = Buffer.from(sealed.data, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAAD(Buffer.from(`${tenantId}#${webhookId}`, 'utf8'));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}

/** For tests: forget the cached keys. */
export function resetSecretKeys(): void {
  keys.clear();
}
