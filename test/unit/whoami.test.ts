/** GET /v1/whoami: the calling key as the authorizer found it, for the dashboard (who am I, what may I do). */
import { handler } from '../../functions/whoami.js';
import { call, expectContractHeaders, expectError } from '../support/api.js';

test('answers the key id, label, tenant and scopes from the authorizer, and never the key', async () => {
  const answer = await call(handler, {
    path: '/v1/whoami',
    auth: { tenantId: 'tenant-a', keyId: 'key_qa', keyLabel: 'alice-laptop', scopes: ['runs:read'] },
    headers: { 'x-api-key': 'vk_secret_value' },
  });
  expect(answer.status).toBe(200);
  expectContractHeaders(answer);
  expect(answer.body).toEqual({ keyId: 'key_qa', label: 'alice-laptop', tenantId: 'tenant-a', scopes: ['runs:read'] });
  expect(JSON.stringify(answer.body)).not.toContain('vk_secret_value');
});

test('a key without a label answers an empty label; a key without runs:read is refused like any read', async () => {
  const unlabelled = await call(handler, { path: '/v1/whoami', auth: { tenantId: 'tenant-a', keyId: 'key_b' } });
  expect(unlabelled.body).toMatchObject({ keyId: 'key_b', label: '' });

  const writeOnly = await call(handler, {
    path: '/v1/whoami',
    auth: { tenantId: 'tenant-a', keyId: 'key_w', scopes: ['runs:write'] },
  });
  expect(expectError(writeOnly, 'FORBIDDEN').details).toEqual({ requiredScope: 'runs:read' });
});
