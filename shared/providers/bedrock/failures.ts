import type { Deadline } from '../../media/index.js';
import type { ProviderUsage } from '../../task.js';
import { ProviderFailure } from '../../task.js';
import { redactAwsCredentials } from '../aws-credentials.js';
import { truncate } from '../common.js';
import { parseRetryAfterHeader } from '../retry-after.js';

/** Longest provider message kept in a failure (after redaction). */
export const MAX_MESSAGE_CHARS = 300;

export interface SdkErrorShape {
  name?: string;
  message?: string;
  code?: string;
  $metadata?: { httpStatusCode?: number };
  $response?: { statusCode?: number; headers?: Record<string, string | undefined> };
}

export function asSdkError(error: unknown): SdkErrorShape {
  return error !== null && typeof error === 'object' ? (error as SdkErrorShape) : {};
}

export const AUTH_ERRORS = new Set([
  'AccessDeniedException',
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'IncompleteSignature',
  'ExpiredTokenException',
  'InvalidClientTokenId',
  'MissingAuthenticationTokenException',
  'SignatureDoesNotMatch',
  'CredentialsProviderError',
]);

export const CLIENT_ERRORS = new Set(['ValidationException', 'ResourceNotFoundException', 'ConflictException']);

export const SERVER_ERRORS = new Set([
  'InternalServerException',
  'ServiceUnavailableException',
  'ModelTimeoutException',
  'ModelNotReadyException',
  'ModelErrorException',
  'ModelStreamErrorException',
]);

// A quota (tokens or requests per minute/day) is a rate limit too: this provider cannot serve the attempt now.
export const RATE_ERRORS = new Set([
  'ThrottlingException',
  'ServiceQuotaExceededException',
  'TooManyRequestsException',
]);

export const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
]);

/**
 * The failure an SDK or network error stands for: throttling and quotas → rate_limited (with Retry-After), credential
 * and permission errors → auth, other 4xx → client, model/service errors and 5xx → server, abort → timeout, an
 * unreadable 2xx body → invalid_output. The SDK error is not attached as `cause`: it carries the raw response, and
 * only the redacted message may leave the adapter.
 */
export function failureFor(
  error: unknown,
  deadline: Pick<Deadline, 'expired'>,
  env: NodeJS.ProcessEnv,
): ProviderFailure {
  if (error instanceof ProviderFailure) return error;
  const e = asSdkError(error);
  const name = e.name ?? 'Error';
  // The SDK's HTTP handler renames a reset or broken connection (ECONNRESET, EPIPE) to TimeoutError, keeping its
  // code: that is a failed connection, not a deadline.
  const brokenConnection = e.code !== undefined && e.code !== 'ETIMEDOUT' && NETWORK_CODES.has(e.code);
  if (name === 'AbortError' || (name === 'TimeoutError' && !brokenConnection) || deadline.expired()) {
    return new ProviderFailure('timeout', 'bedrock: the attempt deadline passed before Bedrock answered');
  }
  const status = e.$metadata?.httpStatusCode ?? e.$response?.statusCode;
  const detail = truncate(redactAwsCredentials(e.message ?? String(error), env), MAX_MESSAGE_CHARS);
  const message = `bedrock: ${name}${status === undefined ? '' : ` (HTTP ${status})`}: ${detail}`;
  const rateLimited = (): ProviderFailure => {
    const retryAfterMs = parseRetryAfterHeader(e.$response?.headers?.['retry-after']);
    return new ProviderFailure('rate_limited', message, retryAfterMs === undefined ? undefined : { retryAfterMs });
  };

  if (RATE_ERRORS.has(name)) return rateLimited();
  if (AUTH_ERRORS.has(name)) return new ProviderFailure('auth', message);
  if (CLIENT_ERRORS.has(name)) return new ProviderFailure('client', message);
  if (SERVER_ERRORS.has(name)) return new ProviderFailure('server', message);
  // A 2xx whose body the SDK could not parse: not what the API promises.
  if (status !== undefined && status >= 200 && status < 300) {
    return new ProviderFailure('invalid_output', `bedrock: unreadable response body (HTTP ${status})`);
  }
  if (status === 429) return rateLimited();
  if (status === 401 || status === 403) return new ProviderFailure('auth', message);
  if (status !== undefined && status >= 400 && status < 500) return new ProviderFailure('client', message);
  if (status !== undefined && status >= 500) return new ProviderFailure('server', message);
  if (/region is missing/i.test(detail)) {
    return new ProviderFailure('auth', 'bedrock: no AWS Region configured (set AWS_REGION)');
  }
  if (e.code && NETWORK_CODES.has(e.code)) {
    return new ProviderFailure('server', `bedrock: connection failed (${e.code})`);
  }
  return new ProviderFailure('server', message);
}

/** The same failure carrying the usage consumed so far (a failure after a billed request still cost its tokens). */
export function withUsage(failure: ProviderFailure, usage: ProviderUsage | undefined): ProviderFailure {
  if (usage === undefined || failure.usage !== undefined) return failure;
  return new ProviderFailure(failure.kind, failure.message, {
    usage,
    cause: failure,
    ...(failure.retryAfterMs === undefined ? {} : { retryAfterMs: failure.retryAfterMs }),
  });
}

export function clientFailure(message: string, cause?: unknown): ProviderFailure {
  return new ProviderFailure('client', `bedrock: ${message}`, cause === undefined ? undefined : { cause });
}
