/**
 * `groundFields`: a shaped JSON result grounded on the words of its run (contract-v1.1 §3): per field where the value
 * stands (page, box, the text printed there), how sure the run is of it, the cross-field checks, whether a person
 * must review it and why, and the run's aggregate confidence. Pure: no I/O, no clock but the budget's.
 * Not to undo: grounding never throws and never runs past `budgetMs` (the clock is checked between fields, between
 * items and inside long searches); what it had no time for is skipped with a reason, never reported unsupported.
 * docs/confidence.md has the formula and its calibration; docs/decisions.md#per-field-grounding the choices.
 */
import type { FieldSpec, FieldType } from '../task.js';
import { type CheckFailure, crossFieldChecks, type FieldPath } from './checks.js';
import {
  aggregate,
  type Counted,
  clamp,
  DEFAULT_NATIVE,
  fieldConfidence,
  NULL_OPTIONAL,
  round3,
  SKIPPED_SHARE,
} from './confidence.js';
import { LabelBook } from './labels.js';
import {
  type Found,
  type Located,
  locateField,
  locateItemValue,
  placesOf,
  printable,
  type RowContext,
  type Search,
} from './locate.js';
import { amountPlaces } from './match.js';
import type { FieldEvidence, Fields, Grounded, GroundInput } from './types.js';
import { type Expired, WordIndex } from './word-index.js';

export const DEFAULT_BUDGET_MS = 250;
export const BUDGET_REASON = 'grounding skipped: time budget';

/** How many items of an array, and members of an object or list, are grounded at most (the rest count as skipped). */
const MAX_ITEMS = 2_000;

/** A monotonic clock in milliseconds. */
export type Clock = () => number;

/** Grounds a result on its words within the input's budget (see the module comment). */
export function groundFields(input: GroundInput): Grounded {
  return groundWithClock(input, () => performance.now());
}

type State = 'grounded' | 'null' | 'skipped' | 'too-long';

/** One grounded value: its evidence so far, the signals its confidence is made of, and whether words support it. */
interface Cell {
  evidence: FieldEvidence;
  found: Found | null;
  state: State;
  checks: number;
  unsupported: boolean;
}

interface Outcome extends Cell {
  name: string;
  value: unknown;
  spec: FieldSpec | undefined;
  /** For an array of objects: per item, per key. */
  rows?: Map<string, Cell>[];
  /** For a list or object: the evidence of its printable members (mean), null when it has none. */
  members?: number | null;
}

/**
 * Searching stops at this share of the budget: the checks and the settling that follow are linear in the result's
 * size and must fit in what is left, so that the whole call stays within `budgetMs`.
 */
export const SEARCH_SHARE = 0.8;

/** `groundFields` with its clock given (tests step the clock to spend the budget at a chosen field). */
export function groundWithClock(input: GroundInput, clock: Clock): Grounded {
  const start = clock();
  const budget = typeof input.budgetMs === 'number' && input.budgetMs >= 0 ? input.budgetMs : DEFAULT_BUDGET_MS;
  const expired: Expired = () => clock() - start >= budget * SEARCH_SHARE;
  const native = clamp(typeof input.nativeConfidence === 'number' ? input.nativeConfidence : DEFAULT_NATIVE);
  try {
    return ground(input, expired, native);
  } catch {
    // A defect here must not fail a run that would otherwise complete: report every field as not grounded.
    return fallback(input, native);
  }
}

function fieldNames(input: GroundInput): { names: string[]; specs: Map<string, FieldSpec> } {
  const specs = new Map((input.fieldSpecs ?? []).map((spec) => [spec.name, spec] as const));
  const names = [...specs.keys()];
  for (const key of Object.keys(input.result ?? {})) if (!specs.has(key)) names.push(key);
  return { names, specs };
}

function ground(input: GroundInput, expired: Expired, native: number): Grounded {
  const result = input.result ?? {};
  const { names, specs } = fieldNames(input);
  const labels = new LabelBook(names.map((name) => ({ name, description: specs.get(name)?.description })));
  const index = WordIndex.build(Array.isArray(input.words) ? input.words : [], expired);
  const search: Search | null = index === null ? null : { index, expired, cache: new Map() };
  const outcomes: Outcome[] = [];
  let outOfTime = search === null;
  for (const name of names) {
    const value = Object.hasOwn(result, name) ? result[name] : null;
    const spec = specs.get(name);
    if (value === null || value === undefined) {
      outcomes.push({ ...cell('null'), name, value: null, spec });
      continue;
    }
    if (outOfTime || search === null || expired()) {
      outOfTime = true;
      outcomes.push({ ...cell('skipped'), name, value, spec });
      continue;
    }
    const outcome = groundValue(search, name, value, spec?.type, labels);
    if (outcome.state === 'skipped') outOfTime = true;
    outcomes.push({ ...outcome, name, value, spec });
  }

  const failures = crossFieldChecks({
    result,
    specs,
    now: input.now instanceof Date && !Number.isNaN(input.now.getTime()) ? input.now : new Date(),
    lookup: (field, value) => {
      if (search === null) return 'absent';
      const places = amountPlaces(search.index, value, search.expired) ?? [];
      if (places.length === 0) return 'absent';
      const labelled = places.some((m) => {
        const verdict = labels.judge(field, search.index, m.span);
        return verdict.own >= 0.5 && !verdict.mislabelled;
      });
      return labelled ? 'labelled' : 'anywhere';
    },
  });
  applyBlame(failures, new Map(outcomes.map((o) => [o.name, o] as const)));
  return settle(input, outcomes, failures, native, search);
}

