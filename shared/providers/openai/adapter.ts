/**
 * The `openai` provider: a GPT model through the Responses API (`store: false`, no reasoning, so logprobs come back
 * and give the native confidence). Strict structured output when the schema allows it, else checked here; one
 * repair without the file; SDK retries off. See docs/decisions.md#openai-adapter.
 * The request is built by ./request.ts, the response read by ./response.ts, failures mapped by ./failures.ts.
 */
import OpenAI from 'openai';
import type { EasyInputMessage } from 'openai/resources/responses/responses';
import { Deadline, MAX_TIMER_MS } from '../../media/index.js';
import { usdToMicrosCeil } from '../../money.js';
import type { FailureKind, ProviderUsage } from '../../task.js';
import { ProviderFailure } from '../../task.js';
import { redact } from '../common.js';
import { apiKeyFor, requiredApiKey } from '../credentials.js';
import { repairCapWithin } from '../output-cap.js';
import { buildInstruction, resultJsonSchema } from '../task-prompt.js';
import type { InvokeOptions, ProviderAdapter, ProviderInput, ProviderOutput } from '../types.js';
import { failureFromError, MESSAGE_MAX_CHARS, rejectsLogprobs } from './failures.js';
import { modelFor, pricesFor, type TokenUsage, usageUsd } from './profile.js';
import { documentFor, firstMessages, planRequest, repairMessages, requestBody } from './request.js';
import { type Answer, checkAnswer, readResponse, shapeOutput } from './response.js';
import { confidenceFromLogprobs, valueConfidences } from './value-confidence.js';

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

    const model = modelFor(input.task, env);
    const prices = pricesFor(model);
    if (!prices) {
      throw new ProviderFailure('client', `openai: model "${model}" has no prices in providers/openai/pricing.json`);
    }
    const apiKey = await requiredApiKey('openai', () => apiKeyFor('openai', env));

    // The step, its task and the output cap within the spend limit (throws, sending nothing, when it leaves too little).
    const { step, task, predictedInput, cap, cost } = planRequest(input, invokeOptions.maxCostMicros, prices, env);
    const schema = resultJsonSchema(task);
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
    const ask = async (messages: EasyInputMessage[], maxOutputTokens = cap): Promise<Answer> => {
      const send = (logprobs: boolean) => {
        deadline.check('calling OpenAI');
        return client.responses.create(requestBody({ model, prices, schema, messages, maxOutputTokens, logprobs }), {
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
      return readResponse(raw, wantLogprobs, { apiKey, cap, usages, fail });
    };

    let answer = await ask(firstMessages(document, instruction));
    let checked = checkAnswer(answer.text, task);
    if ('error' in checked) {
      // A repair that could cross the spend limit is skipped: the attempt fails as the repair would have.
      const first = usages.at(-1);
      const repairCap = repairCapWithin(
        cap,
        invokeOptions.maxCostMicros,
        usage().costMicros,
        { input: first?.inputTokens ?? predictedInput, output: first?.outputTokens ?? cap },
        cost,
      );
      if (repairCap === undefined) {
        throw fail(
          'invalid_output',
          'openai: the answer does not match the result schema; a repair would cross the run spend limit',
        );
      }
      answer = await ask(repairMessages(instruction, answer.text, checked.error), repairCap);
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
