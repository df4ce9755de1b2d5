/**
 * The `bedrock` provider's light profile (no SDK: the API handlers load it): which model runs, what a request is made
 * of, and the bound of one attempt (prompt at a token a character, media by Nova's image and page allowances, the
 * full `maxTokens`, one repair for JSON). The adapter uses the same functions.
 * See docs/decisions.md#bedrock-cost-bound.
 */
import type { FileFacts } from '../../file-facts.js';
import { bedrockBaseModelId, bedrockPricingData as raw } from '../../infra/bedrock.js';
import { ENV } from '../../infra/env.js';
import type { ImageTarget } from '../../media/index.js';
import { type Micros, usdToMicrosCeil } from '../../money.js';
import type { Step, TaskSpec } from '../../task.js';
// zod/mini like the contract (see shared/contract.ts): the create-run handler loads this profile to estimate.
import * as z from '../../zod.js';
import { hasAwsCredentials } from '../aws-credentials.js';
import { analyzeTextAllowance, languageModelProfile, textTokenBound } from '../language-model.js';
import { documentTextTokens, predictAnswerTokens } from '../predict.js';
import { buildInstruction, resultJsonSchema } from '../task-prompt.js';
import { fitLongSide, jsonTokens, novaImageTokens, proseTokens, type TokenCounts } from '../tokens.js';
import type { CostOptions, PredictOptions } from '../types.js';

// ---------------------------------------------------------------------------------------------------------------
// Prices and models
// ---------------------------------------------------------------------------------------------------------------

const modelPriceSchema = z.object({
  name: z.string().check(z.minLength(1)),
  // Only model families whose image/PDF token accounting the bound models are accepted (see the file comment).
  family: z.literal('nova'),
  inputUsdPer1kTokens: z.number().check(z.positive()),
  outputUsdPer1kTokens: z.number().check(z.positive()),
  maxOutputTokens: z.number().check(z.int(), z.positive()),
  source: z.string().check(z.minLength(1)),
  date: z.iso.date(),
});

const pricingSchema = z
  .object({
    $comment: z.optional(z.string()),
    currency: z.literal('USD'),
    defaultModel: z.string().check(z.minLength(1)),
    models: z.record(z.string(), modelPriceSchema),
  })
  .check(z.refine((table) => table.defaultModel in table.models, { message: 'defaultModel must be one of models' }));

export type ModelPrices = z.infer<typeof modelPriceSchema>;

/** The validated price table; a malformed pricing.json fails at import, not mid-run. */
export const bedrockPricing = pricingSchema.parse(raw);

/** The model a request goes to: the id sent to Bedrock and the price row of its base model. */
export interface BedrockModel {
  /** Model or inference-profile id as sent (e.g. `us.amazon.nova-2-lite-v1:0`). */
  id: string;
  /** The base model id the price table is keyed by (e.g. `amazon.nova-2-lite-v1:0`). */
  baseId: string;
  price: ModelPrices;
}

/** The base model id of a model id, inference-profile id or ARN (shared/infra/bedrock.ts). */
export const baseModelId = bedrockBaseModelId;

/**
 * The model id to call: `BEDROCK_MODEL_ID` when set; otherwise the default model through an inference profile (Nova 2
 * models are served only through profiles): the US geographic profile from a US Region, so documents stay in the US,
 * and the global profile from anywhere else (set BEDROCK_MODEL_ID, e.g. `eu.amazon.nova-2-lite-v1:0`, to keep them in
 * another geography).
 */
export function modelId(env: NodeJS.ProcessEnv = process.env): string {
  const configured = env[ENV.bedrockModelId]?.trim();
  if (configured) return configured;
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? '';
  const prefix = /^us-(?:east|west)-\d+$/.test(region) ? 'us' : 'global';
  return `${prefix}.${bedrockPricing.defaultModel}`;
}

/** The prices of a model, inference-profile id or ARN (by its base model), or undefined when pricing.json has none. */
export function pricesFor(model: string): ModelPrices | undefined {
  const baseId = baseModelId(model);
  return Object.hasOwn(bedrockPricing.models, baseId) ? bedrockPricing.models[baseId] : undefined;
}

/** The configured model with its prices, or undefined when its base model has no row in pricing.json. */
export function configuredModel(env: NodeJS.ProcessEnv = process.env): BedrockModel | undefined {
  const id = modelId(env);
  const price = pricesFor(id);
  return price ? { id, baseId: baseModelId(id), price } : undefined;
}

