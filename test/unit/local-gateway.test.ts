/**
 * The local API Gateway stand-in (scripts/local/gateway.ts) answers as API Gateway does where the two could differ:
 * the authorizer's `Unauthorized` is a 401, any other authorizer failure a retryable 500 (a client must not conclude
 * its key was revoked because the key store was unreachable), and repeated query parameters reach the handler as
 * API Gateway passes them; requests it cannot take (oversized bodies or headers, a path parameter that cannot be
 * decoded) get the contract error and leave the connection usable.
 */
import type { AddressInfo } from 'node:net';
import { jest } from '@jest/globals';
import type { APIGatewayAuthorizerResult, APIGatewayProxyEvent } from 'aws-lambda';
import { createGateway } from '../../scripts/local/gateway.js';
import { matchPath } from '../../shared/infra/routes.js';

const KEY = 'vk_local_gateway_test_key_0123456789';

const allow: APIGatewayAuthorizerResult = {
  principalId: 'key_1',
  policyDocument: { Version: '2012-10-17', Statement: [] },
  context: { tenantId: 'tenant-a', keyId: 'key_1', scopes: 'runs:read' },
};

/** Starts a gateway whose schemas route echoes the event it got; returns its base URL and a stop function. */
async function gateway(authorizer: () => Promise<APIGatewayAuthorizerResult>, maxBodyBytes?: number) {
  const events: APIGatewayProxyEvent[] = [];
  const echo = async (event: APIGatewayProxyEvent) => {
    events.push(event);
    return { statusCode: 200, headers: { 'content-type': 'application/json' }, body: '{}' };
  };
  const server = createGateway({
    handlers: { schemas: echo, 'create-run': echo, 'get-run': echo },
    authorizer,
    rateLimit: { ratePerSecond: 1000, burst: 1000 },
    authorizerCacheSeconds: 0,
    ...(maxBodyBytes !== undefined ? { maxBodyBytes } : {}),
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // closeAllConnections: fetch keeps its connection alive, which close() alone would wait for.
  const stop = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return { url, events, stop };
}

test('an authorizer that denies the key answers 401 UNAUTHORIZED, not retryable', async () => {
  const gw = await gateway(async () => {
    throw new Error('Unauthorized');
  });
  try {
    const response = await fetch(`${gw.url}/v1/schemas`, { headers: { 'x-api-key': KEY } });
    expect(response.status).toBe(401);
    const { error } = (await response.json()) as { error: { code: string; retryable: boolean } };
    expect(error).toMatchObject({ code: 'UNAUTHORIZED', retryable: false });
    expect(gw.events).toHaveLength(0);
  } finally {
    await gw.stop();
  }
});

test('an authorizer that fails (key store unreachable) answers 500 INTERNAL_ERROR, retryable, and leaks nothing', async () => {
  const gw = await gateway(async () => {
    throw new Error('connect ECONNREFUSED 127.0.0.1:8000');
  });
  const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    const response = await fetch(`${gw.url}/v1/schemas`, { headers: { 'x-api-key': KEY } });
    expect(response.status).toBe(500);
    expect(response.headers.get('x-request-id')).toBeTruthy();
    const text = await response.text();
    expect(JSON.parse(text).error).toMatchObject({ code: 'INTERNAL_ERROR', status: 500, retryable: true });
    expect(text).not.toContain('ECONNREFUSED');
    expect(gw.events).toHaveLength(0);
  } finally {
    stderr.mockRestore();
    await gw.stop();
  }
});

test('a repeated query parameter reaches the handler as API Gateway passes it: last value, and all values', async () => {
  const gw = await gateway(async () => allow);
  try {
    const response = await fetch(`${gw.url}/v1/schemas?status=completed&status=queued&limit=5`, {
      headers: { 'x-api-key': KEY },
    });
    expect(response.status).toBe(200);
    expect(gw.events[0]?.queryStringParameters).toEqual({ status: 'queued', limit: '5' });
    expect(gw.events[0]?.multiValueQueryStringParameters).toEqual({ status: ['completed', 'queued'], limit: ['5'] });
  } finally {
    await gw.stop();
  }
});

test('a body over the limit answers 400 with the limit and closes the connection, so the next request still works', async () => {
  const gw = await gateway(async () => allow, 1000);
  try {
    const tooBig = await fetch(`${gw.url}/v1/runs`, {
      method: 'POST',
      headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'x'.repeat(200_000) }),
    });
    expect(tooBig.status).toBe(400);
    expect(tooBig.headers.get('connection')).toBe('close');
    const { error } = (await tooBig.json()) as { error: { code: string; details: { limitBytes: number } } };
    expect(error).toMatchObject({ code: 'INVALID_REQUEST', details: { limitBytes: 1000 } });
    // The unread rest of the body must not be taken for the next request on a kept-alive connection.
    const next = await fetch(`${gw.url}/v1/schemas`, { headers: { 'x-api-key': KEY } });
    expect(next.status).toBe(200);
  } finally {
    await gw.stop();
  }
});

