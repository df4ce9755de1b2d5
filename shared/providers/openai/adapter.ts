/**
 * The `openai` provider: a GPT model through the Responses API (`store: false`, no reasoning, so logprobs come back
 * and give the native confidence). Strict structured output when the schema allows it, else checked here; one
 * repair without the file; SDK retries off. See docs/decisions.md#openai-adapter.
 * Over 400 lines: one provider's whole wire protocol (request, media, answer, repair, failures) read in one place.
 */
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type {
  EasyInputMessage,
  ResponseCreateParamsNonStreaming,
  ResponseInputContent,
} from 'openai/resources/responses/responses';
import * as z from 'zod';
import { Deadline, hasTextLayer, MAX_TIMER_MS, pdfTextLayer, prepareImage } from '../../media/index.js';
import { usdToMicrosCeil } from '../../money.js';
import type { FailureKind, ProviderUsage, Step, TaskSpec } from '../../task.js';
import { ProviderFailure } from '../../task.js';
import { base64, isPlainObject, MIN_USEFUL_OUTPUT_TOKENS, outputCapWithin, redact } from '../common.js';
import { apiKeyFor } from '../credentials.js';
import { textTokenBound } from '../language-model.js';
import { answerErrors } from '../result-validation.js';
import { parseRetryAfterHeader } from '../retry-after.js';
import {
  buildInstruction,
  normaliseOpenResult,
  resultFromAnswer,
  resultJsonSchema,
  truncateUtf8,
} from '../task-prompt.js';
import type { InvokeOptions, ProviderAdapter, ProviderInput, ProviderOutput } from '../types.js';
import {
  documentTextAllowance,
  documentTextBlock,
  IMAGE_TARGET,
  openaiModel,
  outputCap,
  predictTokens,
  pricesFor,
  repairMessage,
  SYSTEM_INSTRUCTIONS,
  type TokenUsage,
  taskForStep,
  tokenCostMicros,
  usageUsd,
} from './profile.js';
import { valueConfidences } from './value-confidence.js';

/** The longest piece of a server's error message (or a refusal) quoted in a failure message. */
const MESSAGE_MAX_CHARS = 300;
/** The Responses API's `include` entry that returns the answer's token log probabilities (./value-confidence.ts). */
const LOGPROBS_INCLUDE = 'message.output_text.logprobs' as const;

// ---------------------------------------------------------------------------------------------------------------
// Failures
// ---------------------------------------------------------------------------------------------------------------

