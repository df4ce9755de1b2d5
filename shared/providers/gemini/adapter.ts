/**
 * The `gemini` provider: the Gemini API's `generateContent` through `@google/genai` (imported on first use). The file
 * goes inline, JSON through `responseJsonSchema` with one repair, nothing is stored at Google, and the plan owns
 * retries (SDK retries and automatic continuation off). See docs/decisions.md#gemini-adapter.
 * The request is sent by ./request.ts, the response read by ./response.ts, failures mapped by ./failures.ts.
 */
import type { Content, GenerateContentResponse } from '@google/genai';
import { Deadline } from '../../media/index.js';
import type { ProviderUsage } from '../../task.js';
import { ProviderFailure } from '../../task.js';
import { apiKeyFor, requiredApiKey } from '../credentials.js';
import { givenText } from '../language-model.js';
import { repairCapWithin } from '../output-cap.js';
import { buildInstruction, resultJsonSchema } from '../task-prompt.js';
import type { InvokeOptions, ProviderAdapter, ProviderInput, ProviderOutput } from '../types.js';
import {
  geminiPricing,
  type ModelPrices,
  mediaTokenBound,
  modelFor,
  pricesFor,
  promptTokenBound,
  REPAIR_MESSAGE_MAX_TOKENS,
  ratesAt,
  repairMessage,
  taskForStep,
  tokenCostMicros,
} from './profile.js';
import { type Attempt, documentParts, firstAnswerCap, loadGenAi, send } from './request.js';
import { countsOf, cutWhy, isCut, judge, type ReportedTokens, readAnswer, shapeAnswer } from './response.js';

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

    const model = modelFor(input.task, env);
    const pricing: ModelPrices | undefined = pricesFor(model);
    if (!pricing) {
      const known = Object.keys(geminiPricing.models).join(', ');
      throw new ProviderFailure('client', `gemini: model "${model}" has no price in pricing.json (priced: ${known})`);
    }
    const rates = ratesAt(pricing, now());
    const apiKey = await deadline.race(
      requiredApiKey('gemini', () => apiKeyFor('gemini', env)),
      'reading the API key',
    );
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
    const cap = firstAnswerCap(input, pricing, rates, invokeOptions.maxCostMicros, env);
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
    const totals: ReportedTokens = { input: 0, cachedInput: 0, output: 0 };
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
        const repairCap = repairCapWithin(cap, invokeOptions.maxCostMicros, usage().costMicros, totals, cost);
        if (repairCap === undefined) {
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
    const documentText = givenText(input) ?? (typeof result.text === 'string' ? result.text : undefined);
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

/** The Gemini adapter, reading its configuration from process.env at each call. */
export const geminiProvider: ProviderAdapter = createGeminiProvider();
