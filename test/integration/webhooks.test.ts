/**
 * Webhooks on the local stack, end to end: registration and its refusals, a signed delivery a receiver verifies with
 * the SDK, retries against a failing receiver, the dead-letter path, deletion, and a worker crash between the final
 * write and the dispatch that loses no event. Receivers are real HTTP servers on 127.0.0.1 (the local stack accepts
 * them); the stack retries a second apart (global-setup.ts).
 * Over 400 lines: the whole checklist for webhooks (and the CLI's commands for them) against one stack, sharing
 * one set of receivers and helpers.
 */
import { spawn } from 'node:child_process';
import {
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { verifyWebhook, WebhookSignatureError } from '../../sdk/index.js';
import { type FakeServer, type RecordedRequest, startFakeServer } from '../support/fake-server.js';
import { createScopedKey } from '../support/local-stack.js';
import { call, fixture, KEYS, stack, upload, waitForFinal } from './client.js';

interface Created {
  id: string;
  url: string;
  events: string[];
  secret: string;
  createdAt: string;
}

interface Delivery {
  eventId: string;
  attempt: number;
  status: 'delivered' | 'retrying' | 'failed';
  statusCode: number | null;
  error: string | null;
  nextTryAt: string | null;
  response: string;
}

const receivers: FakeServer[] = [];

async function receiver(status: (request: RecordedRequest, index: number) => number): Promise<FakeServer> {
  let count = 0;
  const server = await startFakeServer((request) => ({ status: status(request, count++), raw: 'ok' }));
  receivers.push(server);
  return server;
}

async function register(url: string, key = KEYS.a, events?: string[]) {
  return call<Created>('POST', '/v1/webhooks', { key, body: { url, ...(events ? { events } : {}) } });
}

async function removeAll(key: string) {
  const list = await call<{ items: { id: string }[] }>('GET', '/v1/webhooks', { key });
  for (const item of list.body.items ?? []) await call('DELETE', `/v1/webhooks/${item.id}`, { key });
}

async function completedRun(metadata: Record<string, unknown> = {}, key = KEYS.a) {
  const uploadId = await upload('receipt.png', await fixture('receipt.png'), { key });
  const created = await call<{ jobId: string }>('POST', '/v1/runs', {
    key,
    body: { uploadId, prompt: 'Receipt', schemaId: 'receipt', metadata },
  });
  expect(created.status).toBe(202);
  return (await waitForFinal(created.body.jobId, { key })).body as Record<string, unknown> & { jobId: string };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function deliveries(webhookId: string, key = KEYS.a): Promise<Delivery[]> {
  const reply = await call<{ items: Delivery[] }>('GET', `/v1/webhooks/${webhookId}/deliveries`, { key });
  expect(reply.status).toBe(200);
  return reply.body.items;
}

function sqs() {
  return new SQSClient({ endpoint: stack().endpoints.sqs, useQueueUrlAsEndpoint: false });
}

/** Waits until the webhook queue holds no message, visible, delayed or in flight: every try has been made. */
async function webhookQueueDrained(): Promise<void> {
  await until('the webhook queue to drain', async () => {
    const { Attributes } = await sqs().send(
      new GetQueueAttributesCommand({
        QueueUrl: stack().resources.webhookQueueUrl,
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ],
      }),
    );
    const waiting = Object.values(Attributes ?? {}).reduce((sum, n) => sum + Number(n), 0);
    return waiting === 0 ? true : undefined;
  });
}

afterEach(async () => {
  await removeAll(KEYS.a);
  await removeAll(KEYS.b);
});

afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
});

