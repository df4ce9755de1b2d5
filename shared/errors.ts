/**
 * Every error the API can answer with, as named classes carrying the contract's code (contract-v1.md, "Errors").
 * Handlers and core code throw these; `toErrorBody` below is the one place that turns them into response bodies
 * (the handlers' middleware in http.ts, and the local gateway's own errors).
 */

/** Content type of every JSON response: the handlers' and API Gateway's own error responses (contract: General). */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** The contract's error codes with their HTTP status and retryability. */
export const ERROR_CODES = {
  INVALID_REQUEST: { status: 400, retryable: false },
  UNKNOWN_SCHEMA: { status: 400, retryable: false },
  UNAUTHORIZED: { status: 401, retryable: false },
  FORBIDDEN: { status: 403, retryable: false },
  NOT_FOUND: { status: 404, retryable: false },
  UPLOAD_NOT_FOUND: { status: 404, retryable: false },
  UPLOAD_INCOMPLETE: { status: 409, retryable: true },
  RUN_NOT_COMPLETED: { status: 409, retryable: true },
  IDEMPOTENCY_KEY_REUSED: { status: 409, retryable: false },
  FILE_TOO_LARGE: { status: 413, retryable: false },
  TOO_MANY_PAGES: { status: 413, retryable: false },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, retryable: false },
  UNSUPPORTED_FILE_TYPE: { status: 415, retryable: false },
  UPLOAD_SIZE_MISMATCH: { status: 422, retryable: false },
  CORRUPT_FILE: { status: 422, retryable: false },
  COST_CONFIRMATION_REQUIRED: { status: 402, retryable: false },
  BUDGET_EXCEEDED: { status: 402, retryable: false },
  INSUFFICIENT_CREDIT: { status: 402, retryable: false },
  RATE_LIMITED: { status: 429, retryable: true },
  INTERNAL_ERROR: { status: 500, retryable: true },
  PROVIDER_ERROR: { status: 502, retryable: true },
} as const satisfies Record<string, { status: number; retryable: boolean }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** Base class: an error the client is meant to see, with the contract's code and optional details. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retryable: boolean;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.retryable = ERROR_CODES[code].retryable;
    this.details = details;
  }
}

/** One validation problem, as listed in `details.issues[]`. */
export interface ValidationIssue {
  path: string;
  message: string;
}

export class InvalidRequestError extends ApiError {
  constructor(message: string, issues: ValidationIssue[], extra?: Record<string, unknown>) {
    super('INVALID_REQUEST', message, { issues, ...extra });
    this.name = 'InvalidRequestError';
  }
}

export class UnknownSchemaError extends ApiError {
  constructor(schemaId: string, known: readonly string[]) {
    super('UNKNOWN_SCHEMA', `schemaId "${schemaId}" is not in the registry`, { schemaId, knownSchemaIds: known });
    this.name = 'UnknownSchemaError';
  }
}

export class UnauthorizedError extends ApiError {
  constructor(message = 'Missing or invalid x-api-key') {
    super('UNAUTHORIZED', message);
    this.name = 'UnauthorizedError';
  }
}

export class ForbiddenError extends ApiError {
  constructor(requiredScope: string) {
    super('FORBIDDEN', `This API key lacks the scope ${requiredScope}`, { requiredScope });
    this.name = 'ForbiddenError';
  }
}

export class NotFoundError extends ApiError {
  constructor(what = 'run', id?: string) {
    super('NOT_FOUND', `No ${what} found${id ? ` with id ${id}` : ''}`, id ? { id } : undefined);
    this.name = 'NotFoundError';
  }
}

/** The run exists but its upload is gone (uploads are kept a limited time; the run record stays much longer). */
export class RunFileExpiredError extends ApiError {
  constructor(jobId: string, retentionHours: number) {
    super('NOT_FOUND', `The file of run ${jobId} is no longer stored (uploads are kept ${retentionHours} h)`, {
      id: jobId,
      reason: 'file_expired',
    });
    this.name = 'RunFileExpiredError';
  }
}

/** The run exists and its file is kept, but the worker stored no image of that page (only pages with a boxed field). */
export class PagePreviewNotFoundError extends ApiError {
  constructor(jobId: string, page: number) {
    super('NOT_FOUND', `Run ${jobId} has no image of page ${page}`, { id: jobId, page, reason: 'no_page_preview' });
    this.name = 'PagePreviewNotFoundError';
  }
}

export class UploadNotFoundError extends ApiError {
  constructor(uploadId: string) {
    super('UPLOAD_NOT_FOUND', `No upload ${uploadId} (unknown or expired)`, { uploadId });
    this.name = 'UploadNotFoundError';
  }
}

