/**
 * The built-in schema registry: one JSON file per schema beside this module (data, not code). Each is validated at
 * import with the same zod schema as an inline `schema`, so a broken registry file fails the build's tests.
 */
import { inlineSchema, type SchemasResponse } from '../contract.js';
import type { FieldSpec, TaskSpec } from '../task.js';
// zod/mini like the contract (see contract.ts): the create-run and schemas handlers load this module.
import * as z from '../zod.js';
import bankStatement from './bank_statement.json' with { type: 'json' };
import businessCard from './business_card.json' with { type: 'json' };
import idDocument from './id_document.json' with { type: 'json' };
import invoice from './invoice.json' with { type: 'json' };
import receipt from './receipt.json' with { type: 'json' };

const registryEntry = z.extend(inlineSchema, { id: z.string().check(z.regex(/^[a-z][a-z0-9_]*$/)) });
export type RegistrySchema = z.infer<typeof registryEntry>;

/** Registry schemas by id. */
export const registry: ReadonlyMap<string, RegistrySchema> = new Map(
  [receipt, invoice, idDocument, businessCard, bankStatement].map((raw) => {
    const entry = registryEntry.parse(raw);
    return [entry.id, entry] as const;
  }),
);

/** Normalises expected fields: bare names become optional strings. */
export function normaliseFields(fields: z.infer<typeof inlineSchema>['expectedFields']): FieldSpec[] {
  return fields.map((f) =>
    typeof f === 'string'
      ? { name: f, type: 'string', required: false }
      : {
          name: f.name,
          type: f.type ?? 'string',
          required: f.required ?? false,
          ...(f.description !== undefined ? { description: f.description } : {}),
        },
  );
}

/** Builds the task from the request: registry schema, inline schema or none. Unknown ids are the caller's to reject. */
export function buildTask(input: {
  prompt: string;
  outputFormat: 'json' | 'text';
  schemaId?: string | undefined;
  schema?: z.infer<typeof inlineSchema> | undefined;
}): TaskSpec {
  const schema = input.schema;
  return {
    prompt: input.prompt,
    outputFormat: input.outputFormat,
    fields: schema ? normaliseFields(schema.expectedFields) : null,
    schemaId: input.schemaId ?? null,
    schemaLabel: schema?.label ?? null,
    promptScaffold: schema?.promptScaffold ?? null,
  };
}

/** The registry as `GET /v1/schemas` shows it. */
export function listSchemas(): SchemasResponse {
  return {
    items: [...registry.values()].map((s) => ({
      id: s.id,
      label: s.label,
      expectedFields: normaliseFields(s.expectedFields),
    })),
  };
}
