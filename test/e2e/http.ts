/**
 * A small black-box HTTP client: plain fetch against the configured base URL, nothing imported from the service.
 * Transient answers (429 with Retry-After, 502/503/504 from a cold gateway or Lambda, network errors, request timeouts)
 * are retried until `retryMs` has passed; every other status is returned to the test as it is.
 */
import type { E2eConfig } from './config.js';

export interface Reply<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
  /** The raw body, for diagnostics. */
  text: string;
}

export interface CallOptions {
  /** The API key; `null` sends none. Default: the configured key. */
  key?: string | null;
  /** Sent as JSON with content-type application/json. */
  body?: unknown;
  /** Sent as is (with the headers given). */
  rawBody?: string;
  headers?: Record<string, string>;
}

const TRANSIENT = new Set([429, 502, 503, 504]);

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function retryDelay(attempt: number, retryAfter: string | null): number {
  const seconds = retryAfter === null ? Number.NaN : Number(retryAfter);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, 10_000);
  return Math.min(250 * 2 ** attempt, 5_000);
}

function parse(text: string): unknown {
  if (text === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    return { nonJsonBody: text };
  }
}

/** fetch with the per-request timeout and the transient-failure retry budget. */
export async function fetchWithRetry(config: E2eConfig, url: string, init: RequestInit): Promise<Response> {
  const deadline = Date.now() + config.retryMs;
  for (let attempt = 0; ; attempt += 1) {
    let response: Response | undefined;
    let failure: unknown;
    try {
      response = await fetch(url, { ...init, signal: AbortSignal.timeout(config.requestTimeoutMs) });
    } catch (error: unknown) {
      failure = error;
    }
    const transient = response === undefined || TRANSIENT.has(response.status);
    if (!transient && response) return response;
    const wait = retryDelay(attempt, response?.headers.get('retry-after') ?? null);
    if (Date.now() + wait > deadline) {
      if (response) return response;
      throw new Error(`${init.method ?? 'GET'} ${url} failed after ${attempt + 1} attempts: ${String(failure)}`);
    }
    // Drain the body so the connection can be reused.
    await response?.arrayBuffer().catch(() => undefined);
    await sleep(wait);
  }
}

export function createClient(config: E2eConfig) {
  async function call<T = Record<string, unknown>>(
    method: string,
    path: string,
    options: CallOptions = {},
  ): Promise<Reply<T>> {
    const headers: Record<string, string> = { ...options.headers };
    const key = options.key === undefined ? config.apiKey : options.key;
    if (key !== null) headers['x-api-key'] = key;
    let body: string | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetchWithRetry(config, `${config.baseUrl}${path}`, {
      method,
      headers,
      ...(body !== undefined ? { body } : {}),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: parse(text) as T, text };
  }
  return { call };
}

/**
 * Calls `probe` until `done` accepts its value or the deadline passes (then throws with the last value), waiting a
 * little longer between attempts each time. For eventual consistency and run completion; never a bare sleep.
 */
export async function pollUntil<T>(
  what: string,
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt += 1) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() >= deadline) {
      throw new Error(
        `${what}: not reached within ${timeoutMs} ms; last value: ${JSON.stringify(value).slice(0, 2000)}`,
      );
    }
    await sleep(Math.min(500 * 1.5 ** attempt, 3_000, Math.max(deadline - Date.now(), 0)));
  }
}
