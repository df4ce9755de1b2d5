/**
 * Provider API keys (shared/providers/credentials.ts): the environment first (local), otherwise the one Secrets
 * Manager secret (deployed), cached a few minutes so that a key put or rotated with put-secret-value reaches warm
 * workers.
 */

import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { jest } from '@jest/globals';
import { mockClient } from 'aws-sdk-client-mock';
import { createAnthropicProvider } from '../../shared/providers/anthropic/adapter.js';
import {
  apiKeyFor,
  type KeyedProvider,
  requiredApiKey,
  resetCredentialCache,
  SECRET_TTL_MS,
} from '../../shared/providers/credentials.js';
import { createGeminiProvider } from '../../shared/providers/gemini/adapter.js';
import { createOpenAIProvider } from '../../shared/providers/openai/adapter.js';
import type { ProviderAdapter } from '../../shared/providers/types.js';
import { ProviderFailure } from '../../shared/task.js';
import { type FakeServer, startFakeServer } from '../support/fake-server.js';

const secrets = mockClient(SecretsManagerClient);
const ARN = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:vision-providers-AbCdEf';
const env = { PROVIDER_SECRET_ARN: ARN };

beforeEach(() => {
  secrets.reset();
  resetCredentialCache();
});

afterEach(() => {
  jest.restoreAllMocks();
});

test('the environment variable wins and the secret is not read', async () => {
  expect(await apiKeyFor('openai', { ...env, OPENAI_API_KEY: 'sk-env' })).toBe('sk-env');
  expect(secrets).not.toHaveReceivedCommand(GetSecretValueCommand);
});

test('deployed, keys come from the secret, read once for many calls within the cache time', async () => {
  secrets
    .on(GetSecretValueCommand)
    .resolves({ SecretString: JSON.stringify({ OPENAI_API_KEY: 'sk-1', GEMINI_API_KEY: '' }) });
  expect(await apiKeyFor('openai', env)).toBe('sk-1');
  expect(await apiKeyFor('anthropic', env)).toBeUndefined();
  // An empty value is no key.
  expect(await apiKeyFor('gemini', env)).toBeUndefined();
  expect(secrets).toHaveReceivedCommandTimes(GetSecretValueCommand, 1);
  expect(secrets).toHaveReceivedCommandWith(GetSecretValueCommand, { SecretId: ARN });
});

test('a key put after the first read reaches a warm worker once the cache time has passed', async () => {
  const now = jest.spyOn(Date, 'now').mockReturnValue(1_000_000);
  secrets
    .on(GetSecretValueCommand)
    .resolvesOnce({ SecretString: '{}' })
    .resolves({ SecretString: JSON.stringify({ ANTHROPIC_API_KEY: 'sk-ant-new' }) });
  expect(await apiKeyFor('anthropic', env)).toBeUndefined();
  now.mockReturnValue(1_000_000 + SECRET_TTL_MS - 1);
  expect(await apiKeyFor('anthropic', env)).toBeUndefined();
  now.mockReturnValue(1_000_000 + SECRET_TTL_MS);
  expect(await apiKeyFor('anthropic', env)).toBe('sk-ant-new');
  expect(secrets).toHaveReceivedCommandTimes(GetSecretValueCommand, 2);
});

test('a failed read is not cached: the next call reads again', async () => {
  secrets
    .on(GetSecretValueCommand)
    .rejectsOnce(new Error('ThrottlingException'))
    .resolves({ SecretString: JSON.stringify({ OPENAI_API_KEY: 'sk-2' }) });
  await expect(apiKeyFor('openai', env)).rejects.toThrow('ThrottlingException');
  expect(await apiKeyFor('openai', env)).toBe('sk-2');
});

test('without a secret or a variable there is no key', async () => {
  expect(await apiKeyFor('openai', {})).toBeUndefined();
  expect(secrets).not.toHaveReceivedCommand(GetSecretValueCommand);
});

describe('requiredApiKey: what an adapter makes of the key it reads', () => {
  test('a configured key is returned', async () => {
    expect(await requiredApiKey('gemini', async () => 'g-key')).toBe('g-key');
  });

  test('no key is `auth`, naming the variable to set', async () => {
    const failure = await requiredApiKey('openai', async () => undefined).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ProviderFailure);
    expect((failure as ProviderFailure).kind).toBe('auth');
    expect((failure as ProviderFailure).message).toBe('OPENAI_API_KEY is not configured');
  });

  test('a secret store that cannot be read is `server` (transient), not a missing key', async () => {
    const throttled = Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
    const failure = await requiredApiKey('anthropic', () => Promise.reject(throttled)).catch((e: unknown) => e);
    expect((failure as ProviderFailure).kind).toBe('server');
    expect((failure as ProviderFailure).message).toContain('ThrottlingException');
  });
});

describe('every keyed adapter: an unreadable secret is `server`, no key is `auth`, and nothing is sent', () => {
  let server: FakeServer;
  beforeAll(async () => {
    server = await startFakeServer();
  });
  afterAll(async () => {
    await server.close();
  });

  const adapters: Record<KeyedProvider, (env: NodeJS.ProcessEnv) => ProviderAdapter> = {
    openai: (e) => createOpenAIProvider({ env: { ...e, OPENAI_BASE_URL: server.url } }),
    anthropic: (e) => createAnthropicProvider({ env: { ...e, ANTHROPIC_BASE_URL: server.url } }),
    gemini: (e) => createGeminiProvider({ env: { ...e, GEMINI_BASE_URL: server.url } }),
  };
  const input = {
    bytes: new Uint8Array([0x89, 0x50, 0x4e, 0x47]),
    facts: { mime: 'image/png' as const, kind: 'image' as const, sizeBytes: 4, pages: 1, width: 10, height: 10 },
    task: {
      prompt: 'Read the receipt.',
      outputFormat: 'text' as const,
      fields: null,
      schemaId: null,
      schemaLabel: null,
      promptScaffold: null,
    },
    step: 'vision' as const,
  };
  const failureOf = (adapter: ProviderAdapter) =>
    adapter
      .invoke(input, { signal: new AbortController().signal, deadlineMs: Date.now() + 10_000 })
      .then(() => undefined)
      .catch((e: unknown) => e as ProviderFailure);

  test.each(Object.keys(adapters) as KeyedProvider[])('%s', async (provider) => {
    secrets.on(GetSecretValueCommand).rejects(Object.assign(new Error('throttled'), { name: 'ThrottlingException' }));
    expect((await failureOf(adapters[provider](env)))?.kind).toBe('server');
    secrets.reset();
    resetCredentialCache();
    secrets.on(GetSecretValueCommand).resolves({ SecretString: '{}' });
    expect((await failureOf(adapters[provider](env)))?.kind).toBe('auth');
    expect(server.requests).toHaveLength(0);
  });
});
