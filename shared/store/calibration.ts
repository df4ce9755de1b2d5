/**
 * The calibration store: one small item per key (provider × task kind × step) in the Calibration table, holding the
 * most recent ratios actual ÷ predicted tokens (shared/pricing/calibration.ts does the arithmetic). The API reads every
 * item (a few dozen at most) and keeps them a minute; the worker adds a settled run's sample with a conditional write
 * on the item's version, so two workers settling at once never lose one another's sample.
 * The feedback loop and its guards: docs/pricing.md.
 */
import { GetCommand, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { applied, ddb } from '../aws/dynamodb.js';
import { tables } from '../infra/resources.js';
import { log } from '../log.js';
import {
  addSample,
  type CalibrationSample,
  type CalibrationState,
  type FactorsFor,
  factorsFrom,
  usableSample,
} from '../pricing/calibration.js';
import { resource } from '../resource-name.js';

export const calibrationTable = resource(tables.calibration.envVar);

interface CalibrationItem extends CalibrationState {
  version: number;
  updatedAt: string;
}

/** How long a process keeps the factors it read: calibration moves over many runs, not within a minute. */
const CACHE_MS = 60_000;
let cached: { atMs: number; states: Map<string, CalibrationState> } | undefined;

function isState(item: Record<string, unknown>): item is Record<string, unknown> & CalibrationItem {
  const numbers = (v: unknown) => Array.isArray(v) && v.every((n) => typeof n === 'number' && Number.isFinite(n));
  return typeof item.key === 'string' && numbers(item.input) && numbers(item.output);
}

/** Every key's state (a Scan of a table of a few dozen items), cached for a minute. */
export async function loadStates(nowMs = Date.now()): Promise<Map<string, CalibrationState>> {
  if (cached && nowMs - cached.atMs < CACHE_MS) return cached.states;
  const states = new Map<string, CalibrationState>();
  let start: Record<string, unknown> | undefined;
  do {
    const page = await ddb.send(new ScanCommand({ TableName: calibrationTable(), ExclusiveStartKey: start }));
    for (const item of page?.Items ?? []) {
      if (isState(item)) states.set(item.key, { key: item.key, input: item.input, output: item.output });
    }
    start = page?.LastEvaluatedKey;
  } while (start);
  cached = { atMs: nowMs, states };
  return states;
}

/**
 * The calibration factors by key; the shipped seeds for keys without history. A read that fails falls back to the
 * seeds (logged): an estimate from the seeds is still a valid one, and a run must not fail for calibration's sake.
 */
export async function loadFactors(): Promise<FactorsFor> {
  try {
    return factorsFrom(await loadStates());
  } catch (error: unknown) {
    log.warn('could not read the calibration table; estimating from the shipped seeds', { error });
    return factorsFrom(new Map());
  }
}

/** Forgets the cached factors (tests, and the operator report). */
export function clearCalibrationCache(): void {
  cached = undefined;
}

/** Conditional writes that lost a race are retried this many times with the fresh item; then the sample is dropped. */
const MAX_TRIES = 4;

/** Adds one sample to its key: read, add, write on condition that nobody wrote the item in between. */
async function recordSample(sample: CalibrationSample, now: Date): Promise<boolean> {
  for (let tries = 0; tries < MAX_TRIES; tries += 1) {
    const out = await ddb.send(new GetCommand({ TableName: calibrationTable(), Key: { key: sample.key } }));
    const item = out?.Item && isState(out.Item) ? out.Item : undefined;
    const next = addSample(item, sample);
    const version = (item?.version ?? 0) + 1;
    const written = await applied(
      ddb.send(
        new PutCommand({
          TableName: calibrationTable(),
          Item: { ...next, version, updatedAt: now.toISOString() } satisfies CalibrationItem,
          ConditionExpression: item ? 'version = :read' : 'attribute_not_exists(#key)',
          ...(item
            ? { ExpressionAttributeValues: { ':read': item.version } }
            : { ExpressionAttributeNames: { '#key': 'key' } }),
        }),
      ),
    );
    if (written) return true;
  }
  return false;
}

/**
 * Adds settled runs' samples to their keys. A sample with missing or nonsensical counts is not learnt from. Returns
 * how many were recorded.
 */
export async function recordSamples(samples: readonly CalibrationSample[], now = new Date()): Promise<number> {
  let recorded = 0;
  for (const sample of samples) {
    if (usableSample(sample) && (await recordSample(sample, now))) recorded += 1;
  }
  return recorded;
}
