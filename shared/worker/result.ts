/**
 * Turns a provider's raw output into the envelope's `result` and `confidence`.
 * - json + schema: exactly the schema's field names; values coerced to the field type; missing or uncoercible → null.
 * - text: `{text}`.
 * - confidence in [0, 1] (docs/confidence.md):
 *     no schema: the provider's native confidence (0.5 when it offers none);
 *     schema:    0.5 × native + 0.3 × coverage + 0.2 × grounding, where coverage is the share of fields with a value
 *                and grounding the share of those values found verbatim (normalised) in the document text.
 */
import { coerce } from '../providers/result-validation.js';
import type { ProviderOutput } from '../providers/types.js';
import type { FieldSpec, TaskSpec } from '../task.js';

/** The native confidence of a provider that reports none of its own. */
export const DEFAULT_NATIVE = 0.5;

/** Shapes the result the contract promises for the task. */
export function shapeResult(task: TaskSpec, output: ProviderOutput): Record<string, unknown> {
  if (task.outputFormat === 'text') {
    const text = typeof output.result.text === 'string' ? output.result.text : (output.documentText ?? '');
    return { text };
  }
  if (task.fields === null) return output.result;
  const shaped: Record<string, unknown> = {};
  for (const field of task.fields) shaped[field.name] = coerce(output.result[field.name], field.type);
  return shaped;
}

function normalise(text: string): string {
  return text.toLowerCase().replace(/[\s,$€£]+/g, '');
}

function grounded(value: unknown, documentText: string): boolean {
  if (typeof value === 'number') {
    const doc = normalise(documentText);
    return doc.includes(String(value)) || doc.includes(value.toFixed(2));
  }
  if (typeof value === 'string') return normalise(documentText).includes(normalise(value));
  return false;
}

/** The envelope's confidence, rounded to 3 decimals. */
export function computeConfidence(
  fields: FieldSpec[] | null,
  result: Record<string, unknown>,
  output: ProviderOutput,
): number {
  const native = clamp(output.nativeConfidence ?? DEFAULT_NATIVE);
  if (fields === null || fields.length === 0) return round3(native);
  const present = fields.filter((f) => result[f.name] !== null && result[f.name] !== undefined);
  const coverage = present.length / fields.length;
  const checkable = present.filter((f) => typeof result[f.name] === 'string' || typeof result[f.name] === 'number');
  const grounding =
    output.documentText && checkable.length > 0
      ? checkable.filter((f) => grounded(result[f.name], output.documentText ?? '')).length / checkable.length
      : coverage > 0
        ? 0.5
        : 0;
  return round3(clamp(0.5 * native + 0.3 * coverage + 0.2 * grounding));
}

function clamp(x: number): number {
  return Math.min(1, Math.max(0, Number.isFinite(x) ? x : 0));
}
function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
