/**
 * The Gemini provider's light profile (no SDK): the model, its prices (pricing.json), the output cap, and the bound of
 * one attempt: a request and one repair, each with the input the adapter sends and the full cap, at list price (never
 * a promotion, which may end before the run). See docs/decisions.md#gemini-cost-bound.
 */
import type { FileFacts } from '../../file-facts.js';
import type { ImageTarget } from '../../media/index.js';
import type { Micros } from '../../money.js';
import type { Step, TaskSpec } from '../../task.js';
// zod/mini like the contract (see shared/contract.ts): the create-run handler loads this profile to estimate.
import * as z from '../../zod.js';
import { truncate } from '../common.js';
import { analyzeTextAllowance, languageModelProfile, textTokenBound } from '../language-model.js';
import { documentTextTokens, predictAnswerTokens } from '../predict.js';
import { buildInstruction, resultJsonSchema } from '../task-prompt.js';
import { GEMINI3_MEDIA_TOKENS, jsonTokens, proseTokens, type TokenCounts } from '../tokens.js';
import type { CostOptions, PredictOptions } from '../types.js';
import raw from './pricing.json' with { type: 'json' };

const perMTok = z.number().check(z.nonnegative());

const modelEntry = z
  .object({
    inputPerMTokUsd: perMTok,
    /** Input tokens served from Gemini's (implicit) context cache; they are part of promptTokenCount. */
    cachedInputPerMTokUsd: perMTok,
    outputPerMTokUsd: perMTok,
    promotion: z.optional(
      z.object({
        inputPerMTokUsd: perMTok,
        cachedInputPerMTokUsd: perMTok,
        outputPerMTokUsd: perMTok,
        endsBefore: z.iso.date(),
      }),
    ),
    contextWindowTokens: z.number().check(z.int(), z.positive()),
    maxOutputTokens: z.number().check(z.int(), z.positive()),
    imageTokens: z.number().check(z.int(), z.positive()),
    pdfPageTokens: z.number().check(z.int(), z.positive()),
    source: z.string().check(z.minLength(1)),
    date: z.iso.date(),
  })
  .check(
    // The estimate prices every input token at the input price: a cached price above it would break "estimate >= cost".
    z.refine(
      (m) =>
        m.cachedInputPerMTokUsd <= m.inputPerMTokUsd &&
        (m.promotion === undefined || m.promotion.cachedInputPerMTokUsd <= m.promotion.inputPerMTokUsd),
      { message: 'a cached input price may not exceed its input price' },
    ),
  );

const pricingTable = z
  .object({
    $comment: z.optional(z.string()),
    currency: z.literal('USD'),
    defaultModel: z.string().check(z.minLength(1)),
    /** The smaller model a `classification` task runs on (TaskSpec.modelTier), whatever GEMINI_MODEL says. */
    classificationModel: z.optional(z.string().check(z.minLength(1))),
    models: z.record(z.string(), modelEntry),
    tokenModel: z.object({
      pdfPageTextTokens: z.number().check(z.int(), z.nonnegative()),
      framingTokens: z.number().check(z.int(), z.nonnegative()),
      source: z.string().check(z.minLength(1)),
      date: z.iso.date(),
    }),
  })
  .check(
    z.refine((table) => table.defaultModel in table.models, { message: 'defaultModel must be one of models' }),
    z.refine((table) => table.classificationModel === undefined || table.classificationModel in table.models, {
      message: 'classificationModel must be one of models',
    }),
  );

export type ModelPrices = z.infer<typeof modelEntry>;
export type GeminiPricingTable = z.infer<typeof pricingTable>;

/** The validated pricing table; a malformed pricing.json fails at import, not mid-run. */
export const geminiPricing: GeminiPricingTable = pricingTable.parse(raw);

