/** SDK retry policy with a fake fetch: Retry-After, full-jitter backoff, idempotency rules, polling, cancellation. */
import { backoffDelay, parseRetryAfter, VisionClient, VisionError } from '../../sdk/index.js';

type Handler = (url: string, init: RequestInit) => Response | Promise<Response>;

function fakeFetch(handlers: Handler[]) {
  const calls: { url: string; init: RequestInit }[] = [];
  const fetch = (async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = String(input);
    calls.push({ url, init });
    const handler = handlers[Math.min(calls.length - 1, handlers.length - 1)] as Handler;
    return handler(url, init);
  }) as typeof globalThis.fetch;
  return { fetch, calls };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
const errorBody = (code: string, status: number, retryable: boolean) => ({
  error: { code, message: code, status, retryable, requestId: 'req-1' },
});

function client(fetch: typeof globalThis.fetch, sleeps: number[], random = () => 0.5) {
  return new VisionClient({
    baseUrl: 'http://svc.test/',
    apiKey: 'k',
    fetch,
    retry: {
      retries: 3,
      baseDelayMs: 100,
      maxDelayMs: 1000,
      random,
      sleep: async (ms) => {
        sleeps.push(ms);
      },
    },
    poll: { initialDelayMs: 500, maxDelayMs: 5000 },
  });
}

describe('backoff helpers', () => {
  test('full jitter stays within the capped exponential ceiling', () => {
    expect(backoffDelay(0, 500, 5000, () => 0.999)).toBe(499);
    expect(backoffDelay(3, 500, 5000, () => 0.999)).toBe(3996);
    expect(backoffDelay(10, 500, 5000, () => 0.999)).toBe(4995);
    expect(backoffDelay(10, 500, 5000, () => 0)).toBe(0);
  });
  test('Retry-After in seconds or as an HTTP date', () => {
    expect(parseRetryAfter('2')).toBe(2000);
    expect(parseRetryAfter(null)).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:03 GMT', now)).toBe(3000);
  });
});

describe('VisionClient retries', () => {
  test('429 honours Retry-After, then succeeds', async () => {
    const sleeps: number[] = [];
    const { fetch, calls } = fakeFetch([
      () => json(429, errorBody('RATE_LIMITED', 429, true), { 'retry-after': '2' }),
      () => json(200, { items: [] }),
    ]);
    await expect(client(fetch, sleeps).schemas()).resolves.toEqual({ items: [] });
    expect(calls).toHaveLength(2);
    expect(sleeps).toEqual([2000]);
    expect((calls[0]?.init.headers as Record<string, string> | undefined)?.['x-api-key']).toBe('k');
  });

  test('503 without Retry-After uses backoff; a non-idempotent POST is still retried on 429/503', async () => {
    const sleeps: number[] = [];
    const { fetch, calls } = fakeFetch([
      () => json(503, errorBody('INTERNAL_ERROR', 503, true)),
      () => json(429, errorBody('RATE_LIMITED', 429, true), { 'retry-after': '1' }),
      () => json(200, { jobId: 'j', status: 'completed', verification: {} }),
    ]);
    await client(fetch, sleeps).verify('j', { accepted: true });
    expect(calls).toHaveLength(3);
    expect(sleeps).toEqual([50, 1000]); // random 0.5 × min(1000, 100·2^0)
  });

  test('500 on createRun without an Idempotency-Key is not retried; with one it is', async () => {
    const sleeps: number[] = [];
    const first = fakeFetch([() => json(500, errorBody('INTERNAL_ERROR', 500, true))]);
    const error = await client(first.fetch, sleeps)
      .createRun({ uploadId: 'u', prompt: 'p' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VisionError);
    expect(error).toMatchObject({ code: 'INTERNAL_ERROR', status: 500, retryable: true, requestId: 'req-1' });
    expect(first.calls).toHaveLength(1);

    const second = fakeFetch([
      () => json(500, errorBody('INTERNAL_ERROR', 500, true)),
      () => json(202, { jobId: 'j', status: 'queued' }),
    ]);
    await expect(
      client(second.fetch, sleeps).createRun({ uploadId: 'u', prompt: 'p' }, { idempotencyKey: 'idem-1' }),
    ).resolves.toMatchObject({ jobId: 'j' });
    expect(second.calls).toHaveLength(2);
    for (const call of second.calls) {
      expect((call.init.headers as Record<string, string>)['Idempotency-Key']).toBe('idem-1');
    }
  });

  test('network errors are retried for GET, then surface as NETWORK_ERROR', async () => {
    const sleeps: number[] = [];
    const { fetch, calls } = fakeFetch([
      () => {
        throw new TypeError('fetch failed');
      },
    ]);
    const error = await client(fetch, sleeps)
      .getRun('j')
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'NETWORK_ERROR', status: 0, retryable: true });
    expect(calls).toHaveLength(4);
    expect(sleeps).toEqual([50, 100, 200]);
  });

  test('4xx is not retried and carries the contract fields', async () => {
    const { fetch, calls } = fakeFetch([
      () =>
        json(400, {
          error: { ...errorBody('UNKNOWN_SCHEMA', 400, false).error, details: { schemaId: 'x' } },
        }),
    ]);
    const error = (await client(fetch, [])
      .createRun({ uploadId: 'u', prompt: 'p', schemaId: 'x' }, { idempotencyKey: 'k' })
      .catch((e: unknown) => e)) as VisionError;
    expect(calls).toHaveLength(1);
    expect(error).toMatchObject({ code: 'UNKNOWN_SCHEMA', status: 400, retryable: false, details: { schemaId: 'x' } });
  });
});

