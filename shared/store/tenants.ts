/**
 * Tenants and their API keys. Keys are random (32 bytes), shown once, stored only as a SHA-256 hash (a fast hash is
 * right for high-entropy secrets; a slow KDF protects low-entropy passwords, which these are not).
 */
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { GetCommand, PutCommand, QueryCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ddb } from '../aws/dynamodb.js';
import { resourceName } from '../config.js';
import { tables } from '../infra/resources.js';
import { SCOPES, type Scope } from '../infra/routes.js';
import type { Micros } from '../money.js';

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
}

function tenantsTable(): string {
  return resourceName(tables.tenants.envVar);
}
function keysTable(): string {
  return resourceName(tables.apiKeys.envVar);
}

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
  try {
    await ddb.send(
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
    );
  } catch (error: unknown) {
    if (!(error instanceof Error && error.name === 'ConditionalCheckFailedException')) throw error;
  }
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

/** Stores a key (given or generated) for a tenant; returns the plaintext key, which is never stored. */
export async function createApiKey(
  tenantId: string,
  options: { key?: string; scopes?: Scope[]; label?: string } = {},
): Promise<{ key: string; record: ApiKeyRecord }> {
  const key = options.key ?? generateApiKey();
  const record: ApiKeyRecord = {
    keyHash: hashApiKey(key),
    keyId: `key_${randomUUID().replaceAll('-', '').slice(0, 16)}`,
    tenantId,
    scopes: options.scopes ?? [...SCOPES],
    status: 'active',
    label: options.label ?? '',
    createdAt: new Date().toISOString(),
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

export async function listApiKeys(tenantId: string): Promise<ApiKeyRecord[]> {
  const out = await ddb.send(
    new QueryCommand({
      TableName: keysTable(),
      IndexName: 'byTenant',
      KeyConditionExpression: 'tenantId = :t',
      ExpressionAttributeValues: { ':t': tenantId },
    }),
  );
  return (out.Items ?? []) as ApiKeyRecord[];
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