describe('registration', () => {
  test('answers the secret once; lists and other tenants never see it', async () => {
    const created = await register('http://127.0.0.1:9/hook');
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^wh_/),
      url: 'http://127.0.0.1:9/hook',
      events: ['run.completed', 'run.failed'],
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{43}$/),
      createdAt: expect.any(String),
    });
    const list = await call('GET', '/v1/webhooks');
    const { secret: _secret, ...listed } = created.body;
    expect(list.body).toEqual({ items: [listed] });
    expect(JSON.stringify(list.body)).not.toContain(created.body.secret);
    expect((await call('GET', '/v1/webhooks', { key: KEYS.b })).body).toEqual({ items: [] });
    expect((await call('DELETE', `/v1/webhooks/${created.body.id}`, { key: KEYS.b })).status).toBe(404);
    expect((await call('GET', `/v1/webhooks/${created.body.id}/deliveries`, { key: KEYS.b })).status).toBe(404);
  });

  test.each([
    ['not http(s)', 'ftp://example.com/hook', 'not http(s)'],
    ['plain http', 'http://example.com/hook', 'must be https'],
    ['over 2,048 characters', `https://example.com/${'a'.repeat(2100)}`, 'url'],
    ['unresolvable', 'https://no-such-host.invalid/hook', 'does not resolve'],
    ['private', 'https://10.1.2.3/hook', 'private'],
    ['the metadata address', 'https://169.254.169.254/latest/meta-data', 'private'],
    ['loopback over IPv6', 'https://[::1]/hook', 'private'],
    ['a private host over http', 'http://192.168.1.10/hook', 'must be https'],
  ])('refuses a URL %s with 400 INVALID_REQUEST and the reason', async (_what, url, reason) => {
    const reply = await register(url);
    expect(reply.status).toBe(400);
    const error = (reply.body as unknown as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('INVALID_REQUEST');
    expect(JSON.stringify(error)).toContain(reason);
    expect((await call('GET', '/v1/webhooks')).body).toEqual({ items: [] });
  });

  test('a tenant holds at most 10 endpoints', async () => {
    for (let i = 0; i < 10; i++) expect((await register(`http://127.0.0.1:9/hook${i}`)).status).toBe(201);
    const eleventh = await register('http://127.0.0.1:9/hook10');
    expect(eleventh.status).toBe(400);
    expect(JSON.stringify(eleventh.body)).toContain('at most 10');
    // Room again after a deletion.
    const first = (await call<{ items: { id: string }[] }>('GET', '/v1/webhooks')).body.items[0];
    expect((await call('DELETE', `/v1/webhooks/${first?.id}`)).status).toBe(204);
    expect((await register('http://127.0.0.1:9/hook10')).status).toBe(201);
  });

  test('needs the webhooks:manage scope', async () => {
    const key = await createScopedKey(stack(), 'tenant-a', ['runs:read', 'runs:write']);
    const reply = await register('http://127.0.0.1:9/hook', key);
    expect(reply.status).toBe(403);
    expect((await call('GET', '/v1/webhooks', { key })).status).toBe(403);
  });

  test('registering needs runs:read too: events carry whole runs, whichever key created them', async () => {
    const key = await createScopedKey(stack(), 'tenant-a', ['webhooks:manage']);
    const reply = await register('http://127.0.0.1:9/hook', key);
    expect(reply.status).toBe(403);
    expect(JSON.stringify(reply.body)).toContain('runs:read');
    // Managing what exists stays open to it: it lists (nothing was registered) and reads no run.
    expect((await call('GET', '/v1/webhooks', { key })).body).toEqual({ items: [] });
    expect((await call('GET', '/v1/runs', { key })).status).toBe(403);
  });
});

