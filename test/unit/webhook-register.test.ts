/**
 * POST /v1/webhooks through its handler (functions/webhooks-create.ts → shared/events/register.ts), the table mocked:
 * who may register (events carry whole runs), what is refused with the contract's 400, and what is stored.
 */
import { DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { handler as createWebhook } from '../../functions/webhooks-create.js';
import type { Scope } from '../../shared/infra/routes.js';
import { call, expectError } from '../support/api.js';

const ddb = mockClient(DynamoDBDocumentClient);

beforeEach(() => {
  ddb.reset();
  ddb.on(TransactWriteCommand).resolves({});
});

const BOTH: Scope[] = ['webhooks:manage', 'runs:read'];
const register = (body: Record<string, unknown>, scopes: Scope[] = BOTH) =>
  call(createWebhook, { method: 'POST', body, auth: { tenantId: 'tenant-a', scopes } });

/** The endpoint item the registration's transaction wrote. */
function storedWebhook(): Record<string, unknown> {
  const input = ddb.commandCalls(TransactWriteCommand)[0]?.args[0].input;
  const put = input?.TransactItems?.find((item) => item.Put)?.Put;
  if (!put) throw new Error('no endpoint was written');
  return put.Item as Record<string, unknown>;
}

describe('who may register an endpoint', () => {
  test('a key with webhooks:manage but not runs:read is refused 403 naming runs:read, and nothing is stored', async () => {
    const answer = await register({ url: 'https://93.184.215.14/hook' }, ['webhooks:manage']);
    const error = expectError(answer, 'FORBIDDEN');
    expect(error.details).toEqual({ requiredScope: 'runs:read' });
    expect(ddb).not.toHaveReceivedAnyCommand();
  });

  test('a key with runs:read but not webhooks:manage is refused 403 naming webhooks:manage', async () => {
    const error = expectError(await register({ url: 'https://93.184.215.14/hook' }, ['runs:read']), 'FORBIDDEN');
    expect(error.details).toEqual({ requiredScope: 'webhooks:manage' });
    expect(ddb).not.toHaveReceivedAnyCommand();
  });

  test('a key with both scopes registers (201, the secret shown once); admin alone does too', async () => {
    const answer = await register({ url: 'https://93.184.215.14/hook' });
    expect(answer.status).toBe(201);
    expect(answer.body.secret).toMatch(/^whsec_/);
    expect((await register({ url: 'https://93.184.215.14/hook' }, ['admin'])).status).toBe(201);
  });
});

describe('what is registered', () => {
  test('the URL is stored and answered as the URL standard normalises it', async () => {
    const answer = await register({ url: 'HTTPS://93.184.215.14:443/a/./b/../hook?x=1' });
    expect(answer.status).toBe(201);
    expect(answer.body.url).toBe('https://93.184.215.14/a/hook?x=1');
    expect(storedWebhook().url).toBe('https://93.184.215.14/a/hook?x=1');
  });

  test.each([
    ['a newline (a forged second line in a listing)', 'billing\nwh_0000 https://evil.example'],
    ['an escape sequence', 'billing\u001b[2K'],
    ['a C1 control', 'billing\u0085'],
    ['a right-to-left override', 'billing \u202eevil'],
    ['a pop directional isolate', 'billing\u2069'],
  ])('a description with %s is refused 400 on description, and nothing is stored', async (_, description) => {
    const error = expectError(await register({ url: 'https://93.184.215.14/hook', description }), 'INVALID_REQUEST');
    expect(error.details.issues).toEqual([
      { path: 'description', message: expect.stringContaining('control characters') },
    ]);
    expect(ddb).not.toHaveReceivedAnyCommand();
  });

  test('a description in any script, with punctuation, is stored as given', async () => {
    const answer = await register({
      url: 'https://93.184.215.14/hook',
      description: 'Facturation — équipe 会計 (prod)',
    });
    expect(answer.status).toBe(201);
    expect(storedWebhook().description).toBe('Facturation — équipe 会計 (prod)');
  });

  test('a refused URL answers 400 with the reason, without the address its host is', async () => {
    for (const url of ['https://[::ffff:10.0.0.1]/hook', 'https://[::a00:1]/hook', 'https://[fec0::1]/hook']) {
      const error = expectError(await register({ url }), 'INVALID_REQUEST');
      expect(error.details.reason).toContain('private');
      expect(JSON.stringify(error)).not.toMatch(/10\.0\.0\.1|a00:1|fec0/);
    }
    expect(
      expectError(await register({ url: 'https://93.184.215.14:8443/' }), 'INVALID_REQUEST').details.reason,
    ).toContain('port 443');
    expect(ddb).not.toHaveReceivedAnyCommand();
  });
});