/** The most expensive priced model (bounds the cost when the configured model cannot be priced). */
function costliestModel(): BedrockModel {
  const [baseId, price] = Object.entries(bedrockPricing.models).reduce((a, b) =>
    b[1].outputUsdPer1kTokens + b[1].inputUsdPer1kTokens > a[1].outputUsdPer1kTokens + a[1].inputUsdPer1kTokens ? b : a,
  );
  return { id: baseId, baseId, price };
}

/** What a number of input and output tokens cost on a model, in micros (rounded up). */
export function tokenCostMicros(inputTokens: number, outputTokens: number, price: ModelPrices): Micros {
  return usdToMicrosCeil((inputTokens * price.inputUsdPer1kTokens + outputTokens * price.outputUsdPer1kTokens) / 1000);
}

// ---------------------------------------------------------------------------------------------------------------
// What a request is made of
// ---------------------------------------------------------------------------------------------------------------

/** Images are sent as JPEG or PNG, long side <= 1568 px, <= 3.75 MB (Converse's per-image limit; MB read as 10^6). */
export const IMAGE_TARGET: ImageTarget = {
  formats: ['image/jpeg', 'image/png'],
  maxLongSide: 1568,
  maxBytes: 3_750_000,
};

/** Converse's per-document limit ("no more than 4.5 MB"); a larger PDF is refused before any request. */
export const MAX_PDF_BYTES = 4_500_000;

/** The one tool a JSON request offers and forces (`toolChoice: {tool}`): its input is the result. */
export const RESULT_TOOL_NAME = 'record_result';

export const SYSTEM_PROMPT =
  'You read documents (photos, scans, PDFs, or their extracted text) and report exactly what they show. ' +
  'Never guess or invent values; when something is not in the document, say so with null (or leave it out of text). ' +
  'Follow the instruction exactly.';

/** The instruction of an OCR step: the whole text, nothing else. */
export const OCR_INSTRUCTION =
  'Transcribe all legible text of the document in reading order, page by page, with a blank line between pages. ' +
  'Answer with the transcription only, without commentary.';

/** Longest validation-error text quoted back to the model in a repair request. */
export const REPAIR_ERROR_MAX_CHARS = 2000;

/** Whether a request for this step and task asks for JSON through the result tool (else it asks for plain text). */
export function usesResultTool(task: TaskSpec, step: Step): boolean {
  return step !== 'ocr' && task.outputFormat === 'json';
}

/** The user-turn instruction (after the media, or after the given document text for an `analyze` step). */
export function instructionFor(task: TaskSpec, step: Step): string {
  if (step === 'ocr') return OCR_INSTRUCTION;
  const instruction = buildInstruction(task);
  return usesResultTool(task, step)
    ? `${instruction}\n\nReport the result by calling the ${RESULT_TOOL_NAME} tool exactly once.`
    : instruction;
}

/** The text that introduces an OCR'd document in an `analyze` step. */
export function documentTextBlock(documentText: string): string {
  return `The document's text, as read by OCR, is between the markers.\n<document>\n${documentText}\n</document>`;
}