/** Output tokens reserved for thinking (thinking level LOW), on top of the answer's own allowance. */
export const THINKING_HEADROOM_TOKENS = 4096;
/** Output allowance per page for a transcription (a dense page of text is ~1,000-1,300 tokens). */
export const TEXT_TOKENS_PER_PAGE = 1500;
/** Output allowance per page for an open analysis (summary, transcription and key/value pairs). */
export const OPEN_ANALYSIS_TOKENS_PER_PAGE = 2000;
/** Output allowance for a scalar field (string, number, date, boolean). */
export const SCALAR_FIELD_TOKENS = 128;
/** Tokens the repair turn adds besides the first answer: the fixed message and the (truncated) validation error. */
export const REPAIR_MESSAGE_MAX_TOKENS = 1000;

/** What Gemini is sent for an image: formats it reads natively, the long side worth sending, a byte ceiling. */
export const IMAGE_TARGET: ImageTarget = {
  formats: ['image/jpeg', 'image/png', 'image/heic', 'image/webp'],
  maxLongSide: 3072,
  maxBytes: 15 * 1024 * 1024,
};
/** Largest PDF the Gemini API takes as inline data (https://ai.google.dev/gemini-api/docs/file-input-methods). */
export const MAX_PDF_BYTES = 50 * 1000 * 1000;
/** Longest validation error quoted back to the model in the repair request (REPAIR_MESSAGE_MAX_TOKENS covers it). */
export const REPAIR_ERROR_MAX_CHARS = 200;

/** The repair turn: what was wrong, and what to answer instead. */
export function repairMessage(error: string): string {
  return (
    `Your answer does not match the required response schema: ${truncate(error, REPAIR_ERROR_MAX_CHARS)}. ` +
    'Answer again with only the JSON object the schema describes: every property present, null for a value the ' +
    'document does not show, nothing else.'
  );
}

/** The model the adapter runs: `GEMINI_MODEL` when set, else pricing.json's default. */
export function modelId(env: NodeJS.ProcessEnv = process.env): string {
  return env.GEMINI_MODEL?.trim() || geminiPricing.defaultModel;
}

/** The model a task runs on: pricing.json's `classificationModel` for a classification task, else `modelId`. */
export function modelFor(task: Pick<TaskSpec, 'modelTier'>, env: NodeJS.ProcessEnv = process.env): string {
  return tierModel(task.modelTier, env);
}

/** The model of a tier (`modelFor` when the task is not at hand: `predictedTokenCostMicros`). */
function tierModel(tier: TaskSpec['modelTier'], env?: NodeJS.ProcessEnv): string {
  return (tier === 'classification' ? geminiPricing.classificationModel : undefined) ?? modelId(env);
}

/** The pricing entry of a model, or undefined when pricing.json does not list it (the adapter then refuses to run). */
export function pricesFor(model: string): ModelPrices | undefined {
  return Object.hasOwn(geminiPricing.models, model) ? geminiPricing.models[model] : undefined;
}

/** Prices in USD per million tokens, which is also micro-dollars per token. */
export interface TokenRates {
  inputPerMTokUsd: number;
  cachedInputPerMTokUsd: number;
  outputPerMTokUsd: number;
}

/** The rates a request made at `nowMs` is billed at: the promotion while it runs (until 00:00 UTC of its end date). */
export function ratesAt(pricing: ModelPrices, nowMs: number): TokenRates {
  const promo = pricing.promotion;
  if (promo && nowMs < Date.parse(`${promo.endsBefore}T00:00:00Z`)) return promo;
  return pricing;
}

/**
 * Micro-dollars for a number of input and output tokens, rounded up ($/MTok x tokens = micros). `cachedInputTokens`
 * are the part of `inputTokens` Gemini served from its context cache (usageMetadata.cachedContentTokenCount, which
 * promptTokenCount includes), billed at the cached rate; the estimate passes none, so it prices every token in full.
 */
