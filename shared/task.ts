/**
 * The service's task and failure vocabulary: what a client asked for (`TaskSpec`), which providers and steps exist, what
 * an attempt consumed and why it failed. The bottom of `shared/`: every layer imports it, it imports only file facts.
 */
import type { FileFacts } from './file-facts.js';

export const PROVIDER_IDS = ['openai', 'anthropic', 'gemini', 'bedrock', 'textract', 'local'] as const;
export type ProviderId = (typeof PROVIDER_IDS)[number];

/**
 * How soon a client needs the answer (contract v1.2 §4): `standard` now, `batch` within a day through the provider's
 * batch interface at its discount (or, where it has none, in the next batch window at the normal price).
 */
export const PRIORITIES = ['standard', 'batch'] as const;
export type Priority = (typeof PRIORITIES)[number];

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
  /**
   * `classification`: a short classification answer (a packet's page, shared/packets/estimate.ts), which runs on the
   * provider's smaller model where its pricing.json names one (`classificationModel`), and is priced at its prices.
   * Absent: the provider's configured model. Never set from a client's request.
   */
  modelTier?: ModelTier;
}

/** Which of a provider's models a task runs on (see `TaskSpec.modelTier`). */
export type ModelTier = 'classification';

/** Usage one attempt consumed, as the provider reported it. */
export interface ProviderUsage {
  /** Pages or images processed. */
  billableUnits: number;
  /** What this attempt cost us, in micro-dollars, from actual usage. */
  costMicros: number;
  inputTokens?: number;
  outputTokens?: number;
}

/**
 * Why an attempt failed; every kind moves the plan to the next candidate. `unreadable_file`: the service could not
 * decode the client's file to send it (a damaged image or PDF that passed the header checks at creation).
 * `truncated`: the provider stopped at the output cap the request set (or its context window), so the answer is
 * incomplete: never a result, however well it parses (a chunked run asks again with fewer pages).
 */
export type FailureKind =
  | 'timeout'
  | 'rate_limited'
  | 'server'
  | 'client'
  | 'auth'
  | 'refusal'
  | 'invalid_output'
  | 'truncated'
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
