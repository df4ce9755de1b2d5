/**
 * The provider interface: every AI/OCR backend (local, textract, openai, anthropic, gemini, bedrock) implements
 * `ProviderAdapter`. Capabilities, auth needs and cost models live in the light-weight catalog (catalog.ts) so that the
 * API handlers can estimate without loading any provider SDK.
 */
import type { PageWords } from '../fields/types.js';
import type { FileFacts } from '../file-facts.js';
import type { Micros } from '../money.js';
import type { ModelTier, ProviderId, ProviderUsage, Step, Strategy, TaskSpec } from '../task.js';
import type { TokenCounts } from './tokens.js';

export interface ProviderInput {
  bytes: Uint8Array;
  facts: FileFacts;
  task: TaskSpec;
  step: Step;
  /** For an `analyze` step after `ocr`: the text the OCR step produced. */
  documentText?: string;
  /** Where the file is stored, for providers that read it from S3 themselves (Textract's asynchronous API). */
  source?: { bucket: string; key: string; versionId?: string };
  /**
   * A chunk of a longer PDF (shared/worker/chunked.ts): the pages of the original file these are (1-based, both
   * included). `bytes` is then a PDF of exactly those pages and `facts.pages` their number, so an adapter renders and
   * sends only them; `source` is absent (the stored object is the whole file).
   */
  pages?: { first: number; last: number };
}

export interface ProviderOutput {
  /** For outputFormat "text": `{text}`. For "json": the extracted object (schema field names when a schema was given). */
  result: Record<string, unknown>;
  /** The document's full text when the provider saw it (used for confidence: do extracted values appear in the text?). */
  documentText?: string;
  /** Provider-native confidence in [0, 1] (OCR word confidence, log-prob based, …), when it offers one. */
  nativeConfidence?: number;
  /** The provider's own confidence in each top-level value in [0, 1] (OpenAI: its tokens' logprobs), when it has one. */
  valueConfidence?: Record<string, number>;
  /** The words the provider read with their boxes (Textract, tesseract), pages as in `ProviderInput.pages`' file. */
  words?: PageWords[];
  usage: ProviderUsage;
}

export interface InvokeOptions {
  /** Aborted when the attempt's deadline passes. */
  signal: AbortSignal;
  /** Epoch milliseconds by which the attempt must finish. */
  deadlineMs: number;
  /**
   * The most this attempt may cost us, in micros (the run's spend limit less what it already spent). A language model
   * derives each request's output cap from what remains after its input, and skips a repair request that could cross
   * it. Unset: no limit beyond the adapter's own caps.
   */
  maxCostMicros?: Micros;
}

export interface ProviderAdapter {
  readonly id: ProviderId;
  invoke(input: ProviderInput, options: InvokeOptions): Promise<ProviderOutput>;
}

/** What a cost bound may be told beyond the file and the task. */
export interface CostOptions {
  /** Where the configured model is read from (default: process.env). */
  env?: NodeJS.ProcessEnv;
  /** For an `analyze` step: the UTF-8 bytes of the text it is given, when known (default: the per-page allowance). */
  documentTextBytes?: number;
}

/** What a prediction may be told beyond the file and the task. */
export interface PredictOptions {
  /** Where the configured model is read from (default: process.env). */
  env?: NodeJS.ProcessEnv;
  /** The task's model tier (`TaskSpec.modelTier`), for `tokenCostMicros`, which is not given the task. */
  modelTier?: ModelTier;
  /** For an `analyze` step: the characters of the text it is given, when known (default: a typical page's per page). */
  documentTextChars?: number;
}

export interface ProviderProfile {
  id: ProviderId;
  auth: 'none' | 'api-key' | 'iam';
  /** Environment variables whose presence means the provider has credentials. Empty for `none` and `iam`. */
  credentialEnv: readonly string[];
  /** For `iam` providers: whether AWS credentials or a role are present. */
  available?: (env: NodeJS.ProcessEnv) => boolean;
  strategies: readonly Strategy[];
  /**
   * What the provider is to the planner. An `ocr_engine` reads the text off the pages (the first step of a chained
   * OCR-then-analyze plan); a `language_model` can read the file itself or analyze text another step produced.
   */
  role: 'ocr_engine' | 'language_model';
  /**
   * Whether one attempt answers the task itself, rather than only returning the document's text: always for a
   * language model; for an OCR engine only a transcription or a schema it extracts natively. The planner prefers
   * providers that answer (see shared/planning/plan.ts).
   */
  answers(task: TaskSpec): boolean;
  /** Upper bound of what one attempt can cost us, in micros, for this file and task (whatever step it runs). */
  maxCostMicros(facts: FileFacts, task: TaskSpec, options?: CostOptions): Micros;
  /**
   * Upper bound of one attempt of one step, in micros: what a chained plan holds for each of its two steps. The one
   * name of every provider's cost model; `maxCostMicros` is built from it.
   */
  stepCostMicros(facts: FileFacts, task: TaskSpec, step: Step, options?: CostOptions): Micros;
  /**
   * For a language model: whether the output cap one call of `step` gets on a file of `facts.pages` pages is the room
   * the task's answer needs (its own allowance per page and field), rather than the model's ceiling that cuts it short.
   * Chunk planning (shared/planning/chunks.ts) keeps each call's pages within it. Absent: the provider has no output
   * cap to outgrow (an OCR engine, local).
   */
  outputFits?(facts: FileFacts, task: TaskSpec, step: Step, env?: NodeJS.ProcessEnv): boolean;
  /**
   * Language models: the predicted tokens of one attempt of a step (its first request; a repair is rare and the spend
   * limit bounds it), by the provider's own counting rules, before calibration (docs/pricing.md).
   */
  predictTokens?(facts: FileFacts, task: TaskSpec, step: Step, options?: PredictOptions): TokenCounts;
  /** Language models: what these tokens cost on the configured model, in micros (unrounded; list price). */
  tokenCostMicros?(tokens: TokenCounts, options?: PredictOptions): number;
  /** Providers billed by the page (no tokens): the predicted cost of one attempt, in micros. Default: the bound. */
  predictCostMicros?(facts: FileFacts, task: TaskSpec, step: Step): Micros;
}
