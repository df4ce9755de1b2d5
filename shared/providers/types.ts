/**
 * The provider interface: every AI/OCR backend (local, textract, openai, anthropic, gemini, bedrock) implements
 * `ProviderAdapter`. Capabilities, auth needs and cost models live in the light-weight catalog (catalog.ts) so that the
 * API handlers can estimate without loading any provider SDK.
 */
import type { FileFacts } from '../file-facts.js';

export const PROVIDER_IDS = ['openai', 'anthropic', 'gemini', 'bedrock', 'textract', 'local'] as const;
export type ProviderId = (typeof PROVIDER_IDS)[number];

/** The interface's execution strategies. */
export type Strategy = 'direct_multimodal' | 'ocr_then_analyze' | 'generic_vision_summary';

/** A step of a plan. `ocr` extracts text; `analyze` turns text (or pixels) into the result; `vision` does both from pixels. */
export type Step = 'ocr' | 'analyze' | 'vision';

/**
 * The steps a single-step plan may run a language model for on this file, so the ones its hold must cover: one
 * `vision` pass from the file, or, for a PDF whose every page has a text layer, an `analyze` pass over that text
 * (decided by the worker, shared/worker/process-run.ts). An image is never sent as text, and `ocr` runs only in a
 * chained plan, which holds each of its steps on its own (`stepCostMicros`).
 */
export function singlePassSteps(facts: FileFacts): readonly Step[] {
  return facts.kind === 'pdf' ? ['vision', 'analyze'] : ['vision'];
}

export const FIELD_TYPES = ['string', 'number', 'integer', 'boolean', 'date', 'array', 'object'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/** One expected field of a schema, normalised (a bare string in a schema becomes `{name, type: 'string', required: false}`). */
export interface FieldSpec {
  name: string;
  type: FieldType;
  description?: string;
  required: boolean;
}

/** What the client asked for, normalised from prompt + schemaId/schema + outputFormat. */
export interface TaskSpec {
  prompt: string;
  outputFormat: 'json' | 'text';
  /** Null when no schema (registry or inline) was given. */
  fields: FieldSpec[] | null;
  /** The registry schema id when one was used (lets OCR providers pick a specialised API, e.g. receipts). */
  schemaId: string | null;
  schemaLabel: string | null;
  /** Prompt template with optional {prompt} and {fields} placeholders. */
  promptScaffold: string | null;
}

export interface ProviderInput {
  bytes: Uint8Array;
  facts: FileFacts;
  task: TaskSpec;
  step: Step;
  /** For an `analyze` step after `ocr`: the text the OCR step produced. */
  documentText?: string;
  /** Where the file is stored, for providers that read it from S3 themselves (Textract's asynchronous API). */
  source?: { bucket: string; key: string };
}

/** Usage one attempt consumed, as the provider reported it. */
export interface ProviderUsage {
  /** Pages or images processed. */
  billableUnits: number;
  /** What this attempt cost us, in micro-dollars, from actual usage. */
  costMicros: number;
  inputTokens?: number;
  outputTokens?: number;
}

export interface ProviderOutput {
  /** For outputFormat "text": `{text}`. For "json": the extracted object (schema field names when a schema was given). */
  result: Record<string, unknown>;
  /** The document's full text when the provider saw it (used for confidence: do extracted values appear in the text?). */
  documentText?: string;
  /** Provider-native confidence in [0, 1] (OCR word confidence, log-prob based, …), when it offers one. */
  nativeConfidence?: number;
  usage: ProviderUsage;
}

export interface InvokeOptions {
  /** Aborted when the attempt's deadline passes. */
  signal: AbortSignal;
  /** Epoch milliseconds by which the attempt must finish. */
  deadlineMs: number;
}

export interface ProviderAdapter {
  readonly id: ProviderId;
  invoke(input: ProviderInput, options: InvokeOptions): Promise<ProviderOutput>;
}

/**
 * Why an attempt failed; every kind moves the plan to the next candidate. `unreadable_file`: the service could not
 * decode the client's file to send it (a damaged image or PDF that passed the header checks at creation).
 */
export type FailureKind =
  | 'timeout'
  | 'rate_limited'
  | 'server'
  | 'client'
  | 'auth'
  | 'refusal'
  | 'invalid_output'
  | 'unreadable_file';

/** Thrown by adapters. Messages must never contain secrets (keys, auth headers). */
export class ProviderFailure extends Error {
  readonly kind: FailureKind;
  readonly retryAfterMs: number | undefined;
  /** Usage consumed by the failed attempt, if any (e.g. tokens spent on output that failed the schema). */
  readonly usage: ProviderUsage | undefined;

  constructor(
    kind: FailureKind,
    message: string,
    options?: { retryAfterMs?: number; usage?: ProviderUsage; cause?: unknown },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ProviderFailure';
    this.kind = kind;
    this.retryAfterMs = options?.retryAfterMs;
    this.usage = options?.usage;
  }
}
