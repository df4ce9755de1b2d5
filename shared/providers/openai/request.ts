/**
 * What an OpenAI Responses API request is made of: the document parts (image, PDF with its text layer, or an earlier
 * step's text, each refused before any request when larger than the estimate allows), the body, and the repair turn.
 * No I/O besides reading the file; the adapter sends what this builds.
 */
import type {
  EasyInputMessage,
  ResponseCreateParamsNonStreaming,
  ResponseInputContent,
} from 'openai/resources/responses/responses';
import { hasTextLayer, pdfTextLayer, prepareImage } from '../../media/index.js';
import type { Step, TaskSpec } from '../../task.js';
import { ProviderFailure } from '../../task.js';
import { base64, isPlainObject } from '../common.js';
import { givenText, textTokenBound } from '../language-model.js';
import { firstAnswerCapWithin } from '../output-cap.js';
import { truncateUtf8 } from '../task-prompt.js';
import type { TokenCounts } from '../tokens.js';
import type { InvokeOptions, ProviderInput } from '../types.js';
import {
  documentTextAllowance,
  documentTextBlock,
  IMAGE_TARGET,
  type ModelPrices,
  outputTokenCap,
  predictedTokenCostMicros,
  predictTokens,
  repairMessage,
  SYSTEM_INSTRUCTIONS,
  taskForStep,
} from './profile.js';

/** The Responses API's `include` entry that returns the answer's token log probabilities (./value-confidence.ts). */
const LOGPROBS_INCLUDE = 'message.output_text.logprobs' as const;

export type JsonSchema = Record<string, unknown>;

/** One request of an attempt, planned: its step, the task for that step, and its output cap within the spend limit. */
export interface RequestPlan {
  step: Step;
  task: TaskSpec;
  predictedInput: number;
  cap: number;
  /** The predicted cost of some tokens at the configured model's list price. */
  cost: (tokens: TokenCounts) => number;
}

/** The step a request runs: an `analyze` step given no text reads the file itself, like `vision`. */
export function stepSent(input: ProviderInput): Step {
  return input.step === 'analyze' && givenText(input) === undefined ? 'vision' : input.step;
}

/**
 * Plans a request as the adapter and the batch line both send it: an `analyze` step without text from an earlier step
 * reads the file itself, like `vision`; the output cap is what the spend limit leaves after the predicted input (at
 * list price). Throws, sending nothing, when that leaves too little for an answer.
 */
export function planRequest(
  input: ProviderInput,
  maxCostMicros: number | undefined,
  prices: ModelPrices,
  env: NodeJS.ProcessEnv,
): RequestPlan {
  const step = stepSent(input);
  const task = taskForStep(input.task, step);
  const cost = (tokens: TokenCounts) => predictedTokenCostMicros(tokens, { env });
  const { cap, predictedInput } = firstAnswerCapWithin({ ...input, step }, maxCostMicros, env, {
    predictTokens,
    stepCap: outputTokenCap(input.facts, input.task, step, prices),
    cost,
    refuse: (message) => new ProviderFailure('client', `openai: ${message}`),
  });
  return { step, task, predictedInput, cap, cost };
}

function schemaTypes(schema: JsonSchema): string[] | null {
  if (typeof schema.type === 'string') return [schema.type];
  if (Array.isArray(schema.type)) return schema.type.filter((t): t is string => typeof t === 'string');
  return null;
}

/** True when OpenAI's strict mode accepts the schema: every node typed, every object closed with all keys required. */
export function strictCompatible(schema: JsonSchema): boolean {
  const types = schemaTypes(schema);
  if (types === null) return false;
  if (types.includes('object')) {
    const properties = schema.properties;
    const required = Array.isArray(schema.required) ? schema.required : [];
    if (!isPlainObject(properties) || schema.additionalProperties !== false) return false;
    if (!Object.keys(properties).every((key) => required.includes(key))) return false;
    if (!Object.values(properties).every((p) => isPlainObject(p) && strictCompatible(p))) return false;
  }
  if (types.includes('array') && !(isPlainObject(schema.items) && strictCompatible(schema.items))) return false;
  return true;
}

