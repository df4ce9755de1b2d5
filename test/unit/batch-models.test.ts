/**
 * A batch line runs on the model its adapter would run, and its answer is priced at that model's list price: a
 * packet page's classification (TaskSpec.modelTier `classification`) on pricing.json's `classificationModel`, which
 * is what the estimate priced, whatever OPENAI_MODEL or GEMINI_MODEL names. The batch lane groups lines by model, so a
 * classification wave is a batch of its own.
 */
import type { FileFacts } from '../../shared/file-facts.js';
import { usdToMicrosCeil } from '../../shared/money.js';
import { geminiBatchCodec } from '../../shared/providers/gemini/batch.js';
import * as gemini from '../../shared/providers/gemini/profile.js';
import { openaiBatchCodec } from '../../shared/providers/openai/batch.js';
import * as openai from '../../shared/providers/openai/profile.js';
import type { ProviderInput } from '../../shared/providers/types.js';
import { buildTask, registry } from '../../shared/registry/registry.js';
import type { TaskSpec } from '../../shared/task.js';
import { fixture } from '../support/aws.js';

const RECEIPT = fixture('receipt.png');
const FACTS: FileFacts = {
  mime: 'image/png',
  kind: 'image',
  sizeBytes: RECEIPT.length,
  width: 800,
  height: 834,
  pages: 1,
};
const RECEIPT_TASK = buildTask({
  prompt: 'Extract',
  outputFormat: 'json',
  schemaId: 'receipt',
  schema: registry.get('receipt'),
});
const CLASSIFY: TaskSpec = { ...RECEIPT_TASK, modelTier: 'classification' };
const input = (task: TaskSpec): ProviderInput => ({ bytes: RECEIPT, facts: FACTS, task, step: 'vision' });
const ANSWER = { merchant: 'Corner Shop', date: '2026-11-02', subtotal: 10, tax: 2.5, total: 12.5, currency: 'EUR' };
const TOKENS = { input: 1_200, output: 60 };
const env = {};

describe('openai', () => {
  const small = openai.openaiPricing.classificationModel as string;
  const body = {
    object: 'response',
    status: 'completed',
    output: [{ type: 'message', content: [{ type: 'output_text', text: JSON.stringify(ANSWER) }] }],
    usage: { input_tokens: TOKENS.input, output_tokens: TOKENS.output },
  };

  test("a classification's line runs on the classification model; any other task's on the configured one", async () => {
    expect(small).not.toBe(openai.modelId(env));
    expect((await openaiBatchCodec.line(input(CLASSIFY), { env })).model).toBe(small);
    expect((await openaiBatchCodec.line(input(RECEIPT_TASK), { env })).model).toBe(openai.modelId(env));
  });

  test("a classification's answer is priced at the classification model's list price", async () => {
    const output = await openaiBatchCodec.parse(body, input(CLASSIFY), { env });
    const usd = openai.usageUsd(
      [{ inputTokens: TOKENS.input, cachedInputTokens: 0, outputTokens: TOKENS.output }],
      openai.pricesFor(small) as openai.ModelPrices,
    );
    expect(output.usage.costMicros).toBe(usdToMicrosCeil(usd));
  });
});

describe('gemini', () => {
  const small = gemini.geminiPricing.classificationModel as string;
  const body = {
    candidates: [{ content: { role: 'model', parts: [{ text: JSON.stringify(ANSWER) }] }, finishReason: 'STOP' }],
    usageMetadata: {
      promptTokenCount: TOKENS.input,
      candidatesTokenCount: TOKENS.output,
      totalTokenCount: TOKENS.input + TOKENS.output,
    },
  };

  test("a classification's line runs on the classification model; any other task's on the configured one", async () => {
    expect(small).not.toBe(gemini.modelId(env));
    expect((await geminiBatchCodec.line(input(CLASSIFY), { env })).model).toBe(small);
    expect((await geminiBatchCodec.line(input(RECEIPT_TASK), { env })).model).toBe(gemini.modelId(env));
  });

  test("a classification's answer is priced at the classification model's list price", async () => {
    const output = await geminiBatchCodec.parse(body, input(CLASSIFY), { env });
    const list = gemini.pricesFor(small) as gemini.ModelPrices;
    expect(output.usage.costMicros).toBe(gemini.tokenCostMicros(TOKENS.input, TOKENS.output, list));
  });
});
