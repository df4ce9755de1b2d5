/**
 * Prices are data (one pricing.json per provider, each with the date it was read): every model an adapter can be
 * configured to call has a price, and a model without one is refused before any request is made.
 */
import { createAnthropicProvider } from '../../shared/providers/anthropic/adapter.js';
import {
  modelId as anthropicModelId,
  pricesFor as anthropicPricesFor,
  anthropicPricing,
} from '../../shared/providers/anthropic/profile.js';
import { createBedrockProvider } from '../../shared/providers/bedrock/adapter.js';
import { configuredModel as bedrockModel, bedrockPricing } from '../../shared/providers/bedrock/profile.js';
import { createGeminiProvider } from '../../shared/providers/gemini/adapter.js';
import {
  modelId as geminiModelId,
  pricesFor as geminiPricesFor,
  geminiPricing,
} from '../../shared/providers/gemini/profile.js';
import { createOpenAIProvider } from '../../shared/providers/openai/adapter.js';
import {
  modelId as openaiModelId,
  pricesFor as openaiPricesFor,
  openaiPricing,
} from '../../shared/providers/openai/profile.js';
import { textractPricing } from '../../shared/providers/textract/profile.js';
import type { ProviderAdapter } from '../../shared/providers/types.js';
import { ProviderFailure, type TaskSpec } from '../../shared/task.js';

const task: TaskSpec = {
  prompt: 'Extract',
  outputFormat: 'json',
  fields: null,
  schemaId: null,
  schemaLabel: null,
  promptScaffold: null,
};
const input = {
  bytes: new Uint8Array([0x89, 0x50, 0x4e, 0x47]),
  facts: { mime: 'image/png' as const, kind: 'image' as const, sizeBytes: 4, width: 10, height: 10, pages: 1 },
  task,
  step: 'vision' as const,
};

test('every price file names the date it was read, and every listed model has prices', () => {
  for (const table of [openaiPricing, anthropicPricing, geminiPricing, bedrockPricing]) {
    expect(Object.keys(table.models).length).toBeGreaterThan(0);
    for (const model of Object.values(table.models)) expect(model.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  }
  expect(textractPricing.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
});

test('the model each adapter calls by default has a price', () => {
  expect(openaiPricesFor(openaiModelId({}))).toBeDefined();
  expect(anthropicPricesFor(anthropicModelId({}))).toBeDefined();
  expect(geminiPricesFor(geminiModelId({}))).toBeDefined();
  expect(bedrockModel({ AWS_REGION: 'us-east-1' })).toBeDefined();
  expect(bedrockModel({ AWS_REGION: 'eu-west-1' })).toBeDefined();
});

test.each<[string, ProviderAdapter]>([
  ['openai', createOpenAIProvider({ env: { OPENAI_MODEL: 'gpt-unpriced', OPENAI_API_KEY: 'sk-test-00000000' } })],
  ['anthropic', createAnthropicProvider({ env: { ANTHROPIC_MODEL: 'claude-unpriced', ANTHROPIC_API_KEY: 'x' } })],
  ['gemini', createGeminiProvider({ env: { GEMINI_MODEL: 'gemini-unpriced', GEMINI_API_KEY: 'x' } })],
  ['bedrock', createBedrockProvider({ env: { BEDROCK_MODEL_ID: 'us.amazon.unpriced-v1:0', AWS_REGION: 'us-east-1' } })],
])('%s refuses a model without a price before any request (failure kind client)', async (_id, adapter) => {
  const attempt = adapter.invoke(input, { signal: new AbortController().signal, deadlineMs: Date.now() + 5_000 });
  await expect(attempt).rejects.toBeInstanceOf(ProviderFailure);
  await expect(attempt).rejects.toMatchObject({ kind: 'client' });
});