/** What one request asks: the model, the result schema (strict when OpenAI accepts it), the messages and output cap. */
export interface RequestSpec {
  model: string;
  prices: ModelPrices;
  schema: JsonSchema;
  messages: EasyInputMessage[];
  maxOutputTokens: number;
  logprobs: boolean;
}

/** The body of one `responses.create` call: nothing stored at OpenAI, logprobs when asked. */
export function requestBody(spec: RequestSpec): ResponseCreateParamsNonStreaming {
  return {
    model: spec.model,
    instructions: SYSTEM_INSTRUCTIONS,
    input: spec.messages,
    text: {
      format: { type: 'json_schema', name: 'result', schema: spec.schema, strict: strictCompatible(spec.schema) },
    },
    max_output_tokens: spec.maxOutputTokens,
    store: false,
    ...(spec.prices.reasoningEffort ? { reasoning: { effort: spec.prices.reasoningEffort } } : {}),
    ...(spec.logprobs ? { include: [LOGPROBS_INCLUDE] } : {}),
  };
}

/** The first request's one message: the document, then the instruction. */
export function firstMessages(document: Document, instruction: string): EasyInputMessage[] {
  return [{ type: 'message', role: 'user', content: [...document.parts, { type: 'input_text', text: instruction }] }];
}

/** The repair: the task, the model's own answer and what is wrong with it (the file is not sent again). */
export function repairMessages(instruction: string, answer: string, error: string): EasyInputMessage[] {
  return [
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: instruction }] },
    { type: 'message', role: 'assistant', content: answer },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: repairMessage(error) }] },
  ];
}

/** What the model is given: the document parts of the first request, and the text it reads when known. */
export interface Document {
  parts: ResponseInputContent[];
  /** The document's text: the PDF's text layer, or the text an earlier step read. */
  readText: string | undefined;
}

/** Builds the document parts of a step, refusing (before any request) input larger than the estimate allows. */
export async function documentFor(input: ProviderInput, step: Step, media: InvokeOptions): Promise<Document> {
  if (step === 'analyze' && input.documentText !== undefined) {
    // Cut to the text allowance the estimate holds, so a dense text never bills past the run's hold.
    const text = truncateUtf8(input.documentText, documentTextAllowance(input.facts.pages));
    return { parts: [{ type: 'input_text', text: documentTextBlock(text) }], readText: input.documentText };
  }
  if (input.facts.mime === 'application/pdf') {
    // OpenAI puts each page's text layer into the context next to the page image; the estimate allows a fixed amount
    // of text per page, so a denser document is refused here rather than billed past its hold.
    const pages = await pdfTextLayer(input.bytes, media);
    const layer = pages.filter((p) => p !== '').join('\n\n');
    if (pages.length > Math.max(1, input.facts.pages)) {
      throw new ProviderFailure('client', 'openai: the PDF has more pages than the cost estimate was made for');
    }
    if (textTokenBound(layer) > documentTextAllowance(input.facts.pages)) {
      throw new ProviderFailure('client', 'openai: the PDF carries more text than the cost estimate allows');
    }
    const data = base64(input.bytes);
    // Page images default to low detail on models before GPT-5.6: enough beside a text layer, too coarse for a scan.
    const scanned = pages.some((p) => !hasTextLayer(p));
    return {
      parts: [
        {
          type: 'input_file',
          filename: 'document.pdf',
          file_data: `data:application/pdf;base64,${data}`,
          ...(scanned ? { detail: 'high' as const } : {}),
        },
      ],
      readText: layer.trim() === '' ? undefined : layer,
    };
  }
  const image = await prepareImage(input.bytes, input.facts.mime, IMAGE_TARGET, media);
  const data = base64(image.bytes);
  return {
    parts: [{ type: 'input_image', image_url: `data:${image.mime};base64,${data}`, detail: 'high' }],
    readText: undefined,
  };
}
