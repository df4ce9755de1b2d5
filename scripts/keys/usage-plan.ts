/**
 * API Gateway side of the key lifecycle (docs/keys.md "Usage-plan keys"): every client key of a deployment has an
 * API Gateway API key, attached to the stage's usage plan, whose value the authorizer returns as `usageIdentifierKey`
 * so the plan throttles that client key. This module creates, attaches, checks and deletes those API keys; the item in
 * the apiKeys table (shared/store/tenants.ts) records the id and value.
 *
 * Every operation is safe to repeat: a key already attached, or already deleted, counts as done. A key that cannot be
 * attached is deleted again before the error is reported, so no half-made key stays behind (when even that delete
 * fails, the error names the orphan and `keys sync-usage-plan` removes it later).
 */
import { randomBytes } from 'node:crypto';
import {
  type APIGatewayClient,
  type ApiKey,
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  DeleteApiKeyCommand,
  GetApiKeysCommand,
  GetUsagePlanKeysCommand,
} from '@aws-sdk/client-api-gateway';
import type { UsagePlanKey } from '../../shared/store/tenants.js';

/** Name prefix of the API Gateway keys this tool creates: `vision-<keyId>`. */
export const API_KEY_NAME_PREFIX = 'vision-key_';
/** Tags on every API Gateway key this tool creates. */
export const TAGS = { keyId: 'vision:keyId', tenantId: 'vision:tenantId', usagePlanId: 'vision:usagePlanId' } as const;
/** `sync-usage-plan` deletes an unreferenced key of ours only when it is older than this (a create may be under way). */
export const PRUNE_MIN_AGE_MS = 10 * 60 * 1000;

const nameOf = (error: unknown) => (error instanceof Error ? error.name : '');
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** The API key's value: 40 hex digits (API Gateway wants 20-128 alphanumeric characters). Not the client's key. */
export function newUsagePlanKeyValue(): string {
  return randomBytes(20).toString('hex');
}

/**
 * Creates the API Gateway key of a client key and attaches it to the usage plan. If attaching fails, the new API key
 * is deleted before the error is thrown.
 */
export async function issueUsagePlanKey(
  client: APIGatewayClient,
  usagePlanId: string,
  owner: { keyId: string; tenantId: string },
): Promise<UsagePlanKey> {
  const value = newUsagePlanKeyValue();
  const created = await client.send(
    new CreateApiKeyCommand({
      name: `vision-${owner.keyId}`,
      description: `Usage-plan key of vision API key ${owner.keyId} (tenant ${owner.tenantId}); managed by npm run keys`,
      enabled: true,
      value,
      tags: { [TAGS.keyId]: owner.keyId, [TAGS.tenantId]: owner.tenantId, [TAGS.usagePlanId]: usagePlanId },
    }),
  );
  const id = created.id;
  if (!id) throw new Error('API Gateway CreateApiKey returned no id');
  try {
    await attachUsagePlanKey(client, usagePlanId, id);
  } catch (error: unknown) {
    await deleteUndone(client, id, `attaching it to usage plan ${usagePlanId} failed (${messageOf(error)})`);
    throw error;
  }
  return { id, value };
}

/**
 * Deletes an API key that was just created for a step that then failed. Throws a message naming the orphan if the
 * delete fails too (the caller's original error is then reported after it).
 */
export async function deleteUndone(client: APIGatewayClient, apiKeyId: string, why: string): Promise<void> {
  try {
    await deleteUsagePlanKey(client, apiKeyId);
  } catch (cleanup: unknown) {
    throw new Error(
      `${why}; deleting the new API Gateway key ${apiKeyId} failed too (${messageOf(cleanup)}): ` +
        'it is unused, and `npm run keys -- sync-usage-plan` deletes it once it is 10 minutes old',
    );
  }
}

/** Attaches an API key to the usage plan; already attached counts as done. */
export async function attachUsagePlanKey(client: APIGatewayClient, usagePlanId: string, apiKeyId: string) {
  try {
    await client.send(new CreateUsagePlanKeyCommand({ usagePlanId, keyId: apiKeyId, keyType: 'API_KEY' }));
  } catch (error: unknown) {
    if (nameOf(error) !== 'ConflictException') throw error;
  }
}

/** Deletes an API key (which also detaches it from every usage plan). Returns false if it did not exist. */
export async function deleteUsagePlanKey(client: APIGatewayClient, apiKeyId: string): Promise<boolean> {
  try {
    await client.send(new DeleteApiKeyCommand({ apiKey: apiKeyId }));
    return true;
  } catch (error: unknown) {
    if (nameOf(error) === 'NotFoundException') return false;
    throw error;
  }
}

/** Ids of the API keys attached to the usage plan. */
export async function usagePlanKeyIds(client: APIGatewayClient, usagePlanId: string): Promise<Set<string>> {
  const ids = new Set<string>();
  let position: string | undefined;
  do {
    const page = await client.send(
      new GetUsagePlanKeysCommand({ usagePlanId, limit: 500, ...(position ? { position } : {}) }),
    );
    for (const item of page.items ?? []) if (item.id) ids.add(item.id);
    position = page.position;
  } while (position);
  return ids;
}

/** The API keys this tool created for this usage plan (by name prefix and tag); values are not fetched. */
export async function ownApiKeys(client: APIGatewayClient, usagePlanId: string): Promise<ApiKey[]> {
  const keys: ApiKey[] = [];
  let position: string | undefined;
  do {
    const page = await client.send(
      new GetApiKeysCommand({
        nameQuery: API_KEY_NAME_PREFIX,
        includeValues: false,
        limit: 500,
        ...(position ? { position } : {}),
      }),
    );
    for (const key of page.items ?? []) {
      if (key.name?.startsWith(API_KEY_NAME_PREFIX) && key.tags?.[TAGS.usagePlanId] === usagePlanId) keys.push(key);
    }
    position = page.position;
  } while (position);
  return keys;
}
