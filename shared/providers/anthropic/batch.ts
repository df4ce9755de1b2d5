/**
 * Anthropic Message Batches for the batch lane (contract v1.2 §4): one attempt as the `params` of a batch request (the
 * Messages API body the adapter sends first: the file, the instruction, the forced result tool), and a succeeded
 * request's message read back as the adapter reads a response (the API: ./batch-api.ts).
 * Not to undo: a batch request gets no repair (a second request would need a second batch): an answer whose tool input
 * does not match the schema is a failed attempt, and the run falls back as for any other.
 */
import { ProviderFailure } from '../../task.js';
import type { BatchCodec } from '../batch-codec.js';
import type { InvokeOptions, ProviderInput } from '../types.js';
import { Attempt, LABEL } from './failures.js';
import { modelId, outputTokenCap, pricesFor, taskForStep } from './profile.js';
import { firstAnswerCap, firstTurn, requestBody } from './request.js';
import { judge, outputFor, readResponse } from './response.js';

function pricesOrFail(model: string) {
  const prices = pricesFor(model);
  if (!prices) throw new ProviderFailure('client', `${LABEL}: model ${model} has no prices in anthropic/pricing.json`);
  return prices;
}

/** No call is made while a line is built or read: a deadline only bounds the image preparation. */
const localWork = (): InvokeOptions => ({ signal: new AbortController().signal, deadlineMs: Date.now() + 60_000 });

export const anthropicBatchCodec: BatchCodec = {
  id: 'anthropic',
  async line(input, options) {
    const env = options.env ?? process.env;
    const model = modelId(env);
    const prices = pricesOrFail(model);
    const task = taskForStep(input.task, input.step);
    const maxTokens = firstAnswerCap(input, prices, options.maxCostMicros, env);
    const attempt = new Attempt(prices, Math.max(1, input.facts.pages), undefined, localWork());
    const turn = await firstTurn(input, task, attempt, localWork());
    return { model, body: { ...requestBody(model, task, maxTokens, [turn]) } };
  },

  async parse(body: unknown, input: ProviderInput, options = {}) {
    const env = options.env ?? process.env;
    const prices = pricesOrFail(modelId(env));
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
