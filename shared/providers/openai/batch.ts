/**
 * OpenAI Batch for the batch lane (contract v1.2 §4): a Responses API request as a JSONL line
 * (`{custom_id, method: "POST", url: "/v1/responses", body}`), uploaded with POST /v1/files (purpose `batch`) and
 * submitted with POST /v1/batches (window 24h); polled with GET /v1/batches/{id}; answers read from the output and
 * error files. The body and the reading of its answer are the adapter's own (./adapter.ts).
 * Not to undo: a batch line asks no logprobs and gets no repair (a second request would need a second batch): an answer
 * that does not match the schema is a failed attempt, and the run falls back as for any other.
 */
import { pdfTextLayer } from '../../media/index.js';
import { usdToMicrosCeil } from '../../money.js';
import { ProviderFailure, type Step } from '../../task.js';
import type { BatchApi, BatchCodec, BatchItemResult } from '../batch-codec.js';
import { MIN_USEFUL_OUTPUT_TOKENS, outputCapWithin } from '../common.js';
import { buildInstruction, resultJsonSchema } from '../task-prompt.js';
import type { ProviderInput } from '../types.js';
import { checkAnswer, documentFor, readApiKey, responseSchema, shapeOutput, strictCompatible } from './adapter.js';
import {
  openaiModel,
  outputCap,
  predictTokens,
  pricesFor,
  SYSTEM_INSTRUCTIONS,
  taskForStep,
  tokenCostMicros,
  usageUsd,
} from './profile.js';

const stepOf = (input: ProviderInput): Step =>
  input.step === 'analyze' && input.documentText === undefined ? 'vision' : input.step;

function pricesOrFail(model: string) {
  const prices = pricesFor(model);
  if (!prices) throw new ProviderFailure('client', `openai: model "${model}" has no prices in pricing.json`);
  return prices;
}

export const openaiBatchCodec: BatchCodec = {
  id: 'openai',
  async line(input, options) {
    const env = options.env ?? process.env;
    const model = openaiModel(env);
    const prices = pricesOrFail(model);
    const step = stepOf(input);
    const task = taskForStep(input.task, step);
    const schema = resultJsonSchema(task);
    const predictedInput = predictTokens(input.facts, input.task, step, {
      env,
      ...(input.documentText !== undefined ? { documentTextChars: input.documentText.length } : {}),
    }).input;
    // The spend limit as the adapter applies it (at list price: the discount only lowers what the answer costs).
    const cap = outputCapWithin(
      outputCap(input.task, step, input.facts.pages, prices),
      options.maxCostMicros,
      predictedInput,
      (tokens) => tokenCostMicros(tokens, { env }),
    );
    if (cap < MIN_USEFUL_OUTPUT_TOKENS) {
      throw new ProviderFailure('client', 'openai: the request would cross the run spend limit (not sent)');
    }
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
    const prices = pricesOrFail(openaiModel(env));
    const step = stepOf(input);
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
      step === 'analyze' && input.documentText !== undefined
        ? input.documentText
        : input.facts.mime === 'application/pdf'
          ? (await pdfTextLayer(input.bytes, { signal: new AbortController().signal, deadlineMs: Date.now() + 60_000 }))
              .filter((p) => p !== '')
              .join('\n\n') || undefined
          : undefined;
    return { ...shapeOutput(input.task, step, checked.value, readText), usage };
  },
};

/** OpenAI's Batch API at OPENAI_BASE_URL (default https://api.openai.com/v1). */
export function openaiBatchApi(env: NodeJS.ProcessEnv = process.env): BatchApi {
  const base = () => (env.OPENAI_BASE_URL || 'https://api.openai.com/v1').replace(/\/$/, '');
  const call = async (path: string, init: RequestInit = {}): Promise<Response> => {
    const key = await readApiKey(env);
    const response = await fetch(`${base()}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${key}`, ...(init.headers ?? {}) },
    });
    if (!response.ok) throw new Error(`openai batch: HTTP ${response.status} on ${init.method ?? 'GET'} ${path}`);
    return response;
  };
  const readFile = async (id: string | null | undefined): Promise<unknown[]> => {
    if (!id) return [];
    const text = await (await call(`/files/${id}/content`)).text();
    return text
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as unknown);
  };
  return {
    id: 'openai',
    async submit(_model, lines) {
      const jsonl = lines
        .map((l) => JSON.stringify({ custom_id: l.customId, method: 'POST', url: '/v1/responses', body: l.body }))
        .join('\n');
      const form = new FormData();
      form.set('purpose', 'batch');
      form.set('file', new Blob([jsonl], { type: 'application/jsonl' }), 'batch.jsonl');
      const file = (await (await call('/files', { method: 'POST', body: form })).json()) as { id: string };
      const batch = (await (
        await call('/batches', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/responses', completion_window: '24h' }),
        })
      ).json()) as { id: string };
      return batch.id;
    },
    async poll(ref) {
      const batch = (await (await call(`/batches/${ref}`)).json()) as {
        status: string;
        output_file_id?: string | null;
        error_file_id?: string | null;
      };
      if (!['completed', 'expired', 'failed', 'cancelled'].includes(batch.status)) return undefined;
      const results = new Map<string, BatchItemResult>();
      type Line = {
        custom_id: string;
        response: { status_code: number; body: unknown } | null;
        error: { code?: string; message?: string } | null;
      };
      for (const line of [
        ...(await readFile(batch.output_file_id)),
        ...(await readFile(batch.error_file_id)),
      ] as Line[]) {
        if (line.error?.code === 'batch_expired') results.set(line.custom_id, { kind: 'expired' });
        else if (line.response?.status_code === 200)
          results.set(line.custom_id, { kind: 'answer', body: line.response.body });
        else {
          const status = line.response?.status_code ?? 500;
          const failure = status === 429 ? 'rate_limited' : status >= 500 ? 'server' : 'client';
          results.set(line.custom_id, { kind: 'failed', failure, message: `openai batch: HTTP ${status}` });
        }
      }
      return results;
    },
  };
}
