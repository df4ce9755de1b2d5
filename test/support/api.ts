/**
 * Calling API handlers the way API Gateway does, and checking answers against contract-v1.md. The error table below is
 * copied from the contract (not imported from shared/errors.ts) so the tests check the code against the document.
 */
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { type ApiEventInput, apiEvent, lambdaContext } from './events.js';

/** contract-v1.md, "Errors": code → HTTP status and retryability. */
export const CONTRACT_ERRORS: Record<string, { status: number; retryable: boolean }> = {
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
};

export type ApiHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

export interface ApiAnswer {
  status: number;
  headers: Record<string, string>;
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are checked field by field in the tests
  body: any;
  /** The requestId the event carried (what x-request-id must echo). */
  requestId: string;
}

/** Invokes a handler with an API Gateway event built from `input` and parses the JSON answer. */
export async function call(handler: ApiHandler, input: ApiEventInput = {}): Promise<ApiAnswer> {
  return callEvent(handler, apiEvent(input));
}

/** Invokes a handler with a ready-made event (for events apiEvent cannot express). */
export async function callEvent(handler: ApiHandler, event: APIGatewayProxyEvent): Promise<ApiAnswer> {
  const result = await handler(event, lambdaContext());
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(result.headers ?? {})) headers[k.toLowerCase()] = String(v);
  return {
    status: result.statusCode,
    headers,
    body: result.body === '' ? undefined : JSON.parse(result.body),
    requestId: event.requestContext.requestId,
  };
}

/** The headers every response carries: JSON content type and the request id. */
export function expectContractHeaders(answer: ApiAnswer): void {
  expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(answer.headers['x-request-id']).toBe(answer.requestId);
}

/**
 * Asserts the contract's error answer: HTTP status = error.status = the contract's status for `code`, the contract's
 * retryability, a message, the request id, and the standard headers. Returns the error object for further checks.
 */
// biome-ignore lint/suspicious/noExplicitAny: see ApiAnswer.body
export function expectError(answer: ApiAnswer, code: string): any {
  const expected = CONTRACT_ERRORS[code];
  if (!expected) throw new Error(`${code} is not a contract error code`);
  expect({ status: answer.status, code: answer.body?.error?.code }).toEqual({ status: expected.status, code });
  const error = answer.body.error;
  expect(error.status).toBe(expected.status);
  expect(error.retryable).toBe(expected.retryable);
  expect(typeof error.message).toBe('string');
  expect(error.message.length).toBeGreaterThan(0);
  expect(error.requestId).toBe(answer.requestId);
  expect(Object.keys(answer.body)).toEqual(['error']);
  expectContractHeaders(answer);
  return error;
}