export class UploadIncompleteError extends ApiError {
  constructor(uploadId: string) {
    super('UPLOAD_INCOMPLETE', `The bytes of upload ${uploadId} have not been PUT yet`, { uploadId });
    this.name = 'UploadIncompleteError';
  }
}

export class RunNotCompletedError extends ApiError {
  constructor(jobId: string, status: string) {
    super('RUN_NOT_COMPLETED', `Run ${jobId} is ${status}; only completed runs can be verified`, { jobId, status });
    this.name = 'RunNotCompletedError';
  }
}

export class IdempotencyKeyReusedError extends ApiError {
  constructor() {
    super('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used with a different request body');
    this.name = 'IdempotencyKeyReusedError';
  }
}

export class FileTooLargeError extends ApiError {
  constructor(sizeBytes: number, limitBytes: number) {
    super('FILE_TOO_LARGE', `File is ${sizeBytes} bytes; the limit is ${limitBytes}`, { sizeBytes, limitBytes });
    this.name = 'FileTooLargeError';
  }
}

export class TooManyPagesError extends ApiError {
  constructor(pages: number, limitPages: number) {
    super('TOO_MANY_PAGES', `PDF has ${pages} pages; the limit is ${limitPages}`, { pages, limitPages });
    this.name = 'TooManyPagesError';
  }
}

export class UnsupportedMediaTypeError extends ApiError {
  constructor(received: string | undefined) {
    super('UNSUPPORTED_MEDIA_TYPE', 'Request content-type must be application/json', { received: received ?? null });
    this.name = 'UnsupportedMediaTypeError';
  }
}

export class UnsupportedFileTypeError extends ApiError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('UNSUPPORTED_FILE_TYPE', message, { supported: ['.jpg', '.jpeg', '.png', '.heic', '.pdf'], ...details });
    this.name = 'UnsupportedFileTypeError';
  }
}

export class UploadSizeMismatchError extends ApiError {
  constructor(declaredBytes: number, actualBytes: number) {
    super('UPLOAD_SIZE_MISMATCH', `Uploaded ${actualBytes} bytes but presigned for ${declaredBytes}`, {
      declaredBytes,
      actualBytes,
    });
    this.name = 'UploadSizeMismatchError';
  }
}

export class CorruptFileError extends ApiError {
  constructor(reason: string, message: string, details?: Record<string, unknown>) {
    super('CORRUPT_FILE', message, { reason, ...details });
    this.name = 'CorruptFileError';
  }
}

export class CostConfirmationRequiredError extends ApiError {
  constructor(estimatedCostUsd: number, thresholdUsd: number) {
    super(
      'COST_CONFIRMATION_REQUIRED',
      `Estimated cost ${estimatedCostUsd} USD exceeds the confirmation threshold ${thresholdUsd} USD; send confirmCost: true or maxCostUsd`,
      { estimatedCostUsd, thresholdUsd },
    );
    this.name = 'CostConfirmationRequiredError';
  }
}

export class BudgetExceededError extends ApiError {
  constructor(estimatedCostUsd: number, maxCostUsd: number) {
    super('BUDGET_EXCEEDED', `Estimated cost ${estimatedCostUsd} USD exceeds maxCostUsd ${maxCostUsd} USD`, {
      estimatedCostUsd,
      maxCostUsd,
    });
    this.name = 'BudgetExceededError';
  }
}

export class InsufficientCreditError extends ApiError {
  constructor(requiredUsd: number, availableUsd: number) {
    super('INSUFFICIENT_CREDIT', `The hold of ${requiredUsd} USD exceeds the available credit ${availableUsd} USD`, {
      requiredUsd,
      availableUsd,
    });
    this.name = 'InsufficientCreditError';
  }
}

/** Anything unexpected. The message is fixed so internals never leak to clients. */
export class InternalError extends ApiError {
  constructor() {
    super('INTERNAL_ERROR', 'An internal error occurred; retry later');
    this.name = 'InternalError';
  }
}

/**
 * A failed run's `error` (contract: Errors, "and `error` on a failed run"): the code's status and retryability come
 * from ERROR_CODES, as for a rejected request.
 */
export function runError(code: ErrorCode, message: string, details?: Record<string, unknown>) {
  const { status, retryable } = ERROR_CODES[code];
  return { code, message, status, retryable, ...(details ? { details } : {}) };
}

/** The contract's error body for any thrown value. Unknown errors become INTERNAL_ERROR without internals. */
export function toErrorBody(error: unknown, requestId: string) {
  const apiError = error instanceof ApiError ? error : new InternalError();
  return {
    error: {
      code: apiError.code,
      message: apiError.message,
      status: apiError.status,
      retryable: apiError.retryable,
      ...(apiError.details ? { details: apiError.details } : {}),
      requestId,
    },
  };
}
