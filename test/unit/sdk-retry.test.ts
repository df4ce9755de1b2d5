/**
 * SDK retry policy with a fake fetch: Retry-After, full-jitter backoff, idempotency rules, polling, cancellation.
 * Over 400 lines: one fake fetch serves every case of the policy.
 */
import { backoffDelay, type ProgressEvent, parseRetryAfter, VisionClient, VisionError } from '../../sdk/index.js';

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
        throw new TypeError('fetch failed', { cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }) });
      },
    ]);
    const error = await client(fetch, sleeps)
      .getRun('j')
      .catch((e: unknown) => e);
    // The system's code, for a caller that explains it (the CLI asks whether the service runs).
    expect(error).toMatchObject({
      code: 'NETWORK_ERROR',
      status: 0,
      retryable: true,
      message: 'GET http://svc.test/v1/runs/j: fetch failed (ECONNREFUSED)',
      details: { cause: 'ECONNREFUSED' },
    });
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

  test("a long document's pages reach onProgress as the run reports them (one event per change)", async () => {
    const pages = (pagesDone: number) => ({ pagesTotal: 20, pagesDone, stage: 'extracting' });
    const { fetch } = fakeFetch([
      () => json(200, base),
      () => json(200, { ...base, stage: 'processing', progress: pages(0) }),
      () => json(200, { ...base, stage: 'processing', progress: pages(8) }),
      () => json(200, { ...base, stage: 'processing', progress: pages(8) }),
      () => json(200, { ...base, stage: 'processing', progress: pages(20) }),
      () => json(200, { ...base, status: 'completed', result: {} }),
    ]);
    const events: ProgressEvent[] = [];
    await client(fetch, []).waitForRun('j', { onProgress: (e) => events.push(e) });
    expect(events.map((e) => [e.stage, e.progress?.pagesDone, e.progress?.pagesTotal])).toEqual([
      ['queued', undefined, undefined],
      ['processing', 0, 20],
      ['processing', 8, 20],
      ['processing', 20, 20],
      ['completed', undefined, undefined],
    ]);
    expect(events[1]?.progress).toEqual(pages(0));
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

describe('VisionClient after a run exists, and what creation tells when it gets no answer', () => {
  const base = { jobId: 'j', status: 'queued', stage: 'waiting' };
  const unavailable = () => json(503, errorBody('INTERNAL_ERROR', 503, true));

  test('polling rides out an outage (each read already retried) and still delivers the completed run', async () => {
    const sleeps: number[] = [];
    const { fetch, calls } = fakeFetch([
      () => json(200, base),
      // One getRun: four 503s (the first try and three retries), then the next poll answers.
      unavailable,
      unavailable,
      unavailable,
      unavailable,
      () => json(200, { ...base, status: 'completed', result: { total: 1 } }),
    ]);
    const run = await client(fetch, sleeps).waitForRun('j');
    expect(run.result).toEqual({ total: 1 });
    expect(calls).toHaveLength(6);
  });

  test('an outage longer than maxErrorMs, or a refusal, ends polling with an error that names the run', async () => {
    const outage = fakeFetch([() => json(200, base), unavailable]);
    const vision = new VisionClient({
      baseUrl: 'http://svc.test',
      apiKey: 'k',
      fetch: outage.fetch,
      retry: { retries: 1, sleep: async () => {} },
      poll: { maxErrorMs: 0 },
    });
    const error = (await vision.waitForRun('j').catch((e: unknown) => e)) as VisionError;
    expect(error).toMatchObject({ code: 'INTERNAL_ERROR', retryable: true, jobId: 'j', details: { jobId: 'j' } });

    const revoked = fakeFetch([() => json(401, errorBody('UNAUTHORIZED', 401, false))]);
    const refused = (await client(revoked.fetch, [])
      .waitForRun('j')
      .catch((e: unknown) => e)) as VisionError;
    expect(refused).toMatchObject({ code: 'UNAUTHORIZED', jobId: 'j' });
    expect(revoked.calls).toHaveLength(1);
  });

  const presign = () =>
    json(200, {
      uploadId: 'upl_1',
      uploadUrl: 'http://store.test/put',
      method: 'PUT',
      headers: { 'Content-Type': 'application/octet-stream' },
    });
  const stored = () => new Response(null, { status: 200, headers: { etag: '"e"' } });
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);

  test('a creation left without an answer names the upload and key; analyze({ uploadId }) with that key asks again without a new upload', async () => {
    const first = fakeFetch([presign, stored, () => json(500, errorBody('INTERNAL_ERROR', 500, true))]);
    const error = (await client(first.fetch, [])
      .analyze(png, { prompt: 'p', idempotencyKey: 'idem-7' })
      .catch((e: unknown) => e)) as VisionError;
    expect(error).toMatchObject({ code: 'INTERNAL_ERROR', details: { uploadId: 'upl_1', idempotencyKey: 'idem-7' } });
    expect(error.jobId).toBeUndefined();

    const again = fakeFetch([
      () => json(202, { ...base }),
      () => json(200, { ...base, status: 'completed', result: {} }),
    ]);
    await client(again.fetch, []).analyze({ uploadId: 'upl_1' }, { prompt: 'p', idempotencyKey: 'idem-7' });
    expect(again.calls[0]?.url).toBe('http://svc.test/v1/runs');
    expect(JSON.parse(String(again.calls[0]?.init.body))).toEqual({ uploadId: 'upl_1', prompt: 'p' });
    expect((again.calls[0]?.init.headers as Record<string, string> | undefined)?.['Idempotency-Key']).toBe('idem-7');
  });

  test('a refused creation (4xx) is an answer: no upload or key details', async () => {
    const { fetch } = fakeFetch([presign, stored, () => json(400, errorBody('UNKNOWN_SCHEMA', 400, false))]);
    const error = (await client(fetch, [])
      .analyze(png, { prompt: 'p', schemaId: 'x' })
      .catch((e: unknown) => e)) as VisionError;
    expect(error.code).toBe('UNKNOWN_SCHEMA');
    expect(error.details?.idempotencyKey).toBeUndefined();
  });

  test('the confirmed creation after COST_CONFIRMATION_REQUIRED keeps the Idempotency-Key', async () => {
    const { fetch, calls } = fakeFetch([
      presign,
      stored,
      () =>
        json(402, {
          error: {
            ...errorBody('COST_CONFIRMATION_REQUIRED', 402, false).error,
            details: { estimatedCostUsd: 2, thresholdUsd: 1 },
          },
        }),
      () => json(202, base),
    ]);
    await client(fetch, []).submit(png, { prompt: 'p' }, { confirmCost: () => true });
    const keys = calls.slice(2).map((c) => (c.init.headers as Record<string, string> | undefined)?.['Idempotency-Key']);
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
    expect(JSON.parse(String(calls[3]?.init.body))).toMatchObject({ confirmCost: true });
  });

  test('confirmCost is told the upload, so a client can show its estimate (both prices) before answering', async () => {
    const { fetch } = fakeFetch([
      presign,
      stored,
      () =>
        json(402, {
          error: {
            ...errorBody('COST_CONFIRMATION_REQUIRED', 402, false).error,
            details: { estimatedCostUsd: 2, thresholdUsd: 1 },
          },
        }),
      () => json(202, base),
    ]);
    const asked: unknown[] = [];
    await client(fetch, []).submit(png, { prompt: 'p' }, { confirmCost: (details) => asked.push(details) > 0 });
    expect(asked).toEqual([{ estimatedCostUsd: 2, thresholdUsd: 1, uploadId: 'upl_1' }]);
  });

  test('a confirmed creation left without an answer says so (the key answers only the confirmed body again)', async () => {
    const { fetch } = fakeFetch([
      presign,
      stored,
      () =>
        json(402, {
          error: {
            ...errorBody('COST_CONFIRMATION_REQUIRED', 402, false).error,
            details: { estimatedCostUsd: 2, thresholdUsd: 1 },
          },
        }),
      () => json(500, errorBody('INTERNAL_ERROR', 500, true)),
    ]);
    const error = (await client(fetch, [])
      .submit(png, { prompt: 'p', idempotencyKey: 'idem-9' }, { confirmCost: () => true })
      .catch((e: unknown) => e)) as VisionError;
    expect(error.details).toMatchObject({ uploadId: 'upl_1', idempotencyKey: 'idem-9', confirmCost: true });
  });
});

describe('VisionClient transport', () => {
  test('calls with the key do not follow redirects (the key stays with the base URL); health may', async () => {
    const { fetch, calls } = fakeFetch([
      () => new Response(null, { status: 302, headers: { location: 'http://elsewhere.test/v1/schemas' } }),
      () => json(200, { status: 'ok' }),
    ]);
    const vision = client(fetch, []);
    const error = (await vision.schemas().catch((e: unknown) => e)) as VisionError;
    expect(error).toMatchObject({ code: 'HTTP_ERROR', status: 302, retryable: false });
    expect(error.message).toContain('elsewhere.test');
    expect(calls[0]?.init.redirect).toBe('manual');
    await vision.health();
    expect(calls[1]?.init.redirect).toBeUndefined();
  });

  test('an attempt without a response within requestTimeoutMs is a network error, retried for reads', async () => {
    const hang = (_url: string, init: RequestInit) =>
      new Promise<Response>((_resolve, reject) => {
        init.signal?.addEventListener('abort', () => reject(init.signal?.reason));
      });
    const { fetch, calls } = fakeFetch([hang]);
    const vision = new VisionClient({
      baseUrl: 'http://svc.test',
      apiKey: 'k',
      fetch,
      retry: { retries: 1, requestTimeoutMs: 20, sleep: async () => {} },
    });
    const error = (await vision.getRun('j').catch((e: unknown) => e)) as VisionError;
    expect(error).toMatchObject({ code: 'NETWORK_ERROR', retryable: true });
    expect(error.message).toContain('no response within 20 ms');
    expect(calls).toHaveLength(2);
  });

  test('a low-level call cancelled by its signal rejects with VisionError ABORTED, not a DOMException', async () => {
    const { fetch } = fakeFetch([() => json(200, {})]);
    const error = await client(fetch, [])
      .getRun('j', { signal: AbortSignal.abort() })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VisionError);
    expect(error).toMatchObject({ code: 'ABORTED', details: { reason: 'aborted' } });
  });

  test('an option given as undefined keeps its default (callers compiled with exactOptionalPropertyTypes pass it)', async () => {
    const sleeps: number[] = [];
    const { fetch, calls } = fakeFetch([() => json(503, errorBody('INTERNAL_ERROR', 503, true))]);
    const vision = new VisionClient({
      baseUrl: 'http://svc.test',
      apiKey: 'k',
      fetch,
      retry: {
        retries: undefined,
        baseDelayMs: undefined,
        random: () => 0.5,
        sleep: async (ms) => void sleeps.push(ms),
      },
    });
    await vision.schemas().catch((e: unknown) => e);
    // The default: four retries after the first attempt, from a 300 ms base.
    expect(calls).toHaveLength(5);
    expect(sleeps).toEqual([150, 300, 600, 1200]);
  });

  test('bad arguments are refused before any request: a base URL that is not http(s), an empty file', async () => {
    expect(() => new VisionClient({ baseUrl: 'notaurl', apiKey: 'k' })).toThrow(/http\(s\) URL/);
    expect(() => new VisionClient({ baseUrl: 'ftp://host', apiKey: 'k' })).toThrow(/http\(s\) URL/);
    const { fetch, calls } = fakeFetch([() => json(200, {})]);
    const error = await client(fetch, [])
      .submit(new Uint8Array(0), { prompt: 'p', fileName: 'a.png' })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', message: 'the file is empty' });
    const missing = await client(fetch, [])
      .submit('no/such/receipt.png', { prompt: 'p' })
      .catch((e: unknown) => e);
    // In words, not the system's `ENOENT: no such file or directory, open '…'`.
    expect(missing).toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: 'cannot read no/such/receipt.png: no such file',
    });
    expect(calls).toHaveLength(0);
  });
});

