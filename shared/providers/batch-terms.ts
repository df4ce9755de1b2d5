/**
 * What each provider's batch interface costs and promises (contract v1.2 §4), read from the `batch` block of its
 * pricing.json, beside its prices and with the date it was read. No SDK: the API estimates a batch run with it.
 *
 * Decisions a reader must not undo:
 * - A provider (or a configured model) without a batch interface has a discount of 0: its batch run waits for the
 *   next batch window and runs at the normal price. Never assume a discount the table does not state.
 * - The discount applies to the cost before the margin and before rounding to the micro (shared/planning/estimate.ts),
 *   so a 50 % interface gives a batch price of half the standard one, give or take the last micro of rounding.
 * - The estimate promises the discount only where every request goes through the interface: a provider whose batch
 *   needs company (a minimum of more than one request, Bedrock's 100 records a job) may have to call a request
 *   normally, at the normal price, when its group stays small until its run's deadline nears. Its batch estimate is the
 *   normal price (and the spend limit fits that call); an answer its interface gave is still charged at the discount.
 */

import bedrockRaw from '../infra/bedrock-pricing.json' with { type: 'json' };
import type { ProviderId } from '../task.js';
import * as z from '../zod.js';
import anthropicRaw from './anthropic/pricing.json' with { type: 'json' };
import { baseModelId, modelId as bedrockModelId } from './bedrock/profile.js';
import geminiRaw from './gemini/pricing.json' with { type: 'json' };
import openaiRaw from './openai/pricing.json' with { type: 'json' };
import textractRaw from './textract/pricing.json' with { type: 'json' };

const batchBlock = z.object({
  /** The provider's batch API, as its reference names it; null: the provider has none. */
  interface: z.nullable(z.string().check(z.minLength(1))),
  discountPct: z.number().check(z.minimum(0), z.maximum(100)),
  /** The window the provider promises to finish a batch in; null without an interface. */
  completionWindowHours: z.nullable(z.number().check(z.int(), z.positive())),
  /** The models the interface takes; null: every model of the price table. */
  models: z.nullable(z.array(z.string().check(z.minLength(1)))),
  /** What one batch may hold (the provider's documented limits); null without an interface. */
  minRequests: z.nullable(z.number().check(z.int(), z.positive())),
  maxRequests: z.nullable(z.number().check(z.int(), z.positive())),
  maxBytes: z.nullable(z.number().check(z.int(), z.positive())),
  source: z.string().check(z.minLength(1)),
  date: z.iso.date(),
});
const withBatch = z.object({ batch: batchBlock });

export type BatchBlock = z.infer<typeof batchBlock>;

/** The validated `batch` block of every provider with a price file; a malformed one fails at import. */
export const batchBlocks: Readonly<Partial<Record<ProviderId, BatchBlock>>> = {
  openai: withBatch.parse(openaiRaw).batch,
  anthropic: withBatch.parse(anthropicRaw).batch,
  gemini: withBatch.parse(geminiRaw).batch,
  bedrock: withBatch.parse(bedrockRaw).batch,
  textract: withBatch.parse(textractRaw).batch,
};

/** What a batch attempt of a provider gets, for the configured model. */
export interface BatchTerms {
  /** Whether the attempt goes through the provider's batch interface (else: the next window, normal price). */
  viaInterface: boolean;
  /** Percent off the provider's price of an answer its interface gave (0 without an interface). */
  discountPct: number;
}

const NONE: BatchTerms = { viaInterface: false, discountPct: 0 };

/**
 * The providers whose batch interface this build drives (the codecs of shared/batching/providers.ts; a unit test
 * keeps the two equal). Kept here as names only, so the API's estimate does not bundle the codecs. Any other
 * provider's batch run is called normally at the normal price, so its estimate must not promise a discount.
 */
export const DRIVEN_BATCH_PROVIDERS: ReadonlySet<ProviderId> = new Set<ProviderId>([
  'openai',
  'anthropic',
  'gemini',
  'bedrock',
]);

/** The configured model of a provider whose batch support differs by model (Bedrock's base model id). */
function configuredModel(provider: ProviderId, env: NodeJS.ProcessEnv): string | undefined {
  return provider === 'bedrock' ? baseModelId(bedrockModelId(env)) : undefined;
}

/** A provider's batch terms for the model `env` configures; `local` and unknown providers have none. */
export function batchTerms(provider: ProviderId, env: NodeJS.ProcessEnv = process.env): BatchTerms {
  const block = batchBlocks[provider];
  if (!block || block.interface === null || !DRIVEN_BATCH_PROVIDERS.has(provider)) return NONE;
  if (block.models !== null) {
    const model = configuredModel(provider, env);
    if (model === undefined || !block.models.includes(model)) return NONE;
  }
  return { viaInterface: true, discountPct: block.discountPct };
}

/**
 * The terms a batch estimate (and the spend limit built on it) may promise: the provider's, except that a provider
 * whose batch needs more than one request promises no discount (see the file comment).
 */
export function promisedTerms(provider: ProviderId, env: NodeJS.ProcessEnv = process.env): BatchTerms {
  const terms = batchTerms(provider, env);
  const minRequests = batchBlocks[provider]?.minRequests ?? 1;
  return terms.viaInterface && minRequests > 1 ? { ...terms, discountPct: 0 } : terms;
}

/** What one batch of a provider may hold, from its reference: the grouping's hard limits (shared/batching/). */
export interface ProviderBatchLimits {
  minRequests: number;
  maxRequests: number;
  maxBytes: number;
}

/** The batch limits of a provider with a batch interface, else undefined. */
export function providerBatchLimits(provider: ProviderId): ProviderBatchLimits | undefined {
  const block = batchBlocks[provider];
  if (!block || block.interface === null) return undefined;
  const { minRequests, maxRequests, maxBytes } = block;
  return minRequests !== null && maxRequests !== null && maxBytes !== null
    ? { minRequests, maxRequests, maxBytes }
    : undefined;
}

/** A cost in micros (unrounded) after a provider's batch discount. */
export function discounted(costMicros: number, terms: BatchTerms): number {
  return (costMicros * (100 - terms.discountPct)) / 100;
}