describe('delivery', () => {
  test('a completed run is POSTed signed, with the run as GET returns it, and verifies with the SDK', async () => {
    const server = await receiver(() => 200);
    const hook = (await register(`${server.url}/hooks/vision`)).body;
    const run = await completedRun();
    const request = await until('the delivery', async () => server.requests[0]);

    expect(request.path).toBe('/hooks/vision');
    const event = verifyWebhook(request.rawBody, request.headers['vision-signature'], hook.secret);
    expect(event).toEqual({
      id: `evt_${run.jobId.replace(/^run_/, '')}`,
      type: 'run.completed',
      createdAt: run.completedAt,
      data: run,
    });
    expect(request.headers['vision-event-id']).toBe(event.id);
    expect(request.headers['content-type']).toBe('application/json');
    // Signed with this endpoint's secret only, over these exact bytes.
    expect(() => verifyWebhook(request.rawBody, request.headers['vision-signature'], `${hook.secret}x`)).toThrow(
      WebhookSignatureError,
    );
    expect(() =>
      verifyWebhook(`${request.rawBody.toString()} `, request.headers['vision-signature'], hook.secret),
    ).toThrow(WebhookSignatureError);

    const attempts = await until('the delivery record', async () => {
      const items = await deliveries(hook.id);
      return items.length > 0 ? items : undefined;
    });
    expect(attempts).toEqual([
      expect.objectContaining({ eventId: event.id, attempt: 1, status: 'delivered', statusCode: 200, error: null }),
    ]);
    expect(JSON.stringify(attempts)).not.toContain(hook.secret);
  });

  test('a failed run is announced as run.failed, with the failed run as GET returns it', async () => {
    const server = await receiver(() => 200);
    const hook = (await register(server.url, KEYS.a, ['run.failed'])).body;
    // Its header passes creation; its pixel data cannot be decoded, so the worker fails it (CORRUPT_FILE).
    const uploadId = await upload('damaged.png', await fixture('damaged.png'));
    const created = await call<{ jobId: string }>('POST', '/v1/runs', {
      body: { uploadId, prompt: 'Receipt', schemaId: 'receipt' },
    });
    const run = (await waitForFinal(created.body.jobId)).body;
    expect(run.status).toBe('failed');
    const request = await until('the delivery', async () => server.requests[0]);
    const event = verifyWebhook(request.rawBody, request.headers['vision-signature'], hook.secret);
    expect(event).toEqual({
      id: expect.stringMatching(/^evt_/),
      type: 'run.failed',
      createdAt: run.completedAt,
      data: run,
    });
  });

  test('an endpoint that subscribed to run.failed only hears nothing of a completed run', async () => {
    const failedOnly = await receiver(() => 200);
    const all = await receiver(() => 200);
    await register(failedOnly.url, KEYS.a, ['run.failed']);
    await register(all.url);
    await completedRun();
    await until('the delivery to the subscribed endpoint', async () => all.requests[0]);
    await webhookQueueDrained();
    expect(failedOnly.requests).toHaveLength(0);
  });

  test('a failing receiver is retried with the same event until it accepts', async () => {
    // 500, then a redirect (never followed), then 200.
    const server = await receiver((_request, index) => [500, 302, 200][index] ?? 200);
    const hook = (await register(server.url)).body;
    const run = await completedRun();
    const attempts = await until('the third attempt', async () => {
      const items = await deliveries(hook.id);
      return items.some((d) => d.status === 'delivered') ? items : undefined;
    });

    expect(server.requests).toHaveLength(3);
    expect(new Set(server.requests.map((r) => r.headers['vision-event-id']))).toEqual(
      new Set([`evt_${run.jobId.replace(/^run_/, '')}`]),
    );
    expect(attempts.map((d) => [d.attempt, d.status, d.statusCode, d.error])).toEqual([
      [3, 'delivered', 200, null],
      [2, 'retrying', 302, 'http_302'],
      [1, 'retrying', 500, 'http_500'],
    ]);
    expect(attempts[1]?.nextTryAt).toEqual(expect.any(String));
    expect(attempts[0]?.nextTryAt).toBeNull();
    // Each try is signed afresh and verifies.
    for (const request of server.requests) {
      expect(verifyWebhook(request.rawBody, request.headers['vision-signature'], hook.secret).data).toEqual(run);
    }
  });

  test('a receiver that never accepts gets every try, then the delivery is dead-lettered and recorded failed', async () => {
    const server = await receiver(() => 503);
    const hook = (await register(server.url)).body;
    const run = await completedRun();
    const attempts = await until('the failed record', async () => {
      const items = await deliveries(hook.id);
      return items.some((d) => d.status === 'failed') ? items : undefined;
    });

    // The schedule 1,1,1: four tries.
    expect(attempts.map((d) => [d.attempt, d.status])).toEqual([
      [4, 'failed'],
      [3, 'retrying'],
      [2, 'retrying'],
      [1, 'retrying'],
    ]);
    expect(attempts[0]).toEqual(expect.objectContaining({ statusCode: 503, nextTryAt: null, response: 'ok' }));
    expect(server.requests).toHaveLength(4);

    const eventId = `evt_${run.jobId.replace(/^run_/, '')}`;
    const dead = await until('the dead letter', async () => {
      const out = await sqs().send(
        new ReceiveMessageCommand({
          QueueUrl: stack().resources.webhookDeadLetterQueueUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
        }),
      );
      const mine = (out.Messages ?? []).find(
        (m) => (JSON.parse(m.Body ?? '{}') as { eventId?: string }).eventId === eventId,
      );
      if (mine) {
        await sqs().send(
          new DeleteMessageCommand({
            QueueUrl: stack().resources.webhookDeadLetterQueueUrl,
            ReceiptHandle: mine.ReceiptHandle,
          }),
        );
      }
      return mine;
    });
    expect(JSON.parse(dead.Body ?? '{}')).toEqual(
      expect.objectContaining({ eventId, webhookId: hook.id, tenantId: 'tenant-a', attempt: 4 }),
    );
  });
});

