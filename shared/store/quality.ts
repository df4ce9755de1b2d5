/**
 * Accuracy from reviews (contract-v1.2 §1): per tenant × UTC day of a run's creation × workflow × schema × the provider
 * that answered, how many fields reviews checked (`verified`) and found wrong (`corrected`), and how many values were
 * right and wrong at each confidence in hundredths (a day's item stays at most ~200 counters whatever the volume, so a
 * month of them reads in one page; AUROC then counts values within a hundredth of each other as ties). Moved by `ADD` in the verify's own transaction, by the difference from the review it replaces, as the
 * usage counters are (./usage.ts): exactly once with the review, and `GET /v1/quality` reads counters, never runs.
 * Why: docs/decisions.md#accuracy-from-reviews
 */
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { ddb } from '../aws/dynamodb.js';
import type { Verification } from '../contract.js';
import { compareValue } from '../evaluation/compare.js';
import { tables } from '../infra/resources.js';
import { resource } from '../resource-name.js';
import type { RunRecord } from './runs.js';
import type { TransactItem } from './transact.js';

// Not checked at init: only verify-run and the quality route touch it.
export const qualityTable = resource(tables.quality.envVar, { checkAtInit: false });

/** What one review of one run adds: counts by field and by confidence (in hundredths). */
export interface QualityCounts {
  /** Runs reviewed (1 for a run's first review, 0 for one that replaces another). */
  verifiedRuns: number;
  /** Per field: checked, and found wrong. */
  fields: Map<string, { verified: number; corrected: number }>;
  /** Per confidence in hundredths: values found right and wrong. */
  confidence: Map<number, { right: number; wrong: number }>;
}

/** Confidences are counted in hundredths: level n stands for confidence n / 100. */
export const CONFIDENCE_LEVELS = 100;

export function emptyCounts(): QualityCounts {
  return { verifiedRuns: 0, fields: new Map(), confidence: new Map() };
}

/** The provider whose answer the review judged: the last successful attempt's. */
export function answeringProvider(run: Pick<RunRecord, 'attempts'>): string {
  return [...(run.attempts ?? [])].reverse().find((a) => a.outcome === 'succeeded')?.provider ?? 'unknown';
}

/**
 * What a review says of a run's fields: accepted, every field right; a corrected field wrong, unless the correction
 * is the value the run gave (the comparison module finds them equal). A rejection naming no field says nothing of any
 * one field: the run counts as reviewed, no field does. The run must carry its result and fields (`withResult`).
 */
export function countsOf(
  run: RunRecord,
  review: Pick<Verification, 'accepted' | 'corrections'> | undefined,
): QualityCounts {
  const counts = emptyCounts();
  if (!review || run.status !== 'completed' || run.outputFormat !== 'json') return counts;
  counts.verifiedRuns = 1;
  const corrections = review.corrections ?? {};
  if (!review.accepted && Object.keys(corrections).length === 0) return counts;
  const result = run.result ?? {};
  const specs = run.task.fields ?? Object.keys(result).map((name) => ({ name, type: 'string' as const }));
  for (const spec of specs) {
    const corrected =
      Object.hasOwn(corrections, spec.name) &&
      compareValue(run.task.fields ? spec.type : 'auto', corrections[spec.name], result[spec.name]).outcome !== 'right';
    counts.fields.set(spec.name, { verified: 1, corrected: corrected ? 1 : 0 });
    const confidence = run.fields?.[spec.name]?.confidence;
    if (typeof confidence === 'number' && Number.isFinite(confidence)) {
      const level = Math.round(Math.min(1, Math.max(0, confidence)) * CONFIDENCE_LEVELS);
      const at = counts.confidence.get(level) ?? { right: 0, wrong: 0 };
      if (corrected) at.wrong += 1;
      else at.right += 1;
      counts.confidence.set(level, at);
    }
  }
  return counts;
}

/** The counter attributes a set of counts moves, by name, minus those of `before`. */
function delta(after: QualityCounts, before: QualityCounts): Map<string, number> {
  const moves = new Map<string, number>();
  const add = (name: string, n: number) => moves.set(name, (moves.get(name) ?? 0) + n);
  for (const [sign, counts] of [
    [1, after],
    [-1, before],
  ] as const) {
    add('verifiedRuns', sign * counts.verifiedRuns);
    for (const [name, f] of counts.fields) {
      add(`fv#${name}`, sign * f.verified);
      add(`fc#${name}`, sign * f.corrected);
    }
    for (const [level, c] of counts.confidence) {
      add(`cr#${level}`, sign * c.right);
      add(`cw#${level}`, sign * c.wrong);
    }
  }
  for (const [name, n] of moves) if (n === 0) moves.delete(name);
  return moves;
}