function cell(state: State): Cell {
  return { evidence: { confidence: 0 }, found: null, state, checks: 1, unsupported: false };
}

/** Records where a value was found on its evidence; a printable value found nowhere is unsupported. */
function place(index: WordIndex, located: Located): Cell {
  if (located === 'skip') return cell('skipped');
  if (located === 'too-long') return cell('too-long');
  if (located === 'none') return cell('grounded');
  const c: Cell = { ...cell('grounded'), found: located, unsupported: located.match === undefined };
  if (located.match !== undefined) {
    const span = located.match.span;
    c.evidence.page = index.page(span).page;
    // In [0, 1] as the contract says, whatever a reader reported (4 decimals: a tenth of a pixel at 1,000 px).
    c.evidence.bbox = index.bbox(span).map((x) => Math.round(clamp(x) * 10_000) / 10_000) as FieldEvidence['bbox'];
    c.evidence.source = index.text(span).slice(0, 500);
  }
  return c;
}

type Grounding = Omit<Outcome, 'name' | 'value' | 'spec'>;

function groundValue(
  search: Search,
  name: string,
  value: unknown,
  type: FieldType | undefined,
  labels: LabelBook,
): Grounding {
  if (printable(value)) return place(search.index, locateField(search, name, value, type, labels));
  if (Array.isArray(value) && value.some(isPlainObject)) return groundRows(search, value);
  if (Array.isArray(value)) return groundMembers(search, name, value);
  if (isPlainObject(value)) return groundMembers(search, name, Object.values(value));
  return cell('grounded');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An array of objects: each item's fields, placed along the item's row. */
function groundRows(search: Search, value: unknown[]): Grounding {
  const rows: Map<string, Cell>[] = [];
  const used = new Map<string, Set<string>>();
  let skipped = false;
  for (let i = 0; i < value.length; i++) {
    const item = value[i];
    const row = new Map<string, Cell>();
    rows.push(row);
    if (!isPlainObject(item)) continue;
    const entries = Object.entries(item);
    // The item's own key order in the output, whatever order its values are looked for in.
    for (const [key] of entries) row.set(key, cell('null'));
    // Text first: a description anchors the row that its amounts are looked for on.
    entries.sort(([, a], [, b]) => Number(typeof b === 'string') - Number(typeof a === 'string'));
    const context: RowContext = { used };
    for (const [key, v] of entries) {
      if (v === null || v === undefined) {
        row.set(key, cell('null'));
        continue;
      }
      skipped ||= i >= MAX_ITEMS || search.expired();
      if (skipped) {
        row.set(key, cell('skipped'));
        continue;
      }
      const located = locateItemValue(search, key, v, context);
      if (located === 'skip') skipped = true;
      if (context.anchor === undefined && typeof located === 'object' && located.match !== undefined) {
        context.anchor = located.match.span;
      }
      row.set(key, place(search.index, located));
    }
  }
  return {
    ...cell(skipped ? 'skipped' : 'grounded'),
    rows,
    unsupported: rows.some((row) => [...row.values()].some((c) => c.unsupported)),
  };
}

/** A list of values or a nested object: no box, the mean evidence of its printable members. */
function groundMembers(search: Search, name: string, members: unknown[]): Grounding {
  const scores: number[] = [];
  let unsupported = false;
  const context: RowContext = { used: new Map() };
  for (const member of members.slice(0, MAX_ITEMS)) {
    if (!printable(member)) continue;
    if (search.expired()) return cell('skipped');
    const located = locateItemValue(search, name, member, context);
    if (located === 'skip') return cell('skipped');
    if (typeof located !== 'object') continue;
    scores.push(located.evidence);
    unsupported ||= located.match === undefined;
  }
  const mean = scores.length === 0 ? null : scores.reduce((a, b) => a + b, 0) / scores.length;
  return { ...cell('grounded'), members: mean, unsupported };
}

function applyBlame(failures: readonly CheckFailure[], byName: ReadonlyMap<string, Outcome>): void {
  for (const failure of failures) {
    for (const { path, factor } of failure.blame) {
      const target = cellAt(byName, path);
      if (target !== undefined) target.checks *= factor;
    }
  }
}

function cellAt(byName: ReadonlyMap<string, Outcome>, path: FieldPath): Cell | undefined {
  const outcome = byName.get(path.field);
  if (path.item === undefined || path.key === undefined) return outcome;
  return outcome?.rows?.[path.item]?.get(path.key);
}

/** Whether a value is of its field's type (a date's existence is a cross-field check, not a type). */
function fits(value: unknown, type: FieldType | undefined): boolean {
  switch (type) {
    case undefined:
      return true;
    case 'string':
    case 'date':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return Number.isInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
  }
}

/** A scalar cell's confidence from its signals. */
function scoreCell(c: Cell, native: number, valid: boolean, alternatives: number): number {
  if (c.state === 'null') return NULL_OPTIONAL;
  if (c.state === 'skipped' || c.state === 'too-long') return round3(SKIPPED_SHARE * native * c.checks);
  return fieldConfidence({ evidence: c.found?.evidence ?? null, native, valid, alternatives, checks: c.checks });
}

/**
 * A field's confidence. An array of objects: the mean of its items' non-null fields, times its own factors (type,
 * alternatives, checks); a list or nested object: the formula with the mean evidence of its printable members.
 */
function scoreOutcome(o: Outcome, native: number, alternatives: number): number {
  const valid = fits(o.value, o.spec?.type);
  if (o.rows !== undefined && o.state === 'grounded') {
    const items: Record<string, FieldEvidence>[] = [];
    const scores: number[] = [];
    for (const row of o.rows) {
      const entry: Record<string, FieldEvidence> = {};
      for (const [key, c] of row) {
        const confidence = scoreCell(c, native, true, 0);
        entry[key] = { ...c.evidence, confidence };
        if (c.state !== 'null') scores.push(confidence);
      }
      items.push(entry);
    }
    o.evidence.items = items;
    const mean = scores.length === 0 ? native : scores.reduce((a, b) => a + b, 0) / scores.length;
    return fieldConfidence({ evidence: null, native: mean, valid, alternatives, checks: o.checks });
  }
  if (o.members !== undefined && o.state === 'grounded') {
    return fieldConfidence({ evidence: o.members, native, valid, alternatives, checks: o.checks });
  }
  return scoreCell(o, native, valid, alternatives);
}

/**
 * An alternative value without a page (a chunk of several pages read it): the page it is printed on, the first in
 * reading order, when the words show it; else it stays without one. Never a page it is not on.
 */
function placedAlternative(
  search: Search | null,
  name: string,
  type: FieldType | undefined,
  alternative: { value: unknown; page?: number },
): { value: unknown; page?: number } {
  if (alternative.page !== undefined || search === null || !printable(alternative.value) || search.expired()) {
    return { ...alternative };
  }
  const first = placesOf(search, name, alternative.value, type)?.[0];
  return first ? { ...alternative, page: search.index.page(first.span).page } : { ...alternative };
}

function settle(
  input: GroundInput,
  outcomes: Outcome[],
  failures: CheckFailure[],
  native: number,
  search: Search | null,
): Grounded {
  const fields: Fields = {};
  const counted: Counted[] = [];
  const reasons: string[] = [];
  if (outcomes.some((o) => o.state === 'skipped')) reasons.push(BUDGET_REASON);
  for (const o of outcomes) if (o.state === 'too-long') reasons.push(`${o.name}: grounding skipped (value too long)`);
  for (const failure of failures) reasons.push(failure.reason);
  const threshold = typeof input.reviewThreshold === 'number' ? input.reviewThreshold : 0.8;
  const unsupported: string[] = [];
  for (const o of outcomes) {
    const required = o.spec?.required === true;
    const alternatives = input.alternatives?.[o.name] ?? [];
    // The provider's confidence in this very value where it has one (OpenAI's logprobs), else in the whole answer.
    const own = input.valueConfidence?.[o.name];
    const nativeHere = typeof own === 'number' && Number.isFinite(own) ? clamp(own) : native;
    const scored = o.state === 'null' && required ? 0 : scoreOutcome(o, nativeHere, alternatives.length);
    // The provider's doubt about this very value stands: what the page shows can lower it, never lift it.
    const confidence = typeof own === 'number' && Number.isFinite(own) ? Math.min(scored, round3(clamp(own))) : scored;
    fields[o.name] = {
      ...o.evidence,
      confidence,
      ...(alternatives.length > 0
        ? { alternatives: alternatives.map((a) => placedAlternative(search, o.name, o.spec?.type, a)) }
        : {}),
    };
    counted.push({ confidence, required, counted: o.state !== 'null' || required });
    if (o.unsupported) unsupported.push(o.name);
    if (!required) continue;
    if (o.state === 'null') reasons.push(`${o.name}: missing`);
    else if (confidence < threshold) reasons.push(`${o.name}: below ${threshold} (${confidence.toFixed(2)})`);
  }
  return {
    fields,
    confidence: aggregate(counted, native),
    review: { needed: reasons.length > 0, reasons },
    unsupported,
  };
}

function fallback(input: GroundInput, native: number): Grounded {
  const { names, specs } = fieldNames(input);
  const fields: Fields = {};
  for (const name of names) fields[name] = { confidence: round3(SKIPPED_SHARE * native) };
  const required = names.filter((n) => specs.get(n)?.required === true);
  return {
    fields,
    confidence: round3(SKIPPED_SHARE * native),
    review: {
      needed: true,
      reasons: ['grounding skipped: internal error', ...required.map((n) => `${n}: not checked`)],
    },
    unsupported: [],
  };
}
