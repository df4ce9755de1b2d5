/**
 * The `anthropic` provider: Claude through the Messages API (@anthropic-ai/sdk). JSON comes through a forced tool
 * whose input schema is the result schema (thinking off, as forced tool use requires), with one repair; the SDK never
 * retries (the plan does), and cost is priced from usage by the profile's own functions.
 * See docs/decisions.md#anthropic-adapter.
 * Over 400 lines: one provider's whole wire protocol (request, media, answer, repair, failures) read in one place.
 */
import Anthropic, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from '@anthropic-ai/sdk';
import type {
  ContentBlockParam,
  MessageCreateParamsNonStreaming,
  MessageParam,
  ToolResultBlockParam,
} from '@anthropic-ai/sdk/resources/messages/messages.js';
import { prepareImage } from '../../media/index.js';
import type { ProviderUsage, Step, TaskSpec } from '../../task.js';
import { type FailureKind, ProviderFailure } from '../../task.js';
import { base64, isPlainObject, MIN_USEFUL_OUTPUT_TOKENS, outputCapWithin, redact } from '../common.js';
import { apiKeyFor } from '../credentials.js';
import { analyzeText } from '../language-model.js';
import { answerErrors } from '../result-validation.js';
import { parseRetryAfterHeader } from '../retry-after.js';
import { normaliseOpenResult, resultFromAnswer } from '../task-prompt.js';
import type { InvokeOptions, ProviderAdapter, ProviderInput, ProviderOutput } from '../types.js';
import {
  ANTHROPIC_IMAGE_TARGET,
  type AnthropicModelPrices,
  anthropicModelId,
  anthropicModelPrices,
  ceilMicros,
  instructionFor,
  MAX_PDF_PAGES,
  MAX_REPAIR_ERROR_CHARS,
  outputTokenCap,
  pdfFitsRequest,
  predictTokens,
  REPAIR_PREFIX,
  RESULT_TOOL_NAME,
  type RequestTokens,
  requestCostMicros,
  resultTool,
  taskForStep,
} from './profile.js';

const LABEL = 'anthropic provider';

// ---------------------------------------------------------------------------------------------------------------
// Options and client
// ---------------------------------------------------------------------------------------------------------------

/** What the adapter reads from its surroundings; tests inject their own. */
export interface AnthropicProviderOptions {
  /** Environment for ANTHROPIC_MODEL and ANTHROPIC_BASE_URL (read at each call); defaults to process.env. */
  env?: NodeJS.ProcessEnv;
  /** Where the API key comes from; defaults to `apiKeyFor('anthropic', env)`. */
  apiKey?: () => Promise<string | undefined>;
}

let cachedClient: { apiKey: string; baseURL: string | undefined; client: Anthropic } | undefined;

/** One client per key and endpoint, reused across invocations (it keeps its HTTP connections alive). */
function clientFor(apiKey: string, baseURL: string | undefined): Anthropic {
  if (cachedClient?.apiKey === apiKey && cachedClient.baseURL === baseURL) return cachedClient.client;
  // maxRetries 0: the plan decides what to retry. The timeout is set per request from the attempt's deadline.
  const client = new Anthropic({ apiKey, baseURL: baseURL ?? null, maxRetries: 0 });
  cachedClient = { apiKey, baseURL, client };
  return client;
}

// ---------------------------------------------------------------------------------------------------------------
// Failures
// ---------------------------------------------------------------------------------------------------------------

class Attempt {
  readonly requests: RequestTokens[] = [];

  constructor(
    readonly prices: AnthropicModelPrices,
    readonly billableUnits: number,
    readonly apiKey: string | undefined,
    private readonly options: InvokeOptions,
  ) {}

  /** Usage of the requests answered so far (undefined when none was). */
  usage(): ProviderUsage | undefined {
    if (this.requests.length === 0) return undefined;
    let cost = 0;
    let inputTokens = 0;
    let outputTokens = 0;
    for (const r of this.requests) {
      cost += requestCostMicros(this.prices, r);
      inputTokens +=
        r.inputTokens +
        (r.cacheWrite5mTokens ?? 0) +
        (r.cacheWrite1hTokens ?? 0) +
        (r.cacheWriteTokens ?? 0) +
        (r.cacheReadTokens ?? 0);
      outputTokens += r.outputTokens;
    }
    return { billableUnits: this.billableUnits, costMicros: ceilMicros(cost), inputTokens, outputTokens };
  }

