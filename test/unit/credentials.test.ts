/**
 * Provider API keys (shared/providers/credentials.ts): the environment first (local), otherwise the one Secrets
 * Manager secret (deployed), cached a few minutes so that a key put or rotated with put-secret-value reaches warm
 * workers.
 */

import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { jest } from '@jest/globals';
import { mockClient } from 'aws-sdk-client-mock';
import { apiKeyFor, resetCredentialCache, SECRET_TTL_MS } from '../../shared/providers/credentials.js';

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
