/**
 * OpenAI Batch for the batch lane (contract v1.2 §4): a Responses API request as a JSONL line
 * (`{custom_id, method: "POST", url: "/v1/responses", body}`), uploaded with POST /v1/files (purpose `batch`) and
 * submitted with POST /v1/batches (window 24h); polled with GET /v1/batches/{id}; answers read from the output and
 * error files (the API: ./batch-api.ts). The body and the reading of its answer are the adapter's own (./adapter.ts).
 * Not to undo: a batch line asks no logprobs and gets no repair (a second request would need a second batch): an answer
 * that does not match the schema is a failed attempt, and the run falls back as for any other.
 */
import { pdfTextLayer } from '../../media/index.js';
import { usdToMicrosCeil } from '../../money.js';
import { ProviderFailure } from '../../task.js';
import { type BatchCodec, batchPrices } from '../batch-codec.js';
import { givenText } from '../language-model.js';
import { buildInstruction, resultJsonSchema } from '../task-prompt.js';
import { modelFor, pricesFor, SYSTEM_INSTRUCTIONS, taskForStep, usageUsd } from './profile.js';
import { documentFor, planRequest, stepSent, strictCompatible } from './request.js';
import { checkAnswer, responseSchema, shapeOutput } from './response.js';

export const openaiBatchCodec: BatchCodec = {
  id: 'openai',
  async line(input, options) {
    const env = options.env ?? process.env;
    // The adapter's model: a packet page's classification runs on the classification model the estimate priced.
    const model = modelFor(input.task, env);
    const prices = batchPrices('openai', model, pricesFor(model));
    // The spend limit as the adapter applies it (at list price: the discount only lowers what the answer costs).
    const { step, task, cap } = planRequest(input, options.maxCostMicros, prices, env);
    const schema = resultJsonSchema(task);
    const deadlineMs = Date.now() + 60_000;
    const document = await documentFor(input, step, { signal: new AbortController().signal, deadlineMs });
    return {
      model,
      body: {
        model,
        instructions: SYSTEM_INSTRUCTIONS,
        input: [
          {
            type: 'message',
            role: 'user',
            content: [...document.parts, { type: 'input_text', text: buildInstruction(task) }],
          },
        ],
        text: { format: { type: 'json_schema', name: 'result', schema, strict: strictCompatible(schema) } },
        max_output_tokens: cap,
        store: false,
        ...(prices.reasoningEffort ? { reasoning: { effort: prices.reasoningEffort } } : {}),
      },
    };
  },

  async parse(body, input, options = {}) {
    const env = options.env ?? process.env;
    const model = modelFor(input.task, env);
    const prices = batchPrices('openai', model, pricesFor(model));
    const step = stepSent(input);
    const parsed = responseSchema.safeParse(body);
    if (!parsed.success) throw new ProviderFailure('invalid_output', 'openai: the batch answer is not a response');
    const response = parsed.data;
    const usage = response.usage
      ? {
          billableUnits: Math.max(1, input.facts.pages),
          costMicros: usdToMicrosCeil(
            usageUsd(
              [
                {
                  inputTokens: response.usage.input_tokens,
                  cachedInputTokens: response.usage.input_tokens_details?.cached_tokens ?? 0,
                  outputTokens: response.usage.output_tokens,
                },
              ],
              prices,
            ),
          ),
          inputTokens: response.usage.input_tokens,
          outputTokens: response.usage.output_tokens,
        }
      : undefined;
    const fail = (kind: ConstructorParameters<typeof ProviderFailure>[0], message: string) =>
      new ProviderFailure(kind, message, usage ? { usage } : {});
    const status = response.status ?? 'completed';
    if (status === 'incomplete') {
      const reason = response.incomplete_details?.reason ?? 'unknown';
      throw fail(reason === 'max_output_tokens' ? 'truncated' : 'invalid_output', `openai: incomplete (${reason})`);
    }
    if (status !== 'completed') throw fail('server', `openai: the batch answer's status is "${status}"`);
    if (!usage) throw fail('invalid_output', 'openai: the batch answer reports no usage');
    const parts = response.output
      .filter((item) => item.type === 'message' && item.phase !== 'commentary')
      .flatMap((item) => item.content ?? []);
    if (parts.some((p) => p.type === 'refusal')) throw fail('refusal', 'openai: the model refused');
    const text = parts
      .filter((p) => p.type === 'output_text')
      .map((p) => p.text ?? '')
      .join('');
    const task = taskForStep(input.task, step);
    const checked = checkAnswer(text, task);
    if ('error' in checked) throw fail('invalid_output', `openai: the batch answer does not match the schema`);
    const readText =
      givenText(input) ??
      (input.facts.mime === 'application/pdf'
        ? (await pdfTextLayer(input.bytes, { signal: new AbortController().signal, deadlineMs: Date.now() + 60_000 }))
            .filter((p) => p !== '')
            .join('\n\n') || undefined
        : undefined);
    return { ...shapeOutput(input.task, step, checked.value, readText), usage };
  },
};
