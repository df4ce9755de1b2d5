/**
 * The providers whose batch interface this build drives: each one's codec (its batch line and answer, built on its
 * adapter) and its batch API. A provider missing here (or without a batch interface in its pricing.json) has its batch
 * runs called normally in the next batch window, at the normal price (contract v1.2 §4).
 */
import type { BatchApi, BatchCodec } from '../providers/batch-codec.js';
import { openaiBatchApi, openaiBatchCodec } from '../providers/openai/batch.js';
import type { ProviderId } from '../task.js';

export const batchCodecs: Partial<Record<ProviderId, BatchCodec>> = { openai: openaiBatchCodec };

/** The batch APIs, reading their settings (keys, base URLs) from `env` at each call. */
export function batchApis(env: NodeJS.ProcessEnv = process.env): Partial<Record<ProviderId, BatchApi>> {
  return { openai: openaiBatchApi(env) };
}