test("headers over Node's limit are answered in the contract's error shape, with x-request-id", async () => {
  const gw = await gateway(async () => allow);
  try {
    const response = await fetch(`${gw.url}/v1/schemas?cursor=${'A'.repeat(20_000)}`, {
      headers: { 'x-api-key': KEY },
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const requestId = response.headers.get('x-request-id');
    expect(requestId).toEqual(expect.any(String));
    const { error } = (await response.json()) as { error: Record<string, unknown> };
    expect(error).toEqual({
      code: 'INVALID_REQUEST',
      message: 'Request headers are too large',
      status: 400,
      retryable: false,
      requestId,
    });
    expect(gw.events).toHaveLength(0);
  } finally {
    await gw.stop();
  }
});

test.each(['/v1/runs/%E0%A4%A', '/v1/runs/run_%', '/v1/runs/%ZZ/file'])(
  'a path parameter that is not valid percent-encoding (%s) answers 400 INVALID_REQUEST naming it, not a 500',
  async (path) => {
    const gw = await gateway(async () => allow);
    try {
      const response = await fetch(`${gw.url}${path}`, { headers: { 'x-api-key': KEY } });
      expect(response.status).toBe(400);
      const { error } = (await response.json()) as { error: { code: string; retryable: boolean; details: unknown } };
      expect(error).toMatchObject({
        code: 'INVALID_REQUEST',
        retryable: false,
        details: { issues: [{ path: 'jobId', message: 'is not valid percent-encoding' }] },
      });
      expect(gw.events).toHaveLength(0);
    } finally {
      await gw.stop();
    }
  },
);

test('a well-formed escape in a path parameter is decoded once, as API Gateway passes it', async () => {
  const gw = await gateway(async () => allow);
  try {
    const response = await fetch(`${gw.url}/v1/runs/run%5Fa%2525`, { headers: { 'x-api-key': KEY } });
    expect(response.status).toBe(200);
    expect(gw.events[0]?.pathParameters).toEqual({ jobId: 'run_a%25' });
  } finally {
    await gw.stop();
  }
});

test('the route matcher reports a malformed escape instead of throwing', () => {
  expect(matchPath('/v1/runs/{jobId}', '/v1/runs/%E0%A4%A')).toEqual({ malformedParameter: 'jobId' });
  expect(matchPath('/v1/runs/{jobId}', '/v1/runs/run_1')).toEqual({ params: { jobId: 'run_1' } });
  expect(matchPath('/v1/runs/{jobId}', '/v1/schemas')).toBeNull();
});

test('an idle connection is kept longer than clients keep theirs, so a reused one is never closed under a request', async () => {
  const gw = await gateway(async () => allow);
  try {
    const response = await fetch(`${gw.url}/v1/schemas`, { headers: { 'x-api-key': KEY } });
    expect(response.status).toBe(200);
    // What clients read to decide how long to reuse a socket (undici: the hint minus 1 s, else 4 s): well over 5 s.
    expect(response.headers.get('keep-alive')).toBe('timeout=65');
  } finally {
    await gw.stop();
  }
});
