/** Typed factories for Lambda events, so unit tests drive handlers exactly as API Gateway and SQS would. */
import type { APIGatewayProxyEvent, Context, SQSEvent } from 'aws-lambda';
import type { Scope } from '../../shared/infra/routes.js';

export interface ApiEventInput {
  method?: 'GET' | 'POST';
  path?: string;
  body?: unknown;
  /** Raw body text (wins over `body`). */
  rawBody?: string;
  headers?: Record<string, string>;
  /** Query parameters; an array is a parameter repeated in the URL (`?a=1&a=2`). */
  query?: Record<string, string | string[]>;
  pathParameters?: Record<string, string>;
  /** Authorizer context; null for an unauthenticated call. */
  auth?: { tenantId: string; keyId?: string; keyLabel?: string; scopes?: Scope[] } | null;
}

let counter = 0;

export function apiEvent(input: ApiEventInput = {}): APIGatewayProxyEvent {
  counter += 1;
  const auth =
    input.auth === null
      ? null
      : {
          tenantId: input.auth?.tenantId ?? 'tenant-a',
          keyId: input.auth?.keyId ?? 'key_a',
          ...(input.auth?.keyLabel !== undefined ? { keyLabel: input.auth.keyLabel } : {}),
          scopes: (input.auth?.scopes ?? ['runs:write', 'runs:read', 'runs:verify']).join(','),
        };
  const body = input.rawBody ?? (input.body === undefined ? null : JSON.stringify(input.body));
  return {
    resource: input.path ?? '/',
    path: input.path ?? '/',
    httpMethod: input.method ?? 'GET',
    headers: { ...(body !== null ? { 'Content-Type': 'application/json' } : {}), ...input.headers },
    multiValueHeaders: {},
    // As API Gateway fills them: the last value of each parameter, and every value in the multi-value map.
    queryStringParameters: input.query
      ? Object.fromEntries(Object.entries(input.query).map(([k, v]) => [k, Array.isArray(v) ? (v.at(-1) ?? '') : v]))
      : null,
    multiValueQueryStringParameters: input.query
      ? Object.fromEntries(Object.entries(input.query).map(([k, v]) => [k, Array.isArray(v) ? v : [v]]))
      : null,
    pathParameters: input.pathParameters ?? null,
    stageVariables: null,
    body,
    isBase64Encoded: false,
    requestContext: {
      requestId: `req-${counter}`,
      authorizer: auth,
    } as unknown as APIGatewayProxyEvent['requestContext'],
  };
}

export function lambdaContext(remainingMs = 60_000): Context {
  return {
    awsRequestId: `ctx-${counter}`,
    getRemainingTimeInMillis: () => remainingMs,
    callbackWaitsForEmptyEventLoop: false,
    functionName: 'test',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:test',
    memoryLimitInMB: '1024',
    logGroupName: 'test',
    logStreamName: 'test',
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

export function sqsEvent(bodies: { body: string; receiveCount?: number; messageId?: string }[]): SQSEvent {
  return {
    Records: bodies.map((b, i) => ({
      messageId: b.messageId ?? `msg-${i}`,
      receiptHandle: `rh-${i}`,
      body: b.body,
      attributes: {
        ApproximateReceiveCount: String(b.receiveCount ?? 1),
        SentTimestamp: '0',
        SenderId: 'test',
        ApproximateFirstReceiveTimestamp: '0',
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:test-runs',
      awsRegion: 'us-east-1',
    })),
  };
}

/** Parses a handler's JSON response body. */
export function jsonBody<T = Record<string, unknown>>(result: { body: string }): T {
  return JSON.parse(result.body) as T;
}
