/**
 * Checks a model's answer against the result schema of a task (`answerErrors`, with `resultSchemaErrors` as the
 * strict check under it), for the adapters that ask for one repair. Only the schema subset `resultJsonSchema` emits;
 * each problem is one bounded line, JSON path first, meant for the model. See docs/decisions.md#result-validation.
 */

import type { FieldType, TaskSpec } from '../task.js';
import { isPlainObject } from './common.js';
import { coerceNumber } from './fields.js';
import { resultJsonSchema, resultKeys } from './task-prompt.js';

/** How many problems `resultSchemaErrors` collects when not told otherwise. */
export const RESULT_SCHEMA_ERROR_LIMIT = 20;

/** A JSON Schema node, as `resultJsonSchema` builds it. */
type JsonSchema = Record<string, unknown>;

/** Where the problems go: at most `limit` of them. */
interface Collector {
  readonly errors: string[];
  readonly limit: number;
}

/**
 * The problems that keep `value` from matching `schema` (a schema built by `resultJsonSchema`), one line each, path
 * first: `$.total: expected number or null, got string`. An empty array means the value is valid.
 *
 * @param value The model's answer, as parsed from JSON (or a tool call's input).
 * @param schema The result schema, or any schema in the same subset (see the module comment).
 * @param limit The most problems returned (default 20, `Infinity` for all); the check stops once it has that many.
 * @throws RangeError when `limit` is not at least 1.
 */
export function resultSchemaErrors(
  value: unknown,
  schema: Record<string, unknown>,
  limit: number = RESULT_SCHEMA_ERROR_LIMIT,
): string[] {
  if (!(limit >= 1)) throw new RangeError(`resultSchemaErrors: limit must be at least 1, got ${limit}`);
  const collector: Collector = { errors: [], limit: Math.floor(limit) };
  check(value, schema, '$', collector);
  return collector.errors;
}

function full(collector: Collector): boolean {
  return collector.errors.length >= collector.limit;
}

function report(collector: Collector, message: string): void {
  if (!full(collector)) collector.errors.push(message);
}

/** The type names a node allows (`type: 'string'` or `type: ['string', 'null']`); empty when it does not say. */
function typesOf(schema: JsonSchema): string[] {
  if (typeof schema.type === 'string') return [schema.type];
  if (Array.isArray(schema.type)) return schema.type.filter((t): t is string => typeof t === 'string');
  return [];
}

function matchesType(value: unknown, type: string): boolean {
  switch (type) {
    case 'null':
      return value === null;
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isPlainObject(value);
    default:
      // Not a JSON Schema type name: outside the subset, so it constrains nothing.
      return true;
  }
}