test('estimate POSTs the body to /v1/estimates and, creating nothing, is retried after a 5xx like a read', async () => {
  const prices = {
    standard: { estimatedCostUsd: 0.002 },
    batch: { estimatedCostUsd: 0.001, expiresWithinHours: 24 },
    file: { type: 'image/png', sizeBytes: 100, pages: 1 },
  };
  const sleeps: number[] = [];
  const { fetch, calls } = fakeFetch([
    () => json(500, errorBody('INTERNAL_ERROR', 500, true)),
    () => json(200, prices),
  ]);
  const body = { prompt: 'p', file: { type: 'image/png' as const, sizeBytes: 100 } };
  await expect(client(fetch, sleeps).estimate(body)).resolves.toEqual(prices);
  expect(calls.map((c) => [c.init.method, c.url])).toEqual([
    ['POST', 'http://svc.test/v1/estimates'],
    ['POST', 'http://svc.test/v1/estimates'],
  ]);
  expect(JSON.parse(String(calls[1]?.init.body))).toEqual(body);
});

test('a Retry-After longer than maxRetryAfterMs ends the call at once with the wait in details', async () => {
  const sleeps: number[] = [];
  const { fetch, calls } = fakeFetch([
    () => json(429, errorBody('RATE_LIMITED', 429, true), { 'retry-after': '3600' }),
  ]);
  const error = (await client(fetch, sleeps)
    .schemas()
    .catch((e: unknown) => e)) as VisionError;
  expect(error).toMatchObject({ code: 'RATE_LIMITED', retryable: true, details: { retryAfterMs: 3_600_000 } });
  expect(calls).toHaveLength(1);
  expect(sleeps).toEqual([]);
});

test('a response body that breaks off is a NETWORK_ERROR, not a raw stream error', async () => {
  const broken = new ReadableStream({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('{"items": ['));
      controller.error(new Error('socket hang up'));
    },
  });
  const { fetch } = fakeFetch([() => new Response(broken, { status: 200 })]);
  const error = await client(fetch, [])
    .schemas()
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(VisionError);
  expect(error).toMatchObject({ code: 'NETWORK_ERROR', retryable: true });
});

describe('VisionClient.fileUrl', () => {
  test('asks for the file, or with `page` for that page image of a PDF run', async () => {
    const answer = { jobId: 'run_1', url: 'u', expiresAt: 'e', contentType: 'image/jpeg', fileName: null, page: 2 };
    const { fetch, calls } = fakeFetch([() => json(200, answer)]);
    const vision = client(fetch, []);
    await vision.fileUrl('run_1');
    expect(await vision.fileUrl('run_1', { page: 2 })).toEqual(answer);
    expect(calls.map((call) => call.url)).toEqual([
      'http://svc.test/v1/runs/run_1/file',
      'http://svc.test/v1/runs/run_1/file?page=2',
    ]);
  });
});