  /** A failure of `kind`, scrubbed of the key, carrying the usage consumed so far. */
  fail(kind: FailureKind, message: string, retryAfterMs?: number): ProviderFailure {
    const usage = this.usage();
    return new ProviderFailure(kind, `${LABEL}: ${redact(message, [this.apiKey])}`, {
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      ...(usage === undefined ? {} : { usage }),
    });
  }

  /** Milliseconds left before the deadline; throws the timeout failure when none are. */
  remainingMs(stage: string): number {
    const left = this.options.deadlineMs - Date.now();
    if (this.options.signal.aborted || left <= 0) throw this.fail('timeout', `deadline passed before ${stage}`);
    return left;
  }
}

/** Parses a non-negative number of milliseconds or seconds from a header value. */
function headerNumber(value: string | null): number | undefined {
  if (value === null || !/^\s*\d+(\.\d+)?\s*$/.test(value)) return undefined;
  return Number(value);
}

const RATE_LIMIT_RESETS = ['requests', 'tokens', 'input-tokens', 'output-tokens'] as const;

/**
 * How long the server asks us to wait: `retry-after-ms`, else `Retry-After` (seconds or an HTTP date), else the reset
 * time (RFC 3339) of whichever Anthropic rate limit is exhausted (`anthropic-ratelimit-*-remaining: 0`).
 */
export function retryAfterMs(headers: Headers | undefined, now: number = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = headerNumber(headers.get('retry-after-ms'));
  if (ms !== undefined) return Math.ceil(ms);
  const retryAfter = parseRetryAfterHeader(headers.get('retry-after'), now);
  if (retryAfter !== undefined) return retryAfter;
  let latest: number | undefined;
  for (const limit of RATE_LIMIT_RESETS) {
    if (headers.get(`anthropic-ratelimit-${limit}-remaining`)?.trim() !== '0') continue;
    const reset = Date.parse(headers.get(`anthropic-ratelimit-${limit}-reset`) ?? '');
    if (!Number.isNaN(reset)) latest = Math.max(latest ?? 0, reset - now);
  }
  return latest === undefined ? undefined : Math.max(0, latest);
}

/** The error's own words, short: `<status> <type>: <message>`. */
function describeApiError(error: APIError): string {
  const detail = (error.apiMessage ?? '').replace(/\s+/g, ' ').slice(0, 300);
  const type = error.type ?? 'error';
  return `${error.status ?? 'no status'} ${type}${detail ? `: ${detail}` : ''}`;
}

/** Maps anything a request threw to the plan's failure kinds. */
function toFailure(error: unknown, attempt: Attempt, signal: AbortSignal): ProviderFailure {
  if (error instanceof ProviderFailure) return error;
  if (error instanceof APIUserAbortError || signal.aborted) return attempt.fail('timeout', 'the attempt was aborted');
  if (error instanceof APIConnectionTimeoutError) return attempt.fail('timeout', 'the request timed out');
  if (error instanceof APIConnectionError) return attempt.fail('server', `connection failed: ${error.message}`);
  if (error instanceof APIError) {
    const status = error.status ?? 0;
    const text = describeApiError(error);
    if (status === 429) return attempt.fail('rate_limited', text, retryAfterMs(error.headers));
    // 402 billing_error: the account cannot pay, which no retry with this credential fixes.
    if (status === 401 || status === 402 || status === 403) return attempt.fail('auth', text);
    // 408: the server gave up waiting for the request; the same as our own deadline passing.
    if (status === 408) return attempt.fail('timeout', text);
    if (status >= 500) return attempt.fail('server', text);
    return attempt.fail('client', text);
  }
  // A 200 whose body is not JSON makes the SDK's JSON parse throw: not what the API promises.
  // Matched by name: the error may come from another realm than this module's SyntaxError (a VM sandbox).
  if (typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'SyntaxError') {
    return attempt.fail(
      'invalid_output',
      `the response body is not JSON: ${String((error as { message?: unknown }).message)}`,
    );
  }
  return attempt.fail('server', `unexpected error: ${error instanceof Error ? error.message : String(error)}`);
}

// ---------------------------------------------------------------------------------------------------------------
// Response parsing
// ---------------------------------------------------------------------------------------------------------------

interface ToolCall {
  id: string;
  name: string;
  input: unknown;
}

interface ParsedResponse {
  stopReason: string | null;
  refusal: string | undefined;
  /** The assistant turn to echo in a repair request (text and tool calls only). */
  echo: ContentBlockParam[];
  toolCalls: ToolCall[];
}

