/**
 * Sealed webhook secrets (shared/events/secrets.ts), deployed: AES-256-GCM under the Secrets Manager key, opened only
 * with the same key version and for the same tenant and endpoint; a secret in clear is refused outside the local stack.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { ENV } from '../../shared/infra/env.js';

const ARN = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:webhook-key';
process.env[ENV.webhookSecretStore] = ARN;
const { openSecret, resetSecretKeys, sealSecret } = await import('../../shared/events/secrets.js');

const sm = mockClient(SecretsManagerClient);

beforeEach(() => {
  sm.reset();
  resetSecretKeys();
  sm.on(GetSecretValueCommand, { SecretId: ARN }).resolves({ SecretString: 'key-one', VersionId: 'v1' });
  sm.on(GetSecretValueCommand, { SecretId: ARN, VersionId: 'v1' }).resolves({
    SecretString: 'key-one',
    VersionId: 'v1',
  });
  sm.on(GetSecretValueCommand, { SecretId: ARN, VersionId: 'v2' }).resolves({
    SecretString: 'key-two',
    VersionId: 'v2',
  });
});

test('a sealed secret is not the secret, and opens to it for its own endpoint', async () => {
  const sealed = await sealSecret('whsec_abc', 'tenant-a', 'wh_1');
  expect(sealed).toEqual({ box: 'aes-256-gcm', keyVersion: 'v1', data: expect.any(String) });
  expect(JSON.stringify(sealed)).not.toContain('whsec_abc');
  await expect(openSecret(sealed, 'tenant-a', 'wh_1')).resolves.toBe('whsec_abc');
  // Two seals of one secret differ (a fresh IV each time).
  expect(await sealSecret('whsec_abc', 'tenant-a', 'wh_1')).not.toEqual(sealed);
});

test('it does not open for another endpoint or tenant, nor under another key version', async () => {
  const sealed = await sealSecret('whsec_abc', 'tenant-a', 'wh_1');
  await expect(openSecret(sealed, 'tenant-b', 'wh_1')).rejects.toThrow();
  await expect(openSecret(sealed, 'tenant-a', 'wh_2')).rejects.toThrow();
  if (sealed.box !== 'aes-256-gcm') throw new Error('sealed in clear');
  await expect(openSecret({ ...sealed, keyVersion: 'v2' }, 'tenant-a', 'wh_1')).rejects.toThrow();
});

test('the key is read once per version, not on every delivery', async () => {
  const sealed = await sealSecret('whsec_abc', 'tenant-a', 'wh_1');
  for (let i = 0; i < 5; i++) await openSecret(sealed, 'tenant-a', 'wh_1');
  expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(2);
});

test('a secret stored in clear is refused by a deployment', async () => {
  await expect(openSecret({ box: 'local-plaintext', value: 'whsec_abc' }, 'tenant-a', 'wh_1')).rejects.toThrow(
    /outside the local stack/,
  );
});
