/** The worker's provider adapters by id. Only the worker imports this (it loads the provider SDKs and OCR libraries). */

import type { ProviderId } from '../task.js';
import { anthropicProvider } from './anthropic/adapter.js';
import { bedrockProvider } from './bedrock/adapter.js';
import { geminiProvider } from './gemini/adapter.js';
import { localProvider } from './local/local-provider.js';
import { openaiProvider } from './openai/adapter.js';
import { textractProvider } from './textract/adapter.js';
import type { ProviderAdapter } from './types.js';

export const adapters: Partial<Record<ProviderId, ProviderAdapter>> = {
  openai: openaiProvider,
  anthropic: anthropicProvider,
  gemini: geminiProvider,
  bedrock: bedrockProvider,
  textract: textractProvider,
  local: localProvider,
};