describe('deletion', () => {
  test('answers 204, and a deleted endpoint gets no further delivery, not even a pending retry', async () => {
    const failing = await receiver(() => 500);
    const other = await receiver(() => 200);
    const doomed = (await register(failing.url)).body;
    const kept = (await register(other.url)).body;
    await completedRun();
    // The first try failed and a retry is scheduled a second later: delete the endpoint now.
    await until('the first failed try', async () => ((await deliveries(doomed.id)).length > 0 ? true : undefined));
    expect((await call('DELETE', `/v1/webhooks/${doomed.id}`)).status).toBe(204);
    const tries = failing.requests.length;

    await completedRun();
    await until('the second delivery to the kept endpoint', async () => other.requests[1]);
    await webhookQueueDrained();
    expect(failing.requests).toHaveLength(tries);
    expect((await call('GET', `/v1/webhooks/${doomed.id}/deliveries`)).status).toBe(404);
    expect((await call('DELETE', `/v1/webhooks/${doomed.id}`)).status).toBe(404);
    expect((await call<{ items: { id: string }[] }>('GET', '/v1/webhooks')).body.items.map((w) => w.id)).toEqual([
      kept.id,
    ]);
  });
});

describe('a crash between the final write and the dispatch', () => {
  test('loses no event: the sweep hands on what the crashed worker did not', async () => {
    const server = await receiver(() => 200);
    const hook = (await register(server.url)).body;
    // The worker settles the run and then dies before dispatching its event; the redelivered message finds the run
    // final and does nothing more. Only the outbox item, written in the settlement's transaction, remains.
    const run = await completedRun({ localFault: 'crash-after-settle' });
    const request = await until('the delivery after the crash', async () => server.requests[0]);
    const event = verifyWebhook(request.rawBody, request.headers['vision-signature'], hook.secret);
    expect(event.id).toBe(`evt_${run.jobId.replace(/^run_/, '')}`);
    expect(event.data).toEqual(run);
  });
});

