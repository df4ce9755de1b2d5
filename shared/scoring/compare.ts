/**
 * The comparison of contract-v1.2 §1, by the schema's field type: one value (`compareValue`) and one document's
 * expected values against an answer (`scoreDocument`). Used by the API (each item run is scored when it settles), the
 * CLI and the bench, so that an evaluation's report is the same wherever it is computed. Pure.
 * Not to undo: only the fields the expected values name are compared (an answer's other fields are not errors), and
 * expected `null` is right when the answer is null or absent: the expected values are the truth the client knows.
 */
import type { FieldSpec, FieldType } from '../task.js';
import { bestPairs } from './hungarian.js';
import {
  booleanOf,
  dateReadings,
  normaliseText,
  numberReadings,
  sameDay,
  sameNumber,
  textSimilarity,
} from './values.js';

export type Outcome = 'right' | 'wrong' | 'missing' | 'extra';

/** How one value compared. Arrays and objects also say how their fields paired (precision, recall, F1). */
export interface Comparison {
  outcome: Outcome;
  /** 1 when right; a string's 1 − normalised edit distance; an array's or object's F1; else 0. */
  score: number;
  precision?: number;
  recall?: number;
  f1?: number;
}

/** The type a value is compared as: the schema's, or `auto` for values without one (fields of array items). */
export type CompareType = FieldType | 'auto';

/** Null, absent, or a string of nothing but whitespace: no value. */
export function isBlank(value: unknown): boolean {
  return value === null || value === undefined || (typeof value === 'string' && value.trim() === '');
}

/** Compares an answer's value with the expected one, as the field's type says. */
export function compareValue(type: CompareType, expected: unknown, got: unknown): Comparison {
  if (isBlank(expected)) return isBlank(got) ? right() : { outcome: 'extra', score: 0 };
  if (isBlank(got)) return { outcome: 'missing', score: 0 };
  const as = type === 'auto' ? inferType(expected, got) : type;
  switch (as) {
    case 'number':
    case 'integer':
      return scalar(sameNumber(expected, got) ?? sameText(expected, got));
    case 'date':
      return scalar(sameDay(expected, got) ?? sameText(expected, got));
    case 'boolean': {
      const e = booleanOf(expected);
      return scalar(e !== null && e === booleanOf(got));
    }
    case 'array':
      return compareLists(asList(expected), asList(got));
    case 'object':
      return compareLists([expected], [got]);
    default:
      return compareText(expected, got);
  }
}

function right(): Comparison {
  return { outcome: 'right', score: 1 };
}

function scalar(equal: boolean): Comparison {
  return equal ? right() : { outcome: 'wrong', score: 0 };
}