/** The tool specification of a JSON request (its input schema is the task's result schema). */
export function resultToolSpec(task: TaskSpec): {
  name: string;
  description: string;
  inputSchema: { json: Record<string, unknown> };
} {
  return {
    name: RESULT_TOOL_NAME,
    description: 'Records the result read from the document. Its input is the complete result.',
    inputSchema: { json: resultJsonSchema(task) },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Token bounds
// ---------------------------------------------------------------------------------------------------------------

/** Output tokens every request may use before its per-page or per-field share. */
const OUTPUT_BASE_TOKENS = 512;
/** A transcription or open analysis may write this much per page (a dense page is ~1,000-1,500 tokens of text). */
const OUTPUT_TOKENS_PER_PAGE = 2000;
/** A scalar field's value (a name, a date, an amount, an address) is short. */
const OUTPUT_TOKENS_PER_SCALAR_FIELD = 128;
/** An array or object field (line items, transactions) grows with the document: this much per page. */
const OUTPUT_TOKENS_PER_LIST_FIELD_PAGE = 1500;
/** What Bedrock and the model wrap around a request (role markers, the tool-use system prompt), generously. */
const REQUEST_OVERHEAD_TOKENS = 1000;
/**
 * The repair turn's own text: the quoted validation errors (cut to REPAIR_ERROR_MAX_CHARS characters, each at most
 * 4 UTF-8 bytes: they quote the client's field names) and the instruction to call the tool again.
 */
const REPAIR_TOKENS = 4 * REPAIR_ERROR_MAX_CHARS + 500;
/** Nova scales small images up until a side reaches ~896 px; the bound assumes 1,000. */
const NOVA_MIN_LONG_SIDE = 1000;
/** Nova's published examples bill 506-700 pixels per token; the bound counts 350. */
const PIXELS_PER_TOKEN = 350;
const IMAGE_TOKEN_OVERHEAD = 300;
/** Allowance per PDF page (text plus page and figure images), see the file comment. */
const PDF_PAGE_TOKENS = 6000;

/** The `inferenceConfig.maxTokens` the adapter sends for this file, task and step. */
export function outputTokenCap(
  facts: Pick<FileFacts, 'pages'>,
  task: TaskSpec,
  step: Step,
  prices: ModelPrices,
): number {
  const pages = Math.max(1, facts.pages);
  let wanted = OUTPUT_BASE_TOKENS;
  if (step === 'ocr' || task.outputFormat === 'text' || task.fields === null) wanted += OUTPUT_TOKENS_PER_PAGE * pages;
  else {
    for (const field of task.fields) {
      const list = field.type === 'array' || field.type === 'object';
      wanted += list ? OUTPUT_TOKENS_PER_LIST_FIELD_PAGE * pages : OUTPUT_TOKENS_PER_SCALAR_FIELD;
    }
  }
  return Math.min(prices.maxOutputTokens, wanted);
}

/** Upper bound of the tokens Nova bills for one image of these stored dimensions, as the adapter sends it. */
export function imageTokenBound(width: number | undefined, height: number | undefined): number {
  const max = IMAGE_TARGET.maxLongSide;
  let w = width && width > 0 ? width : max;
  let h = height && height > 0 ? height : max;
  const long = Math.max(w, h);
  const scale = long > max ? max / long : long < NOVA_MIN_LONG_SIDE ? NOVA_MIN_LONG_SIDE / long : 1;
  w = Math.ceil(w * scale);
  h = Math.ceil(h * scale);
  return Math.ceil((w * h) / PIXELS_PER_TOKEN) + IMAGE_TOKEN_OVERHEAD;
}

/**
 * Upper bound of one request's input tokens: every text at one token per UTF-8 byte (the client's prompt may be in
 * any script). The media is the file itself, or, for an `analyze` step given `documentTextBytes` bytes of another
 * step's text, that text.
 */
export function promptTokenBound(facts: FileFacts, task: TaskSpec, step: Step, documentTextBytes?: number): number {
  const tool = usesResultTool(task, step) ? textTokenBound(JSON.stringify(resultToolSpec(task))) : 0;
  const text =
    textTokenBound(SYSTEM_PROMPT) + textTokenBound(instructionFor(task, step)) + tool + REQUEST_OVERHEAD_TOKENS;
  if (step === 'analyze' && documentTextBytes !== undefined) {
    return text + textTokenBound(documentTextBlock('')) + documentTextBytes;
  }
  const media =
    facts.kind === 'pdf' ? PDF_PAGE_TOKENS * Math.max(1, facts.pages) : imageTokenBound(facts.width, facts.height);
  return text + media;
}

/** Upper bound of one attempt's cost (including a JSON repair request) for a step with `model`, in micros. */
function attemptCostMicros(
  facts: FileFacts,
  task: TaskSpec,
  step: Step,
  model: BedrockModel,
  documentTextBytes?: number,
): Micros {
  const input = promptTokenBound(facts, task, step, documentTextBytes);
  const output = outputTokenCap(facts, task, step, model.price);
  const repairs = usesResultTool(task, step) ? 1 : 0;
  // The repair request re-sends the whole conversation: the same input, the first answer, and the errors.
  const inputTokens = input + repairs * (input + output + REPAIR_TOKENS);
  const outputTokens = output * (1 + repairs);
  return tokenCostMicros(inputTokens, outputTokens, model.price);
}

// ---------------------------------------------------------------------------------------------------------------
// The profile
// ---------------------------------------------------------------------------------------------------------------

/** AWS credentials (shared check) or a Bedrock API key, which the SDK sends as a bearer token instead of SigV4. */
function hasBedrockCredentials(env: NodeJS.ProcessEnv): boolean {
  return (
    hasAwsCredentials(env) || (env.VISION_DISABLE_IAM_PROVIDERS !== 'true' && Boolean(env.AWS_BEARER_TOKEN_BEDROCK))
  );
}

/** Upper bound of one attempt of `step` with the configured model (an analyze step's text is cut, see analyzeText). */
function stepCostMicros(facts: FileFacts, task: TaskSpec, step: Step, options: CostOptions = {}): Micros {
  const allowance = analyzeTextAllowance(facts.pages);
  return attemptCostMicros(
    facts,
    task,
    step,
    configuredModel(options.env) ?? costliestModel(),
    step === 'analyze' ? Math.min(allowance, options.documentTextBytes ?? allowance) : undefined,
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Prediction (docs/pricing.md)
// ---------------------------------------------------------------------------------------------------------------

/** The tool-use prompt Bedrock/Nova add for a forced tool (not published; sized like Claude's 313). */
const TOOL_SYSTEM_PROMPT_TOKENS = 300;
const FRAMING_TOKENS = 10;
/** The toolUse block around the answer's JSON. */
const TOOL_CALL_OUTPUT_TOKENS = 20;
/** A PDF page as Nova reads it: its text (none on a scan) and the page as an image at the 1568 px long side. */
const PDF_PAGE_IMAGE = { width: 1212, height: 1568 };

/**
 * Predicted tokens of one attempt's request: system prompt, instruction and (for JSON) the result tool by ~4
 * characters a token (JSON ~3), the image by Nova's published size table at the size sent (long side 1568), a PDF
 * page as its page image (a scan: a text-layer PDF goes as text, `analyze`), or the document text; the answer as
 * predict.ts sizes it.
 */
export function predictTokens(facts: FileFacts, task: TaskSpec, step: Step, options: PredictOptions = {}): TokenCounts {
  const tool = usesResultTool(task, step);
  const prompt =
    proseTokens(SYSTEM_PROMPT + instructionFor(task, step), 'nova') +
    (tool ? jsonTokens(resultToolSpec(task), 'nova') + TOOL_SYSTEM_PROMPT_TOKENS : 0) +
    FRAMING_TOKENS;
  let document: number;
  if (step === 'analyze') {
    document = proseTokens(documentTextBlock(''), 'nova') + documentTextTokens(facts, options.documentTextChars);
  } else if (facts.kind === 'pdf') {
    document = Math.max(1, facts.pages) * novaImageTokens(PDF_PAGE_IMAGE);
  } else {
    const side = IMAGE_TARGET.maxLongSide;
    document = novaImageTokens(fitLongSide({ width: facts.width ?? side, height: facts.height ?? side }, side));
  }
  const answer = predictAnswerTokens(facts, task, step, options);
  return { input: prompt + document, output: answer + (tool ? TOOL_CALL_OUTPUT_TOKENS : 0) };
}

/** What tokens cost on the configured model (or the costliest priced one), in micros. */
export function predictedTokenCostMicros(tokens: TokenCounts, options: PredictOptions = {}): number {
  const { price } = configuredModel(options.env) ?? costliestModel();
  return (tokens.input * price.inputUsdPer1kTokens + tokens.output * price.outputUsdPer1kTokens) * 1000;
}

export const bedrockProfile = languageModelProfile({
  id: 'bedrock',
  auth: 'iam',
  // IAM: credentials come from the SDK's default chain (role, profile, env), not from one variable; see `available`.
  credentialEnv: [],
  // An unpriced BEDROCK_MODEL_ID is unavailable (the adapter refuses it before any request); were it configured
  // explicitly, the costliest priced model bounds it.
  stepCostMicros,
  outputFits: (facts, task, step, env) => {
    const price = (configuredModel(env) ?? costliestModel()).price;
    return outputTokenCap(facts, task, step, price) < price.maxOutputTokens;
  },
  predictTokens,
  tokenCostMicros: predictedTokenCostMicros,
  available: (env = process.env) => hasBedrockCredentials(env) && configuredModel(env) !== undefined,
});
