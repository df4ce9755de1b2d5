/**
 * A review's corrections checked against the run they correct (contract-v1.1 §3): every name is a field of the run's
 * result, and every value has that field's type, so a corrected number stays a number. The fields are the schema's
 * when the run had one; for a run without a schema, the result's own top-level fields, each keeping the JSON type its
 * extracted value has; for a text run, `text`; for a split run, each document's schema's (`splitProblems`). `null`
 * means "no value in the document" and fits every field.
 */
import { InvalidRequestError, type ValidationIssue } from '../errors.js';
import { packetDocument } from '../packets/result.js';
import { normaliseFields, registry } from '../registry/registry.js';
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

/** What is wrong with each correction of `corrections` against `fields`, keyed by `prefix` + the field's name. */
function fieldProblems(
  fields: ReadonlyMap<string, FieldType | null>,
  corrections: Record<string, unknown>,
  prefix = '',
): Record<string, string> {
  const problems: Record<string, string> = {};
  for (const [name, value] of Object.entries(corrections)) {
    if (!fields.has(name)) {
      problems[prefix + name] = `not a field of this ${prefix ? 'document' : "run's result"} (fields: ${
        [...fields.keys()].join(', ') || 'none'
      })`;
      continue;
    }
    const type = fields.get(name);
    if (value === null || type === null || type === undefined) continue;
    if (!FITS[type].test(value)) problems[prefix + name] = `must be ${FITS[type].expected} (or null)`;
  }
  return problems;
}

/** The keys a split run's document shows: a correction may send a document back as it was shown. */
const DOCUMENT_KEYS = new Set(Object.keys(packetDocument.shape));

/**
 * A split run (contract-v1.2 §3) is corrected by document, `{documents: [{index, result}, …]}`: each entry names one
 * of its documents, once, and `result` holds fields of that document's schema (an `other` document has none). An
 * entry may carry the document's other keys as shown (the dashboard sends the list back edited); only `result` is a
 * correction, and a class other than the document's is refused rather than ignored.
 */
function splitProblems(run: Pick<RunRecord, 'result'>, corrections: Record<string, unknown>): Record<string, string> {
  const problems: Record<string, string> = {};
  for (const name of Object.keys(corrections)) {
    if (name !== 'documents') problems[name] = 'a split run is corrected by document: {documents: [{index, result}]}';
  }
  const list = corrections.documents;
  if (list === undefined || list === null) return problems;
  if (!Array.isArray(list)) return { ...problems, documents: 'must be an array of {index, result}' };
  const documents = (Array.isArray(run.result?.documents) ? run.result.documents : []) as Record<string, unknown>[];
  const byIndex = new Map(documents.map((d) => [d?.index, d]));
  const named = new Set<unknown>();
  for (const [i, entry] of list.entries()) {
    const at = `documents.${i}`;
    const fields = isPlainObject(entry) ? (entry as Record<string, unknown>) : undefined;
    const { index, result, schemaId } = fields ?? {};
    if (!fields || Object.keys(fields).some((k) => !DOCUMENT_KEYS.has(k)) || !Number.isInteger(index)) {
      problems[at] = "must be {index, result}: a document's index and its corrected fields";
      continue;
    }
    const document = byIndex.get(index);
    const schema = registry.get(String(document?.schemaId));
    if (!document) problems[`${at}.index`] = `no document ${index} in this run (${documents.length} documents)`;
    else if (named.has(index)) problems[`${at}.index`] = `document ${index} is named twice`;
    else if (schemaId !== undefined && schemaId !== document.schemaId) {
      problems[`${at}.schemaId`] = `document ${index} was classed ${document.schemaId}; a class is not corrected`;
    } else if (result !== undefined && !schema) {
      problems[`${at}.result`] = `document ${index} is \`other\`: it has no fields to correct`;
    } else if (result !== undefined && !isPlainObject(result)) problems[`${at}.result`] = 'must be an object';
    else if (schema && result !== undefined) {
      const types = new Map(normaliseFields(schema.expectedFields).map((f) => [f.name, f.type]));
      Object.assign(problems, fieldProblems(types, result as Record<string, unknown>, `${at}.result.`));
    }
    named.add(index);
  }
  return problems;
}

/** Throws 400 INVALID_REQUEST, naming each offending field in `details.fields`, when a correction does not fit. */
export function checkCorrections(
  run: Pick<RunRecord, 'task' | 'result' | 'packet'>,
  corrections: Record<string, unknown>,
): void {
  const problems =
    run.packet?.mode === 'split' ? splitProblems(run, corrections) : fieldProblems(correctableFields(run), corrections);
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
