/**
 * What the planner knows about the Anthropic provider without its SDK: the model, its prices, what each request holds,
 * the output cap and the bound of one attempt (a call and one repair, priced at the tier each prompt falls in). The
 * adapter builds and prices its requests with these same functions. See docs/decisions.md#anthropic-cost-bound.
 */
import type { FileFacts } from '../../file-facts.js';
import type { ImageTarget } from '../../media/index.js';
import type { Micros } from '../../money.js';
import type { Step, TaskSpec } from '../../task.js';
// zod/mini like the contract (see shared/contract.ts): the create-run handler loads this profile to estimate.
import * as z from '../../zod.js';
import { analyzeTextAllowance, languageModelProfile, textTokenBound } from '../language-model.js';
import { documentTextTokens, predictAnswerTokens } from '../predict.js';
import { buildInstruction, resultJsonSchema } from '../task-prompt.js';
import { anthropicImageTokens, jsonTokens, proseTokens, type TokenCounts } from '../tokens.js';
import type { CostOptions, PredictOptions } from '../types.js';
import raw from './pricing.json' with { type: 'json' };

const perMTok = z.number().check(z.nonnegative());

const tier = z.object({
  /** Largest prompt (input + cache reads + cache writes) this tier bills; null for "any larger". */
  maxPromptTokens: z.nullable(z.number().check(z.int(), z.positive())),
  inputPerMTokUsd: perMTok,
  outputPerMTokUsd: perMTok,
  cacheWrite5mPerMTokUsd: perMTok,
  cacheWrite1hPerMTokUsd: perMTok,
  cacheReadPerMTokUsd: perMTok,
});

const modelPrices = z
  .object({
    contextWindowTokens: z.number().check(z.int(), z.positive()),
    maxOutputTokens: z.number().check(z.int(), z.positive()),
    tiers: z.array(tier).check(z.minLength(1)),
    source: z.string().check(z.minLength(1)),
    date: z.iso.date(),
  })
  .check(
    z.refine(
      (m) => m.tiers.at(-1)?.maxPromptTokens === null,
      'the last tier must be open-ended (maxPromptTokens null)',
    ),
  );

const pricingFile = z
  .object({
    $comment: z.optional(z.string()),
    currency: z.literal('USD'),
    defaultModel: z.string().check(z.minLength(1)),
    models: z.record(z.string().check(z.minLength(1)), modelPrices),
    tokenModel: z.object({
      imageTokensDivisor: z.number().check(z.positive()),
      imagePatchPx: z.number().check(z.int(), z.positive()),
      imageOverheadTokens: z.number().check(z.int(), z.nonnegative()),
      pdfPageTextTokens: z.number().check(z.int(), z.positive()),
      pdfPageImageTokens: z.number().check(z.int(), z.positive()),
      toolUseOverheadTokens: z.number().check(z.int(), z.nonnegative()),
      source: z.string().check(z.minLength(1)),
      date: z.iso.date(),
    }),
  })
  .check(z.refine((p) => p.defaultModel in p.models, 'defaultModel must have prices'));

/** The validated price list; a malformed pricing.json fails at import, not mid-run. */
export const anthropicPricing = pricingFile.parse(raw);

/** A model's prices, context window and output limit, as pricing.json gives them. */
export type ModelPrices = z.infer<typeof modelPrices>;

/** The model the adapter calls: `ANTHROPIC_MODEL` when set, else the price list's default (claude-haiku-5-5). */
export function modelId(env: NodeJS.ProcessEnv = process.env): string {
  return env.ANTHROPIC_MODEL?.trim() || anthropicPricing.defaultModel;
}

