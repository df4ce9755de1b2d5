/**
 * A review's corrections checked against the run they correct (contract-v1.1 §3): every name is a field of the run's
 * result, and every value has that field's type, so a corrected number stays a number. The fields are the schema's
 * when the run had one; for a run without a schema, the result's own top-level fields, each keeping the JSON type its
 * extracted value has; for a text run, `text`. `null` means "no value in the document" and fits every field.
 */
import { InvalidRequestError, type ValidationIssue } from '../errors.js';
import type { RunRecord } from '../store/runs.js';
import type { FieldType } from '../task.js';

/** A real calendar date written `YYYY-MM-DD`. */
function isIsoDate(value: unknown): boolean {
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const date = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(value);
}

const isPlainObject = (value: unknown): boolean => typeof value === 'object' && value !== null && !Array.isArray(value);

/** What a value of each field type must be, and how to say so. */
const FITS: Record<FieldType, { test: (value: unknown) => boolean; expected: string }> = {
  string: { test: (v) => typeof v === 'string', expected: 'a string' },
  number: { test: (v) => typeof v === 'number' && Number.isFinite(v), expected: 'a number' },
  integer: { test: (v) => Number.isInteger(v), expected: 'an integer' },
  boolean: { test: (v) => typeof v === 'boolean', expected: 'true or false' },
  date: { test: isIsoDate, expected: 'a date written YYYY-MM-DD' },
  array: { test: Array.isArray, expected: 'an array' },
  object: { test: isPlainObject, expected: 'an object' },
};

/** The JSON type of an extracted value, as a field type (null: the value says nothing about its type). */
function typeOfValue(value: unknown): FieldType | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'string') return 'string';
  return Array.isArray(value) ? 'array' : 'object';
}

/** The fields a run's corrections may name, with their types (null: any JSON value). */
export function correctableFields(run: Pick<RunRecord, 'task' | 'result'>): Map<string, FieldType | null> {
  if (run.task.outputFormat === 'text') return new Map([['text', 'string']]);
  if (run.task.fields) return new Map(run.task.fields.map((f) => [f.name, f.type]));
  return new Map(Object.entries(run.result ?? {}).map(([name, value]) => [name, typeOfValue(value)]));
}

/** Throws 400 INVALID_REQUEST, naming each offending field in `details.fields`, when a correction does not fit. */
export function checkCorrections(run: Pick<RunRecord, 'task' | 'result'>, corrections: Record<string, unknown>): void {
  const fields = correctableFields(run);
  const problems: Record<string, string> = {};
  for (const [name, value] of Object.entries(corrections)) {
    if (!fields.has(name)) {
      problems[name] = `not a field of this run's result (fields: ${[...fields.keys()].join(', ') || 'none'})`;
      continue;
    }
    const type = fields.get(name);
    if (value === null || type === null || type === undefined) continue;
    if (!FITS[type].test(value)) problems[name] = `must be ${FITS[type].expected} (or null)`;
  }
  const names = Object.keys(problems);
  if (names.length === 0) return;
  const issues: ValidationIssue[] = names.map((name) => ({
    path: `corrections.${name}`,
    message: problems[name] ?? '',
  }));
  throw new InvalidRequestError(`corrections do not fit the run's fields: ${names.join(', ')}`, issues, {
    fields: problems,
  });
}
