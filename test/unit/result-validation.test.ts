/**
 * The shared result validator (shared/providers/result-validation.ts), over the schemas `resultJsonSchema` really
 * builds: a task with fields of every type, an open analysis (`keyValues` items), and a text answer.
 */
import {
  answerErrors,
  RESULT_SCHEMA_ERROR_LIMIT,
  resultSchemaErrors,
} from '../../shared/providers/result-validation.js';
import { resultFromAnswer, resultJsonSchema, resultKeys } from '../../shared/providers/task-prompt.js';
import type { FieldSpec, TaskSpec } from '../../shared/task.js';

function task(fields: FieldSpec[] | null, outputFormat: TaskSpec['outputFormat'] = 'json'): TaskSpec {
  return { prompt: 'Read it.', outputFormat, fields, schemaId: null, schemaLabel: null, promptScaffold: null };
}

const FIELDS_TASK = task([
  { name: 'vendor', type: 'string', required: true },
  { name: 'date', type: 'date', required: false },
  { name: 'total', type: 'number', required: true },
  { name: 'items', type: 'integer', required: false },
  { name: 'paid', type: 'boolean', required: false },
  { name: 'lines', type: 'array', required: false },
  { name: 'meta', type: 'object', required: false },
]);
const FIELDS = resultJsonSchema(FIELDS_TASK);
const OPEN = resultJsonSchema(task(null));
const TEXT = resultJsonSchema(task(null, 'text'));

const VALID_FIELDS = {
  vendor: 'ACME',
  date: '2026-11-02',
  total: 42.5,
  items: 3,
  paid: true,
  lines: [{ anything: 1 }, 'goes', null],
  meta: { free: 'form' },
};
const ALL_NULL = { vendor: null, date: null, total: null, items: null, paid: null, lines: null, meta: null };
const VALID_OPEN = { summary: 'A receipt', text: 'ACME 42.50', keyValues: [{ key: 'total', value: '42.50' }] };

