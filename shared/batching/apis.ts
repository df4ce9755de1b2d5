/**
 * The batch APIs the batcher drives (shared/batching/batcher.ts), one per provider whose codec the worker has
 * (./providers.ts). Light: fetch and the provider's key (Bedrock: its control-plane client and S3), no provider SDK
 * or media code, so the batcher's bundle stays small.
 */

import { anthropicBatchApi } from '../providers/anthropic/batch-api.js';
import type { BatchApi } from '../providers/batch-codec.js';
import { bedrockBatchApi } from '../providers/bedrock/batch-api.js';
import { geminiBatchApi } from '../providers/gemini/batch-api.js';
import { openaiBatchApi } from '../providers/openai/batch-api.js';
import type { ProviderId } from '../task.js';

/** The batch APIs, reading their settings (keys, base URLs) from `env` at each call. */
export function batchApis(env: NodeJS.ProcessEnv = process.env): Partial<Record<ProviderId, BatchApi>> {
  return {
    openai: openaiBatchApi(env),
    anthropic: anthropicBatchApi(env),
    gemini: geminiBatchApi(env),
    bedrock: bedrockBatchApi(env),
  };
}
