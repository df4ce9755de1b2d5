/**
 * The batch APIs the batcher drives (shared/batching/batcher.ts), one per provider whose codec the worker has
 * (./providers.ts). Light: fetch and the provider's key only, so the batcher's bundle stays small.
 */

import { anthropicBatchApi } from '../providers/anthropic/batch-api.js';
import type { BatchApi } from '../providers/batch-codec.js';
import { openaiBatchApi } from '../providers/openai/batch-api.js';
import type { ProviderId } from '../task.js';

/** The batch APIs, reading their settings (keys, base URLs) from `env` at each call. */
export function batchApis(env: NodeJS.ProcessEnv = process.env): Partial<Record<ProviderId, BatchApi>> {
  return {
    openai: openaiBatchApi(env),
    anthropic: anthropicBatchApi(env),
  };
}