/** The JSON kind of a value, for "got …". */
function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** The path of a property: `$.total`, or `$["unit price"]` for a key that is not an identifier. */
function propertyPath(path: string, key: string): string {
  return IDENTIFIER.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

function check(value: unknown, schema: JsonSchema, path: string, collector: Collector): void {
  if (full(collector)) return;
  const types = typesOf(schema);
  if (types.length > 0 && !types.some((type) => matchesType(value, type))) {
    report(collector, `${path}: expected ${types.join(' or ')}, got ${kindOf(value)}`);
    return;
  }
  if (isPlainObject(value)) {
    checkObject(value, schema, path, collector);
  } else if (Array.isArray(value) && isPlainObject(schema.items)) {
    const items = schema.items;
    for (let index = 0; index < value.length && !full(collector); index++) {
      check(value[index], items, `${path}[${index}]`, collector);
    }
  }
}

function checkObject(value: Record<string, unknown>, schema: JsonSchema, path: string, collector: Collector): void {
  const properties = isPlainObject(schema.properties) ? schema.properties : {};
  const required = new Set(
    Array.isArray(schema.required) ? schema.required.filter((k): k is string => typeof k === 'string') : [],
  );
  for (const [key, propertySchema] of Object.entries(properties)) {
    if (full(collector)) return;
    if (Object.hasOwn(value, key)) {
      if (isPlainObject(propertySchema)) check(value[key], propertySchema, propertyPath(path, key), collector);
    } else if (required.has(key)) {
      report(collector, `${propertyPath(path, key)}: required property is missing`);
    }
  }
  for (const key of required) {
    if (!Object.hasOwn(properties, key) && !Object.hasOwn(value, key)) {
      report(collector, `${propertyPath(path, key)}: required property is missing`);
    }
  }
  if (schema.additionalProperties === false) {
    for (const key of Object.keys(value)) {
      if (!Object.hasOwn(properties, key))
        report(collector, `${propertyPath(path, key)}: property is not in the schema`);
    }
  }
}

/** Coerces a value to a field type; returns null when it cannot be (never invents). */
export function coerce(value: unknown, type: FieldType): unknown {
  if (value === null || value === undefined || value === '') return null;
  switch (type) {
    case 'string':
      return typeof value === 'string'
        ? value
        : typeof value === 'number' || typeof value === 'boolean'
          ? String(value)
          : null;
    case 'integer': {
      const n = coerce(value, 'number');
      return typeof n === 'number' && Number.isInteger(n) ? n : null;
    }
    case 'number': {
      // An amount as printed ("$1,042.50", "42,50 €", "(12.00)"), parsed as the local provider reads one; digits
      // amid other text are not a number ("DE89 3704 0044" is an IBAN, not 89,370,400,440).
      const n = typeof value === 'number' ? value : typeof value === 'string' ? coerceNumber(value) : null;
      return n !== null && Number.isFinite(n) ? n : null;
    }
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (typeof value === 'string' && /^(true|yes)$/i.test(value)) return true;
      if (typeof value === 'string' && /^(false|no)$/i.test(value)) return false;
      return null;
    case 'date':
      return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
    case 'array':
      return Array.isArray(value) ? value : null;
    case 'object':
      return typeof value === 'object' && !Array.isArray(value) ? value : null;
  }
}

/**
 * The problems of a model's answer that a repair request should fix. For a task with fields, only what coercion
 * (`coerce`, as the worker shapes the answer) cannot: an answer that is not an object, one that misses the schema's
 * keys, a value no conversion fits. A text or open answer is checked against its schema as it is.
 * See docs/decisions.md#what-a-repair-request-fixes.
 */
export function answerErrors(task: TaskSpec, value: unknown, limit: number = RESULT_SCHEMA_ERROR_LIMIT): string[] {
  if (!(limit >= 1)) throw new RangeError(`answerErrors: limit must be at least 1, got ${limit}`);
  const schema = resultJsonSchema(task);
  if (task.outputFormat !== 'json' || task.fields === null) return resultSchemaErrors(value, schema, limit);
  if (!isPlainObject(value)) return [`$: expected object, got ${kindOf(value)}`];
  const collector: Collector = { errors: [], limit: Math.floor(limit) };
  const properties = isPlainObject(schema.properties) ? schema.properties : {};
  const keys = resultKeys(task.fields);
  const missing = keys.filter((key) => !Object.hasOwn(value, key));
  const unknown = Object.keys(value).filter((key) => !keys.includes(key));
  if (keys.length > 0 && (missing.length === keys.length || (missing.length > 0 && unknown.length > 0))) {
    for (const key of missing) report(collector, `${propertyPath('$', key)}: required property is missing`);
    for (const key of unknown) report(collector, `${propertyPath('$', key)}: property is not in the schema`);
  }
  task.fields.forEach((field, i) => {
    const key = keys[i] as string;
    if (!Object.hasOwn(value, key)) return;
    const given = value[key];
    if (given === null || (typeof given === 'string' && given.trim() === '') || coerce(given, field.type) !== null)
      return;
    const propertySchema = properties[key];
    const types = isPlainObject(propertySchema) ? typesOf(propertySchema) : [field.type];
    report(collector, `${propertyPath('$', key)}: expected ${types.join(' or ')}, got ${kindOf(given)}`);
  });
  return collector.errors;
}
