/**
 * The `bedrock` provider: Amazon Bedrock's Converse API with a Nova vision model. Credentials and endpoint are the
 * SDK's; HTTP/1.1; SDK retries off (the plan retries) and every request bound to the attempt's deadline; JSON through
 * a forced tool with one repair; AWS text redacted before it reaches a failure. See docs/decisions.md#bedrock-adapter.
 * Over 400 lines: one provider's whole wire protocol (request, media, answer, repair, failures) read in one place.
 */
import {
  BedrockRuntimeClient,
  type ContentBlock,
  ConverseCommand,
  type ConverseCommandInput,
  type ConverseCommandOutput,
  type Message,
  type TokenUsage,
  type Tool,
  type ToolInputSchema,
} from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { log } from '../../log.js';
import { Deadline, pdfTextLayer, prepareImage } from '../../media/index.js';
import type { ProviderUsage } from '../../task.js';
import { ProviderFailure } from '../../task.js';
import { redactAwsCredentials } from '../aws-credentials.js';
import { MIN_USEFUL_OUTPUT_TOKENS, outputCapWithin, truncate } from '../common.js';
import { analyzeText, textTokenBound } from '../language-model.js';
import { answerErrors } from '../result-validation.js';
import { parseRetryAfterHeader } from '../retry-after.js';
import { normaliseOpenResult, resultFromAnswer } from '../task-prompt.js';
import type { InvokeOptions, ProviderAdapter, ProviderInput, ProviderOutput } from '../types.js';
import {
  type BedrockModel,
  configuredModel,
  documentTextBlock,
  IMAGE_TARGET,
  instructionFor,
  MAX_PDF_BYTES,
  modelId,
  outputTokenCap,
  predictedTokenCostMicros,
  predictTokens,
  promptTokenBound,
  REPAIR_ERROR_MAX_CHARS,
  RESULT_TOOL_NAME,
  resultToolSpec,
  SYSTEM_PROMPT,
  tokenCostMicros,
  usesResultTool,
} from './profile.js';

/** The shared `Retry-After` parser, under the name this adapter has always exported. */
export { parseRetryAfterHeader as parseRetryAfter };

/** Connection setup allowance; the rest of the attempt's time is the request timeout. */
const CONNECTION_TIMEOUT_MS = 5_000;
/** Longest provider message kept in a failure (after redaction). */
const MAX_MESSAGE_CHARS = 300;

// ---------------------------------------------------------------------------------------------------------------
// Failures
// ---------------------------------------------------------------------------------------------------------------

interface SdkErrorShape {
  name?: string;
  message?: string;
  code?: string;
  $metadata?: { httpStatusCode?: number };
  $response?: { statusCode?: number; headers?: Record<string, string | undefined> };
}

function asSdkError(error: unknown): SdkErrorShape {
  return error !== null && typeof error === 'object' ? (error as SdkErrorShape) : {};
}

const AUTH_ERRORS = new Set([
  'AccessDeniedException',
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'IncompleteSignature',
  'ExpiredTokenException',
  'InvalidClientTokenId',
  'MissingAuthenticationTokenException',
  'SignatureDoesNotMatch',
  'CredentialsProviderError',
]);
const CLIENT_ERRORS = new Set(['ValidationException', 'ResourceNotFoundException', 'ConflictException']);
const SERVER_ERRORS = new Set([
  'InternalServerException',
  'ServiceUnavailableException',
  'ModelTimeoutException',
  'ModelNotReadyException',
  'ModelErrorException',
  'ModelStreamErrorException',
]);
// A quota (tokens or requests per minute/day) is a rate limit too: this provider cannot serve the attempt now.
const RATE_ERRORS = new Set(['ThrottlingException', 'ServiceQuotaExceededException', 'TooManyRequestsException']);
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
]);

/**
 * The failure an SDK or network error stands for: throttling and quotas → rate_limited (with Retry-After), credential
 * and permission errors → auth, other 4xx → client, model/service errors and 5xx → server, abort → timeout, an
 * unreadable 2xx body → invalid_output. The SDK error is not attached as `cause`: it carries the raw response, and
 * only the redacted message may leave the adapter.
 */