function tokenCount(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** The usage of a response body, or undefined when it has none the API promises (input and output token counts). */
function parseUsage(body: Record<string, unknown>): RequestTokens | undefined {
  const usage = body.usage;
  if (!isPlainObject(usage)) return undefined;
  const inputTokens = tokenCount(usage.input_tokens);
  const outputTokens = tokenCount(usage.output_tokens);
  if (inputTokens === undefined || outputTokens === undefined) return undefined;
  const split = isPlainObject(usage.cache_creation) ? usage.cache_creation : undefined;
  const split5m = tokenCount(split?.ephemeral_5m_input_tokens);
  const split1h = tokenCount(split?.ephemeral_1h_input_tokens);
  const writes = tokenCount(usage.cache_creation_input_tokens) ?? 0;
  const hasSplit = split5m !== undefined || split1h !== undefined;
  return {
    inputTokens,
    outputTokens,
    cacheWrite5mTokens: split5m ?? 0,
    cacheWrite1hTokens: split1h ?? 0,
    // Without the TTL split every cache write is priced at the dearer 1 h rate.
    cacheWriteTokens: hasSplit ? Math.max(0, writes - (split5m ?? 0) - (split1h ?? 0)) : writes,
    cacheReadTokens: tokenCount(usage.cache_read_input_tokens) ?? 0,
  };
}

/** Reads the parts of a Messages API response the adapter needs; anything missing is the caller's invalid output. */
function parseContent(body: Record<string, unknown>): ParsedResponse | undefined {
  if (!Array.isArray(body.content)) return undefined;
  const echo: ContentBlockParam[] = [];
  const toolCalls: ToolCall[] = [];
  for (const block of body.content) {
    if (!isPlainObject(block)) return undefined;
    if (block.type === 'text' && typeof block.text === 'string' && block.text !== '') {
      echo.push({ type: 'text', text: block.text });
    } else if (block.type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string') {
      toolCalls.push({ id: block.id, name: block.name, input: block.input });
      echo.push({ type: 'tool_use', id: block.id, name: block.name, input: block.input });
    }
  }
  const details = isPlainObject(body.stop_details) ? body.stop_details : undefined;
  const refusal =
    details?.type === 'refusal'
      ? [details.category, details.explanation].filter((s) => typeof s === 'string' && s !== '').join(': ')
      : undefined;
  return {
    stopReason: typeof body.stop_reason === 'string' ? body.stop_reason : null,
    refusal,
    echo,
    toolCalls,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------------------------

/** The content block that carries the file: an image block (prepared by shared/media) or a PDF document block. */
async function fileBlock(input: ProviderInput, attempt: Attempt, options: InvokeOptions): Promise<ContentBlockParam> {
  if (input.bytes.byteLength === 0) throw attempt.fail('unreadable_file', 'the file is empty');
  if (input.facts.mime === 'application/pdf') {
    if (input.facts.pages > MAX_PDF_PAGES) {
      throw attempt.fail(
        'client',
        `the PDF has ${input.facts.pages} pages, over the API's ${MAX_PDF_PAGES} per request`,
      );
    }
    if (!pdfFitsRequest(input.bytes.byteLength)) {
      throw attempt.fail(
        'client',
        `the PDF (${input.bytes.byteLength} bytes) does not fit the API's 32 MB request limit`,
      );
    }
    return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: base64(input.bytes) } };
  }
  let prepared: Awaited<ReturnType<typeof prepareImage>>;
  try {
    prepared = await prepareImage(input.bytes, input.facts.mime, ANTHROPIC_IMAGE_TARGET, options);
  } catch (error) {
    if (error instanceof ProviderFailure) throw error;
    if (options.signal.aborted || Date.now() >= options.deadlineMs) {
      throw attempt.fail('timeout', 'deadline passed while preparing the image');
    }
    throw attempt.fail(
      'client',
      `the image cannot be prepared: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (prepared.mime !== 'image/jpeg' && prepared.mime !== 'image/png') {
    throw attempt.fail('client', `image preparation returned ${prepared.mime}, which this adapter does not send`);
  }
  return { type: 'image', source: { type: 'base64', media_type: prepared.mime, data: base64(prepared.bytes) } };
}

/** The first user turn: the file (or, for an analyze step, the given document text), then the instruction. */
async function firstTurn(
  input: ProviderInput,
  task: TaskSpec,
  attempt: Attempt,
  options: InvokeOptions,
): Promise<MessageParam> {
  const instruction: ContentBlockParam = { type: 'text', text: instructionFor(task) };
  if (input.step === 'analyze' && input.documentText !== undefined) {
    // Cut to what the estimate holds per page (promptTokenBound), so a dense text never bills past the run's hold.
    const allowed = analyzeText(input.documentText, input.facts.pages);
    const text = allowed.trim() === '' ? '(the document has no legible text)' : allowed;
    return { role: 'user', content: [{ type: 'text', text: `<document>\n${text}\n</document>` }, instruction] };
  }
  return { role: 'user', content: [await fileBlock(input, attempt, options), instruction] };
}

/** The repair turns: the model's own answer, then our error result for each tool call and the errors as text. */
function repairTurns(parsed: ParsedResponse, errors: string[]): MessageParam[] {
  const errorText = `${REPAIR_PREFIX}${errors.map((e) => `- ${e}`).join('\n')}`.slice(
    0,
    REPAIR_PREFIX.length + MAX_REPAIR_ERROR_CHARS,
  );
  const results: ToolResultBlockParam[] = parsed.toolCalls.map((call) => ({
    type: 'tool_result',
    tool_use_id: call.id,
    is_error: true,
    content: call.name === RESULT_TOOL_NAME ? errorText : `Unknown tool ${call.name}; only ${RESULT_TOOL_NAME} exists.`,
  }));
  const reply: ContentBlockParam[] = results.length > 0 ? results : [{ type: 'text', text: errorText }];
  const echo: ContentBlockParam[] = parsed.echo.length > 0 ? parsed.echo : [{ type: 'text', text: '(no answer)' }];
  return [
    { role: 'assistant', content: echo },
    { role: 'user', content: reply },
  ];
}

type Verdict = { ok: true; value: Record<string, unknown> } | { ok: false; errors: string[] };

/** Checks a response: refusal and truncation end the attempt; a missing or invalid tool call is repairable. */
function judge(parsed: ParsedResponse, task: TaskSpec, maxTokens: number, attempt: Attempt): Verdict {
  if (parsed.stopReason === 'refusal') {
    throw attempt.fail('refusal', `the model declined the request${parsed.refusal ? ` (${parsed.refusal})` : ''}`);
  }
  if (parsed.stopReason === 'max_tokens' || parsed.stopReason === 'model_context_window_exceeded') {
    throw attempt.fail('truncated', `the answer was cut off (${parsed.stopReason}, max_tokens ${maxTokens})`);
  }
  const call = parsed.toolCalls.find((c) => c.name === RESULT_TOOL_NAME);
  if (!call) return { ok: false, errors: [`no ${RESULT_TOOL_NAME} call was made (stop_reason ${parsed.stopReason})`] };
  const errors = answerErrors(task, call.input);
  if (errors.length > 0 || !isPlainObject(call.input)) {
    return { ok: false, errors: errors.length > 0 ? errors : ['$: expected object'] };
  }
  return { ok: true, value: call.input };
}

/** The output for a validated tool input. */
function outputFor(
  value: Record<string, unknown>,
  task: TaskSpec,
  input: ProviderInput,
  usage: ProviderUsage,
): ProviderOutput {
  const given = input.step === 'analyze' ? input.documentText : undefined;
  if (task.outputFormat === 'text') {
    const text = typeof value.text === 'string' ? value.text : '';
    return { result: { text }, documentText: given ?? text, usage };
  }
  if (task.fields !== null) {
    // Exactly the schema's field names, values as the model gave them (the worker coerces types).
    const result = resultFromAnswer(task.fields, value);
    return given === undefined ? { result, usage } : { result, documentText: given, usage };
  }
  const text = typeof value.text === 'string' ? value.text : undefined;
  const documentText = given ?? text;
  const result = normaliseOpenResult(value);
  return documentText === undefined ? { result, usage } : { result, documentText, usage };
}

// ---------------------------------------------------------------------------------------------------------------
// The adapter
// ---------------------------------------------------------------------------------------------------------------

async function resolveKey(
  source: () => Promise<string | undefined>,
  attempt: (key: string | undefined) => Attempt,
): Promise<string> {
  let key: string | undefined;
  try {
    key = await source();
  } catch (error) {
    // The secret store failing (throttling, network) is transient, not a missing credential.
    throw attempt(undefined).fail(
      'server',
      `could not read the API key secret: ${error instanceof Error ? error.name : 'error'}`,
    );
  }
  if (!key) throw attempt(undefined).fail('auth', 'no API key configured (ANTHROPIC_API_KEY or PROVIDER_SECRET_ARN)');
  return key;
}

/** Creates the adapter; `options` replace the environment and key source (tests). */
export function createAnthropicProvider(options: AnthropicProviderOptions = {}): ProviderAdapter {
  const envOf = (): NodeJS.ProcessEnv => options.env ?? process.env;
  const keySource = options.apiKey ?? (() => apiKeyFor('anthropic', envOf()));

  async function invoke(input: ProviderInput, invokeOptions: InvokeOptions): Promise<ProviderOutput> {
    const env = envOf();
    const model = anthropicModelId(env);
    const step: Step = input.step;
    const task = taskForStep(input.task, step);
    const billableUnits = Math.max(1, input.facts.pages);
    const prices = anthropicModelPrices(model);
    if (!prices) {
      throw new ProviderFailure('client', `${LABEL}: model ${model} has no prices in anthropic/pricing.json`);
    }
    const blank = (key: string | undefined) => new Attempt(prices, billableUnits, key, invokeOptions);
    const apiKey = await resolveKey(keySource, blank);
    const attempt = blank(apiKey);
    attempt.remainingMs('preparing the request');

    const client = clientFor(apiKey, env.ANTHROPIC_BASE_URL?.trim() || undefined);
    const tool = resultTool(task);
    // The spend limit: each request's output cap is what the attempt's allowance leaves after its input.
    const cost = (t: { input: number; output: number }) =>
      requestCostMicros(prices, { inputTokens: t.input, outputTokens: t.output });
    const predictedInput = predictTokens(input.facts, input.task, step, {
      env,
      ...(input.documentText !== undefined ? { documentTextChars: input.documentText.length } : {}),
    }).input;
    let maxTokens = outputCapWithin(
      outputTokenCap(input.facts, input.task, step, prices),
      invokeOptions.maxCostMicros,
      predictedInput,
      cost,
    );
    if (maxTokens < MIN_USEFUL_OUTPUT_TOKENS) {
      throw new ProviderFailure('client', `${LABEL}: the request would cross the run spend limit (not sent)`);
    }
    const messages: MessageParam[] = [await firstTurn(input, task, attempt, invokeOptions)];

    for (let request = 1; ; request++) {
      const body: MessageCreateParamsNonStreaming = {
        model,
        max_tokens: maxTokens,
        messages,
        tools: [tool],
        tool_choice: { type: 'tool', name: RESULT_TOOL_NAME, disable_parallel_tool_use: true },
        // Forced tool use is refused with thinking on, and Haiku 5.5 thinks by default.
        thinking: { type: 'disabled' },
      };
      let response: unknown;
      try {
        const timeout = attempt.remainingMs(request === 1 ? 'calling the model' : 'the repair request');
        response = await client.messages.create(body, { signal: invokeOptions.signal, timeout, maxRetries: 0 });
      } catch (error) {
        throw toFailure(error, attempt, invokeOptions.signal);
      }
      if (!isPlainObject(response)) throw attempt.fail('invalid_output', 'the response is not a JSON object');
      const usage = parseUsage(response);
      if (!usage) throw attempt.fail('invalid_output', 'the response carries no token usage');
      attempt.requests.push(usage);
      const parsed = parseContent(response);
      if (!parsed) throw attempt.fail('invalid_output', 'the response has no readable content');

      const verdict = judge(parsed, task, maxTokens, attempt);
      if (verdict.ok) {
        return outputFor(verdict.value, task, input, attempt.usage() ?? { billableUnits, costMicros: 0 });
      }
      if (request >= 2) {
        throw attempt.fail(
          'invalid_output',
          `the result does not match the schema after one repair: ${verdict.errors.slice(0, 5).join('; ')}`,
        );
      }
      // A repair that could cross the spend limit is skipped: the attempt fails as the repair would have.
      const spent = attempt.usage()?.costMicros ?? 0;
      const repairCap = outputCapWithin(
        maxTokens,
        invokeOptions.maxCostMicros === undefined ? undefined : invokeOptions.maxCostMicros - spent,
        usage.inputTokens + usage.outputTokens,
        cost,
      );
      if (repairCap < Math.max(MIN_USEFUL_OUTPUT_TOKENS, usage.outputTokens)) {
        throw attempt.fail(
          'invalid_output',
          'the result does not match the schema; a repair would cross the run spend limit',
        );
      }
      maxTokens = repairCap;
      messages.push(...repairTurns(parsed, verdict.errors));
    }
  }

  return { id: 'anthropic', invoke };
}

/** The adapter the worker uses: key from ANTHROPIC_API_KEY or the provider secret, model from ANTHROPIC_MODEL. */
export const anthropicProvider: ProviderAdapter = createAnthropicProvider();
