/**
 * How an OpenAI call fails: an SDK error, a failure inside a 200 response, or a model that rejects logprobs, each as
 * the ProviderFailure the plan acts on. The server's text is redacted before it is quoted (../common.ts `redact`).
 */
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { Deadline } from '../../media/index.js';
import { type FailureKind, ProviderFailure } from '../../task.js';
import { redact } from '../common.js';
import { retryAfterMs as retryAfterHeaders } from '../retry-after.js';

/** The longest piece of a server's error message (or a refusal) quoted in a failure message. */
export const MESSAGE_MAX_CHARS = 300;

/** Milliseconds to wait from `retry-after-ms`, `retry-after` (seconds or HTTP date) or OpenAI's reset headers. */
export function retryAfterMs(headers: Headers | undefined, now: number = Date.now()): number | undefined {
  return retryAfterHeaders(headers, now, resetMs);
}

/** x-ratelimit-reset-* carry durations such as "1s", "6m0s", "120ms": the longer of the two limits decides. */
function resetMs(headers: Headers): number | undefined {
  const resets = ['x-ratelimit-reset-requests', 'x-ratelimit-reset-tokens']
    .map((name) => parseDuration(headers.get(name)))
    .filter((v): v is number => v !== undefined);
  return resets.length > 0 ? Math.max(...resets) : undefined;
}

function parseDuration(value: string | null): number | undefined {
  if (!value) return undefined;
  const parts = [...value.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  if (parts.length === 0) return undefined;
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  return Math.ceil(parts.reduce((sum, [, n, u]) => sum + Number(n) * (unit[u ?? 's'] ?? 1000), 0));
}

/** The failure an SDK error stands for. */
export function failureFromError(error: unknown, deadline: Deadline, apiKey: string): ProviderFailure {
  if (error instanceof ProviderFailure) return error;
  if (error instanceof APIUserAbortError || error instanceof APIConnectionTimeoutError || deadline.expired()) {
    return new ProviderFailure('timeout', 'openai: the attempt deadline passed before OpenAI answered');
  }
  if (error instanceof APIConnectionError) {
    return new ProviderFailure('server', 'openai: the connection to OpenAI failed');
  }
  if (error instanceof APIError) {
    const status = error.status;
    const body = error.error as { message?: unknown } | undefined;
    const detail = redact(
      typeof body?.message === 'string' ? body.message : error.message,
      [apiKey],
      MESSAGE_MAX_CHARS,
    );
    const message = `openai: HTTP ${status ?? '?'}${error.code ? ` (${error.code})` : ''}: ${detail}`;
    let kind: FailureKind;
    if (status === 429) {
      // "insufficient_quota" is a billing state, not a burst: waiting does not help, the account must be fixed.
      if (error.code === 'insufficient_quota') return new ProviderFailure('auth', message);
      return new ProviderFailure('rate_limited', message, { retryAfterMs: retryAfterMs(error.headers) });
    }
    if (status === 401 || status === 403) kind = 'auth';
    // 408: the server gave up waiting for the request; the same as our own deadline passing (as Anthropic and Gemini).
    else if (status === 408) kind = 'timeout';
    else if (status !== undefined && status >= 400 && status < 500) kind = 'client';
    else kind = 'server';
    return new ProviderFailure(kind, message);
  }
  // The SDK throws a SyntaxError/TypeError when a 2xx body is not the JSON object the API promises.
  return new ProviderFailure('invalid_output', 'openai: the response body is not a Responses API object');
}

/** A 400 that rejects the logprobs request (models with reasoning do not return logprobs). */
export function rejectsLogprobs(error: unknown): boolean {
  return (
    error instanceof APIError &&
    error.status === 400 &&
    (error.param === 'include' || error.param === 'top_logprobs' || /logprob/i.test(error.message))
  );
}

/** A failure reported inside a 200 response (`status: "failed"`), by OpenAI's error code. */
export function failedResponseKind(code: string | null | undefined): FailureKind {
  if (!code) return 'server';
  if (/rate_limit/.test(code)) return 'rate_limited';
  if (/^(invalid_|image_|empty_|unsupported_|file_)/.test(code)) return 'client';
  return 'server';
}