describe('resultSchemaErrors', () => {
  test.each<[string, unknown, Record<string, unknown>]>([
    ['fields, every type', VALID_FIELDS, FIELDS],
    ['fields, every value null', ALL_NULL, FIELDS],
    ['fields, an integer is a number', { ...VALID_FIELDS, total: 42 }, FIELDS],
    ['fields, empty array and object', { ...VALID_FIELDS, lines: [], meta: {} }, FIELDS],
    ['open analysis', VALID_OPEN, OPEN],
    ['open analysis, no key-values', { ...VALID_OPEN, keyValues: [] }, OPEN],
    ['text answer', { text: '' }, TEXT],
  ])('accepts a valid answer: %s', (_name, value, schema) => {
    expect(resultSchemaErrors(value, schema)).toEqual([]);
  });

  test.each<[string, unknown, Record<string, unknown>, string[]]>([
    // Missing required
    [
      'missing required fields, in schema order',
      { vendor: 'ACME', paid: false, lines: [], meta: {} },
      FIELDS,
      [
        '$.date: required property is missing',
        '$.total: required property is missing',
        '$.items: required property is missing',
      ],
    ],
    ['missing text', {}, TEXT, ['$.text: required property is missing']],
    // Extra key
    ['an extra key', { ...VALID_FIELDS, note: 'x' }, FIELDS, ['$.note: property is not in the schema']],
    [
      'an extra key that is not an identifier',
      { ...VALID_FIELDS, 'unit price': 1 },
      FIELDS,
      ['$["unit price"]: property is not in the schema'],
    ],
    [
      'an inherited name is an extra key, not a property',
      JSON.parse('{"text": "t", "__proto__": 1, "constructor": 2}'),
      TEXT,
      ['$.__proto__: property is not in the schema', '$.constructor: property is not in the schema'],
    ],
    [
      'an extra key inside keyValues items',
      { ...VALID_OPEN, keyValues: [{ key: 'k', value: 'v', note: 1 }] },
      OPEN,
      ['$.keyValues[0].note: property is not in the schema'],
    ],
    // Wrong type
    [
      'a string for a number',
      { ...VALID_FIELDS, total: '42.50' },
      FIELDS,
      ['$.total: expected number or null, got string'],
    ],
    [
      'a fraction for an integer',
      { ...VALID_FIELDS, items: 2.5 },
      FIELDS,
      ['$.items: expected integer or null, got number'],
    ],
    [
      'a string for a boolean',
      { ...VALID_FIELDS, paid: 'yes' },
      FIELDS,
      ['$.paid: expected boolean or null, got string'],
    ],
    [
      'a number for a date',
      { ...VALID_FIELDS, date: 20261102 },
      FIELDS,
      ['$.date: expected string or null, got number'],
    ],
    ['an object for an array', { ...VALID_FIELDS, lines: {} }, FIELDS, ['$.lines: expected array or null, got object']],
    ['an array for an object', { ...VALID_FIELDS, meta: [] }, FIELDS, ['$.meta: expected object or null, got array']],
    ['an array for the answer', [], FIELDS, ['$: expected object, got array']],
    ['null for the answer', null, OPEN, ['$: expected object, got null']],
    ['a string for the answer', '{"text": "t"}', TEXT, ['$: expected object, got string']],
    // Null allowed only where the schema says so
    [
      'null where only a string is allowed',
      { ...VALID_OPEN, summary: null },
      OPEN,
      ['$.summary: expected string, got null'],
    ],
    ['null text', { text: null }, TEXT, ['$.text: expected string, got null']],
    // Nested array items
    [
      'nested array items, each checked with its index',
      { ...VALID_OPEN, keyValues: [{ key: 'a', value: 'b' }, { key: 'c' }, 'd', { key: 1, value: null }] },
      OPEN,
      [
        '$.keyValues[1].value: required property is missing',
        '$.keyValues[2]: expected object, got string',
        '$.keyValues[3].key: expected string, got number',
        '$.keyValues[3].value: expected string, got null',
      ],
    ],
    [
      'keyValues not an array',
      { ...VALID_OPEN, keyValues: { a: 'b' } },
      OPEN,
      ['$.keyValues: expected array, got object'],
    ],
  ])('reports %s', (_name, value, schema, errors) => {
    expect(resultSchemaErrors(value, schema)).toEqual(errors);
  });

  describe('the limit', () => {
    // 30 items without `value`: 30 problems.
    const many = { ...VALID_OPEN, keyValues: Array.from({ length: 30 }, (_, i) => ({ key: `k${i}` })) };

    test.each<[string, number | undefined, number]>([
      ['defaults to RESULT_SCHEMA_ERROR_LIMIT', undefined, RESULT_SCHEMA_ERROR_LIMIT],
      ['stops at 1', 1, 1],
      ['stops at 3', 3, 3],
      ['a fractional limit rounds down', 2.9, 2],
      ['Infinity returns all', Number.POSITIVE_INFINITY, 30],
      ['a limit above the count returns all', 100, 30],
    ])('%s', (_name, limit, expected) => {
      const errors = resultSchemaErrors(many, OPEN, limit);
      expect(errors).toHaveLength(expected);
      // The first problems, in order.
      expect(errors[0]).toBe('$.keyValues[0].value: required property is missing');
      expect(errors.at(-1)).toBe(`$.keyValues[${expected - 1}].value: required property is missing`);
    });

    test('counts problems of every kind, in order', () => {
      const value = { total: 'x', items: 1.5, paid: 'no', extra: 1 };
      expect(resultSchemaErrors(value, FIELDS, 3)).toEqual([
        '$.vendor: required property is missing',
        '$.date: required property is missing',
        '$.total: expected number or null, got string',
      ]);
    });

    test.each([0, -1, Number.NaN])('rejects limit %p', (limit) => {
      expect(() => resultSchemaErrors({}, TEXT, limit)).toThrow(RangeError);
    });
  });

  test('ignores keywords outside the subset and checks what a hand-written schema in the subset says', () => {
    const schema = {
      type: 'object',
      description: 'ignored',
      properties: { n: { type: ['integer', 'null'], minimum: 10 }, any: {} },
      required: ['n', 'other'],
    };
    // additionalProperties is not false: extra keys are allowed; `minimum` is not checked; `other` has no schema.
    expect(resultSchemaErrors({ n: 1, any: [1], extra: true, other: 'x' }, schema)).toEqual([]);
    expect(resultSchemaErrors({ any: 1 }, schema)).toEqual([
      '$.n: required property is missing',
      '$.other: required property is missing',
    ]);
  });
});

