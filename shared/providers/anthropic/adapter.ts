/**
 * The `anthropic` provider: Claude through the Messages API (@anthropic-ai/sdk). JSON comes through a forced tool
 * whose input schema is the result schema (thinking off, as forced tool use requires), with one repair; the SDK never
 * retries (the plan does), and cost is priced from usage by the profile's own functions.
 * See docs/decisions.md#anthropic-adapter.
 * The request is built by ./request.ts, the response read by ./response.ts, failures mapped by ./failures.ts.
 */
import Anthropic from '@anthropic-ai/sdk';
import type { MessageParam } from '@anthropic-ai/sdk/resources/messages/messages.js';
import type { Step } from '../../task.js';
import { ProviderFailure } from '../../task.js';
import { apiKeyFor, requiredApiKey } from '../credentials.js';
import { repairCapWithin } from '../output-cap.js';
import type { InvokeOptions, ProviderAdapter, ProviderInput, ProviderOutput } from '../types.js';
import { Attempt, LABEL, toFailure } from './failures.js';
import { modelId, pricesFor, requestCostMicros, taskForStep } from './profile.js';
import { firstAnswerCap, firstTurn, repairTurns, requestBody } from './request.js';
import { judge, outputFor, readResponse } from './response.js';

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

/** Creates the adapter; `options` replace the environment and key source (tests). */
export function createAnthropicProvider(options: AnthropicProviderOptions = {}): ProviderAdapter {
  const envOf = (): NodeJS.ProcessEnv => options.env ?? process.env;
  const keySource = options.apiKey ?? (() => apiKeyFor('anthropic', envOf()));

  async function invoke(input: ProviderInput, invokeOptions: InvokeOptions): Promise<ProviderOutput> {
    const env = envOf();
    const model = modelId(env);
    const step: Step = input.step;
    const task = taskForStep(input.task, step);
    const billableUnits = Math.max(1, input.facts.pages);
    const prices = pricesFor(model);
    if (!prices) {
      throw new ProviderFailure('client', `${LABEL}: model ${model} has no prices in anthropic/pricing.json`);
    }
    const apiKey = await requiredApiKey('anthropic', keySource);
    const attempt = new Attempt(prices, billableUnits, apiKey, invokeOptions);
    attempt.remainingMs('preparing the request');

    const client = clientFor(apiKey, env.ANTHROPIC_BASE_URL?.trim() || undefined);
    // The spend limit: each request's output cap is what the attempt's allowance leaves after its input.
    const cost = (t: { input: number; output: number }) =>
      requestCostMicros(prices, { inputTokens: t.input, outputTokens: t.output });
    let maxTokens = firstAnswerCap(input, prices, invokeOptions.maxCostMicros, env);
    const messages: MessageParam[] = [await firstTurn(input, task, attempt, invokeOptions)];

    for (let request = 1; ; request++) {
      let response: unknown;
      try {
        const timeout = attempt.remainingMs(request === 1 ? 'calling the model' : 'the repair request');
        response = await client.messages.create(requestBody(model, task, maxTokens, messages), {
          signal: invokeOptions.signal,
          timeout,
          maxRetries: 0,
        });
      } catch (error) {
        throw toFailure(error, attempt, invokeOptions.signal);
      }
      const { usage, parsed } = readResponse(response, attempt);

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
      const repairCap = repairCapWithin(
        maxTokens,
        invokeOptions.maxCostMicros,
        attempt.usage()?.costMicros ?? 0,
        { input: usage.inputTokens, output: usage.outputTokens },
        cost,
      );
      if (repairCap === undefined) {
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
