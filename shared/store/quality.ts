/**
 * Accuracy from reviews (contract-v1.2 §1): per tenant × UTC day of a run's creation, how many fields reviews checked
 * (`verified`) and found wrong (`corrected`), per provider, and how many values were right and wrong at each confidence
 * in hundredths (AUROC then counts values within a hundredth of each other as ties). Each review moves the items of
 * four filters of its day: every workflow and schema (`*#*`), its workflow (`<w>#*`), its schema (`*#<s>`) and both, so
 * that a period of any filter reads one item per day (the sort key leads with the filter, then the day). Moved by `ADD`
 * in the verify's own transaction, by the difference from the review it replaces, as the usage counters are
 * (./usage.ts): exactly once with the review, and `GET /v1/quality` reads counters, never runs.
 * Decision not to undo: the counters (a few per field and provider, up to 100 confidence levels) are in an item of
 * their own, and the day item the period's Query reads holds a version and a snapshot of them (./quality-read.ts):
 * a read costs by the numbers it returns, and a snapshot is one string. Why: docs/decisions.md#accuracy-from-reviews
 */
import type { Verification } from '../contract.js';
import { tables } from '../infra/resources.js';
import { resource } from '../resource-name.js';
import { compareValue } from '../scoring/compare.js';
import type { RunRecord } from './runs.js';
import type { TransactItem } from './transact.js';

// Not checked at init: only verify-run and the quality route touch it.
export const qualityTable = resource(tables.quality.envVar, { checkAtInit: false });

/** What one review of one run adds: counts by field, by provider and by confidence (in hundredths). */
export interface QualityCounts {
  /** Runs reviewed (1 for a run's first review, 0 for one that replaces another). */
  verifiedRuns: number;
  /** Per field: checked, and found wrong. */
  fields: Map<string, { verified: number; corrected: number }>;
  /** Per provider that answered: runs reviewed, fields checked, fields found wrong. */
  providers: Map<string, { verifiedRuns: number; verified: number; corrected: number }>;
  /** Per confidence in hundredths: values found right and wrong. */
  confidence: Map<number, { right: number; wrong: number }>;
}

/** Confidences are counted in hundredths: level n stands for confidence n / 100. */
export const CONFIDENCE_LEVELS = 100;

export function emptyCounts(): QualityCounts {
  return { verifiedRuns: 0, fields: new Map(), providers: new Map(), confidence: new Map() };
}

/** The provider whose answer the review judged: the last successful attempt's. */
export function answeringProvider(run: Pick<RunRecord, 'attempts'>): string {
  return [...(run.attempts ?? [])].reverse().find((a) => a.outcome === 'succeeded')?.provider ?? 'unknown';
}