describe('VisionClient polling', () => {
  const base = { jobId: 'j', status: 'queued', stage: 'waiting' };
  test('waitForRun polls with capped backoff and reports stages', async () => {
    const sleeps: number[] = [];
    const { fetch } = fakeFetch([
      () => json(200, base),
      () => json(200, { ...base, stage: 'processing' }),
      () => json(200, { ...base, stage: 'processing' }),
      () => json(200, { ...base, status: 'completed', result: { total: 1 } }),
    ]);
    const stages: string[] = [];
    const run = await client(fetch, sleeps, () => 0.999).waitForRun('j', {
      onProgress: (e) => stages.push(e.stage),
    });
    expect(run.result).toEqual({ total: 1 });
    expect(stages).toEqual(['queued', 'processing', 'completed']);
    expect(sleeps).toEqual([499, 999, 1998]);
  });

  test('a failed run throws its error as a VisionError with the run attached', async () => {
    const { fetch } = fakeFetch([
      () =>
        json(200, {
          ...base,
          status: 'failed',
          error: { code: 'PROVIDER_ERROR', message: 'all providers failed', status: 502, retryable: true },
        }),
    ]);
    const error = (await client(fetch, [])
      .waitForRun('j')
      .catch((e: unknown) => e)) as VisionError;
    expect(error).toBeInstanceOf(VisionError);
    expect(error).toMatchObject({ code: 'PROVIDER_ERROR', status: 502, retryable: true, jobId: 'j' });
    expect(error.isRunFailure).toBe(true);
  });

  test('timeoutMs cancels polling with ABORTED (reason timeout)', async () => {
    const { fetch } = fakeFetch([() => json(200, base)]);
    const vision = new VisionClient({ baseUrl: 'http://svc.test', apiKey: 'k', fetch, poll: { initialDelayMs: 20 } });
    const error = (await vision.waitForRun('j', { timeoutMs: 100 }).catch((e: unknown) => e)) as VisionError;
    expect(error).toBeInstanceOf(VisionError);
    expect(error).toMatchObject({ code: 'ABORTED', status: 0, details: { reason: 'timeout', jobId: 'j' } });
  });

  test('an AbortSignal cancels polling with ABORTED (reason aborted)', async () => {
    const { fetch } = fakeFetch([() => json(200, base)]);
    const vision = new VisionClient({ baseUrl: 'http://svc.test', apiKey: 'k', fetch, poll: { initialDelayMs: 20 } });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 80);
    const error = (await vision.waitForRun('j', { signal: controller.signal }).catch((e: unknown) => e)) as VisionError;
    expect(error).toMatchObject({ code: 'ABORTED', retryable: false, details: { reason: 'aborted' } });
  });
});