/** Milliseconds to wait from `retry-after-ms`, `retry-after` (seconds or HTTP date) or OpenAI's reset headers. */
export function retryAfterMs(headers: Headers | undefined, now: number = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = Number.parseFloat(headers.get('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return Math.ceil(ms);
  const retryAfter = parseRetryAfterHeader(headers.get('retry-after'), now);
  if (retryAfter !== undefined) return retryAfter;
  // x-ratelimit-reset-* carry durations such as "1s", "6m0s", "120ms": the longer of the two limits decides.
  const resets = ['x-ratelimit-reset-requests', 'x-ratelimit-reset-tokens']
    .map((name) => parseDuration(headers.get(name)))
    .filter((v): v is number => v !== undefined);
  return resets.length > 0 ? Math.max(...resets) : undefined;
}

function parseDuration(value: string | null): number | undefined {
  if (!value) return undefined;
  const parts = [...value.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  if (parts.length === 0) return undefined;
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  return Math.ceil(parts.reduce((sum, [, n, u]) => sum + Number(n) * (unit[u ?? 's'] ?? 1000), 0));
}

/** The failure an SDK error stands for. */
function failureFromError(error: unknown, deadline: Deadline, apiKey: string): ProviderFailure {
  if (error instanceof ProviderFailure) return error;
  if (error instanceof APIUserAbortError || error instanceof APIConnectionTimeoutError || deadline.expired()) {
    return new ProviderFailure('timeout', 'openai: the attempt deadline passed before OpenAI answered');
  }
  if (error instanceof APIConnectionError) {
    return new ProviderFailure('server', 'openai: the connection to OpenAI failed');
  }
  if (error instanceof APIError) {
    const status = error.status;
    const body = error.error as { message?: unknown } | undefined;
    const detail = redact(
      typeof body?.message === 'string' ? body.message : error.message,
      [apiKey],
      MESSAGE_MAX_CHARS,
    );
    const message = `openai: HTTP ${status ?? '?'}${error.code ? ` (${error.code})` : ''}: ${detail}`;
    let kind: FailureKind;
    if (status === 429) {
      // "insufficient_quota" is a billing state, not a burst: waiting does not help, the account must be fixed.
      if (error.code === 'insufficient_quota') return new ProviderFailure('auth', message);
      return new ProviderFailure('rate_limited', message, { retryAfterMs: retryAfterMs(error.headers) });
    }
    if (status === 401 || status === 403) kind = 'auth';
    // 408: the server gave up waiting for the request; the same as our own deadline passing (as Anthropic and Gemini).
    else if (status === 408) kind = 'timeout';
    else if (status !== undefined && status >= 400 && status < 500) kind = 'client';
    else kind = 'server';
    return new ProviderFailure(kind, message);
  }
  // The SDK throws a SyntaxError/TypeError when a 2xx body is not the JSON object the API promises.
  return new ProviderFailure('invalid_output', 'openai: the response body is not a Responses API object');
}

/** A 400 that rejects the logprobs request (models with reasoning do not return logprobs). */
function rejectsLogprobs(error: unknown): boolean {
  return (
    error instanceof APIError &&
    error.status === 400 &&
    (error.param === 'include' || error.param === 'top_logprobs' || /logprob/i.test(error.message))
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Result schema: strictness and checking the answer (validation: ../result-validation.ts)
// ---------------------------------------------------------------------------------------------------------------

type JsonSchema = Record<string, unknown>;

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

/** At most this many schema problems are quoted back to the model (the message is bounded in the estimate too). */
const PROBLEMS_QUOTED = 5;

/** Parses the model's answer and checks it against the schema: the object, or the reason it is not acceptable. */
export function checkAnswer(text: string, task: TaskSpec): { value: Record<string, unknown> } | { error: string } {
  if (text.trim() === '') return { error: 'the answer is empty' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { error: `the answer is not valid JSON (${error instanceof Error ? error.message : String(error)})` };
  }
  // One more than is quoted, to know whether there are more.
  const problems = answerErrors(task, value, PROBLEMS_QUOTED + 1);
  if (problems.length > 0) {
    const more = problems.length > PROBLEMS_QUOTED ? ' (and more)' : '';
    return { error: `${problems.slice(0, PROBLEMS_QUOTED).join('; ')}${more}` };
  }
  return isPlainObject(value) ? { value } : { error: 'the answer is not a JSON object' };
}

// ---------------------------------------------------------------------------------------------------------------
// Confidence from logprobs
// ---------------------------------------------------------------------------------------------------------------

interface TokenLogprob {
  token: string;
  logprob: number;
}

/** Character ranges [start, end) of the values in a JSON text: strings that are not keys, numbers, true/false/null. */
export function jsonValueRanges(json: string): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  let i = 0;
  while (i < json.length) {
    const ch = json[i] as string;
    if (ch === '"') {
      let j = i + 1;
      while (j < json.length && json[j] !== '"') j += json[j] === '\\' ? 2 : 1;
      let k = j + 1;
      while (k < json.length && /\s/.test(json[k] as string)) k++;
      if (json[k] !== ':') ranges.push([i, Math.min(j + 1, json.length)]);
      i = j + 1;
    } else if (/[-0-9tfn]/.test(ch)) {
      let j = i;
      while (j < json.length && !/[,\]}\s]/.test(json[j] as string)) j++;
      ranges.push([i, j]);
      i = j;
    } else {
      i++;
    }
  }
  return ranges;
}

/**
 * exp(mean logprob) over the tokens that overlap the answer's values; over every token when the tokens do not spell
 * the answer (or no token carries a value). Undefined without logprobs.
 */
export function confidenceFromLogprobs(text: string, logprobs: readonly TokenLogprob[]): number | undefined {
  const usable = logprobs.filter((t) => Number.isFinite(t.logprob));
  if (usable.length === 0) return undefined;
  let counted = usable;
  if (usable.map((t) => t.token).join('') === text) {
    const ranges = jsonValueRanges(text);
    let offset = 0;
    counted = usable.filter((t) => {
      const start = offset;
      offset += t.token.length;
      return ranges.some(([a, b]) => start < b && offset > a);
    });
    if (counted.length === 0) counted = usable;
  }
  const mean = counted.reduce((sum, t) => sum + Math.min(0, t.logprob), 0) / counted.length;
  return Math.min(1, Math.max(0, Math.exp(mean)));
}

// ---------------------------------------------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------------------------------------------

const count = z.number().int().nonnegative();

/** The parts of a Responses API object this adapter reads (anything else in the body is ignored). */
export const responseSchema = z.object({
  object: z.literal('response'),
  status: z.string().nullish(),
  output: z.array(
    z.object({
      type: z.string(),
      phase: z.string().nullish(),
      content: z
        .array(
          z.object({
            type: z.string(),
            text: z.string().optional(),
            refusal: z.string().optional(),
            logprobs: z.array(z.object({ token: z.string(), logprob: z.number() })).nullish(),
          }),
        )
        .nullish(),
    }),
  ),
  usage: z
    .object({
      input_tokens: count,
      output_tokens: count,
      input_tokens_details: z.object({ cached_tokens: count.nullish() }).nullish(),
    })
    .nullish(),
  incomplete_details: z.object({ reason: z.string().nullish() }).nullish(),
  error: z.object({ code: z.string().nullish(), message: z.string().nullish() }).nullish(),
});

interface Answer {
  text: string;
  /** Null when logprobs were not requested or not returned. */
  logprobs: TokenLogprob[] | null;
}

/** A failure reported inside a 200 response (`status: "failed"`), by OpenAI's error code. */
function failedResponseKind(code: string | null | undefined): FailureKind {
  if (!code) return 'server';
  if (/rate_limit/.test(code)) return 'rate_limited';
  if (/^(invalid_|image_|empty_|unsupported_|file_)/.test(code)) return 'client';
  return 'server';
}

// ---------------------------------------------------------------------------------------------------------------
// The attempt
// ---------------------------------------------------------------------------------------------------------------

/** What the model is given: the document parts of the first request, and the text it reads when known. */
interface Document {
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

async function readApiKey(env: NodeJS.ProcessEnv): Promise<string> {
  let key: string | undefined;
  try {
    key = await apiKeyFor('openai', env);
  } catch (error) {
    throw new ProviderFailure('server', 'openai: the API key could not be read from Secrets Manager', {
      cause: error,
    });
  }
  if (!key) throw new ProviderFailure('auth', 'OPENAI_API_KEY is not configured');
  return key;
}

/** The envelope's result and the document text from a validated answer. */
export function shapeOutput(
  task: TaskSpec,
  step: Step,
  value: Record<string, unknown>,
  readText: string | undefined,
): Pick<ProviderOutput, 'result' | 'documentText'> {
  const text = typeof value.text === 'string' ? value.text : undefined;
  if (step === 'ocr') return { result: { text: text ?? '' }, documentText: text };
  if (task.outputFormat === 'text') return { result: { text: text ?? '' }, documentText: readText ?? text };
  if (task.fields !== null) return { result: resultFromAnswer(task.fields, value), documentText: readText };
  return { result: normaliseOpenResult(value), documentText: readText ?? text };
}

/** Settings of one adapter instance. */
export interface OpenAIProviderOptions {
  /** Where OPENAI_API_KEY, OPENAI_MODEL and OPENAI_BASE_URL are read from, at each call (default: process.env). */
  env?: NodeJS.ProcessEnv;
}

/** Creates an OpenAI adapter; each instance remembers which models rejected logprobs. */
export function createOpenAIProvider(options: OpenAIProviderOptions = {}): ProviderAdapter {
  const modelsWithoutLogprobs = new Set<string>();

  async function invoke(input: ProviderInput, invokeOptions: InvokeOptions): Promise<ProviderOutput> {
    const env = options.env ?? process.env;
    const deadline = new Deadline(invokeOptions.signal, invokeOptions.deadlineMs, 'openai');
    deadline.check('starting');

    const model = openaiModel(env);
    const prices = pricesFor(model);
    if (!prices) {
      throw new ProviderFailure('client', `openai: model "${model}" has no prices in providers/openai/pricing.json`);
    }
    const apiKey = await readApiKey(env);

    // An `analyze` step without text from an earlier step reads the file itself, like `vision`.
    const step: Step = input.step === 'analyze' && input.documentText === undefined ? 'vision' : input.step;
    const task = taskForStep(input.task, step);
    const schema = resultJsonSchema(task);
    const strict = strictCompatible(schema);
    // The spend limit: each request's output cap is what the attempt's allowance leaves after its input.
    const cost = (tokens: { input: number; output: number }) => tokenCostMicros(tokens, { env });
    const predictedInput = predictTokens(input.facts, input.task, step, {
      env,
      ...(input.documentText !== undefined ? { documentTextChars: input.documentText.length } : {}),
    }).input;
    const cap = outputCapWithin(
      outputCap(input.task, step, input.facts.pages, prices),
      invokeOptions.maxCostMicros,
      predictedInput,
      cost,
    );
    if (cap < MIN_USEFUL_OUTPUT_TOKENS) {
      throw new ProviderFailure('client', 'openai: the request would cross the run spend limit (not sent)');
    }
    const instruction = buildInstruction(task);
    const document = await documentFor(input, step, invokeOptions);

    const timeoutMs = (): number => Math.min(MAX_TIMER_MS, Math.max(1, Math.floor(deadline.remainingMs())));
    const client = new OpenAI({
      apiKey,
      baseURL: env.OPENAI_BASE_URL || undefined,
      maxRetries: 0,
      timeout: timeoutMs(),
    });
    const usages: TokenUsage[] = [];
    const usage = (): ProviderUsage => ({
      billableUnits: Math.max(1, input.facts.pages),
      costMicros: usdToMicrosCeil(usageUsd(usages, prices)),
      inputTokens: usages.reduce((sum, u) => sum + u.inputTokens, 0),
      outputTokens: usages.reduce((sum, u) => sum + u.outputTokens, 0),
    });
    const fail = (kind: FailureKind, message: string, extra: { retryAfterMs?: number } = {}): ProviderFailure =>
      new ProviderFailure(kind, message, { ...extra, ...(usages.length > 0 ? { usage: usage() } : {}) });

    /** Sends one request (again without logprobs if the model rejects them) and reads its answer. */
    const ask = async (messages: EasyInputMessage[], maxOutput = cap): Promise<Answer> => {
      const body = (logprobs: boolean): ResponseCreateParamsNonStreaming => ({
        model,
        instructions: SYSTEM_INSTRUCTIONS,
        input: messages,
        text: { format: { type: 'json_schema', name: 'result', schema, strict } },
        max_output_tokens: maxOutput,
        store: false,
        ...(prices.reasoningEffort ? { reasoning: { effort: prices.reasoningEffort } } : {}),
        ...(logprobs ? { include: [LOGPROBS_INCLUDE] } : {}),
      });
      const send = (logprobs: boolean) => {
        deadline.check('calling OpenAI');
        return client.responses.create(body(logprobs), {
          signal: invokeOptions.signal,
          timeout: timeoutMs(),
        });
      };
      let wantLogprobs = !modelsWithoutLogprobs.has(model);
      let raw: unknown;
      try {
        try {
          raw = await send(wantLogprobs);
        } catch (error) {
          if (!(wantLogprobs && rejectsLogprobs(error))) throw error;
          modelsWithoutLogprobs.add(model);
          wantLogprobs = false;
          raw = await send(false);
        }
      } catch (error) {
        const failure = failureFromError(error, deadline, apiKey);
        throw fail(failure.kind, failure.message, { retryAfterMs: failure.retryAfterMs });
      }
      return readAnswer(raw, wantLogprobs);
    };

    /** Reads a response: its usage is recorded first, so that every later failure carries it. */
    const readAnswer = (raw: unknown, logprobsAsked: boolean): Answer => {
      const parsed = responseSchema.safeParse(raw);
      if (!parsed.success) throw fail('invalid_output', 'openai: the response is not a Responses API object');
      const response = parsed.data;
      if (response.usage) {
        usages.push({
          inputTokens: response.usage.input_tokens,
          cachedInputTokens: response.usage.input_tokens_details?.cached_tokens ?? 0,
          outputTokens: response.usage.output_tokens,
        });
      }
      const status = response.status ?? 'completed';
      if (status === 'failed') {
        const code = response.error?.code;
        const detail = redact(response.error?.message ?? 'no detail', [apiKey], MESSAGE_MAX_CHARS);
        throw fail(failedResponseKind(code), `openai: the response failed${code ? ` (${code})` : ''}: ${detail}`);
      }
      if (status === 'incomplete') {
        const reason = response.incomplete_details?.reason ?? 'unknown';
        if (reason === 'content_filter') throw fail('refusal', 'openai: the answer was stopped by content filtering');
        // Cut at max_output_tokens: asking again with the same cap would be cut again (a chunked run splits).
        if (reason === 'max_output_tokens') {
          throw fail('truncated', `openai: the answer is incomplete (${reason}); output cap ${cap} tokens`);
        }
        throw fail('invalid_output', `openai: the answer is incomplete (${reason}); output cap ${cap} tokens`);
      }
      if (status !== 'completed') throw fail('invalid_output', `openai: unexpected response status "${status}"`);
      if (!response.usage) throw fail('invalid_output', 'openai: the response reports no usage');

      // Intermediate commentary (newer models) is not the answer.
      const parts = response.output
        .filter((item) => item.type === 'message' && item.phase !== 'commentary')
        .flatMap((item) => item.content ?? []);
      const refusal = parts.find((p) => p.type === 'refusal');
      if (refusal)
        throw fail(
          'refusal',
          `openai: the model refused: ${redact(refusal.refusal ?? '', [apiKey], MESSAGE_MAX_CHARS)}`,
        );
      const texts = parts.filter((p) => p.type === 'output_text');
      const logprobs = logprobsAsked && texts.some((p) => p.logprobs) ? texts.flatMap((p) => p.logprobs ?? []) : null;
      return { text: texts.map((p) => p.text ?? '').join(''), logprobs };
    };

    const question: EasyInputMessage = {
      type: 'message',
      role: 'user',
      content: [...document.parts, { type: 'input_text', text: instruction }],
    };
    let answer = await ask([question]);
    let checked = checkAnswer(answer.text, task);
    if ('error' in checked) {
      // A repair that could cross the spend limit is skipped: the attempt fails as the repair would have.
      const first = usages.at(-1);
      const repairCap = outputCapWithin(
        cap,
        invokeOptions.maxCostMicros === undefined ? undefined : invokeOptions.maxCostMicros - usage().costMicros,
        (first?.inputTokens ?? predictedInput) + (first?.outputTokens ?? cap),
        cost,
      );
      if (repairCap < Math.max(MIN_USEFUL_OUTPUT_TOKENS, first?.outputTokens ?? 0)) {
        throw fail(
          'invalid_output',
          'openai: the answer does not match the result schema; a repair would cross the run spend limit',
        );
      }
      // One repair: the task, the model's own answer and what is wrong with it (the file is not sent again).
      answer = await ask(
        [
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: instruction }] },
          { type: 'message', role: 'assistant', content: answer.text },
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: repairMessage(checked.error) }] },
        ],
        repairCap,
      );
      checked = checkAnswer(answer.text, task);
      if ('error' in checked) {
        throw fail(
          'invalid_output',
          `openai: the answer does not match the result schema after a repair: ${redact(checked.error, [apiKey], MESSAGE_MAX_CHARS)}`,
        );
      }
    }

    const nativeConfidence = answer.logprobs ? confidenceFromLogprobs(answer.text, answer.logprobs) : undefined;
    const valueConfidence = answer.logprobs ? valueConfidences(answer.text, answer.logprobs) : undefined;
    return {
      ...shapeOutput(input.task, step, checked.value, document.readText),
      ...(nativeConfidence === undefined ? {} : { nativeConfidence }),
      ...(valueConfidence === undefined ? {} : { valueConfidence }),
      usage: usage(),
    };
  }

  return { id: 'openai', invoke };
}

/** The adapter the worker registers (reads its settings from process.env at each call). */
export const openaiProvider: ProviderAdapter = createOpenAIProvider();
