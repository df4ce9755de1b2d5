/**
 * What the planner knows about each provider without loading its SDK: auth needs, what it accepts, which strategies
 * it can run, and an upper-bound cost model. API handlers estimate from this; only the worker loads adapters.
 */
import type { FileFacts } from '../file-facts.js';
import type { Micros } from '../money.js';
import { localCost } from '../pricing/pricing.js';
import { anthropicProfile } from './anthropic/profile.js';
import { hasAwsCredentials } from './aws-credentials.js';
import { bedrockProfile } from './bedrock/profile.js';
import { geminiProfile } from './gemini/profile.js';
import { openaiProfile } from './openai/profile.js';
import { textractProfile } from './textract/profile.js';
import type { ProviderId, Step, Strategy, TaskSpec } from './types.js';

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
  maxCostMicros(facts: FileFacts, task: TaskSpec): Micros;
  /** Upper bound of one attempt of one step, in micros: what a chained plan holds for each of its two steps. */
  stepCostMicros(facts: FileFacts, task: TaskSpec, step: Step): Micros;
}

export const localProfile: ProviderProfile = {
  id: 'local',
  auth: 'none',
  credentialEnv: [],
  // Local OCR can read text (OCR, then pattern extraction) but cannot look at a picture the way a vision model does.
  strategies: ['ocr_then_analyze', 'generic_vision_summary'],
  role: 'ocr_engine',
  // Field extraction by labels and patterns is what it does; an open question gets the text and key-value pairs.
  answers: (task) => task.outputFormat === 'text' || task.fields !== null,
  // Upper bound: every page OCR'd (text-layer pages cost a tenth of that and are refunded).
  maxCostMicros: (facts) => facts.pages * localCost.ocrPageMicros,
  // An analyze step only extracts from text it is given: the text-layer page price (local-provider.ts).
  stepCostMicros: (facts, _task, step) =>
    Math.max(1, facts.pages) * (step === 'analyze' ? localCost.textLayerPageMicros : localCost.ocrPageMicros),
};

/** Profiles by id (each provider's cost model and capabilities; no SDK is loaded here). */
export const catalog: Partial<Record<ProviderId, ProviderProfile>> = {
  openai: openaiProfile,
  anthropic: anthropicProfile,
  gemini: geminiProfile,
  bedrock: bedrockProfile,
  textract: { ...textractProfile, available: (env) => hasAwsCredentials(env) },
  local: localProfile,
};

/**
 * The providers that are candidates, in order of preference: exactly `VISION_PROVIDERS` when set; otherwise every
 * provider whose credentials are present, then `local`.
 */
export function availableProviders(
  configured: readonly ProviderId[] | undefined,
  env: NodeJS.ProcessEnv = process.env,
): ProviderId[] {
  if (configured) return [...configured];
  const withCredentials = Object.values(catalog)
    .filter((p): p is ProviderProfile => p !== undefined && p.id !== 'local')
    .filter((p) =>
      p.available
        ? p.available(env)
        : p.credentialEnv.length > 0 && p.credentialEnv.every((name) => Boolean(env[name])),
    )
    .map((p) => p.id);
  return [...withCredentials, 'local'];
}
