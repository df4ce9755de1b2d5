/**
 * The `gemini` provider: the Gemini API's `generateContent` through `@google/genai` (imported on first use). The file
 * goes inline, JSON through `responseJsonSchema` with one repair, nothing is stored at Google, and the plan owns
 * retries (SDK retries and automatic continuation off). See docs/decisions.md#gemini-adapter.
 * Over 400 lines: one provider's whole wire protocol (request, media, answer, repair, failures) read in one place.
 */
import type { Content, GenerateContentConfig, GenerateContentResponse, GoogleGenAI, Part } from '@google/genai';
import { Deadline, prepareImage } from '../../media/index.js';
import type { ProviderUsage, TaskSpec } from '../../task.js';
import { ProviderFailure } from '../../task.js';
import { base64, isPlainObject, MIN_USEFUL_OUTPUT_TOKENS, outputCapWithin, redact, truncate } from '../common.js';
import { apiKeyFor } from '../credentials.js';
import { analyzeText } from '../language-model.js';
import { answerErrors } from '../result-validation.js';
import { parseRetryAfterHeader } from '../retry-after.js';
import { buildInstruction, normaliseOpenResult, resultFromAnswer, resultJsonSchema } from '../task-prompt.js';
import type { InvokeOptions, ProviderAdapter, ProviderInput, ProviderOutput } from '../types.js';
import {
  geminiPricing,
  IMAGE_TARGET,
  MAX_PDF_BYTES,
  type ModelPrices,
  mediaTokenBound,
  modelId,
  outputTokenCap,
  predictTokens,
  pricesFor,
  promptTokenBound,
  REPAIR_ERROR_MAX_CHARS,
  REPAIR_MESSAGE_MAX_TOKENS,
  ratesAt,
  taskForStep,
  tokenCostMicros,
} from './profile.js';

/**
 * Finish reasons of an answer cut short: the output cap, or the per-request token limit (CONTINUATION: the API could
 * go on with a continuation token, which this adapter does not follow up: automaticContinuation is off).
 */
const CUT_REASONS: ReadonlySet<string> = new Set(['MAX_TOKENS', 'CONTINUATION']);
/** Finish reasons (and prompt block reasons) that mean the model declined or was stopped by a safety system. */
const REFUSAL_REASONS: ReadonlySet<string> = new Set([
  'SAFETY',
  'RECITATION',
  'PROHIBITED_CONTENT',
  'BLOCKLIST',
  'SPII',
  'IMAGE_SAFETY',
  'IMAGE_PROHIBITED_CONTENT',
  'IMAGE_RECITATION',
  'LANGUAGE',
]);
/** Longest upstream error text quoted in a failure message. */
const MAX_UPSTREAM_MESSAGE = 300;

type GenAiModule = typeof import('@google/genai');
let genaiModule: Promise<GenAiModule> | undefined;

/** Loads the SDK once, on first use. */
function loadGenAi(): Promise<GenAiModule> {
  genaiModule ??= import('@google/genai').catch((error: unknown) => {
    genaiModule = undefined;
    throw error;
  });
  return genaiModule;
}

// ---------------------------------------------------------------------------------------------------------------
// Answers (validated by ../result-validation.ts)
// ---------------------------------------------------------------------------------------------------------------

/** Parses the model's JSON answer (tolerating a Markdown code fence); the error says why it is not JSON. */
function parseJsonAnswer(text: string): { value: unknown } | { error: string } {
  const trimmed = text
    .trim()
    .replace(/^```(?:json)?\s*/i, '')
    .replace(/\s*```$/, '');
  if (trimmed === '') return { error: 'the answer is empty' };
  try {
    return { value: JSON.parse(trimmed) as unknown };
  } catch {
    return { error: 'the answer is not valid JSON' };
  }
}

/** The envelope's result for a validated answer: exactly the field names, the open-analysis object, or `{text}`. */
function shapeAnswer(task: TaskSpec, value: Record<string, unknown>): Record<string, unknown> {
  if (task.outputFormat === 'text') return { text: value.text };
  if (task.fields !== null) return resultFromAnswer(task.fields, value);
  return normaliseOpenResult({ summary: value.summary, text: value.text, keyValues: value.keyValues });
}