/** Adds `more` into `into` (for summing items). */
export function addCounts(into: QualityCounts, more: QualityCounts): QualityCounts {
  into.verifiedRuns += more.verifiedRuns;
  for (const [name, f] of more.fields) {
    const at = into.fields.get(name) ?? { verified: 0, corrected: 0 };
    at.verified += f.verified;
    at.corrected += f.corrected;
    into.fields.set(name, at);
  }
  for (const [id, p] of more.providers) {
    const at = into.providers.get(id) ?? { verifiedRuns: 0, verified: 0, corrected: 0 };
    at.verifiedRuns += p.verifiedRuns;
    at.verified += p.verified;
    at.corrected += p.corrected;
    into.providers.set(id, at);
  }
  for (const [level, c] of more.confidence) {
    const at = into.confidence.get(level) ?? { right: 0, wrong: 0 };
    at.right += c.right;
    at.wrong += c.wrong;
    into.confidence.set(level, at);
  }
  return into;
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
  const provider = { verifiedRuns: 1, verified: 0, corrected: 0 };
  counts.providers.set(answeringProvider(run), provider);
  const corrections = review.corrections ?? {};
  if (!review.accepted && Object.keys(corrections).length === 0) return counts;
  const result = run.result ?? {};
  const specs = run.task.fields ?? Object.keys(result).map((name) => ({ name, type: 'string' as const }));
  for (const spec of specs) {
    const corrected =
      Object.hasOwn(corrections, spec.name) &&
      compareValue(run.task.fields ? spec.type : 'auto', corrections[spec.name], result[spec.name]).outcome !== 'right';
    counts.fields.set(spec.name, { verified: 1, corrected: corrected ? 1 : 0 });
    provider.verified += 1;
    provider.corrected += corrected ? 1 : 0;
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

/**
 * One level's values right and wrong, in one counter: `right + wrong × WRONG`. A day's item then holds one attribute
 * per level, not two (DynamoDB's cost of a read grows with its attributes; GET /v1/quality reads a period's days).
 * Exact while a level of a day counts fewer than 10^15 right values, which no review volume reaches; the arithmetic
 * is in bigints (ten wrong values already pass 2^53), and the read gets such numbers as bigints (`ddbBigNumbers`).
 */
const WRONG = 10n ** 15n;

/** The counter attributes of a set of counts, by name (`fv#`/`fc#` per field, `pr#`/`pv#`/`pc#` per provider, `c#` per level). */
function attributesOf(counts: QualityCounts, sign = 1n): Map<string, bigint> {
  const out = new Map<string, bigint>();
  const add = (name: string, n: number | bigint) => out.set(name, (out.get(name) ?? 0n) + sign * BigInt(n));
  add('verifiedRuns', counts.verifiedRuns);
  for (const [name, f] of counts.fields) {
    add(`fv#${name}`, f.verified);
    add(`fc#${name}`, f.corrected);
  }
  for (const [id, p] of counts.providers) {
    add(`pr#${id}`, p.verifiedRuns);
    add(`pv#${id}`, p.verified);
    add(`pc#${id}`, p.corrected);
  }
  for (const [level, c] of counts.confidence) add(`c#${level}`, BigInt(c.right) + BigInt(c.wrong) * WRONG);
  return out;
}

/** A counter as written: a number, or a bigint past 2^53 (both are marshalled as DynamoDB numbers, exactly). */
function asStored(n: bigint): number | bigint {
  return Number.isSafeInteger(Number(n)) ? Number(n) : n;
}

/** The counts of `after` minus those of `before`, as attribute moves (none that are zero). */
function delta(after: QualityCounts, before: QualityCounts): Map<string, bigint> {
  const moves = attributesOf(after);
  for (const [name, n] of attributesOf(before, -1n)) moves.set(name, (moves.get(name) ?? 0n) + n);
  for (const [name, n] of moves) if (n === 0n) moves.delete(name);
  return moves;
}

/** Every workflow or schema, in a key. (`*` is neither a workflow, nor a schema id.) */
export const ANY = '*';

/** The sort key of a day's counters for a filter: `<workflow or *>#<schema id or *>#<day>` (no workflow: empty). */
export function slotKey(workflow: string, schemaId: string, day: string): string {
  return `${workflow}#${schemaId}#${day}`;
}

/**
 * The sort key of a day's counters: its day item's, behind `~c#`. `~` begins no workflow, schema id, `*` or `#`, so a
 * Query of a filter's days reads day items only.
 */
export function countersKey(slot: string): string {
  return `~c#${slot}`;
}

/**
 * The version of a day's counters: added to on the day item and on its counters item in the same transaction, so the
 * two always agree, and it only ever grows (a snapshot taken at version v is the counters while they are still v).
 */
export const VERSION = 'v';

/** The four keys a run's reviews count under: any/its workflow × any/its schema, on its day of creation. */
function slotsOf(run: RunRecord): string[] {
  const day = run.createdAt.slice(0, 10);
  const workflow = run.workflow ?? '';
  // An `auto` run counts under the schema it was classed as and answered with.
  const schemaId = run.classification?.schemaId ?? run.schemaId ?? '';
  return [
    slotKey(ANY, ANY, day),
    slotKey(workflow, ANY, day),
    slotKey(ANY, schemaId, day),
    slotKey(workflow, schemaId, day),
  ];
}

/** One `ADD` (and optional `SET`) update of the counters `moves` on one item. Attribute names are placeholders. */
function addUpdate(
  key: Record<string, string>,
  moves: ReadonlyMap<string, bigint>,
  set?: { name: string; value: string },
): TransactItem {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  // One value placeholder per distinct amount (most are +1 or -1): the expression stays short for wide schemas.
  const amounts = new Map<bigint, string>();
  const clauses = [...moves].map(([name, n], i) => {
    names[`#${i}`] = name;
    let placeholder = amounts.get(n);
    if (placeholder === undefined) {
      placeholder = `:${amounts.size}`;
      amounts.set(n, placeholder);
      values[placeholder] = asStored(n);
    }
    return `#${i} ${placeholder}`;
  });
  if (set) {
    names['#set'] = set.name;
    values[':set'] = set.value;
  }
  return {
    Update: {
      TableName: qualityTable(),
      Key: key,
      UpdateExpression: `${set ? 'SET #set = :set ' : ''}ADD ${clauses.join(', ')}`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
}

/**
 * The updates a review adds to its transaction: the counts of `after` minus those of the review it replaces, in the
 * counters item of each of its four filters, with the version moved on both the counters and the day item; null when
 * nothing changes.
 */
export function qualityUpdates(
  run: RunRecord,
  before: Pick<Verification, 'accepted' | 'corrections'> | undefined,
  after: Pick<Verification, 'accepted' | 'corrections'>,
): TransactItem[] | null {
  const moves = delta(countsOf(run, after), countsOf(run, before));
  if (moves.size === 0) return null;
  moves.set(VERSION, 1n);
  const version = new Map([[VERSION, 1n]]);
  const day = { name: 'day', value: run.createdAt.slice(0, 10) };
  return slotsOf(run).flatMap((slot) => [
    addUpdate({ tenantId: run.tenantId, slot }, version, day),
    addUpdate({ tenantId: run.tenantId, slot: countersKey(slot) }, moves),
  ]);
}

/** One day's counters for a filter, read back. */
export interface QualitySlice {
  day: string;
  counts: QualityCounts;
}

/**
 * A day's counters as the two items that store them, after `version` reviews (what the verifies' updates add up to;
 * the bench seeds with it): the day item, without a snapshot yet, and the counters item.
 */
export function itemsOfSlice(
  tenantId: string,
  slot: string,
  slice: QualitySlice,
  version: number,
): { day: Record<string, unknown>; counters: Record<string, unknown> } {
  const counters = [...attributesOf(slice.counts)].map(([name, n]) => [name, asStored(n)]);
  return {
    day: { tenantId, slot, day: slice.day, [VERSION]: version },
    counters: { tenantId, slot: countersKey(slot), ...Object.fromEntries(counters), [VERSION]: version },
  };
}

/** A day's counters in the one-item shape written before they had an item of their own (such items still read). */
export function itemOfSlice(tenantId: string, slot: string, slice: QualitySlice): Record<string, unknown> {
  const counters = [...attributesOf(slice.counts)].map(([name, n]) => [name, asStored(n)]);
  return { tenantId, slot, day: slice.day, ...Object.fromEntries(counters) };
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
    } else if (kind === 'pr#' || kind === 'pv#' || kind === 'pc#') {
      const p = counts.providers.get(rest) ?? { verifiedRuns: 0, verified: 0, corrected: 0 };
      if (kind === 'pr#') p.verifiedRuns += n;
      else if (kind === 'pv#') p.verified += n;
      else p.corrected += n;
      counts.providers.set(rest, p);
    } else if (name.startsWith('c#')) {
      // `right + wrong × WRONG` (attributesOf), possibly beyond 2^53: split exactly as a bigint.
      const packed = BigInt(value as bigint | number);
      const wrong = packed / WRONG;
      const c = counts.confidence.get(Number(name.slice(2))) ?? { right: 0, wrong: 0 };
      c.right += Number(packed - wrong * WRONG);
      c.wrong += Number(wrong);
      counts.confidence.set(Number(name.slice(2)), c);
    } else if (kind === 'cr#' || kind === 'cw#') {
      // The shape before the counts were packed: still read, so an item written then loses nothing.
      const c = counts.confidence.get(Number(rest)) ?? { right: 0, wrong: 0 };
      if (kind === 'cr#') c.right += n;
      else c.wrong += n;
      counts.confidence.set(Number(rest), c);
    }
  }
  return { day: String(item.day ?? ''), counts };
}
