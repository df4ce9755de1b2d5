/**
 * One webhook POST (shared/events/post.ts) against real local servers: a 2xx is delivered, a redirect is a failed
 * try that is never followed, a hanging receiver is cut off at the deadline, an endless answer is read only up to
 * its cap and stored only up to 1 KB, and the connection goes to the checked address whatever the URL's name.
 */
import { createServer, type Server } from 'node:http';
import { excerpt, postWebhook } from '../../shared/events/post.js';
import { webhookSettings } from '../../shared/infra/resources.js';

const servers: Server[] = [];

async function serve(handler: Parameters<typeof createServer>[1]): Promise<number> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return typeof address === 'object' && address ? address.port : 0;
}

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

const target = (port: number, host = '127.0.0.1') => ({
  url: new URL(`http://${host}:${port}/hook`),
  address: '127.0.0.1',
  family: 4 as const,
});

test('a 2xx answer is delivered; the body and headers arrive as sent', async () => {
  let received: { body: string; headers: Record<string, unknown> } | undefined;
  const port = await serve((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      received = { body, headers: req.headers };
      res.writeHead(204).end();
    });
  });
  const outcome = await postWebhook(target(port), '{"a":1}', { 'vision-event-id': 'evt_1' });
  expect(outcome).toEqual(expect.objectContaining({ ok: true, statusCode: 204, error: null, response: '' }));
  expect(received?.body).toBe('{"a":1}');
  expect(received?.headers['vision-event-id']).toBe('evt_1');
});

test('the connection goes to the checked address, whatever the name in the URL resolves to now', async () => {
  const port = await serve((_req, res) => res.writeHead(200).end('pinned'));
  const outcome = await postWebhook(target(port, 'receiver.invalid'), '{}', {});
  expect(outcome).toEqual(expect.objectContaining({ ok: true, response: 'pinned' }));
});

test('a redirect is a failed try and is not followed', async () => {
  let followed = 0;
  const elsewhere = await serve((_req, res) => {
    followed++;
    res.writeHead(200).end();
  });
  const port = await serve((_req, res) => res.writeHead(307, { location: `http://127.0.0.1:${elsewhere}/` }).end());
  const outcome = await postWebhook(target(port), '{}', {});
  expect(outcome).toEqual(expect.objectContaining({ ok: false, statusCode: 307, error: 'http_307' }));
  expect(followed).toBe(0);
});

test('a 500 is a failed try with the start of its answer', async () => {
  const port = await serve((_req, res) => res.writeHead(500).end('boom'));
  expect(await postWebhook(target(port), '{}', {})).toEqual(
    expect.objectContaining({ ok: false, statusCode: 500, error: 'http_500', response: 'boom' }),
  );
});

test('a receiver that never answers is cut off at the deadline', async () => {
  const port = await serve(() => {
    // never answers
  });
  const outcome = await postWebhook(target(port), '{}', {}, { timeoutMs: 200 });
  expect(outcome).toEqual(expect.objectContaining({ ok: false, statusCode: null, error: 'timeout' }));
});

test('a 2xx whose body trickles on past the deadline still counts as accepted', async () => {
  const port = await serve((_req, res) => {
    res.writeHead(200);
    res.write('accepted, more to come');
  });
  const outcome = await postWebhook(target(port), '{}', {}, { timeoutMs: 200 });
  expect(outcome).toEqual(expect.objectContaining({ ok: true, statusCode: 200, response: 'accepted, more to come' }));
});

test('an endless answer is read only up to its cap, and at most 1 KB of it is kept', async () => {
  let written = 0;
  const port = await serve((_req, res) => {
    res.writeHead(200);
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const pump = () => {
      // 100 MB unless the client hangs up first.
      while (written < 100 * 1024 * 1024 && res.write(chunk)) written += chunk.length;
      if (written < 100 * 1024 * 1024) res.once('drain', pump);
      else res.end();
    };
    res.on('close', () => res.removeAllListeners('drain'));
    pump();
  });
  const outcome = await postWebhook(target(port), '{}', {});
  expect(outcome.ok).toBe(true);
  expect(Buffer.byteLength(outcome.response)).toBe(webhookSettings.responseStoredMaxBytes);
  expect(written).toBeLessThan(10 * 1024 * 1024);
});

test('a refused connection is a failed try, not an exception', async () => {
  const port = await serve(() => {});
  servers[0]?.close();
  servers[0]?.closeAllConnections();
  await new Promise((r) => setTimeout(r, 10));
  const outcome = await postWebhook(target(port), '{}', {});
  expect(outcome).toEqual(expect.objectContaining({ ok: false, statusCode: null, error: 'connect_failed' }));
});

test('a connection the receiver drops before answering is connect_failed too (the same words as a refusal)', async () => {
  const port = await serve((req) => req.socket.destroy());
  expect(await postWebhook(target(port), '{}', {})).toEqual(
    expect.objectContaining({ ok: false, statusCode: null, error: 'connect_failed' }),
  );
});

test('a TLS handshake that fails is tls_error, without the TLS library’s code', async () => {
  // A plain HTTP server where https is expected: TCP connects, the handshake cannot.
  const port = await serve((_req, res) => res.writeHead(200).end());
  const outcome = await postWebhook({ ...target(port), url: new URL(`https://127.0.0.1:${port}/hook`) }, '{}', {});
  expect(outcome).toEqual(expect.objectContaining({ ok: false, statusCode: null, error: 'tls_error', response: '' }));
});

test('excerpt never splits a character', () => {
  const text = Buffer.from(`${'a'.repeat(1023)}é`);
  expect(excerpt(text, 1024)).toBe('a'.repeat(1023));
  expect(excerpt(Buffer.from('short'), 1024)).toBe('short');
});