// ---------------------------------------------------------------------------------------------------------------
// Failures
// ---------------------------------------------------------------------------------------------------------------

/** Milliseconds from a `google.rpc.RetryInfo` detail's `retryDelay` (a protobuf Duration in JSON: "43s", "0.5s"). */
function retryAfterFromDetails(details: unknown): number | undefined {
  if (!Array.isArray(details)) return undefined;
  for (const detail of details) {
    if (!isPlainObject(detail) || typeof detail.retryDelay !== 'string') continue;
    const match = /^(\d+(?:\.\d+)?)s$/.exec(detail.retryDelay.trim());
    if (match?.[1]) return Math.round(Number(match[1]) * 1000);
  }
  return undefined;
}

interface UpstreamError {
  message: string;
  status: string;
  reasons: string[];
  details: unknown;
}

/** The `{error: {code, message, status, details}}` body the SDK puts (as JSON) in an ApiError's message. */
function parseUpstream(raw: string): UpstreamError {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    return { message: raw, status: '', reasons: [], details: undefined };
  }
  const error = isPlainObject(body) && isPlainObject(body.error) ? body.error : {};
  const details = error.details;
  const reasons = Array.isArray(details)
    ? details.flatMap((d) => (isPlainObject(d) && typeof d.reason === 'string' ? [d.reason] : []))
    : [];
  return {
    message: typeof error.message === 'string' ? error.message : raw,
    status: typeof error.status === 'string' ? error.status : '',
    reasons,
    details,
  };
}

/** Maps an HTTP error from the API to a failure kind (the Gemini API answers an invalid key with 400 API_KEY_INVALID). */
function apiFailure(status: number, rawMessage: string, headers: Headers | undefined, apiKey: string): ProviderFailure {
  const upstream = parseUpstream(rawMessage);
  const quoted = redact(upstream.message, [apiKey], MAX_UPSTREAM_MESSAGE);
  const message = `gemini: HTTP ${status}${upstream.status ? ` ${upstream.status}` : ''}: ${quoted}`;
  if (status === 429) {
    const retryAfterMs = parseRetryAfterHeader(headers?.get('retry-after')) ?? retryAfterFromDetails(upstream.details);
    return new ProviderFailure('rate_limited', message, retryAfterMs === undefined ? undefined : { retryAfterMs });
  }
  const keyProblem = upstream.reasons.some((r) => /^API_KEY_/.test(r)) || /api key/i.test(upstream.message);
  if (status === 401 || status === 403 || (status === 400 && keyProblem)) return new ProviderFailure('auth', message);
  if (status === 408) return new ProviderFailure('timeout', message);
  if (status >= 400 && status < 500) return new ProviderFailure('client', message);
  return new ProviderFailure('server', message);
}

/** An error's name, read structurally: errors raised inside undici come from another realm than this module's. */
function errorName(error: unknown): string | undefined {
  return isPlainObject(error) && typeof error.name === 'string' ? error.name : undefined;
}

function isAbortError(error: unknown): boolean {
  const name = errorName(error);
  return name === 'AbortError' || name === 'TimeoutError';
}