/** Prices of a model, or undefined when the price list does not know it (the adapter then refuses to call it). */
export function pricesFor(model: string): ModelPrices | undefined {
  return Object.hasOwn(anthropicPricing.models, model) ? anthropicPricing.models[model] : undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// What a request contains
// ---------------------------------------------------------------------------------------------------------------

/**
 * How images are sent: JPEG or PNG (HEIC is converted), the long side at Anthropic's documented optimum of 1568 px
 * (larger images are scaled down server-side anyway, adding latency and no accuracy), at most 3.75 MiB per image:
 * the API's 5 MiB per-image limit applies to the base64 string (4/3 of the bytes), not to the bytes.
 */
export const IMAGE_TARGET: ImageTarget = {
  formats: ['image/jpeg', 'image/png'],
  maxLongSide: 1568,
  maxBytes: (5 * 1024 * 1024 * 3) / 4,
};

/** "Maximum pages per request: 100" (PDF support): a longer PDF is refused by the API, so it is never sent. */
export const MAX_PDF_PAGES = 100;

/** Standard endpoints refuse requests over 32 MB; a PDF is sent base64-encoded (4/3 of its size) inside the JSON. */
export const MAX_REQUEST_BYTES = 32 * 1024 * 1024;
/** Room left in a request for everything but the PDF (instruction, tool, framing). */
const REQUEST_HEADROOM_BYTES = 256 * 1024;

/** True when a PDF of `sizeBytes` fits one request once base64-encoded. */
export function pdfFitsRequest(sizeBytes: number): boolean {
  return Math.ceil(sizeBytes / 3) * 4 + REQUEST_HEADROOM_BYTES <= MAX_REQUEST_BYTES;
}

/** The tool the model is forced to call; its input is the result. */
export const RESULT_TOOL_NAME = 'record_result';

const OCR_PROMPT =
  'Transcribe all legible text of the document, in reading order, one line per line of text. ' +
  'Keep numbers, dates and punctuation exactly as printed.';

/** The task a step runs: an `ocr` step transcribes (text output), other steps run the client's task. */
export function taskForStep(task: TaskSpec, step: Step): TaskSpec {
  if (step !== 'ocr') return task;
  return {
    prompt: OCR_PROMPT,
    outputFormat: 'text',
    fields: null,
    schemaId: null,
    schemaLabel: null,
    promptScaffold: null,
  };
}

/** The result tool for a task: the model's tool input is the result, shaped by `resultJsonSchema`. */
export function resultTool(task: TaskSpec): {
  name: string;
  description: string;
  input_schema: { type: 'object'; [key: string]: unknown };
} {
  return {
    name: RESULT_TOOL_NAME,
    description:
      'Record the complete result of the task for this document. Call it exactly once; use null for any value the ' +
      'document does not show.',
    input_schema: { ...resultJsonSchema(task), type: 'object' },
  };
}

/** The user instruction for a task (the schema scaffold and rules from task-prompt), plus a pointer to the tool. */
export function instructionFor(task: TaskSpec): string {
  return `${buildInstruction(task)}\n\nRecord your answer by calling the ${RESULT_TOOL_NAME} tool.`;
}

/** Validation errors quoted back to the model in a repair request are cut to this many characters. */
export const REPAIR_ERROR_MAX_CHARS = 1000;

/** The text of a repair request, before the quoted validation errors. */
export const REPAIR_PREFIX =
  `Your ${RESULT_TOOL_NAME} input does not match the tool's input schema. ` +
  `Call ${RESULT_TOOL_NAME} again with the complete, corrected result. Problems found:\n`;

// ---------------------------------------------------------------------------------------------------------------
// Output cap
// ---------------------------------------------------------------------------------------------------------------

/** No request asks for more than this many output tokens (a transcription longer than that fails as truncated). */
export const OUTPUT_TOKENS_CEILING = 32_000;

/**
 * `max_tokens` of every request of an attempt: room for the answer the task asks for, growing with the page count.
 * A transcription gets ~1,500 tokens per page (a dense letter page is ~700-1,000 tokens on the newer tokenizer); an open
 * analysis adds a summary and key-value pairs; a field extraction gets ~250 tokens per field and 512 per page (line
 * items grow with pages). Thinking is disabled on our requests, so no output token goes to reasoning.
 */
export function outputTokenCap(
  facts: Pick<FileFacts, 'pages'>,
  task: TaskSpec,
  step: Step,
  prices?: ModelPrices,
): number {
  const pages = Math.max(1, facts.pages);
  const t = taskForStep(task, step);
  const wanted =
    t.outputFormat === 'text'
      ? 1024 + 1536 * pages
      : t.fields === null
        ? 2048 + 1536 * pages
        : 1024 + 256 * t.fields.length + 512 * pages;
  return Math.min(wanted, OUTPUT_TOKENS_CEILING, prices?.maxOutputTokens ?? OUTPUT_TOKENS_CEILING);
}

// ---------------------------------------------------------------------------------------------------------------
// Token bounds
// ---------------------------------------------------------------------------------------------------------------

const tokens = anthropicPricing.tokenModel;

/** Pixel size of an image once prepared for sending (downscaled to the long-side target, never enlarged). */
export function sentImageSize(width: number, height: number): { width: number; height: number } {
  const scale = Math.min(1, IMAGE_TARGET.maxLongSide / Math.max(width, height, 1));
  return { width: Math.ceil(width * scale), height: Math.ceil(height * scale) };
}

/**
 * Upper bound of an image's input tokens. Documented: width × height / 750; newer models bill 28 px patches (each
 * side rounded up) plus a few tokens per block, which (w + 28)(h + 28) / 750 + overhead bounds.
 */
export function imageTokenBound(width: number, height: number): number {
  const { imagePatchPx: patch, imageTokensDivisor: divisor, imageOverheadTokens: overhead } = tokens;
  return Math.ceil(((width + patch) * (height + patch)) / divisor) + overhead;
}

/** Upper bound of the file's input tokens as a `vision` request sends it. */
export function fileTokenBound(facts: FileFacts): number {
  if (facts.kind === 'pdf') return Math.max(1, facts.pages) * (tokens.pdfPageTextTokens + tokens.pdfPageImageTokens);
  // Dimensions are as stored (EXIF orientation may swap them, which changes neither side's length nor the area).
  const side = IMAGE_TARGET.maxLongSide;
  const { width, height } =
    facts.width !== undefined && facts.height !== undefined
      ? sentImageSize(facts.width, facts.height)
      : { width: side, height: side };
  return imageTokenBound(width, height);
}

/**
 * Upper bound of the prompt of a step's first request: instruction, result tool (its JSON twice, as the API may render
 * it more verbosely), the tool-use system prompt and framing, and the file, or for an `analyze` step the document text
 * (ANALYZE_TEXT_BYTES_PER_PAGE per page, as the adapter cuts it, plus its <document> wrapper).
 */
export function promptTokenBound(facts: FileFacts, task: TaskSpec, step: Step): number {
  const t = taskForStep(task, step);
  const fixed =
    textTokenBound(instructionFor(t)) +
    2 * textTokenBound(JSON.stringify(resultTool(t))) +
    tokens.toolUseOverheadTokens;
  const content =
    step === 'analyze'
      ? analyzeTextAllowance(facts.pages) + textTokenBound('<document>\n\n</document>')
      : fileTokenBound(facts);
  return fixed + content;
}

/** Upper bound of what a repair request adds to the first prompt: the model's answer echoed, and the errors. */
export function repairTokenBound(outputCap: number): number {
  // Validation errors are quoted up to REPAIR_ERROR_MAX_CHARS characters, each at most 4 UTF-8 bytes.
  return outputCap + textTokenBound(REPAIR_PREFIX) + 4 * REPAIR_ERROR_MAX_CHARS + 200;
}

// ---------------------------------------------------------------------------------------------------------------
// Cost
// ---------------------------------------------------------------------------------------------------------------

/** Token counts of one request, as the API reports them in `usage`. */
export interface RequestTokens {
  inputTokens: number;
  outputTokens: number;
  /** Prompt-cache writes; split by TTL when the API reports the split, else `cacheWriteTokens` (priced at 1 h). */
  cacheWrite5mTokens?: number;
  cacheWrite1hTokens?: number;
  cacheWriteTokens?: number;
  cacheReadTokens?: number;
}

/** The tier a prompt of this many tokens is billed at. */
export function tierFor(prices: ModelPrices, promptTokens: number): ModelPrices['tiers'][number] {
  const found = prices.tiers.find((t) => t.maxPromptTokens === null || promptTokens <= t.maxPromptTokens);
  // The schema guarantees an open-ended last tier; the fallback only satisfies the type checker.
  return found ?? (prices.tiers.at(-1) as ModelPrices['tiers'][number]);
}

/**
 * Cost of one request in micro-dollars, unrounded (tokens × USD per million tokens is micro-dollars). The whole
 * request, output included, is billed at the tier of its prompt (input + cache writes + cache reads).
 */
export function requestCostMicros(prices: ModelPrices, usage: RequestTokens): number {
  const writes5m = usage.cacheWrite5mTokens ?? 0;
  const writes1h = (usage.cacheWrite1hTokens ?? 0) + (usage.cacheWriteTokens ?? 0);
  const reads = usage.cacheReadTokens ?? 0;
  const t = tierFor(prices, usage.inputTokens + writes5m + writes1h + reads);
  return (
    usage.inputTokens * t.inputPerMTokUsd +
    usage.outputTokens * t.outputPerMTokUsd +
    writes5m * t.cacheWrite5mPerMTokUsd +
    writes1h * t.cacheWrite1hPerMTokUsd +
    reads * t.cacheReadPerMTokUsd
  );
}

/** Micro-dollars rounded up, absorbing binary noise (0.1 × 3) before rounding, as money.ts does. */
export function ceilMicros(micros: number): Micros {
  return Math.max(0, Math.ceil(micros - 1e-6));
}

/** Upper bound of one attempt of `step` with `model`'s prices: the first request and one repair request. */
function attemptCostMicros(facts: FileFacts, task: TaskSpec, step: Step, prices: ModelPrices): Micros {
  const cap = outputTokenCap(facts, task, step, prices);
  // A prompt larger than the context window is refused with a 400 and not billed: no billed prompt exceeds it.
  const first = Math.min(promptTokenBound(facts, task, step), prices.contextWindowTokens);
  const repair = Math.min(first + repairTokenBound(cap), prices.contextWindowTokens);
  return ceilMicros(
    requestCostMicros(prices, { inputTokens: first, outputTokens: cap }) +
      requestCostMicros(prices, { inputTokens: repair, outputTokens: cap }),
  );
}

/**
 * Upper bound of one attempt of `step`. A model without prices is bounded by the most expensive known one (the
 * adapter refuses to call it, so the attempt costs nothing).
 */
function stepCostMicros(facts: FileFacts, task: TaskSpec, step: Step, options: CostOptions = {}): Micros {
  const known = pricesFor(modelId(options.env));
  const candidates = known ? [known] : Object.values(anthropicPricing.models);
  return Math.max(...candidates.map((prices) => attemptCostMicros(facts, task, step, prices)));
}

// ---------------------------------------------------------------------------------------------------------------
// Prediction (docs/pricing.md)
// ---------------------------------------------------------------------------------------------------------------

/** The tool-use system prompt with `tool_choice: {type: "tool"}` (tool-use overview, Pricing: 313 tokens). */
const TOOL_SYSTEM_PROMPT_TOKENS = 313;
/** Role and block framing of a request. */
const FRAMING_TOKENS = 10;
/** The tool_use block (id, name) around the answer's JSON. */
const TOOL_CALL_OUTPUT_TOKENS = 20;
/** The page image Claude reads for each PDF page: a US-letter page at the 1568 px long side. */
const PDF_PAGE_IMAGE = { width: 1212, height: 1568 };

function predictionPrices(env?: NodeJS.ProcessEnv): ModelPrices {
  return pricesFor(modelId(env)) ?? (anthropicPricing.models[anthropicPricing.defaultModel] as ModelPrices);
}

/**
 * Predicted tokens of one attempt's request: instruction and result tool by Claude's ~3.5 characters a token (JSON
 * ~2.8), the tool-use system prompt, the image by width x height / 750 at the size sent (long side 1568, at most
 * ~1,600 tokens), a PDF page as its page image (a scan: a text-layer PDF goes as text, `analyze`), or the document
 * text; the answer as predict.ts sizes it, in a tool_use block (a transcription is a tool call too).
 */
export function predictTokens(facts: FileFacts, task: TaskSpec, step: Step, options: PredictOptions = {}): TokenCounts {
  const t = taskForStep(task, step);
  const prompt =
    proseTokens(instructionFor(t), 'anthropic') +
    jsonTokens(resultTool(t), 'anthropic') +
    TOOL_SYSTEM_PROMPT_TOKENS +
    FRAMING_TOKENS;
  let document: number;
  if (step === 'analyze') {
    document =
      proseTokens('<document>\n\n</document>', 'anthropic') + documentTextTokens(facts, options.documentTextChars);
  } else if (facts.kind === 'pdf') {
    document = Math.max(1, facts.pages) * anthropicImageTokens(PDF_PAGE_IMAGE);
  } else {
    const side = IMAGE_TARGET.maxLongSide;
    document = anthropicImageTokens(
      facts.width !== undefined && facts.height !== undefined
        ? sentImageSize(facts.width, facts.height)
        : { width: side, height: side },
    );
  }
  return {
    input: prompt + document,
    output: predictAnswerTokens(facts, task, step, options) + TOOL_CALL_OUTPUT_TOKENS,
  };
}

/** What tokens cost on the configured model, in micros, at the tier the input falls in. */
export function predictedTokenCostMicros(tokens: TokenCounts, options: PredictOptions = {}): number {
  return requestCostMicros(predictionPrices(options.env), { inputTokens: tokens.input, outputTokens: tokens.output });
}

/** The catalog entry: API-key auth, every strategy, the attempt cost bound above. */
export const anthropicProfile = languageModelProfile({
  id: 'anthropic',
  auth: 'api-key',
  credentialEnv: ['ANTHROPIC_API_KEY'],
  stepCostMicros,
  outputFits: (facts, task, step, env) => {
    const prices = pricesFor(modelId(env));
    const ceiling = Math.min(OUTPUT_TOKENS_CEILING, prices?.maxOutputTokens ?? OUTPUT_TOKENS_CEILING);
    return outputTokenCap(facts, task, step, prices) < ceiling;
  },
  predictTokens,
  tokenCostMicros: predictedTokenCostMicros,
});
