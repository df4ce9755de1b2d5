/**
 * What the planner knows about each provider without loading its SDK: auth needs, what it accepts, which strategies
 * it can run, and an upper-bound cost model. API handlers estimate from this; only the worker loads adapters.
 */

import type { ProviderId } from '../task.js';
import { anthropicProfile } from './anthropic/profile.js';
import { hasAwsCredentials } from './aws-credentials.js';
import { bedrockProfile } from './bedrock/profile.js';
import { geminiProfile } from './gemini/profile.js';
import { localProfile } from './local/profile.js';
import { openaiProfile } from './openai/profile.js';
import { textractProfile } from './textract/profile.js';
import type { ProviderProfile } from './types.js';

/** Profiles by id (each provider's cost model and capabilities; no SDK is loaded here). */
export const catalog: Partial<Record<ProviderId, ProviderProfile>> = {
  openai: openaiProfile,
  anthropic: anthropicProfile,
  gemini: geminiProfile,
  bedrock: bedrockProfile,
  textract: { ...textractProfile, available: (env) => hasAwsCredentials(env) },
  local: localProfile,
};

/**
 * The providers that are candidates, in order of preference: exactly `VISION_PROVIDERS` when set; otherwise every
 * provider whose credentials are present, then `local`.
 */
export function availableProviders(
  configured: readonly ProviderId[] | undefined,
  env: NodeJS.ProcessEnv = process.env,
): ProviderId[] {
  if (configured) return [...configured];
  const withCredentials = Object.values(catalog)
    .filter((p): p is ProviderProfile => p !== undefined && p.id !== 'local')
    .filter((p) =>
      p.available
        ? p.available(env)
        : p.credentialEnv.length > 0 && p.credentialEnv.every((name) => Boolean(env[name])),
    )
    .map((p) => p.id);
  return [...withCredentials, 'local'];
}
