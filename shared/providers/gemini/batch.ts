/**
 * Gemini Batch Mode for the batch lane (contract v1.2 §4): one attempt as an inline GenerateContentRequest in the REST
 * format (`{contents, generationConfig, store}`, the same document parts, instruction, output cap, LOW thinking and
 * JSON schema the adapter sends through the SDK, ./adapter.ts), and a batch answer (a GenerateContentResponse) read
 * with the adapter's own response code (./response.ts). The batch API itself: ./batch-api.ts.
 * Not to undo:
 * - No repair: a second request would need a second batch. An answer that does not match the schema fails the attempt
 *   and the run falls back, as for any other failed attempt.
 * - An answer is priced at the list price, never at a promotion: what Google bills a batch during a promotion is not
 *   stated, and the lane halves this (batch-terms.ts), so the cost is never understated.
 */

import type { GenerateContentResponse } from '@google/genai';
import { Deadline } from '../../media/index.js';
import { ProviderFailure, type ProviderUsage } from '../../task.js';
import { type BatchCodec, batchPrices } from '../batch-codec.js';
import { isPlainObject } from '../common.js';
import { givenText } from '../language-model.js';
import { buildInstruction, resultJsonSchema } from '../task-prompt.js';
import type { ProviderOutput } from '../types.js';
import {
  mediaTokenBound,
  modelFor,
  outputTokenCap,
  pricesFor,
  promptTokenBound,
  taskForStep,
  tokenCostMicros,
} from './profile.js';
import { documentParts, firstAnswerCap } from './request.js';
import { countsOf, cutWhy, isCut, judge, readAnswer, shapeAnswer } from './response.js';

export const geminiBatchCodec: BatchCodec = {
  id: 'gemini',
  async line(input, options) {
    const env = options.env ?? process.env;
    // The adapter's model: a packet page's classification runs on the classification model the estimate priced.
    const model = modelFor(input.task, env);
    const prices = batchPrices('gemini', model, pricesFor(model));
    // The spend limit at list price (the discount only lowers what the answer costs).
    const cap = firstAnswerCap(input, prices, prices, options.maxCostMicros, env);
    const task = taskForStep(input.task, input.step);
    const json = task.outputFormat === 'json';
    const signal = new AbortController().signal;
    const deadlineMs = Date.now() + 60_000;
    const parts = await documentParts(input, { signal, deadlineMs }, new Deadline(signal, deadlineMs, 'gemini'));
    return {
      model,
      body: {
        contents: [{ role: 'user', parts: [...parts, { text: buildInstruction(task) }] }],
        generationConfig: {
          maxOutputTokens: cap,
          candidateCount: 1,
          thinkingConfig: { thinkingLevel: 'LOW' },
          ...(json ? { responseMimeType: 'application/json', responseJsonSchema: resultJsonSchema(task) } : {}),
        },
        // Client documents stay out of the project's request logs (as the adapter asks).
        store: false,
      },
    };
  },

  async parse(body, input, options = {}): Promise<ProviderOutput> {
    const env = options.env ?? process.env;
    const model = modelFor(input.task, env);
    const prices = batchPrices('gemini', model, pricesFor(model));
    if (!isPlainObject(body)) throw new ProviderFailure('invalid_output', 'gemini: the batch answer is not a response');
    const response = body as unknown as GenerateContentResponse;
    // A response without usage is priced at the request's bound: its input and the largest cap it could have had.
    const cap = outputTokenCap(input.facts, input.task, input.step, prices);
    const bound = {
      input: promptTokenBound(input.task, input.step) + mediaTokenBound(input.facts, input.step, prices),
      cachedInput: 0,
      output: cap,
    };
    const counts = countsOf(response, bound);
    const usage = (): ProviderUsage => ({
      billableUnits: Math.max(1, input.facts.pages),
      costMicros: tokenCostMicros(counts.input, counts.output, prices, counts.cachedInput),
      inputTokens: counts.input,
      outputTokens: counts.output,
    });
    const answer = readAnswer(response, usage);
    if (isCut(answer)) {
      throw new ProviderFailure('truncated', `gemini: the answer was cut short (${cutWhy(answer, cap)})`, {
        usage: usage(),
      });
    }
    const task = taskForStep(input.task, input.step);
    let result: Record<string, unknown> = { text: answer.text };
    if (task.outputFormat === 'json') {
      const verdict = judge(task, answer.text);
      if ('error' in verdict) {
        throw new ProviderFailure('invalid_output', `gemini: the batch answer is invalid: ${verdict.error}`, {
          usage: usage(),
        });
      }
      result = shapeAnswer(task, verdict.value);
    }
    const documentText = givenText(input) ?? (typeof result.text === 'string' ? result.text : undefined);
    const confidence = answer.avgLogprobs !== undefined ? Math.min(1, Math.max(0, Math.exp(answer.avgLogprobs))) : NaN;
    return {
      result,
      ...(documentText !== undefined ? { documentText } : {}),
      ...(Number.isFinite(confidence) ? { nativeConfidence: confidence } : {}),
      usage: usage(),
    };
  },
};
