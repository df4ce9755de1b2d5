/**
 * How a Textract call fails: SDK errors by exception name and HTTP status as the ProviderFailure the plan acts on
 * (throttling with its Retry-After), AWS text redacted, and the usage already billed carried along.
 */
import {
  AccessDeniedException,
  BadDocumentException,
  DocumentTooLargeException,
  InternalServerError,
  InvalidParameterException,
  InvalidS3ObjectException,
  LimitExceededException,
  ProvisionedThroughputExceededException,
  TextractServiceException,
  ThrottlingException,
  UnsupportedDocumentException,
} from '@aws-sdk/client-textract';
import type { Deadline } from '../../media/index.js';
import { ProviderFailure, type ProviderUsage } from '../../task.js';
import { redactAwsCredentials } from '../aws-credentials.js';
import { parseRetryAfterHeader } from '../retry-after.js';

/** AWS's common (unmodelled) authentication error codes: the SDK has no class for them, only the code. */
export const AUTH_ERROR_CODES = new Set([
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'IncompleteSignature',
  'InvalidClientTokenId',
  'MissingAuthenticationToken',
  'ExpiredTokenException',
  'ExpiredToken',
  'SignatureDoesNotMatch',
  // Thrown by the SDK's credential chain when no credentials are found at all.
  'CredentialsProviderError',
]);

export interface ErrorWithResponse {
  $metadata?: { httpStatusCode?: number };
  $response?: { headers?: Record<string, string | undefined> };
}

export function failureKindOf(error: unknown, status: number | undefined): ProviderFailure['kind'] {
  if (
    error instanceof ProvisionedThroughputExceededException ||
    error instanceof ThrottlingException ||
    error instanceof LimitExceededException
  )
    return 'rate_limited';
  if (error instanceof AccessDeniedException) return 'auth';
  if (
    error instanceof InvalidParameterException ||
    error instanceof UnsupportedDocumentException ||
    error instanceof BadDocumentException ||
    error instanceof DocumentTooLargeException ||
    error instanceof InvalidS3ObjectException
  )
    return 'client';
  if (error instanceof InternalServerError) return 'server';
  if (error instanceof Error && AUTH_ERROR_CODES.has(error.name)) return 'auth';
  if (status === 401 || status === 403) return 'auth';
  if (status === 429) return 'rate_limited';
  if (status !== undefined && status >= 400 && status < 500) return 'client';
  return 'server';
}

/**
 * The one place SDK errors become ProviderFailures. `billed` is what the call costs if Textract did the work: it is
 * carried by a timeout (the work may well have finished) and by an answer we could not read; with `jobStarted` (an
 * async job is running and will be billed whatever happens to our polling) it is carried by every failure.
 */
export function toFailure(
  error: unknown,
  operation: string,
  deadline: Deadline,
  billed?: ProviderUsage,
  jobStarted = false,
): ProviderFailure {
  const carried = (kind: ProviderFailure['kind']) =>
    billed && (jobStarted || kind === 'timeout' || kind === 'invalid_output') ? { usage: billed } : {};
  if (error instanceof ProviderFailure) {
    const extra = carried(error.kind);
    if (error.usage !== undefined || !('usage' in extra)) return error;
    return new ProviderFailure(error.kind, error.message, {
      ...extra,
      cause: error,
      ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}),
    });
  }
  const detail = error instanceof Error ? `${error.name}: ${redactAwsCredentials(error.message)}` : 'unknown error';
  if (deadline.expired()) {
    return new ProviderFailure('timeout', `textract: deadline passed during ${operation}`, {
      ...carried('timeout'),
      cause: error,
    });
  }
  const meta = (error ?? {}) as ErrorWithResponse;
  const status = meta.$metadata?.httpStatusCode;
  // A 2xx whose body the SDK could not parse: Textract answered, but not with what the API promises.
  if (!(error instanceof TextractServiceException) && status !== undefined && status >= 200 && status < 300) {
    return new ProviderFailure('invalid_output', `textract: ${operation} returned an unreadable body (${detail})`, {
      ...carried('invalid_output'),
      cause: error,
    });
  }
  const kind = failureKindOf(error, status);
  const retryAfterMs =
    kind === 'rate_limited' ? parseRetryAfterHeader(meta.$response?.headers?.['retry-after']) : undefined;
  return new ProviderFailure(kind, `textract: ${operation} failed (${detail})`, {
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    ...carried(kind),
    cause: error,
  });
}

/**
 * Textract returns one expense or identity document per page it read, so an empty list means nothing was read (a
 * mock such as LocalStack's answers that way): invalid output, and the plan moves on, rather than an all-null result.
 */
export function nonEmpty<T>(list: T[] | undefined): list is T[] {
  return Array.isArray(list) && list.length > 0;
}

export function invalidOutput(message: string, usage?: ProviderUsage): ProviderFailure {
  return new ProviderFailure('invalid_output', `textract: ${message}`, usage ? { usage } : undefined);
}