describe('fairness between tenants', () => {
  test('a tenant’s hanging receiver holds at most 5 tries at once; another tenant’s event is delivered meanwhile', async () => {
    // Tenant a's receiver holds every request until released: its tries pile up.
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let inFlight = 0;
    let most = 0;
    const slow = await startFakeServer(async () => {
      inFlight++;
      most = Math.max(most, inFlight);
      await released;
      inFlight--;
      return { status: 200, raw: 'ok' };
    });
    receivers.push(slow);
    const fast = await receiver(() => 200);
    // Both runs first (b's before its endpoint exists, so nothing is sent for it yet); the tries are then sent
    // straight to the delivery queue, well within a try's 10 s deadline.
    const runB = await completedRun({}, KEYS.b);
    const hookA = (await register(`${slow.url}/a`)).body;
    const hookB = (await register(`${fast.url}/b`, KEYS.b)).body;
    const runA = await completedRun();
    const tryOf = (run: { jobId: string; completedAt?: unknown }, tenantId: string, webhookId: string) =>
      JSON.stringify({
        eventId: `evt_${run.jobId.replace(/^run_/, '')}`,
        type: 'run.completed',
        jobId: run.jobId,
        createdAt: String(run.completedAt),
        tenantId,
        webhookId,
        attempt: 1,
      });
    const sendTries = (body: string, count: number) =>
      sqs().send(
        new SendMessageBatchCommand({
          QueueUrl: stack().resources.webhookQueueUrl,
          Entries: Array.from({ length: count }, (_, n) => ({ Id: String(n), MessageBody: body })),
        }),
      );
    // Run a's own event and eleven more tries of it: twelve at once for tenant a.
    await sendTries(tryOf(runA, 'tenant-a', hookA.id), 10);
    await sendTries(tryOf(runA, 'tenant-a', hookA.id), 1);
    try {
      await until('tenant a’s receiver to hold 5 tries', async () => (inFlight >= 5 ? true : undefined));
      // Tenant b's try while a's five hang: it does not wait for them.
      await sendTries(tryOf(runB, 'tenant-b', hookB.id), 1);
      const toB = await until('tenant b’s delivery', async () => fast.requests[0]);
      expect(toB.headers['vision-event-id']).toBe(`evt_${runB.jobId.replace(/^run_/, '')}`);
      expect(inFlight).toBe(5);
    } finally {
      release();
    }
    await until('all 12 of tenant a’s tries', async () => (slow.requests.length >= 12 ? true : undefined));
    await webhookQueueDrained();
    expect(slow.requests).toHaveLength(12);
    expect(most).toBe(5);
  });
});

describe('the CLI', () => {
  function vision(args: string[], onStderr?: (text: string) => void) {
    const child = spawn(process.execPath, ['cli/vision.mjs', ...args], {
      cwd: new URL('../..', import.meta.url).pathname,
      env: { ...process.env, NODE_NO_WARNINGS: '1', VISION_BASE_URL: stack().baseUrl, VISION_API_KEY: KEYS.a },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      onStderr?.(stderr);
    });
    const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code) => resolve({ code, stdout, stderr }));
    });
    return { child, done };
  }

  test('webhooks add, list, deliveries and rm', async () => {
    const server = await receiver(() => 200);
    const added = await vision(['webhooks', 'add', server.url, '--events', 'run.completed', '--description', 'cli'])
      .done;
    expect(added.code).toBe(0);
    const created = JSON.parse(added.stdout) as Created;
    expect(created).toEqual(
      // Stored as the URL standard normalises it: the bare origin gains its path, `/`.
      expect.objectContaining({ url: `${server.url}/`, events: ['run.completed'], secret: expect.any(String) }),
    );
    const listed = await vision(['webhooks', 'list']).done;
    expect(JSON.parse(listed.stdout)).toEqual({
      items: [expect.objectContaining({ id: created.id, description: 'cli' })],
    });
    expect(listed.stdout).not.toContain(created.secret);
    await completedRun();
    await until('the delivery', async () => ((await deliveries(created.id)).length > 0 ? true : undefined));
    const attempts = await vision(['webhooks', 'deliveries', created.id]).done;
    expect(JSON.parse(attempts.stdout).items[0]).toEqual(expect.objectContaining({ status: 'delivered', attempt: 1 }));
    expect((await vision(['webhooks', 'rm', created.id]).done).code).toBe(0);
    const gone = await vision(['webhooks', 'rm', created.id]).done;
    expect(gone.code).toBe(3);
    expect(gone.stderr).toContain('NOT_FOUND');
    expect((await vision(['webhooks', 'add', 'ftp://x.example']).done).code).toBe(3);
  });

  test('listen registers itself, prints the verified event, and deletes its endpoint when done', async () => {
    let ready: () => void = () => undefined;
    const listening = new Promise<void>((resolve) => {
      ready = resolve;
    });
    const listener = vision(['listen', '--count', '1'], (stderr) => {
      if (stderr.includes('listening on')) ready();
    });
    await listening;
    const run = await completedRun();
    const result = await listener.done;
    expect(result.code).toBe(0);
    const events = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: string; data: unknown });
    expect(events).toEqual([expect.objectContaining({ id: `evt_${run.jobId.replace(/^run_/, '')}`, data: run })]);
    expect(result.stderr).toMatch(/deleted webhook wh_/);
    expect((await call('GET', '/v1/webhooks')).body).toEqual({ items: [] });
  });
});