export function failureFor(
  error: unknown,
  deadline: Pick<Deadline, 'expired'>,
  env: NodeJS.ProcessEnv,
): ProviderFailure {
  if (error instanceof ProviderFailure) return error;
  const e = asSdkError(error);
  const name = e.name ?? 'Error';
  // The SDK's HTTP handler renames a reset or broken connection (ECONNRESET, EPIPE) to TimeoutError, keeping its
  // code: that is a failed connection, not a deadline.
  const brokenConnection = e.code !== undefined && e.code !== 'ETIMEDOUT' && NETWORK_CODES.has(e.code);
  if (name === 'AbortError' || (name === 'TimeoutError' && !brokenConnection) || deadline.expired()) {
    return new ProviderFailure('timeout', 'bedrock: the attempt deadline passed before Bedrock answered');
  }
  const status = e.$metadata?.httpStatusCode ?? e.$response?.statusCode;
  const detail = truncate(redactAwsCredentials(e.message ?? String(error), env), MAX_MESSAGE_CHARS);
  const message = `bedrock: ${name}${status === undefined ? '' : ` (HTTP ${status})`}: ${detail}`;
  const rateLimited = (): ProviderFailure => {
    const retryAfterMs = parseRetryAfterHeader(e.$response?.headers?.['retry-after']);
    return new ProviderFailure('rate_limited', message, retryAfterMs === undefined ? undefined : { retryAfterMs });
  };

  if (RATE_ERRORS.has(name)) return rateLimited();
  if (AUTH_ERRORS.has(name)) return new ProviderFailure('auth', message);
  if (CLIENT_ERRORS.has(name)) return new ProviderFailure('client', message);
  if (SERVER_ERRORS.has(name)) return new ProviderFailure('server', message);
  // A 2xx whose body the SDK could not parse: not what the API promises.
  if (status !== undefined && status >= 200 && status < 300) {
    return new ProviderFailure('invalid_output', `bedrock: unreadable response body (HTTP ${status})`);
  }
  if (status === 429) return rateLimited();
  if (status === 401 || status === 403) return new ProviderFailure('auth', message);
  if (status !== undefined && status >= 400 && status < 500) return new ProviderFailure('client', message);
  if (status !== undefined && status >= 500) return new ProviderFailure('server', message);
  if (/region is missing/i.test(detail)) {
    return new ProviderFailure('auth', 'bedrock: no AWS Region configured (set AWS_REGION)');
  }
  if (e.code && NETWORK_CODES.has(e.code)) {
    return new ProviderFailure('server', `bedrock: connection failed (${e.code})`);
  }
  return new ProviderFailure('server', message);
}

