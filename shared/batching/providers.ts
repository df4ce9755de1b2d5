/**
 * The providers whose batch interface this build drives, for the worker: each one's codec (its batch line and answer,
 * built on its adapter). Their batch APIs, for the batcher, are in ./apis.ts (no SDK, no media code). A provider
 * missing here (or without a batch interface in its pricing.json) has its batch runs called normally in the next
 * batch window, at the normal price (contract v1.2 §4).
 */

import { anthropicBatchCodec } from '../providers/anthropic/batch.js';
import type { BatchCodec } from '../providers/batch-codec.js';
import { bedrockBatchCodec } from '../providers/bedrock/batch.js';
import { geminiBatchCodec } from '../providers/gemini/batch.js';
import { openaiBatchCodec } from '../providers/openai/batch.js';
import type { ProviderId } from '../task.js';

export const batchCodecs: Partial<Record<ProviderId, BatchCodec>> = {
  openai: openaiBatchCodec,
  anthropic: anthropicBatchCodec,
  gemini: geminiBatchCodec,
  bedrock: bedrockBatchCodec,
};