describe('answerErrors: what a repair request should fix, after coercion', () => {
  test('a task with fields: some fields missing, unknown keys beside all fields, convertible values are not problems', () => {
    expect(answerErrors(FIELDS_TASK, { vendor: 'ACME', total: 42.5 })).toEqual([]);
    expect(answerErrors(FIELDS_TASK, { ...VALID_FIELDS, tip: 3, note: 'x' })).toEqual([]);
    // Each converts (coerce): a printed amount, a count as text, "yes", a number as a string, a blank string (null).
    expect(answerErrors(FIELDS_TASK, { total: '$1,042.50', items: '3', paid: 'yes', vendor: 42, date: ' ' })).toEqual(
      [],
    );
  });

  test('an answer that names no field, or leaves fields out while adding its own keys, is repaired', () => {
    // Filled with nulls it would complete, and be charged, with nothing read.
    const missingAll = Object.keys(VALID_FIELDS).map((k) => `$.${k}: required property is missing`);
    expect(answerErrors(FIELDS_TASK, {})).toEqual(missingAll);
    expect(answerErrors(FIELDS_TASK, { result: VALID_FIELDS })).toEqual([
      ...missingAll,
      '$.result: property is not in the schema',
    ]);
    // Fields under other names: the known ones alone would leave the rest null.
    expect(answerErrors(FIELDS_TASK, { vendor: 'ACME', Total: 42.5 })).toEqual([
      ...missingAll.filter((m) => !m.startsWith('$.vendor')),
      '$.Total: property is not in the schema',
    ]);
  });

  test("a value no conversion turns into its field's type is, path first", () => {
    expect(answerErrors(FIELDS_TASK, { total: 'n/a', paid: 'maybe', lines: 'a, b', vendor: { name: 'ACME' } })).toEqual(
      [
        '$.vendor: expected string or null, got object',
        '$.total: expected number or null, got string',
        '$.paid: expected boolean or null, got string',
        '$.lines: expected array or null, got string',
      ],
    );
    expect(answerErrors(FIELDS_TASK, { items: 2.5 })).toEqual(['$.items: expected integer or null, got number']);
    // A date is a string in the JSON schema, but a number is no date: the worker would store null, so it is repaired.
    expect(answerErrors(FIELDS_TASK, { date: 20261102 })).toEqual(['$.date: expected string or null, got number']);
    expect(answerErrors(FIELDS_TASK, [VALID_FIELDS])).toEqual(['$: expected object, got array']);
    expect(answerErrors(FIELDS_TASK, { total: 'n/a', paid: 'maybe' }, 1)).toHaveLength(1);
  });

  test('text and open-analysis answers are checked against their schema as they are', () => {
    expect(answerErrors(task(null, 'text'), { text: 'ACME' })).toEqual([]);
    expect(answerErrors(task(null, 'text'), {})).toEqual(resultSchemaErrors({}, TEXT));
    expect(answerErrors(task(null), { summary: 'A receipt' })).toEqual(
      resultSchemaErrors({ summary: 'A receipt' }, OPEN),
    );
    expect(answerErrors(task(null), { summary: 'A receipt' }).length).toBeGreaterThan(0);
  });
});

describe('result keys: the property names models answer under', () => {
  const field = (name: string): FieldSpec => ({ name, type: 'string', required: false });

  test('a name providers accept as a property key is kept; any other becomes field_<position>', () => {
    const fields = ['total', 'Invoice Number', 'a.b-c_d', '日付', 'x'.repeat(64), 'x'.repeat(65), ''].map(field);
    expect(resultKeys(fields)).toEqual([
      'total',
      'field_2',
      'a.b-c_d',
      'field_4',
      'x'.repeat(64),
      'field_6',
      'field_7',
    ]);
  });

  test('a generated key never collides with a name the client chose', () => {
    const fields = ['field_2', 'Due date', 'field_2_'].map(field);
    const keys = resultKeys(fields);
    expect(keys).toEqual(['field_2', 'field_2__', 'field_2_']);
    expect(new Set(keys).size).toBe(3);
  });

  test('the schema uses the keys; the answer maps back to the names, a missing value null', () => {
    const fields = [field('Due date'), field('total')];
    const schema = resultJsonSchema(task(fields));
    expect(schema.required).toEqual(['field_1', 'total']);
    expect(resultSchemaErrors({ field_1: '2026-12-01', total: null }, schema)).toEqual([]);
    expect(resultFromAnswer(fields, { field_1: '2026-12-01' })).toEqual({ 'Due date': '2026-12-01', total: null });
  });
});
