/**
 * What every LLM adapter sends: the instruction text built from the task (prompt + optional schema scaffold), and the
 * JSON Schema of the expected result (for structured output / tool input). One place, so providers cannot drift.
 */
import type { FieldSpec, FieldType, TaskSpec } from '../task.js';

const JSON_TYPES: Record<FieldType, Record<string, unknown>> = {
  string: { type: 'string' },
  number: { type: 'number' },
  integer: { type: 'integer' },
  boolean: { type: 'boolean' },
  date: { type: 'string', description: 'ISO 8601 date (YYYY-MM-DD)' },
  array: { type: 'array', items: {} },
  object: { type: 'object' },
};

/**
 * The JSON Schema of a result. With fields: an object with exactly those keys, each nullable (a value not in the
 * document must be null, never invented), all listed as required so strict structured-output modes accept it.
 * Without fields: `{summary, text, keyValues}` for an open analysis; for outputFormat text: `{text}`.
 */
export function resultJsonSchema(task: TaskSpec): Record<string, unknown> {
  if (task.outputFormat === 'text') {
    return {
      type: 'object',
      properties: { text: { type: 'string' } },
      required: ['text'],
      additionalProperties: false,
    };
  }
  if (task.fields === null) {
    return {
      type: 'object',
      properties: {
        summary: { type: 'string', description: 'What the document is and what it says, answering the prompt' },
        text: { type: 'string', description: 'The legible text of the document' },
        keyValues: {
          type: 'array',
          items: {
            type: 'object',
            properties: { key: { type: 'string' }, value: { type: 'string' } },
            required: ['key', 'value'],
            additionalProperties: false,
          },
        },
      },
      required: ['summary', 'text', 'keyValues'],
      additionalProperties: false,
    };
  }
  const keys = resultKeys(task.fields);
  const properties: Record<string, unknown> = {};
  task.fields.forEach((field, i) => {
    properties[keys[i] as string] = fieldSchema(field, keys[i] as string);
  });
  return { type: 'object', properties, required: keys, additionalProperties: false };
}

/**
 * Property names the providers' tool and structured-output schemas accept. Anthropic's `input_schema` and Bedrock's
 * `toolSpec.inputSchema` refuse the whole request (400 / ValidationException) when a property key does not match
 * `^[a-zA-Z0-9_.-]{1,64}$`; an inline schema may name a field "Invoice Number", "Rechnungs-Nr." or "日付".
 */
const SAFE_KEY = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * The key each field has in the result schema the model answers with, in the fields' order: the field's name when
 * providers accept it as a property name, otherwise `field_<n>` (n its 1-based position, made unique against the
 * other names). The model is told which field each such key stands for; `resultFromAnswer` maps the keys back.
 */
export function resultKeys(fields: readonly FieldSpec[]): string[] {
  const taken = new Set(fields.map((f) => f.name).filter((name) => SAFE_KEY.test(name)));
  return fields.map((field, i) => {
    if (SAFE_KEY.test(field.name)) return field.name;
    let key = `field_${i + 1}`;
    while (taken.has(key)) key = `${key}_`;
    taken.add(key);
    return key;
  });
}

/**
 * The envelope's result from a validated answer to a schema with fields: exactly the schema's field names (keys
 * the model answered under mapped back), a missing value null.
 */
export function resultFromAnswer(
  fields: readonly FieldSpec[],
  answer: Record<string, unknown>,
): Record<string, unknown> {
  const keys = resultKeys(fields);
  return Object.fromEntries(
    fields.map((field, i) => {
      const key = keys[i] as string;
      return [field.name, Object.hasOwn(answer, key) ? (answer[key] ?? null) : null];
    }),
  );
}

function fieldSchema(field: FieldSpec, key: string): Record<string, unknown> {
  const base = JSON_TYPES[field.type];
  const named = key === field.name ? undefined : `The field ${JSON.stringify(field.name)}`;
  const description = [named, field.description, base.description].filter(Boolean).join('; ');
  // Nullable through a type union: supported by OpenAI strict mode, Anthropic tools, Gemini and Bedrock.
  return {
    ...base,
    type: [base.type as string, 'null'],
    ...(description ? { description } : {}),
  };
}

function describeFields(fields: FieldSpec[]): string {
  const keys = resultKeys(fields);
  return fields
    .map((f, i) => {
      const key = keys[i] as string;
      const name = key === f.name ? f.name : `${key} (the field ${JSON.stringify(f.name)})`;
      return `- ${name} (${f.type}${f.required ? ', required' : ''})${f.description ? `: ${f.description}` : ''}`;
    })
    .join('\n');
}

/** What every JSON instruction ends with. */
const ANSWER_RULES =
  'Use only what the document shows. When a value is not present, use null; never guess or invent values. ' +
  'Dates as YYYY-MM-DD. Numbers without currency symbols or thousands separators.';

/**
 * The instruction text in pieces, cut where the client's prompt goes in: the texts before, between and after the
 * prompt (the scaffold with {fields} filled, the answer rules) and the prompt itself ({fields} filled too). Empty
 * pieces are left out. `buildInstruction` joins them, so the pieces are exactly what is sent; OpenAI's prediction counts
 * each on its own (shared/providers/openai/text-tokens.ts: our fixed texts exactly, the client's by a measured rule).
 */
export function instructionPieces(task: TaskSpec): string[] {
  if (task.outputFormat === 'text') return [task.prompt, '\n\nAnswer with the requested text only.'].filter(Boolean);
  const fields = task.fields ? describeFields(task.fields) : '';
  const scaffold =
    task.promptScaffold ?? (task.fields ? 'Extract these fields:\n{fields}\n\nTask: {prompt}' : '{prompt}');
  const prompt = task.prompt.replaceAll('{fields}', fields);
  const around = scaffold.split('{prompt}').map((text) => text.replaceAll('{fields}', fields));
  const pieces = around.flatMap((text, i) => (i === 0 ? [text] : [prompt, text]));
  pieces[pieces.length - 1] += `\n\n${ANSWER_RULES}`;
  return pieces.filter(Boolean);
}

/** The instruction text: the schema's scaffold with {prompt} and {fields} filled, or a default frame. */
export function buildInstruction(task: TaskSpec): string {
  return instructionPieces(task).join('');
}

/** Turns a model's open-analysis answer (`keyValues` as a list) into the envelope's object. */
export function normaliseOpenResult(value: Record<string, unknown>): Record<string, unknown> {
  const list = Array.isArray(value.keyValues) ? value.keyValues : [];
  const keyValues: Record<string, string> = {};
  for (const entry of list) {
    if (entry && typeof entry === 'object' && typeof entry.key === 'string')
      keyValues[entry.key] = String(entry.value ?? '');
  }
  return { ...value, keyValues };
}

/**
 * Cuts text to at most `maxBytes` UTF-8 bytes, on a character boundary. Language models get another step's text cut
 * to the per-page allowance their estimate holds (a byte-level tokenizer never makes more tokens than bytes), so a
 * dense page costs at most what was held instead of failing the attempt.
 */
export function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.byteLength <= maxBytes) return text;
  return new TextDecoder().decode(bytes.subarray(0, maxBytes)).replace(/\uFFFD+$/, '');
}
