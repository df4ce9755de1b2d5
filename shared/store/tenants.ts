/**
 * Tenants and their API keys. Keys are random (32 bytes), shown once, stored only as a SHA-256 hash (a fast hash is
 * right for high-entropy secrets; a slow KDF protects low-entropy passwords, which these are not).
 *
 * On a deployment each key also has a usage-plan key: an API Gateway API key (id and value on the item) that the
 * authorizer names as `usageIdentifierKey`, so the usage plan throttles the client key (lib/stateless-stack.ts
 * PER_KEY_THROTTLE). The keys CLI creates and deletes those (scripts/keys.ts); keys on the local stack have none.
 */
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { GetCommand, PutCommand, QueryCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { applied, ddb } from '../aws/dynamodb.js';
import { tables } from '../infra/resources.js';
import { SCOPES, type Scope } from '../infra/routes.js';
import type { Micros } from '../money.js';
import { resource } from '../resource-name.js';

export interface TenantRecord {
  tenantId: string;
  name: string;
  createdAt: string;
  /** Absent for unlimited tenants. Holds are taken from it; refunds give back to it. */
  availableMicros?: Micros;
  heldMicros: Micros;
  chargedMicros: Micros;
  refundedMicros: Micros;
}

export interface ApiKeyRecord {
  keyHash: string;
  keyId: string;
  tenantId: string;
  scopes: Scope[];
  status: 'active' | 'revoked';
  label: string;
  createdAt: string;
  revokedAt?: string;
  /** Id of the API Gateway API key attached to the usage plan for this key; absent on the local stack. */
  usagePlanKeyId?: string;
  /**
   * Value of that API Gateway API key, returned by the authorizer as `usageIdentifierKey`. A separate random value,
   * not the client's key, and no credential: the API takes API keys only from the authorizer, so presenting it gets
   * nothing. Never logged or printed all the same.
   */
  usagePlanKeyValue?: string;
}

/** An API Gateway API key that belongs to a client key. */
export interface UsagePlanKey {
  id: string;
  value: string;
}

// Not checked at init: the authorizer loads this module for the keys only, create-run for the tenants only (the
// ledger, which every money-moving function loads, checks the tenants table).
export const tenantsTable = resource(tables.tenants.envVar, { checkAtInit: false });
const keysTable = resource(tables.apiKeys.envVar, { checkAtInit: false });

/** SHA-256 hex of an API key: the table key under which it is stored. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** A new random API key (256 bits of entropy). */
export function generateApiKey(): string {
  return `vk_${randomBytes(32).toString('base64url')}`;
}

/** Creates a tenant if absent. `creditUsd` undefined means unlimited. */
export async function ensureTenant(
  tenantId: string,
  options: { name?: string; availableMicros?: Micros } = {},
): Promise<void> {
  // Already there: left as it is.
  await applied(
    ddb.send(
      new PutCommand({
        TableName: tenantsTable(),
        Item: {
          tenantId,
          name: options.name ?? tenantId,
          createdAt: new Date().toISOString(),
          heldMicros: 0,
          chargedMicros: 0,
          refundedMicros: 0,
          ...(options.availableMicros !== undefined ? { availableMicros: options.availableMicros } : {}),
        } satisfies TenantRecord,
        ConditionExpression: 'attribute_not_exists(tenantId)',
      }),
    ),
  );
}

export async function getTenant(tenantId: string): Promise<TenantRecord | null> {
  const out = await ddb.send(new GetCommand({ TableName: tenantsTable(), Key: { tenantId }, ConsistentRead: true }));
  return (out.Item as TenantRecord | undefined) ?? null;
}

/** Adds credit to a tenant (making it limited if it was unlimited); negative amounts remove credit. */
export async function addCredit(tenantId: string, micros: Micros): Promise<void> {
  await ddb.send(
    new UpdateCommand({
      TableName: tenantsTable(),
      Key: { tenantId },
      UpdateExpression: 'ADD availableMicros :m',
      ConditionExpression: 'attribute_exists(tenantId)',
      ExpressionAttributeValues: { ':m': micros },
    }),
  );
}

/** A new key id (`key_` + 16 hex digits): public, shown by `list`, used to revoke. */
export function newKeyId(): string {
  return `key_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
}

/** Stores a key (given or generated) for a tenant; returns the plaintext key, which is never stored. */
export async function createApiKey(
  tenantId: string,
  options: { key?: string; scopes?: Scope[]; label?: string; keyId?: string; usagePlanKey?: UsagePlanKey } = {},
): Promise<{ key: string; record: ApiKeyRecord }> {
  const key = options.key ?? generateApiKey();
  const record: ApiKeyRecord = {
    keyHash: hashApiKey(key),
    keyId: options.keyId ?? newKeyId(),
    tenantId,
    scopes: options.scopes ?? [...SCOPES],
    status: 'active',
    label: options.label ?? '',
    createdAt: new Date().toISOString(),
    ...(options.usagePlanKey
      ? { usagePlanKeyId: options.usagePlanKey.id, usagePlanKeyValue: options.usagePlanKey.value }
      : {}),
  };
  await ddb.send(new PutCommand({ TableName: keysTable(), Item: record }));
  return { key, record };
}

/** Finds the active key record for a presented key, or null. */
export async function findActiveKey(presented: string): Promise<ApiKeyRecord | null> {
  const keyHash = hashApiKey(presented);
  const out = await ddb.send(new GetCommand({ TableName: keysTable(), Key: { keyHash }, ConsistentRead: true }));
  const record = out.Item as ApiKeyRecord | undefined;
  if (record?.status !== 'active') return null;
  // The lookup is by hash already; the constant-time comparison keeps the check honest if the lookup ever changes.
  const same = timingSafeEqual(Buffer.from(record.keyHash, 'hex'), Buffer.from(keyHash, 'hex'));
  return same ? record : null;
}

/** A key's item by hash, read consistently (operator tools; the authorizer uses findActiveKey). */
export async function getApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | null> {
  const out = await ddb.send(new GetCommand({ TableName: keysTable(), Key: { keyHash }, ConsistentRead: true }));
  return (out.Item as ApiKeyRecord | undefined) ?? null;
}

/** Revokes a key by id; takes effect in the table at once (and in the authorizer cache within its TTL). */
export async function revokeApiKey(tenantId: string, keyId: string): Promise<boolean> {
  const keys = await listApiKeys(tenantId);
  const record = keys.find((k) => k.keyId === keyId);
  if (!record) return false;
  await ddb.send(
    new UpdateCommand({
      TableName: keysTable(),
      Key: { keyHash: record.keyHash },
      UpdateExpression: 'SET #status = :revoked, revokedAt = :now',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':revoked': 'revoked', ':now': new Date().toISOString() },
    }),
  );
  return true;
}

/**
 * Records a key's usage-plan key, only while the key is active and still has the usage-plan key `replacing` (none
 * when undefined): a concurrent revoke or sync makes this fail with ConditionalCheckFailedException instead of
 * overwriting. Returns false in that case.
 */
export async function setUsagePlanKey(
  keyHash: string,
  usagePlanKey: UsagePlanKey,
  replacing?: string,
): Promise<boolean> {
  return applied(
    ddb.send(
      new UpdateCommand({
        TableName: keysTable(),
        Key: { keyHash },
        UpdateExpression: 'SET usagePlanKeyId = :id, usagePlanKeyValue = :value',
        ConditionExpression:
          replacing === undefined
            ? '#status = :active AND attribute_not_exists(usagePlanKeyId)'
            : '#status = :active AND usagePlanKeyId = :old',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':id': usagePlanKey.id,
          ':value': usagePlanKey.value,
          ':active': 'active',
          ...(replacing === undefined ? {} : { ':old': replacing }),
        },
      }),
    ),
  );
}

/** Forgets a key's usage-plan key once the API Gateway key is deleted (only if it is still that one). */
export async function clearUsagePlanKey(keyHash: string, usagePlanKeyId: string): Promise<void> {
  // Another usage-plan key since: left as it is.
  await applied(
    ddb.send(
      new UpdateCommand({
        TableName: keysTable(),
        Key: { keyHash },
        UpdateExpression: 'REMOVE usagePlanKeyId, usagePlanKeyValue',
        ConditionExpression: 'usagePlanKeyId = :id',
        ExpressionAttributeValues: { ':id': usagePlanKeyId },
      }),
    ),
  );
}

/** Every key of every tenant (a full table scan, for operator tools such as `keys sync-usage-plan`). */
export async function scanApiKeys(): Promise<ApiKeyRecord[]> {
  const items: ApiKeyRecord[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await ddb.send(
      new ScanCommand({
        TableName: keysTable(),
        ConsistentRead: true,
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    items.push(...((out.Items ?? []) as ApiKeyRecord[]));
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  return items;
}

export async function listApiKeys(tenantId: string): Promise<ApiKeyRecord[]> {
  // Every page: a query answers at most 1 MB at a time.
  const items: ApiKeyRecord[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await ddb.send(
      new QueryCommand({
        TableName: keysTable(),
        IndexName: 'byTenant',
        KeyConditionExpression: 'tenantId = :t',
        ExpressionAttributeValues: { ':t': tenantId },
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    items.push(...((out.Items ?? []) as ApiKeyRecord[]));
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  return items;
}

/** Every tenant (a full table scan, for operator tools such as `npm run keys -- tenants`; not for request paths). */
export async function listTenants(): Promise<TenantRecord[]> {
  const items: TenantRecord[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await ddb.send(
      new ScanCommand({ TableName: tenantsTable(), ...(startKey ? { ExclusiveStartKey: startKey } : {}) }),
    );
    items.push(...((out.Items ?? []) as TenantRecord[]));
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  return items.sort((a, b) => a.tenantId.localeCompare(b.tenantId));
}
