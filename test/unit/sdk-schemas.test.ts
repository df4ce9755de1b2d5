/**
 * The SDK's result types of the built-in schemas (sdk/schemas.ts) are generated from the registry and cannot drift from
 * it; test/types/sdk-contract.ts checks at compile time that `analyze` gives them for a registry `schemaId`.
 */
import { readFileSync } from 'node:fs';
import { resultTypeName, sdkSchemasSource } from '../../scripts/gen-sdk-schemas.js';
import { registry } from '../../shared/registry/registry.js';

test('sdk/schemas.ts is what the registry generates (run `npm run gen:sdk-schemas`, then `npm run build:sdk`)', () => {
  const committed = readFileSync(new URL('../../sdk/schemas.ts', import.meta.url), 'utf8');
  expect(committed).toBe(sdkSchemasSource());
});

test('every registry schema has a result type, with each of its fields as its type or null', () => {
  const source = sdkSchemasSource();
  for (const [id, schema] of registry) {
    expect(source).toContain(`  ${id}: ${resultTypeName(id)};`);
    const body = source.slice(source.indexOf(`export type ${resultTypeName(id)} = {`));
    for (const field of schema.expectedFields) {
      const name = typeof field === 'string' ? field : field.name;
      expect([
        id,
        name,
        new RegExp(`\\n  ${name}: [^\\n]+ \\| null;`).test(body.slice(0, body.indexOf('\n};'))),
      ]).toEqual([id, name, true]);
    }
  }
  expect(source).toMatch(/ {2}total: number \| null;/);
  expect(source).toMatch(/ {2}transactions: JsonValue\[\] \| null;/);
});