/** The day, workflow, schema and provider a run's reviews count under. */
function slotOf(run: RunRecord): { slot: string; day: string; schemaId: string; provider: string } {
  const day = run.createdAt.slice(0, 10);
  const schemaId = run.schemaId ?? '';
  const provider = answeringProvider(run);
  return { slot: `d#${day}#${run.workflow ?? ''}#${schemaId}#${provider}`, day, schemaId, provider };
}

/**
 * The update a review adds to its transaction: the counts of `after` minus those of the review it replaces; null
 * when nothing changes. Attribute names are placeholders (a field may be named anything).
 */
export function qualityUpdate(
  run: RunRecord,
  before: Pick<Verification, 'accepted' | 'corrections'> | undefined,
  after: Pick<Verification, 'accepted' | 'corrections'>,
): TransactItem | null {
  const moves = delta(countsOf(run, after), countsOf(run, before));
  if (moves.size === 0) return null;
  const { slot, day, schemaId, provider } = slotOf(run);
  const names: Record<string, string> = { '#day': 'day' };
  const values: Record<string, unknown> = {
    ':workflow': run.workflow,
    ':schemaId': schemaId,
    ':provider': provider,
    ':day': day,
  };
  // One value placeholder per distinct amount (most are +1 or -1): the expression stays short for wide schemas.
  const amounts = new Map<number, string>();
  const clauses = [...moves].map(([name, n], i) => {
    names[`#${i}`] = name;
    let placeholder = amounts.get(n);
    if (placeholder === undefined) {
      placeholder = `:${amounts.size}`;
      amounts.set(n, placeholder);
      values[placeholder] = n;
    }
    return `#${i} ${placeholder}`;
  });
  return {
    Update: {
      TableName: qualityTable(),
      Key: { tenantId: run.tenantId, slot },
      UpdateExpression: `SET workflow = :workflow, schemaId = :schemaId, provider = :provider, #day = :day ADD ${clauses.join(', ')}`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
}

/** One stored counter item, read back. */
export interface QualitySlice {
  day: string;
  workflow: string | null;
  schemaId: string;
  provider: string;
  counts: QualityCounts;
}

/** The counters of the tenant's runs created on the UTC days `fromDay` to `toDay` (inclusive, `YYYY-MM-DD`). */
export async function readQuality(tenantId: string, fromDay: string, toDay: string): Promise<QualitySlice[]> {
  const slices: QualitySlice[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await ddb.send(
      new QueryCommand({
        TableName: qualityTable(),
        KeyConditionExpression: 'tenantId = :t AND slot BETWEEN :first AND :last',
        // `~` sorts after every character a workflow, schema id or provider may hold.
        ExpressionAttributeValues: { ':t': tenantId, ':first': `d#${fromDay}`, ':last': `d#${toDay}#~` },
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) slices.push(sliceOf(item));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return slices;
}

/** A slice as the item that stores it (what the verifies' updates add up to; the benchmark seeds counters with it). */
export function itemOfSlice(tenantId: string, slice: QualitySlice): Record<string, unknown> {
  const item: Record<string, unknown> = {
    tenantId,
    slot: `d#${slice.day}#${slice.workflow ?? ''}#${slice.schemaId}#${slice.provider}`,
    day: slice.day,
    workflow: slice.workflow,
    schemaId: slice.schemaId,
    provider: slice.provider,
    verifiedRuns: slice.counts.verifiedRuns,
  };
  for (const [name, f] of slice.counts.fields) {
    item[`fv#${name}`] = f.verified;
    item[`fc#${name}`] = f.corrected;
  }
  for (const [level, c] of slice.counts.confidence) {
    item[`cr#${level}`] = c.right;
    item[`cw#${level}`] = c.wrong;
  }
  return item;
}

/** A stored counter item, read back. */
export function sliceOf(item: Record<string, unknown>): QualitySlice {
  const counts = emptyCounts();
  counts.verifiedRuns = Number(item.verifiedRuns ?? 0);
  for (const [name, value] of Object.entries(item)) {
    const n = Number(value);
    const [kind, rest] = [name.slice(0, 3), name.slice(3)];
    if (kind === 'fv#' || kind === 'fc#') {
      const f = counts.fields.get(rest) ?? { verified: 0, corrected: 0 };
      if (kind === 'fv#') f.verified += n;
      else f.corrected += n;
      counts.fields.set(rest, f);
    } else if (kind === 'cr#' || kind === 'cw#') {
      const level = Number(rest);
      const c = counts.confidence.get(level) ?? { right: 0, wrong: 0 };
      if (kind === 'cr#') c.right += n;
      else c.wrong += n;
      counts.confidence.set(level, c);
    }
  }
  return {
    day: String(item.day ?? ''),
    workflow: (item.workflow as string | null | undefined) ?? null,
    schemaId: String(item.schemaId ?? ''),
    provider: String(item.provider ?? 'unknown'),
    counts,
  };
}