/** A short description of a transport error (name, message, and the low-level code such as ECONNREFUSED). */
function describe(error: unknown): string {
  if (!isPlainObject(error)) return String(error);
  const cause = error.cause;
  const code = isPlainObject(cause) && typeof cause.code === 'string' ? ` (${cause.code})` : '';
  return `${errorName(error) ?? 'Error'}: ${String(error.message ?? '')}${code}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------------------------

interface Attempt {
  genai: GenAiModule;
  client: GoogleGenAI;
  model: string;
  apiKey: string;
  deadline: Deadline;
  signal: AbortSignal;
  config: GenerateContentConfig;
}

/** Tokens one response reported (or, when it reported none, the request's upper bound: never an understatement). */
interface TokenCounts {
  input: number;
  /** The part of `input` served from Gemini's context cache (billed at the cached rate). */
  cachedInput: number;
  output: number;
}

function countsOf(response: GenerateContentResponse, fallback: TokenCounts): TokenCounts {
  const usage = response.usageMetadata;
  if (!usage || (usage.promptTokenCount === undefined && usage.candidatesTokenCount === undefined)) return fallback;
  return {
    input: (usage.promptTokenCount ?? 0) + (usage.toolUsePromptTokenCount ?? 0),
    // Implicit caching: a request that repeats a recent prefix (a repair resends the document first) has those
    // tokens counted in promptTokenCount and again in cachedContentTokenCount, billed at the cached rate.
    cachedInput: usage.cachedContentTokenCount ?? 0,
    // Thinking tokens are billed as output.
    output: (usage.candidatesTokenCount ?? 0) + (usage.thoughtsTokenCount ?? 0),
  };
}

/** Sends one generateContent request within the attempt's deadline; every error comes out as a ProviderFailure. */
async function send(attempt: Attempt, contents: Content[]): Promise<GenerateContentResponse> {
  attempt.deadline.check('sending the request');
  const captured: { headers?: Headers } = {};
  // A fetch that remembers the response headers: the SDK's ApiError keeps only status and body, and a 429's
  // Retry-After lives in the headers.
  const fetchRecordingHeaders: typeof fetch = async (url, init) => {
    const response = await fetch(url, init);
    captured.headers = response.headers;
    return response;
  };
  const request = attempt.client.models.generateContent({
    model: attempt.model,
    contents,
    config: {
      ...attempt.config,
      abortSignal: attempt.signal,
      httpOptions: { timeout: Math.max(1, attempt.deadline.remainingMs()), fetch: fetchRecordingHeaders },
    },
  });
  try {
    return await attempt.deadline.race(request, 'waiting for the Gemini API');
  } catch (error) {
    request.catch(() => {}); // abandoned after a timeout: its later rejection must not go unhandled
    if (error instanceof ProviderFailure) throw error;
    if (attempt.deadline.expired() || isAbortError(error)) {
      throw new ProviderFailure('timeout', 'gemini: deadline passed while waiting for the Gemini API');
    }
    if (error instanceof attempt.genai.ApiError) {
      throw apiFailure(error.status, error.message, captured.headers, attempt.apiKey);
    }
    // The SDK parses the body with Response.json(): a body that is not JSON surfaces as a SyntaxError.
    if (errorName(error) === 'SyntaxError') {
      throw new ProviderFailure('invalid_output', 'gemini: the API answered with a body that is not JSON');
    }
    throw new ProviderFailure('server', `gemini: request failed: ${redact(describe(error), [attempt.apiKey])}`);
  }
}

interface Answer {
  text: string;
  finishReason: string | undefined;
  /** The model's turn as returned (thought signatures included), for the repair conversation. */
  modelParts: Part[];
  avgLogprobs: number | undefined;
}

function isCut(answer: Answer): boolean {
  return answer.finishReason !== undefined && CUT_REASONS.has(answer.finishReason);
}

function cutWhy(answer: Answer, cap: number): string {
  return answer.finishReason === 'MAX_TOKENS'
    ? `at the ${cap}-token output cap`
    : `${answer.finishReason}: the per-request token limit`;
}

/** The first candidate's answer; a blocked prompt or a safety stop is a refusal, a missing candidate invalid output. */
function readAnswer(response: GenerateContentResponse, usage: () => ProviderUsage): Answer {
  const blockReason = response.promptFeedback?.blockReason;
  if (blockReason && blockReason !== 'BLOCKED_REASON_UNSPECIFIED') {
    throw new ProviderFailure('refusal', `gemini: the request was blocked (${blockReason})`, { usage: usage() });
  }
  const candidate = Array.isArray(response.candidates) ? response.candidates[0] : undefined;
  if (typeof candidate !== 'object' || candidate === null) {
    throw new ProviderFailure('invalid_output', 'gemini: the response has no candidate', { usage: usage() });
  }
  const finishReason = typeof candidate.finishReason === 'string' ? candidate.finishReason : undefined;
  if (finishReason && REFUSAL_REASONS.has(finishReason)) {
    throw new ProviderFailure('refusal', `gemini: generation stopped (${finishReason})`, { usage: usage() });
  }
  const parts: Part[] = Array.isArray(candidate.content?.parts) ? candidate.content.parts : [];
  // Thought summaries are not part of the answer (they are only returned when asked for, which this adapter is not).
  const modelParts = parts.filter((p) => typeof p === 'object' && p !== null && p.thought !== true);
  const text = modelParts.map((p) => (typeof p.text === 'string' ? p.text : '')).join('');
  const avgLogprobs = typeof candidate.avgLogprobs === 'number' ? candidate.avgLogprobs : undefined;
  return { text, finishReason, modelParts, avgLogprobs };
}

/** The repair turn: what was wrong, and what to answer instead. */
function repairMessage(error: string): string {
  return (
    `Your answer does not match the required response schema: ${truncate(error, REPAIR_ERROR_MAX_CHARS)}. ` +
    'Answer again with only the JSON object the schema describes: every property present, null for a value the ' +
    'document does not show, nothing else.'
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Input
// ---------------------------------------------------------------------------------------------------------------

/** The parts that carry the document: the text another step read, the PDF inline, or the prepared image inline. */
async function documentParts(input: ProviderInput, options: InvokeOptions, deadline: Deadline): Promise<Part[]> {
  if (input.step === 'analyze' && input.documentText !== undefined) {
    const text = analyzeText(input.documentText, input.facts.pages);
    return [{ text: `Document text (read from the file):\n"""\n${text}\n"""` }];
  }
  if (input.bytes.byteLength === 0) throw new ProviderFailure('unreadable_file', 'gemini: the file is empty');
  if (input.facts.mime === 'application/pdf') {
    if (input.bytes.byteLength > MAX_PDF_BYTES) {
      const mb = (input.bytes.byteLength / 1_000_000).toFixed(1);
      throw new ProviderFailure(
        'client',
        `gemini: the PDF is ${mb} MB; the Gemini API takes PDFs up to ${MAX_PDF_BYTES / 1_000_000} MB inline`,
      );
    }
    return [{ inlineData: { mimeType: 'application/pdf', data: base64(input.bytes) } }];
  }
  try {
    const image = await prepareImage(input.bytes, input.facts.mime, IMAGE_TARGET, options);
    return [{ inlineData: { mimeType: image.mime, data: base64(image.bytes) } }];
  } catch (error) {
    if (error instanceof ProviderFailure) throw error;
    if (deadline.expired()) throw deadline.failure('preparing the image');
    throw new ProviderFailure('client', 'gemini: the image cannot be prepared', { cause: error });
  }
}

/** The API key, or an `auth` failure when none is configured or the secret cannot be read. */
async function readApiKey(env: NodeJS.ProcessEnv, deadline: Deadline): Promise<string> {
  let key: string | undefined;
  try {
    key = await deadline.race(apiKeyFor('gemini', env), 'reading the API key');
  } catch (error) {
    if (error instanceof ProviderFailure) throw error;
    throw new ProviderFailure('auth', 'gemini: the API key could not be read from the provider secret');
  }
  if (!key) throw new ProviderFailure('auth', 'gemini: no API key (set GEMINI_API_KEY or PROVIDER_SECRET_ARN)');
  return key;
}

// ---------------------------------------------------------------------------------------------------------------
// The adapter
// ---------------------------------------------------------------------------------------------------------------

/** What `createGeminiProvider` can be given instead of the process defaults. */
export interface GeminiProviderOptions {
  /** Environment to read the key, model and base URL from (default: process.env, read at each call). */
  env?: NodeJS.ProcessEnv;
  /** Clock for the price period (default: Date.now). */
  now?: () => number;
}

/** Builds the Gemini adapter; tests pass their own environment. */
export function createGeminiProvider(options: GeminiProviderOptions = {}): ProviderAdapter {
  const now = options.now ?? Date.now;

  async function invoke(input: ProviderInput, invokeOptions: InvokeOptions): Promise<ProviderOutput> {
    const env = options.env ?? process.env;
    const deadline = new Deadline(invokeOptions.signal, invokeOptions.deadlineMs, 'gemini');
    deadline.check('starting');

    const model = modelId(env);
    const pricing: ModelPrices | undefined = pricesFor(model);
    if (!pricing) {
      const known = Object.keys(geminiPricing.models).join(', ');
      throw new ProviderFailure('client', `gemini: model "${model}" has no price in pricing.json (priced: ${known})`);
    }
    const rates = ratesAt(pricing, now());
    const apiKey = await readApiKey(env, deadline);
    const task = taskForStep(input.task, input.step);
    const json = task.outputFormat === 'json';
    const schema = resultJsonSchema(task);
    const docParts = await documentParts(input, invokeOptions, deadline);

    const genai = await deadline.race(loadGenAi(), 'loading the Gemini SDK');
    const baseUrl = env.GEMINI_BASE_URL?.trim() || env.GOOGLE_GEMINI_BASE_URL?.trim() || undefined;
    const client = new genai.GoogleGenAI({
      apiKey,
      // Never Vertex AI, whatever GOOGLE_GENAI_USE_VERTEXAI / _ENTERPRISE say: this adapter bills Gemini API prices.
      enterprise: false,
      ...(baseUrl ? { httpOptions: { baseUrl } } : {}),
    });
    // The spend limit: each request's output cap (thinking included) is what the attempt's allowance leaves.
    const cost = (t: { input: number; output: number }) =>
      t.input * rates.inputPerMTokUsd + t.output * rates.outputPerMTokUsd;
    const predictedInput = predictTokens(input.facts, input.task, input.step, {
      env,
      ...(input.documentText !== undefined ? { documentTextChars: input.documentText.length } : {}),
    }).input;
    const cap = outputCapWithin(
      outputTokenCap(input.task, input.step, input.facts.pages, pricing),
      invokeOptions.maxCostMicros,
      predictedInput,
      cost,
    );
    if (cap < MIN_USEFUL_OUTPUT_TOKENS) {
      throw new ProviderFailure('client', 'gemini: the request would cross the run spend limit (not sent)');
    }
    const attempt: Attempt = {
      genai,
      client,
      model,
      apiKey,
      deadline,
      signal: invokeOptions.signal,
      config: {
        maxOutputTokens: cap,
        candidateCount: 1,
        // Document reading needs little reasoning; LOW keeps thinking tokens (billed as output) small.
        thinkingConfig: { thinkingLevel: genai.ThinkingLevel.LOW },
        ...(json ? { responseMimeType: 'application/json', responseJsonSchema: schema } : {}),
        // One request per call: a CONTINUATION answer is not followed up behind the plan's back.
        automaticContinuation: false,
        // Client documents stay out of the project's request logs, which are on by default for paid projects created
        // since 2026-10-26 (https://ai.google.dev/gemini-api/docs/logs-datasets).
        store: false,
      },
    };

    // Token totals over the attempt's requests; a response without usage counts at the request's upper bound.
    const totals: TokenCounts = { input: 0, cachedInput: 0, output: 0 };
    const usage = (): ProviderUsage => ({
      billableUnits: Math.max(1, input.facts.pages),
      costMicros: tokenCostMicros(totals.input, totals.output, rates, totals.cachedInput),
      inputTokens: totals.input,
      outputTokens: totals.output,
    });
    const firstInputBound =
      promptTokenBound(input.task, input.step) + mediaTokenBound(input.facts, input.step, pricing);
    const record = (response: GenerateContentResponse, inputBound: number): void => {
      const counts = countsOf(response, { input: inputBound, cachedInput: 0, output: cap });
      totals.input += counts.input;
      totals.cachedInput += Math.min(counts.cachedInput, counts.input);
      totals.output += counts.output;
    };

    const contents: Content[] = [{ role: 'user', parts: [...docParts, { text: buildInstruction(task) }] }];
    const first = await send(attempt, contents);
    record(first, firstInputBound);
    let answer = readAnswer(first, usage);

    let text: string;
    let value: Record<string, unknown> | undefined;
    if (!json) {
      // A cut transcription would pass for a whole one: it fails the attempt instead.
      if (isCut(answer)) {
        throw new ProviderFailure('truncated', `gemini: the answer was cut short (${cutWhy(answer, cap)})`, {
          usage: usage(),
        });
      }
      text = answer.text;
    } else {
      // A cut answer is never complete, even when what came back parses; it would be cut again: no repair.
      if (isCut(answer)) {
        throw new ProviderFailure('truncated', `gemini: the answer was cut short (${cutWhy(answer, cap)})`, {
          usage: usage(),
        });
      }
      let verdict = judge(task, answer.text);
      if ('error' in verdict) {
        // A repair that could cross the spend limit is skipped: the attempt fails as the repair would have.
        const repairCap = outputCapWithin(
          cap,
          invokeOptions.maxCostMicros === undefined ? undefined : invokeOptions.maxCostMicros - usage().costMicros,
          totals.input + totals.output,
          cost,
        );
        if (repairCap < Math.max(MIN_USEFUL_OUTPUT_TOKENS, totals.output)) {
          throw new ProviderFailure(
            'invalid_output',
            `gemini: invalid answer; a repair would cross the run spend limit: ${verdict.error}`,
            { usage: usage() },
          );
        }
        attempt.config = { ...attempt.config, maxOutputTokens: repairCap };
        const repair: Content[] = [
          ...contents,
          { role: 'model', parts: answer.modelParts.length > 0 ? answer.modelParts : [{ text: answer.text }] },
          { role: 'user', parts: [{ text: repairMessage(verdict.error) }] },
        ];
        const second = await sendRecorded(attempt, repair, usage);
        record(second, firstInputBound + cap + REPAIR_MESSAGE_MAX_TOKENS);
        answer = readAnswer(second, usage);
        verdict = judge(task, answer.text);
        if ('error' in verdict) {
          throw new ProviderFailure('invalid_output', `gemini: invalid answer after one repair: ${verdict.error}`, {
            usage: usage(),
          });
        }
      }
      value = verdict.value;
      text = answer.text;
    }

    const result = value ? shapeAnswer(task, value) : { text };
    const documentText =
      input.step === 'analyze' && input.documentText !== undefined
        ? input.documentText
        : typeof result.text === 'string'
          ? result.text
          : undefined;
    const nativeConfidence =
      answer.avgLogprobs !== undefined && Number.isFinite(answer.avgLogprobs)
        ? Math.min(1, Math.max(0, Math.exp(answer.avgLogprobs)))
        : undefined;
    return {
      result,
      ...(documentText !== undefined ? { documentText } : {}),
      ...(nativeConfidence !== undefined ? { nativeConfidence } : {}),
      usage: usage(),
    };
  }

  return { id: 'gemini', invoke };
}

/** A failed repair request still cost the first request: its failure carries the usage so far. */
async function sendRecorded(
  attempt: Attempt,
  contents: Content[],
  usage: () => ProviderUsage,
): Promise<GenerateContentResponse> {
  try {
    return await send(attempt, contents);
  } catch (error) {
    if (error instanceof ProviderFailure && error.usage === undefined) {
      throw new ProviderFailure(error.kind, error.message, {
        usage: usage(),
        ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}),
      });
    }
    throw error;
  }
}

/** At most this many schema problems are quoted (the repair message is bounded by REPAIR_MESSAGE_MAX_TOKENS). */
const PROBLEMS_QUOTED = 3;

/** Parses a JSON answer and checks what coercion to the task's result cannot fix (answerErrors). */
function judge(task: TaskSpec, text: string): { value: Record<string, unknown> } | { error: string } {
  const parsed = parseJsonAnswer(text);
  if ('error' in parsed) return parsed;
  const problems = answerErrors(task, parsed.value, PROBLEMS_QUOTED);
  if (problems.length > 0) return { error: problems.join('; ') };
  return isPlainObject(parsed.value) ? { value: parsed.value } : { error: 'the answer is not a JSON object' };
}

/** The Gemini adapter, reading its configuration from process.env at each call. */
export const geminiProvider: ProviderAdapter = createGeminiProvider();