/** The same failure carrying the usage consumed so far (a failure after a billed request still cost its tokens). */
function withUsage(failure: ProviderFailure, usage: ProviderUsage | undefined): ProviderFailure {
  if (usage === undefined || failure.usage !== undefined) return failure;
  return new ProviderFailure(failure.kind, failure.message, {
    usage,
    cause: failure,
    ...(failure.retryAfterMs === undefined ? {} : { retryAfterMs: failure.retryAfterMs }),
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------------------------

/** Tokens used so far by an attempt's requests. */
class UsageMeter {
  inputTokens = 0;
  outputTokens = 0;
  requests = 0;

  constructor(
    private readonly model: BedrockModel,
    private readonly billableUnits: number,
  ) {}

  /**
   * Adds one response's usage. A response without usage counts (missing, or not numbers) is priced at the request's
   * bound (`bound`: its input and output cap) and logged: Converse always reports them, so this is a broken answer.
   */
  add(usage: TokenUsage | undefined, bound: { input: number; output: number }): void {
    const counted = (n: number | undefined) => n !== undefined && Number.isFinite(n) && n >= 0;
    if (!usage || !counted(usage.inputTokens) || !counted(usage.outputTokens)) {
      log.warn('bedrock: a response without token usage; priced at the request bound', { bound });
      this.requests += 1;
      this.inputTokens += bound.input;
      this.outputTokens += bound.output;
      return;
    }
    this.requests += 1;
    // Cache tokens are counted apart from inputTokens; no request here uses caching, but any reported are billed.
    this.inputTokens +=
      (usage?.inputTokens ?? 0) + (usage?.cacheReadInputTokens ?? 0) + (usage?.cacheWriteInputTokens ?? 0);
    this.outputTokens += usage?.outputTokens ?? 0;
  }

  /** The usage so far, or undefined before any request was answered. */
  usage(): ProviderUsage | undefined {
    if (this.requests === 0) return undefined;
    return {
      billableUnits: this.billableUnits,
      costMicros: tokenCostMicros(this.inputTokens, this.outputTokens, this.model.price),
      inputTokens: this.inputTokens,
      outputTokens: this.outputTokens,
    };
  }
}

function clientFailure(message: string, cause?: unknown): ProviderFailure {
  return new ProviderFailure('client', `bedrock: ${message}`, cause === undefined ? undefined : { cause });
}

/** The media content block for the file: a prepared image, or the PDF as a document. */
async function mediaBlock(input: ProviderInput, deadline: Deadline): Promise<ContentBlock> {
  if (input.bytes.byteLength === 0) throw new ProviderFailure('unreadable_file', 'bedrock: the file is empty');
  if (input.facts.kind === 'pdf') {
    if (input.bytes.byteLength > MAX_PDF_BYTES) {
      const mb = (input.bytes.byteLength / 1_000_000).toFixed(1);
      throw clientFailure(`the PDF is ${mb} MB, over Bedrock's ${MAX_PDF_BYTES / 1_000_000} MB document limit`);
    }
    // The name is shown to the model and restricted by Converse (letters, digits, single spaces, hyphens, brackets).
    return { document: { format: 'pdf', name: 'document', source: { bytes: input.bytes } } };
  }
  try {
    const image = await prepareImage(input.bytes, input.facts.mime, IMAGE_TARGET, deadline);
    return { image: { format: image.mime === 'image/png' ? 'png' : 'jpeg', source: { bytes: image.bytes } } };
  } catch (error) {
    if (error instanceof ProviderFailure) throw error;
    deadline.check('preparing the image');
    throw clientFailure('the image cannot be prepared for Bedrock', error);
  }
}

/** The PDF's text layer joined, or undefined (best effort: a failure only means no grounding text). */
async function pdfText(input: ProviderInput, deadline: Deadline): Promise<string | undefined> {
  try {
    const pages = await pdfTextLayer(input.bytes, deadline);
    const text = pages
      .map((p) => p.trim())
      .filter((p) => p !== '')
      .join('\n\n');
    return text === '' ? undefined : text;
  } catch {
    return undefined;
  }
}

function textOf(content: readonly ContentBlock[]): string {
  return content
    .map((block) => ('text' in block && typeof block.text === 'string' ? block.text : ''))
    .filter((t) => t !== '')
    .join('\n')
    .trim();
}

type ToolCall = { toolUseId: string; input: unknown } | undefined;

function toolCallOf(content: readonly ContentBlock[]): ToolCall {
  for (const block of content) {
    if ('toolUse' in block && block.toolUse && block.toolUse.name === RESULT_TOOL_NAME) {
      let value: unknown = block.toolUse.input;
      // The input is a JSON document; a model that emits it as a JSON string is read the same way.
      if (typeof value === 'string') {
        try {
          value = JSON.parse(value);
        } catch {
          // left as the string: validation reports it
        }
      }
      return { toolUseId: block.toolUse.toolUseId ?? 'tooluse', input: value };
    }
  }
  return undefined;
}

/** The assistant turn to replay in a repair request: its text and tool calls (other blocks are not echoed back). */
function replayable(content: readonly ContentBlock[]): ContentBlock[] {
  const kept = content.filter((block) => ('text' in block && block.text) || ('toolUse' in block && block.toolUse));
  return kept.length > 0 ? kept : [{ text: '(no answer)' }];
}

function quoteErrors(errors: readonly string[]): string {
  const text = errors.map((e) => `- ${e}`).join('\n');
  return truncate(text, REPAIR_ERROR_MAX_CHARS);
}

/** Refusals, truncation and malformed answers, by stop reason (checked before the content is used). */
function checkStopReason(response: ConverseCommandOutput, usage: ProviderUsage | undefined, json: boolean): void {
  const reason = response.stopReason;
  if (reason === 'guardrail_intervened' || reason === 'content_filtered') {
    throw new ProviderFailure('refusal', `bedrock: the model declined (${reason})`, usage ? { usage } : undefined);
  }
  if (reason === 'model_context_window_exceeded') {
    throw new ProviderFailure(
      'client',
      "bedrock: the document does not fit the model's context window",
      usage ? { usage } : undefined,
    );
  }
  if (reason === 'max_tokens') {
    const what = json ? 'the tool input is incomplete' : 'the text is truncated';
    throw new ProviderFailure(
      'truncated',
      `bedrock: the answer reached maxTokens (${what})`,
      usage ? { usage } : undefined,
    );
  }
}

/** The result tool as the SDK types it (the schema is plain JSON, so it is a valid SDK document value). */
function resultTool(task: ProviderInput['task']): Tool {
  const spec = resultToolSpec(task);
  const json = spec.inputSchema.json as ToolInputSchema.JsonMember['json'];
  return { toolSpec: { name: spec.name, description: spec.description, inputSchema: { json } } };
}

/** Options of `createBedrockProvider`. */
export interface BedrockProviderOptions {
  /** Where BEDROCK_MODEL_ID and AWS_REGION are read (credentials and endpoint come from the SDK's default chain). */
  env?: NodeJS.ProcessEnv;
  /** The SDK client to use (default: one created on first use, HTTP/1.1, SDK retries off). */
  client?: BedrockRuntimeClient;
}

/** Builds the SDK client: HTTP/1.1 keep-alive handler, SDK retries off, Region from `env` when set there. */
export function createBedrockClient(env: NodeJS.ProcessEnv = process.env): BedrockRuntimeClient {
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
  return new BedrockRuntimeClient({
    ...(region ? { region } : {}),
    maxAttempts: 1,
    requestHandler: new NodeHttpHandler({ connectionTimeout: CONNECTION_TIMEOUT_MS }),
  });
}

/** A bedrock adapter over its own client (tests make one per case so that credentials are re-read). */
export function createBedrockProvider(options: BedrockProviderOptions = {}): ProviderAdapter {
  const env = options.env ?? process.env;
  let client = options.client;

  async function send(request: ConverseCommandInput, deadline: Deadline): Promise<ConverseCommandOutput> {
    deadline.check('sending a request');
    client ??= createBedrockClient(env);
    try {
      return await client.send(new ConverseCommand(request), {
        abortSignal: deadline.requestSignal(),
        requestTimeout: Math.max(1, deadline.remainingMs()),
      });
    } catch (error) {
      throw failureFor(error, deadline, env);
    }
  }

  async function invoke(input: ProviderInput, options: InvokeOptions): Promise<ProviderOutput> {
    const deadline = new Deadline(options.signal, options.deadlineMs, 'bedrock');
    deadline.check('starting');
    const model = configuredModel(env);
    if (!model) {
      throw clientFailure(`BEDROCK_MODEL_ID ${modelId(env)} has no price in infra/bedrock-pricing.json`);
    }
    const { task, facts } = input;
    const step = input.step;
    const fromText = step === 'analyze' && input.documentText !== undefined;
    const json = usesResultTool(task, step);
    const billableUnits = Math.max(1, facts.pages);
    const meter = new UsageMeter(model, billableUnits);

    const instruction = instructionFor(task, step);
    const content: ContentBlock[] = fromText
      ? [{ text: `${documentTextBlock(analyzeText(input.documentText ?? '', input.facts.pages))}\n\n${instruction}` }]
      : [await mediaBlock(input, deadline), { text: instruction }];
    // For a PDF schema extraction, read the text layer alongside the model call: it grounds the extracted values.
    const groundingText =
      !fromText && json && task.fields !== null && facts.kind === 'pdf' ? pdfText(input, deadline) : undefined;

    const sentTextBytes = fromText ? textTokenBound(analyzeText(input.documentText ?? '', facts.pages)) : undefined;
    // The spend limit: each request's output cap is what the attempt's allowance leaves after its input.
    const cost = (t: { input: number; output: number }) => predictedTokenCostMicros(t, { env });
    const predictedInput = predictTokens(facts, task, step, {
      env,
      ...(input.documentText !== undefined ? { documentTextChars: input.documentText.length } : {}),
    }).input;
    const maxTokens = outputCapWithin(
      outputTokenCap(facts, task, step, model.price),
      options.maxCostMicros,
      predictedInput,
      cost,
    );
    if (maxTokens < MIN_USEFUL_OUTPUT_TOKENS) {
      throw clientFailure('the request would cross the run spend limit (not sent)');
    }
    const base: Omit<ConverseCommandInput, 'messages'> = {
      modelId: model.id,
      system: [{ text: SYSTEM_PROMPT }],
      inferenceConfig: { maxTokens, temperature: 0 },
      ...(json ? { toolConfig: { tools: [resultTool(task)], toolChoice: { tool: { name: RESULT_TOOL_NAME } } } } : {}),
    };
    const question: Message = { role: 'user', content };

    const first = await send({ ...base, messages: [question] }, deadline);
    meter.add(first.usage, { input: promptTokenBound(facts, task, step, sentTextBytes), output: maxTokens });
    checkStopReason(first, meter.usage(), json);
    const firstContent = first.output?.message?.content;
    if (!Array.isArray(firstContent)) {
      throw new ProviderFailure('invalid_output', 'bedrock: the response has no message', withUsageOption(meter));
    }

    if (!json) {
      const text = textOf(firstContent);
      if (text === '')
        throw new ProviderFailure('invalid_output', 'bedrock: the answer is empty', withUsageOption(meter));
      // The document's text: the OCR text an analyze step was given, else what the model read out (OCR, text answers).
      return output({ text }, fromText ? input.documentText : text, meter);
    }

    let call = toolCallOf(firstContent);
    let errors = call ? answerErrors(task, call.input) : [`no call of the ${RESULT_TOOL_NAME} tool`];
    if (errors.length > 0) {
      // A repair that could cross the spend limit is skipped: the attempt fails as the repair would have.
      const repairCap = outputCapWithin(
        maxTokens,
        options.maxCostMicros === undefined ? undefined : options.maxCostMicros - (meter.usage()?.costMicros ?? 0),
        meter.inputTokens + meter.outputTokens,
        cost,
      );
      if (repairCap < Math.max(MIN_USEFUL_OUTPUT_TOKENS, meter.outputTokens)) {
        throw new ProviderFailure(
          'invalid_output',
          'bedrock: the result does not match the schema; a repair would cross the run spend limit',
          withUsageOption(meter),
        );
      }
      const feedback = `Your answer does not match the ${RESULT_TOOL_NAME} input schema:\n${quoteErrors(errors)}\nCall the ${RESULT_TOOL_NAME} tool again with a complete, corrected input.`;
      const repair: Message = {
        role: 'user',
        content: call
          ? [{ toolResult: { toolUseId: call.toolUseId, content: [{ text: feedback }] } }]
          : [{ text: feedback }],
      };
      let second: ConverseCommandOutput;
      try {
        second = await send(
          {
            ...base,
            inferenceConfig: { maxTokens: repairCap, temperature: 0 },
            messages: [question, { role: 'assistant', content: replayable(firstContent) }, repair],
          },
          deadline,
        );
      } catch (error) {
        throw withUsage(failureFor(error, deadline, env), meter.usage());
      }
      meter.add(second.usage, {
        input: promptTokenBound(facts, task, step, sentTextBytes) + meter.outputTokens + 4000,
        output: repairCap,
      });
      checkStopReason(second, meter.usage(), json);
      const secondContent = second.output?.message?.content;
      call = Array.isArray(secondContent) ? toolCallOf(secondContent) : undefined;
      errors = call ? answerErrors(task, call.input) : [`no call of the ${RESULT_TOOL_NAME} tool`];
      if (errors.length > 0) {
        throw new ProviderFailure(
          'invalid_output',
          `bedrock: the result does not match the schema after one repair: ${errors.slice(0, 3).join('; ')}`,
          withUsageOption(meter),
        );
      }
    }
    // Validated: an object of the result schema.
    const value = call?.input as Record<string, unknown>;
    if (task.fields !== null) {
      const result = resultFromAnswer(task.fields, value);
      const documentText = fromText ? input.documentText : await groundingText;
      return output(result, documentText, meter);
    }
    const open = normaliseOpenResult(value);
    const readText = typeof value.text === 'string' ? value.text : undefined;
    return output(open, fromText ? input.documentText : readText, meter);
  }

  return { id: 'bedrock', invoke };
}

function withUsageOption(meter: UsageMeter): { usage: ProviderUsage } | undefined {
  const usage = meter.usage();
  return usage ? { usage } : undefined;
}

function output(result: Record<string, unknown>, documentText: string | undefined, meter: UsageMeter): ProviderOutput {
  const usage = meter.usage();
  if (!usage) throw new ProviderFailure('invalid_output', 'bedrock: no usage reported');
  return { result, ...(documentText ? { documentText } : {}), usage };
}

/** The worker's bedrock adapter (process environment, one client per container). */
export const bedrockProvider: ProviderAdapter = createBedrockProvider();
