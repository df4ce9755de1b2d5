/**
 * Writes sdk/schemas.ts (`npm run gen:sdk-schemas`): the result type of each built-in schema of the registry
 * (shared/registry/*.json), so that `analyze(file, { schemaId: 'receipt' })` gives a typed receipt. Run it after
 * adding or changing a registry schema; test/unit/sdk-schemas.test.ts fails until it is run (and `npm run build:sdk`
 * after it, as after any SDK change).
 * Not to undo: the SDK package has no dependencies and does not import the service, so its types are generated here
 * rather than derived from the JSON at compile time (a JSON import widens every `type` to `string`).
 */
import { existsSync, realpathSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { normaliseFields, registry } from '../shared/registry/registry.js';
import type { FieldType } from '../shared/task.js';

const TARGET = fileURLToPath(new URL('../sdk/schemas.ts', import.meta.url));

/**
 * What a completed run's result holds for a field of each type: the worker shapes every value with `coerce`
 * (shared/providers/result-validation.ts), which gives a value of the type or null, never anything else; a date is
 * the document's date as a string (ISO when the notation is unambiguous).
 */
const TS_TYPE: Record<FieldType, string> = {
  string: 'string',
  number: 'number',
  integer: 'number',
  boolean: 'boolean',
  date: 'string',
  array: 'JsonValue[]',
  object: '{ [key: string]: JsonValue }',
};

/** `receipt` → `ReceiptResult`, `bank_statement` → `BankStatementResult`. */
export function resultTypeName(schemaId: string): string {
  return `${schemaId.replace(/(^|_)([a-z0-9])/g, (_m, _sep, c: string) => c.toUpperCase())}Result`;
}

/** A property name as TypeScript needs it written. */
function key(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
}

/** One line of a doc comment, safe inside `/** … *\/`. */
function comment(text: string): string {
  return text.replace(/\*\//g, '*\\/');
}

/** The text of sdk/schemas.ts for the registry as it is. */
export function sdkSchemasSource(): string {
  const lines = [
    '// Generated from shared/registry/*.json by `npm run gen:sdk-schemas`: do not edit.',
    '/**',
    ' * The result of a completed json run for each built-in schema of the registry: every field of the schema is present,',
    ' * as a value of its type or null (not found in the document, or not readable as its type; required fields too).',
    ' */',
    "import type { JsonValue } from './types.js';",
    '',
  ];
  const ids = [...registry.keys()];
  for (const id of ids) {
    const schema = registry.get(id);
    if (!schema) continue;
    lines.push(`/** \`schemaId: '${id}'\`: ${comment(schema.label)}. */`);
    lines.push(`export type ${resultTypeName(id)} = {`);
    for (const field of normaliseFields(schema.expectedFields)) {
      const about = [field.description, field.required ? 'required' : undefined].filter(Boolean).join('; ');
      if (about) lines.push(`  /** ${comment(about)} */`);
      lines.push(`  ${key(field.name)}: ${TS_TYPE[field.type]} | null;`);
    }
    lines.push('};', '');
  }
  lines.push('/** Each built-in schema id and the result type its runs complete with. */');
  lines.push('export type RegistryResults = {');
  for (const id of ids) lines.push(`  ${key(id)}: ${resultTypeName(id)};`);
  lines.push('};', '');
  lines.push('/** The ids of the built-in schemas (`GET /v1/schemas`). */');
  lines.push('export type RegistrySchemaId = keyof RegistryResults;');
  return `${lines.join('\n')}\n`;
}

function main(): void {
  writeFileSync(TARGET, sdkSchemasSource());
  process.stdout.write(`wrote ${TARGET}\n`);
}

const invokedPath = process.argv[1] && existsSync(process.argv[1]) ? realpathSync(process.argv[1]) : undefined;
if (invokedPath !== undefined && invokedPath === realpathSync(fileURLToPath(import.meta.url))) main();