export function tokenCostMicros(
  inputTokens: number,
  outputTokens: number,
  rates: TokenRates,
  cachedInputTokens = 0,
): Micros {
  const cached = Math.min(Math.max(0, cachedInputTokens), inputTokens);
  const micros =
    (inputTokens - cached) * rates.inputPerMTokUsd +
    cached * rates.cachedInputPerMTokUsd +
    outputTokens * rates.outputPerMTokUsd;
  // The epsilon absorbs binary noise (0.75 x 3 = 2.2500000000000004) before rounding up, as money.ts does.
  return Math.max(0, Math.ceil(micros - 1e-6));
}

/** The task a step actually runs: an `ocr` step transcribes, whatever the client asked for. */
export function taskForStep(task: TaskSpec, step: Step): TaskSpec {
  if (step !== 'ocr') return task;
  return {
    prompt:
      'Transcribe all legible text of this document, page by page, in reading order. Keep line breaks; separate ' +
      'pages with a blank line. Do not summarise, translate or correct anything.',
    outputFormat: 'text',
    fields: null,
    schemaId: null,
    schemaLabel: null,
    promptScaffold: null,
  };
}

/** Output tokens the answer itself may need (before thinking headroom). */
function answerTokens(task: TaskSpec, pages: number): number {
  if (task.outputFormat === 'text') return 256 + pages * TEXT_TOKENS_PER_PAGE;
  if (task.fields === null) return 512 + pages * OPEN_ANALYSIS_TOKENS_PER_PAGE;
  // A list or object field (line items, transactions) may hold a page's worth of entries per page.
  const perField = task.fields.map((f) =>
    f.type === 'array' || f.type === 'object' ? 512 + pages * TEXT_TOKENS_PER_PAGE : SCALAR_FIELD_TOKENS,
  );
  return 256 + perField.reduce((sum, n) => sum + n, 0);
}

/** `maxOutputTokens` for one request of `step` on this task: thinking headroom plus the answer, within the model's limit. */
export function outputTokenCap(
  facts: Pick<FileFacts, 'pages'>,
  task: TaskSpec,
  step: Step,
  prices: ModelPrices,
): number {
  const answer = answerTokens(taskForStep(task, step), Math.max(1, facts.pages));
  return Math.min(prices.maxOutputTokens, THINKING_HEADROOM_TOKENS + answer);
}

/** Upper bound of the text tokens one request carries besides the media: instruction, schema, framing. */
export function promptTokenBound(task: TaskSpec, step: Step): number {
  const effective = taskForStep(task, step);
  const schema = effective.outputFormat === 'json' ? JSON.stringify(resultJsonSchema(effective)) : '';
  return textTokenBound(buildInstruction(effective)) + textTokenBound(schema) + geminiPricing.tokenModel.framingTokens;
}

/** Upper bound of the media (or document text) tokens one request carries for this file and step. */
export function mediaTokenBound(facts: FileFacts, step: Step, pricing: ModelPrices): number {
  const pages = Math.max(1, facts.pages);
  // An analyze step reads the text another step produced, which the adapter cuts to this many bytes (= tokens, at most).
  if (step === 'analyze') return analyzeTextAllowance(pages);
  if (facts.kind === 'pdf') return pages * (pricing.pdfPageTokens + geminiPricing.tokenModel.pdfPageTextTokens);
  return pricing.imageTokens;
}

/** Upper bound, in micros at list price, of one attempt of `step`: a request and one repair request. */
function stepCostMicros(facts: FileFacts, task: TaskSpec, step: Step, options: CostOptions = {}): Micros {
  const pricing = estimatePricing(modelFor(task, options.env));
  const cap = outputTokenCap(facts, task, step, pricing);
  const firstInput = promptTokenBound(task, step) + mediaTokenBound(facts, step, pricing);
  // The repair request resends everything, plus the first answer (at most the cap) and the repair message.
  const repairInput = firstInput + cap + REPAIR_MESSAGE_MAX_TOKENS;
  return tokenCostMicros(firstInput + repairInput, 2 * cap, pricing);
}

