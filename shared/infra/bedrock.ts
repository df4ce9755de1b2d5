/**
 * What the CDK app (lib/app.ts, lib/provider-iam.ts) and the Bedrock provider share about Bedrock models: the price
 * table (./bedrock-pricing.json, validated by shared/providers/bedrock/profile.ts) and how a model id, inference
 * profile id or ARN names its base model. Kept here, at the bottom of shared/, so the stack imports it rather than
 * reading a provider's files by path or copying its pattern.
 */
import pricing from './bedrock-pricing.json' with { type: 'json' };

/** The price table as stored: the default model and one row per base model (unvalidated here). */
export const bedrockPricingData: { defaultModel: string; models: Record<string, unknown> } = pricing;

/** Cross-Region inference-profile prefixes (system-defined profiles are `<geo>.<base model id>`). */
export const BEDROCK_PROFILE_PREFIX = /^(?:global|us|us-gov|eu|apac|jp|au|ca)\./;

/** The base model id of a model id, inference-profile id or ARN (`.../us.amazon.nova-2-lite-v1:0` → `amazon.nova-2-lite-v1:0`). */
export function bedrockBaseModelId(modelId: string): string {
  const last = modelId.slice(modelId.lastIndexOf('/') + 1);
  return last.replace(BEDROCK_PROFILE_PREFIX, '');
}
