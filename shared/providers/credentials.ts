/**
 * Provider API keys. Locally each SDK's conventional environment variable (OPENAI_API_KEY, ANTHROPIC_API_KEY,
 * GEMINI_API_KEY); deployed, one Secrets Manager secret (JSON object of those names → values, ARN in
 * PROVIDER_SECRET_ARN), cached for SECRET_TTL_MS: a key the operator puts or rotates with put-secret-value reaches
 * warm workers within minutes, not when their containers happen to recycle (a worker started before the first
 * put-secret-value would otherwise see no keys for hours). Keys are never logged or stored on runs.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { ENV } from '../infra/env.js';
import { ProviderFailure } from '../task.js';

export const API_KEY_VARIABLES = {
  openai: 'OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
  gemini: 'GEMINI_API_KEY',
} as const;

export type KeyedProvider = keyof typeof API_KEY_VARIABLES;

/** How long the secret's values are reused before it is read again. */
export const SECRET_TTL_MS = 5 * 60_000;

let secretValues: Promise<Record<string, string>> | undefined;
let secretReadAt = 0;

async function loadSecret(arn: string): Promise<Record<string, string>> {
  const client = new SecretsManagerClient({});
  try {
    const out = await client.send(new GetSecretValueCommand({ SecretId: arn }));
    const parsed = JSON.parse(out.SecretString ?? '{}') as unknown;
    if (!parsed || typeof parsed !== 'object') return {};
    return Object.fromEntries(Object.entries(parsed).filter(([, v]) => typeof v === 'string' && v !== '')) as Record<
      string,
      string
    >;
  } finally {
    client.destroy();
  }
}

/** The API key for a provider, or undefined when none is configured. */
export async function apiKeyFor(
  provider: KeyedProvider,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string | undefined> {
  const variable = API_KEY_VARIABLES[provider];
  const fromEnv = env[variable];
  if (fromEnv) return fromEnv;
  const arn = env[ENV.providerSecretArn];
  if (!arn) return undefined;
  if (secretValues === undefined || Date.now() - secretReadAt >= SECRET_TTL_MS) {
    secretReadAt = Date.now();
    secretValues = loadSecret(arn).catch((error: unknown) => {
      secretValues = undefined; // retry on the next call rather than caching a failure
      throw error;
    });
  }
  return (await secretValues)[variable];
}

/**
 * The key `read` returns (usually `apiKeyFor`), or the attempt's failure: `auth` when none is configured (the operator
 * must act), `server` when the secret store could not be read (throttling, network: transient, so the plan moves on
 * and a later run may succeed). Every language-model adapter reads its key through this.
 */
export async function requiredApiKey(
  provider: KeyedProvider,
  read: () => Promise<string | undefined>,
): Promise<string> {
  let key: string | undefined;
  try {
    key = await read();
  } catch (error: unknown) {
    if (error instanceof ProviderFailure) throw error;
    const why = error instanceof Error ? error.name : 'error';
    throw new ProviderFailure('server', `${provider}: the API key secret could not be read (${why})`, { cause: error });
  }
  if (!key) throw new ProviderFailure('auth', `${API_KEY_VARIABLES[provider]} is not configured`);
  return key;
}

export { hasAwsCredentials } from './aws-credentials.js';

/** For tests: forget the cached secret. */
export function resetCredentialCache(): void {
  secretValues = undefined;
}