function textOf(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function sameText(a: unknown, b: unknown): boolean {
  return normaliseText(textOf(a)) === normaliseText(textOf(b));
}

function compareText(expected: unknown, got: unknown): Comparison {
  const e = normaliseText(textOf(expected));
  const g = normaliseText(textOf(got));
  if (e === g) return right();
  return { outcome: 'wrong', score: round(textSimilarity(e, g)) };
}

/** The type of a value whose schema says nothing (a field of an array's items): by what the expected value is. */
function inferType(expected: unknown, got: unknown): FieldType {
  if (typeof expected === 'boolean' || typeof got === 'boolean') return 'boolean';
  if (Array.isArray(expected)) return 'array';
  if (typeof expected === 'object' && expected !== null) return 'object';
  if (typeof expected === 'number' || typeof got === 'number') return 'number';
  if (dateReadings(expected).length > 0 && numberReadings(expected).length === 0) return 'date';
  if (numberReadings(expected).length > 0) return 'number';
  return 'string';
}

function asList(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [value];
}

/** The fields of one item of a list: an object's own keys, or the item itself as one field. */
function fieldsOf(item: unknown): Map<string, unknown> {
  if (item !== null && typeof item === 'object' && !Array.isArray(item)) {
    return new Map(Object.entries(item as Record<string, unknown>).filter(([, v]) => !isBlank(v)));
  }
  return isBlank(item) ? new Map() : new Map([['', item]]);
}

/** How many fields of an expected and an answered item agree (both present, compared right). */
function agreeing(expected: Map<string, unknown>, got: Map<string, unknown>): number {
  let n = 0;
  for (const [key, value] of expected) {
    if (got.has(key) && compareValue('auto', value, got.get(key)).outcome === 'right') n += 1;
  }
  return n;
}

/**
 * Two lists of items (objects, or values): items paired by the best total score (the Hungarian method), then
 * precision, recall and F1 over the fields of the paired items. Right when F1 is 1: every expected field found and
 * nothing else answered. Only the columns the expected items name are compared: an answer's other columns
 * (`quantity` where only `description` and `amount` were labelled) are not errors, an item it added is.
 */
export function compareLists(expected: readonly unknown[], got: readonly unknown[]): Comparison {
  const e = expected.map(fieldsOf).filter((f) => f.size > 0);
  const named = new Set(e.flatMap((f) => [...f.keys()]));
  const g = got
    .map((item) => new Map([...fieldsOf(item)].filter(([key]) => named.size === 0 || named.has(key))))
    .filter((f) => f.size > 0);
  const expectedFields = e.reduce((n, f) => n + f.size, 0);
  const gotFields = g.reduce((n, f) => n + f.size, 0);
  if (expectedFields === 0) return gotFields === 0 ? { ...right(), precision: 1, recall: 1, f1: 1 } : extraList();
  if (gotFields === 0) return { outcome: 'missing', score: 0, precision: 0, recall: 0, f1: 0 };
  // A pair's score: the share of the union of its fields that agree.
  const pairScore = (i: number, j: number) => {
    const a = e[i] ?? new Map();
    const b = g[j] ?? new Map();
    const union = new Set([...a.keys(), ...b.keys()]).size;
    return union === 0 ? 0 : agreeing(a, b) / union;
  };
  let matched = 0;
  for (const [i, j] of bestPairs(e.length, g.length, pairScore))
    matched += agreeing(e[i] ?? new Map(), g[j] ?? new Map());
  const precision = matched / gotFields;
  const recall = matched / expectedFields;
  const f1 = precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
  const perfect = matched === expectedFields && matched === gotFields;
  return {
    outcome: perfect ? 'right' : 'wrong',
    score: perfect ? 1 : round(f1),
    precision: round(precision),
    recall: round(recall),
    f1: perfect ? 1 : round(f1),
  };
}

function extraList(): Comparison {
  return { outcome: 'extra', score: 0, precision: 0, recall: 0, f1: 0 };
}

/** Rounds a figure to 6 decimals (a stored report reads the same wherever it was computed). */
export function round(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}

// ---------- one document ----------

/** One field of one document: what was expected, what came back, how they compared, how sure the answer was. */
export interface FieldScore extends Comparison {
  expected: unknown;
  got: unknown;
  /** The answer's confidence in this field (contract-v1.1 §3); null when the run gave none. */
  confidence: number | null;
}

export interface DocumentInput {
  /** The schema's fields (types by name); null for a run without a schema (every field compared as `auto`). */
  fields: readonly FieldSpec[] | null;
  /** Fields whose schema gave no type (an inline schema's bare names): compared as `auto`, by the expected value. */
  untyped?: readonly string[];
  /** The expected values, by field name. */
  expected: Record<string, unknown>;
  /** The answer's result; null when the run failed (every field is then `missing`). */
  got: Record<string, unknown> | null;
  /** The answer's per-field evidence, for the confidences. */
  evidence?: Record<string, { confidence?: number }> | null;
}

/**
 * Scores one document: each field the expected values name, compared by its schema type. A failed run (no answer)
 * counts every field `missing`: a failed item is never dropped from a report.
 */
export function scoreDocument(input: DocumentInput): Record<string, FieldScore> {
  const types = new Map((input.fields ?? []).map((f) => [f.name, f.type]));
  for (const name of input.untyped ?? []) types.delete(name);
  const scores: Record<string, FieldScore> = {};
  for (const [name, expected] of Object.entries(input.expected)) {
    const got = input.got === null ? null : (input.got[name] ?? null);
    const comparison: Comparison =
      input.got === null ? { outcome: 'missing', score: 0 } : compareValue(types.get(name) ?? 'auto', expected, got);
    const confidence = input.got === null ? undefined : input.evidence?.[name]?.confidence;
    scores[name] = {
      expected,
      got,
      ...comparison,
      confidence: typeof confidence === 'number' && Number.isFinite(confidence) ? confidence : null,
    };
  }
  return scores;
}
