/**
 * How an Anthropic attempt fails: the attempt's running usage (every failure carries what was already billed), the
 * server's wait (`retry-after-ms`, `Retry-After`, or the reset of an exhausted rate limit), and SDK errors mapped to
 * the plan's failure kinds. Messages are redacted of the key (../common.ts `redact`).
 */
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from '@anthropic-ai/sdk';
import type { FailureKind, ProviderUsage } from '../../task.js';
import { ProviderFailure } from '../../task.js';
import { redact } from '../common.js';
import { retryAfterMs as retryAfterHeaders } from '../retry-after.js';
import type { InvokeOptions } from '../types.js';
import { ceilMicros, type ModelPrices, type RequestTokens, requestCostMicros } from './profile.js';

export const LABEL = 'anthropic provider';

/** One attempt's requests so far: their usage, and the failures that carry it. */
export class Attempt {
  readonly requests: RequestTokens[] = [];

  constructor(
    readonly prices: ModelPrices,
    readonly billableUnits: number,
    readonly apiKey: string | undefined,
    private readonly options: InvokeOptions,
  ) {}

  /** Usage of the requests answered so far (undefined when none was). */
  usage(): ProviderUsage | undefined {
    if (this.requests.length === 0) return undefined;
    let cost = 0;
    let inputTokens = 0;
    let outputTokens = 0;
    for (const r of this.requests) {
      cost += requestCostMicros(this.prices, r);
      inputTokens +=
        r.inputTokens +
        (r.cacheWrite5mTokens ?? 0) +
        (r.cacheWrite1hTokens ?? 0) +
        (r.cacheWriteTokens ?? 0) +
        (r.cacheReadTokens ?? 0);
      outputTokens += r.outputTokens;
    }
    return { billableUnits: this.billableUnits, costMicros: ceilMicros(cost), inputTokens, outputTokens };
  }

  /** A failure of `kind`, scrubbed of the key, carrying the usage consumed so far. */
  fail(kind: FailureKind, message: string, retryAfterMs?: number): ProviderFailure {
    const usage = this.usage();
    return new ProviderFailure(kind, `${LABEL}: ${redact(message, [this.apiKey])}`, {
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      ...(usage === undefined ? {} : { usage }),
    });
  }

  /** Milliseconds left before the deadline; throws the timeout failure when none are. */
  remainingMs(stage: string): number {
    const left = this.options.deadlineMs - Date.now();
    if (this.options.signal.aborted || left <= 0) throw this.fail('timeout', `deadline passed before ${stage}`);
    return left;
  }
}

const RATE_LIMIT_RESETS = ['requests', 'tokens', 'input-tokens', 'output-tokens'] as const;

/**
 * How long the server asks us to wait: `retry-after-ms`, else `Retry-After` (seconds or an HTTP date), else the reset
 * time (RFC 3339) of whichever Anthropic rate limit is exhausted (`anthropic-ratelimit-*-remaining: 0`).
 */
export function retryAfterMs(headers: Headers | undefined, now: number = Date.now()): number | undefined {
  return retryAfterHeaders(headers, now, resetMs);
}

function resetMs(headers: Headers, now: number): number | undefined {
  let latest: number | undefined;
  for (const limit of RATE_LIMIT_RESETS) {
    if (headers.get(`anthropic-ratelimit-${limit}-remaining`)?.trim() !== '0') continue;
    const reset = Date.parse(headers.get(`anthropic-ratelimit-${limit}-reset`) ?? '');
    if (!Number.isNaN(reset)) latest = Math.max(latest ?? 0, reset - now);
  }
  return latest === undefined ? undefined : Math.max(0, latest);
}

/** The error's own words, short: `<status> <type>: <message>`. */
function describeApiError(error: APIError): string {
  const detail = (error.apiMessage ?? '').replace(/\s+/g, ' ').slice(0, 300);
  const type = error.type ?? 'error';
  return `${error.status ?? 'no status'} ${type}${detail ? `: ${detail}` : ''}`;
}

/** Maps anything a request threw to the plan's failure kinds. */
export function toFailure(error: unknown, attempt: Attempt, signal: AbortSignal): ProviderFailure {
  if (error instanceof ProviderFailure) return error;
  if (error instanceof APIUserAbortError || signal.aborted) return attempt.fail('timeout', 'the attempt was aborted');
  if (error instanceof APIConnectionTimeoutError) return attempt.fail('timeout', 'the request timed out');
  if (error instanceof APIConnectionError) return attempt.fail('server', `connection failed: ${error.message}`);
  if (error instanceof APIError) {
    const status = error.status ?? 0;
    const text = describeApiError(error);
    if (status === 429) return attempt.fail('rate_limited', text, retryAfterMs(error.headers));
    // 402 billing_error: the account cannot pay, which no retry with this credential fixes.
    if (status === 401 || status === 402 || status === 403) return attempt.fail('auth', text);
    // 408: the server gave up waiting for the request; the same as our own deadline passing.
    if (status === 408) return attempt.fail('timeout', text);
    if (status >= 500) return attempt.fail('server', text);
    return attempt.fail('client', text);
  }
  // A 200 whose body is not JSON makes the SDK's JSON parse throw: not what the API promises.
  // Matched by name: the error may come from another realm than this module's SyntaxError (a VM sandbox).
  if (typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'SyntaxError') {
    return attempt.fail(
      'invalid_output',
      `the response body is not JSON: ${String((error as { message?: unknown }).message)}`,
    );
  }
  return attempt.fail('server', `unexpected error: ${error instanceof Error ? error.message : String(error)}`);
}
