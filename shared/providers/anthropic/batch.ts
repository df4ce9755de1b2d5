import { type BatchCodec, batchPrices } from '../batch-codec.js';
import type { InvokeOptions, ProviderInput } from '../types.js';
import { Attempt } from './failures.js';
import { modelId, outputTokenCap, pricesFor, taskForStep } from './profile.js';
import { firstAnswerCap, firstTurn, requestBody } from './request.js';
import { judge, outputFor, readResponse } from './response.js';

/** No call is made while a line is built or read: a deadline only bounds the image preparation. */
const localWork = (): InvokeOptions => ({ signal: new AbortController().signal, deadlineMs: Date.now() + 60_000 });

export const anthropicBatchCodec: BatchCodec = {
  id: 'anthropic',
  async line(input, options) {
    const env = options.env ?? process.env;
    const model = modelId(env);
    const prices = batchPrices('anthropic', model, pricesFor(model));
    const task = taskForStep(input.task, input.step);
    const maxTokens = firstAnswerCap(input, prices, options.maxCostMicros, env);
    const attempt = new Attempt(prices, Math.max(1, input.facts.pages), undefined, localWork());
    const turn = await firstTurn(input, task, attempt, localWork());
    return { model, body: { ...requestBody(model, task, maxTokens, [turn]) } };
  },

  async parse(body: unknown, input: ProviderInput, options = {}) {
    const env = options.env ?? process.env;
    const prices = batchPrices('anthropic', modelId(env), pricesFor(modelId(env)));
    const task = taskForStep(input.task, input.step);
    const attempt = new Attempt(prices, Math.max(1, input.facts.pages), undefined, localWork());
    const { parsed } = readResponse(body, attempt);
    // The cap is only named in a truncation's message: the step's own, which the request's cap never exceeds.
    const verdict = judge(parsed, task, outputTokenCap(input.facts, input.task, input.step, prices), attempt);
    if (!verdict.ok) {
      throw attempt.fail('invalid_output', `the batch answer does not match the schema: ${verdict.errors[0] ?? ''}`);
    }
    return outputFor(verdict.value, task, input, attempt.usage() ?? { billableUnits: 1, costMicros: 0 });
  },
};