/**
 * The pricing the estimate uses: the model's entry, or for a model pricing.json does not list (the adapter refuses
 * to run it) the most expensive listed figures, so an estimate is never computed from nothing.
 */
function estimatePricing(model: string): ModelPrices {
  const known = pricesFor(model);
  if (known) return known;
  const all = Object.values(geminiPricing.models);
  const max = (pick: (m: ModelPrices) => number): number => Math.max(...all.map(pick));
  const fallback = geminiPricing.models[geminiPricing.defaultModel] as ModelPrices;
  return {
    ...fallback,
    inputPerMTokUsd: max((m) => m.inputPerMTokUsd),
    outputPerMTokUsd: max((m) => m.outputPerMTokUsd),
    promotion: undefined,
    maxOutputTokens: max((m) => m.maxOutputTokens),
    imageTokens: max((m) => m.imageTokens),
    pdfPageTokens: max((m) => m.pdfPageTokens),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Prediction (docs/pricing.md)
// ---------------------------------------------------------------------------------------------------------------

/** Thought tokens at thinking level LOW on an extraction or a summary (billed as output): a few hundred. */
export const PREDICTED_THOUGHT_TOKENS = 300;
/** Role and part framing. */
const FRAMING_TOKENS = 5;

/**
 * Predicted tokens of one attempt's request: instruction and response schema by Gemini's ~4 characters a token (JSON
 * ~3), an image at its fixed media-resolution count (1,120 at the default high), a PDF page at 560 (default medium),
 * or the document text; the answer as predict.ts sizes it plus LOW thinking.
 */
export function predictTokens(facts: FileFacts, task: TaskSpec, step: Step, options: PredictOptions = {}): TokenCounts {
  const pricing = estimatePricing(modelFor(task, options.env));
  const effective = taskForStep(task, step);
  const schema = effective.outputFormat === 'json' ? jsonTokens(resultJsonSchema(effective), 'gemini') : 0;
  const prompt = proseTokens(buildInstruction(effective), 'gemini') + schema + FRAMING_TOKENS;
  const document =
    step === 'analyze'
      ? documentTextTokens(facts, options.documentTextChars)
      : facts.kind === 'pdf'
        ? Math.max(1, facts.pages) * Math.min(pricing.pdfPageTokens, GEMINI3_MEDIA_TOKENS.pdfPage.medium)
        : Math.min(pricing.imageTokens, GEMINI3_MEDIA_TOKENS.image.high);
  return {
    input: prompt + document,
    output: predictAnswerTokens(facts, task, step, options) + PREDICTED_THOUGHT_TOKENS,
  };
}

/** A promotion that ends sooner than this after the estimate is not predicted: the run may be billed after it. */
const PROMOTION_MARGIN_MS = 86_400_000;

/**
 * What tokens cost on the configured model, in micros: at the promotion's rates while it runs for at least another day
 * (a run is billed within minutes of its estimate), else at list price. The bound always takes list price.
 */
export function predictedTokenCostMicros(tokens: TokenCounts, options: PredictOptions = {}): number {
  const rates = ratesAt(estimatePricing(tierModel(options.modelTier, options.env)), Date.now() + PROMOTION_MARGIN_MS);
  return tokens.input * rates.inputPerMTokUsd + tokens.output * rates.outputPerMTokUsd;
}

/** The Gemini provider as the planner sees it. */
export const geminiProfile = languageModelProfile({
  id: 'gemini',
  auth: 'api-key',
  credentialEnv: ['GEMINI_API_KEY'],
  stepCostMicros,
  outputFits: (facts, task, step, env) => {
    const pricing = estimatePricing(modelFor(task, env));
    return outputTokenCap(facts, task, step, pricing) < pricing.maxOutputTokens;
  },
  predictTokens,
  tokenCostMicros: predictedTokenCostMicros,
});
