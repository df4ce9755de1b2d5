/**
 * The calibration store (shared/pricing/calibration.ts does the arithmetic), in the Calibration table:
 * - `tenant#<tenantId>#<key>`: one tenant's window of a key (provider × task kind × step), its 50 latest ratios;
 * - `<key>`: the deployment's window of the key, the latest ratios of each of the 50 most recent tenants (one entry
 *   per tenant, so no tenant moves another's fallback).
 * Creation reads only the items of its tenant and its plan's keys (one BatchGetItem, each item cached a minute: it is
 * on the API's hot path); the worker adds a settled run's sample to both items with conditional writes on the item's
 * version, so two workers settling at once never lose one another's sample. The loop and its guards: docs/pricing.md.
 */
import { BatchGetCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { applied, ddb } from '../aws/dynamodb.js';
import { tables } from '../infra/resources.js';
import { log } from '../log.js';
import {
  addSample,
  addTenantEntry,
  type CalibrationSample,
  type CalibrationState,
  type DeploymentState,
  type FactorsFor,
  type TenantEntry,
  tenantFactors,
  usableSample,
} from '../pricing/calibration.js';
import { resource } from '../resource-name.js';

export const calibrationTable = resource(tables.calibration.envVar);

/** The item key of a tenant's own window of a calibration key. */
export function tenantItemKey(tenantId: string, key: string): string {
  return `tenant#${tenantId}#${key}`;
}

interface Versioned {
  version: number;
  updatedAt: string;
}

const numbers = (v: unknown): v is number[] =>
  Array.isArray(v) && v.every((n) => typeof n === 'number' && Number.isFinite(n));

function ownState(item: Record<string, unknown> | undefined, key: string): CalibrationState | undefined {
  return item && numbers(item.input) && numbers(item.output)
    ? { key, input: item.input, output: item.output }
    : undefined;
}

function isEntry(v: unknown): v is TenantEntry {
  const e = v as Partial<TenantEntry> | null;
  return (
    typeof e === 'object' &&
    e !== null &&
    typeof e.tenant === 'string' &&
    typeof e.input === 'number' &&
    Number.isFinite(e.input) &&
    typeof e.output === 'number' &&
    Number.isFinite(e.output)
  );
}

/**
 * The deployment's window in an item. An item written before windows were kept per tenant holds untagged `input` and
 * `output` lists: nobody can tell whose they are, so they are not read (the seeds stand in until tenants' runs refill
 * the window) and the next sample's write replaces them.
 */
function deploymentState(item: Record<string, unknown> | undefined, key: string): DeploymentState | undefined {
  return item && Array.isArray(item.entries) ? { key, entries: item.entries.filter(isEntry) } : undefined;
}

/** How long a process keeps an item it read: calibration moves over many runs, not within a minute. */
const CACHE_MS = 60_000;
/** Items a process keeps at most (the oldest read is forgotten first): a few per tenant and key in use. */
const CACHE_ITEMS = 10_000;
const cache = new Map<string, { atMs: number; item: Record<string, unknown> | undefined }>();

function remember(itemKey: string, item: Record<string, unknown> | undefined, atMs: number): void {
  cache.delete(itemKey);
  cache.set(itemKey, { atMs, item });
  while (cache.size > CACHE_ITEMS) cache.delete(cache.keys().next().value as string);
}

/** BatchGetItem reads at most this many keys a request. */
const BATCH_KEYS = 100;
/** Unprocessed keys (throttling) are asked again this many times before the read gives up. */
const BATCH_TRIES = 3;

/** The items of `itemKeys` (undefined: no such item), each from the cache when read less than a minute ago. */
async function readItems(itemKeys: readonly string[], nowMs: number): Promise<Map<string, Record<string, unknown>>> {
  const found = new Map<string, Record<string, unknown>>();
  const missing: string[] = [];
  for (const itemKey of new Set(itemKeys)) {
    const hit = cache.get(itemKey);
    if (hit && nowMs - hit.atMs < CACHE_MS) {
      if (hit.item) found.set(itemKey, hit.item);
    } else missing.push(itemKey);
  }
  for (let start = 0; start < missing.length; start += BATCH_KEYS) {
    let asked = missing.slice(start, start + BATCH_KEYS);
    for (let tries = 0; asked.length > 0; tries += 1) {
      if (tries >= BATCH_TRIES) throw new Error('the calibration read was throttled');
      const out = await ddb.send(
        new BatchGetCommand({ RequestItems: { [calibrationTable()]: { Keys: asked.map((key) => ({ key })) } } }),
      );
      const returned = new Map<string, Record<string, unknown>>();
      for (const item of out?.Responses?.[calibrationTable()] ?? []) {
        if (typeof item.key === 'string') returned.set(item.key, item);
      }
      const unprocessed = new Set(
        (out?.UnprocessedKeys?.[calibrationTable()]?.Keys ?? []).map((k) => String((k as { key?: unknown }).key)),
      );
      for (const itemKey of asked) {
        if (unprocessed.has(itemKey)) continue;
        // Neither returned nor left for later: no such item, remembered as absent.
        const item = returned.get(itemKey);
        if (item) found.set(itemKey, item);
        remember(itemKey, item, nowMs);
      }
      asked = [...unprocessed];
    }
  }
  return found;
}

/**
 * The calibration factors of `keys` for a tenant (any other key: its seed); the shipped seeds when the read fails
 * (logged): an estimate from the seeds is still a valid one, and a run must not fail for calibration's sake.
 */
export async function loadFactors(tenantId: string, keys: readonly string[], nowMs = Date.now()): Promise<FactorsFor> {
  try {
    const items = await readItems([...keys, ...keys.map((key) => tenantItemKey(tenantId, key))], nowMs);
    const own = new Map<string, CalibrationState>();
    const deployment = new Map<string, DeploymentState>();
    for (const key of keys) {
      const mine = ownState(items.get(tenantItemKey(tenantId, key)), key);
      if (mine) own.set(key, mine);
      const all = deploymentState(items.get(key), key);
      if (all) deployment.set(key, all);
    }
    return tenantFactors({ tenant: tenantId, own, deployment });
  } catch (error: unknown) {
    log.warn('could not read the calibration table; estimating from the shipped seeds', { error });
    return tenantFactors({ tenant: tenantId, own: new Map(), deployment: new Map() });
  }
}

/** Forgets the cached items (tests). */
export function clearCalibrationCache(): void {
  cache.clear();
}

/** Conditional writes that lost a race are retried this many times with the fresh item; then the sample is dropped. */
const MAX_TRIES = 4;

/** Read, change, write on condition that nobody wrote the item in between (or that it still does not exist). */
async function update(
  itemKey: string,
  next: (item: Record<string, unknown> | undefined) => object,
  now: Date,
): Promise<boolean> {
  for (let tries = 0; tries < MAX_TRIES; tries += 1) {
    const out = await ddb.send(new GetCommand({ TableName: calibrationTable(), Key: { key: itemKey } }));
    const item = out?.Item;
    const read = typeof item?.version === 'number' ? item.version : undefined;
    const written = await applied(
      ddb.send(
        new PutCommand({
          TableName: calibrationTable(),
          Item: {
            ...next(item),
            key: itemKey,
            version: (read ?? 0) + 1,
            updatedAt: now.toISOString(),
          } satisfies Versioned & Record<string, unknown>,
          ConditionExpression: read !== undefined ? 'version = :read' : 'attribute_not_exists(#key)',
          ...(read !== undefined
            ? { ExpressionAttributeValues: { ':read': read } }
            : { ExpressionAttributeNames: { '#key': 'key' } }),
        }),
      ),
    );
    if (written) return true;
  }
  return false;
}

/**
 * Adds a tenant's settled runs' samples: each to the tenant's own window of its key and to the deployment's window (as
 * the tenant's entry). A sample with missing or nonsensical counts is not learnt from. Returns how many were recorded
 * in the tenant's window.
 */
export async function recordSamples(
  tenantId: string,
  samples: readonly CalibrationSample[],
  now = new Date(),
): Promise<number> {
  let recorded = 0;
  for (const sample of samples) {
    if (!usableSample(sample)) continue;
    const [own] = await Promise.all([
      update(tenantItemKey(tenantId, sample.key), (item) => addSample(ownState(item, sample.key), sample), now),
      update(sample.key, (item) => addTenantEntry(deploymentState(item, sample.key), tenantId, sample), now),
    ]);
    if (own) recorded += 1;
  }
  return recorded;
}
