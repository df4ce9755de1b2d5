/**
 * A local stand-in for API Gateway (REST API, Lambda proxy integration): matches the route table, runs the API-key
 * authorizer the way the deployed REQUEST authorizer does (401 for a missing, unknown or revoked key, with the same
 * contract error body the stack's gateway responses render), applies per-key throttling (token bucket), and invokes
 * the real handler with an APIGatewayProxyEvent.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from 'node:http';
import type {
  APIGatewayAuthorizerResult,
  APIGatewayProxyEvent,
  APIGatewayProxyResult,
  APIGatewayRequestAuthorizerEvent,
  Context,
} from 'aws-lambda';
import { ApiError, type ErrorCode, JSON_CONTENT_TYPE, toErrorBody } from '../../shared/errors.js';
import {
  gatewaySettings,
  type HandlerName,
  matchPath,
  type PathMatch,
  type RouteDefinition,
  routes,
} from '../../shared/infra/routes.js';
import { log } from '../../shared/log.js';

type ProxyHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
type Authorizer = (event: APIGatewayRequestAuthorizerEvent) => Promise<APIGatewayAuthorizerResult>;

export interface GatewayOptions {
  handlers: Partial<Record<HandlerName, ProxyHandler>>;
  authorizer: Authorizer;
  /** Requests per second per key, and burst. */
  rateLimit: { ratePerSecond: number; burst: number };
  /** API Gateway's payload cap. */
  maxBodyBytes?: number;
  /** Seconds an authorizer result is reused for the same key, as API Gateway's authorizer cache does (0 = off). */
  authorizerCacheSeconds: number;
}

function gatewayError(
  res: ServerResponse,
  requestId: string,
  code: ErrorCode,
  message: string,
  headers: Record<string, string> = {},
  details?: Record<string, unknown>,
) {
  // The handlers' error body (status and retryability from ERROR_CODES), as the stack's gateway responses render it.
  const body = toErrorBody(new ApiError(code, message, details), requestId);
  res.writeHead(body.error.status, { 'content-type': JSON_CONTENT_TYPE, 'x-request-id': requestId, ...headers });
  res.end(JSON.stringify(body));
}

/** A token bucket per API key, as API Gateway usage plans throttle per key. */
class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  constructor(
    private readonly rate: number,
    private readonly burst: number,
  ) {}

  /** Returns 0 when allowed, else the seconds to wait. */
  take(key: string, now = Date.now()): number {
    const bucket = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.rate);
    bucket.at = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.rate));
  }
}

async function readBody(req: IncomingMessage, max: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function lambdaContext(requestId: string, timeoutMs: number): Context {
  const deadline = Date.now() + timeoutMs;
  return {
    awsRequestId: requestId,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    callbackWaitsForEmptyEventLoop: false,
    functionName: 'local',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:local:000000000000:function:local',
    memoryLimitInMB: '1024',
    logGroupName: 'local',
    logStreamName: 'local',
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

/** Every value of each query parameter, in order (API Gateway's `multiValueQueryStringParameters`). */
function multiValues(params: URLSearchParams): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const name of new Set(params.keys())) out[name] = params.getAll(name);
  return out;
}

/** The route a request names, with its path parameters, or why none can take it. */
function findRoute(
  method: string,
  path: string,
): { route: RouteDefinition; params: Record<string, string> } | Exclude<PathMatch, { params: unknown }> {
  for (const route of routes) {
    if (route.method !== method) continue;
    const match = matchPath(route.path, path);
    if (match === null) continue;
    if ('malformedParameter' in match) return match;
    return { route, params: match.params };
  }
  return null;
}

export function createGateway(options: GatewayOptions): Server {
  const limiter = new RateLimiter(options.rateLimit.ratePerSecond, options.rateLimit.burst);
  const authorizerCache = new Map<string, { context: Record<string, unknown>; expiresAt: number }>();

  async function authorize(key: string, event: APIGatewayRequestAuthorizerEvent): Promise<Record<string, unknown>> {
    const cached = authorizerCache.get(key);
    if (cached && cached.expiresAt > Date.now()) return cached.context;
    const result = await options.authorizer(event);
    const context = { ...result.context, principalId: result.principalId };
    if (options.authorizerCacheSeconds > 0) {
      authorizerCache.set(key, { context, expiresAt: Date.now() + options.authorizerCacheSeconds * 1000 });
    }
    return context;
  }
  const maxBody = options.maxBodyBytes ?? gatewaySettings.maxBodyBytes;

  const server = createServer((req, res) => {
    void (async () => {
      const requestId = randomUUID();
      try {
        const url = new URL(req.url ?? '/', 'http://localhost');
        const match = findRoute(req.method ?? 'GET', url.pathname);
        if (!match) return gatewayError(res, requestId, 'NOT_FOUND', `No route for ${req.method} ${url.pathname}`);
        if ('malformedParameter' in match) {
          const message = 'is not valid percent-encoding';
          return gatewayError(
            res,
            requestId,
            'INVALID_REQUEST',
            `Path parameter ${match.malformedParameter} ${message}`,
            {},
            {
              issues: [{ path: match.malformedParameter, message }],
            },
          );
        }
        const handler = options.handlers[match.route.handler];
        if (!handler) return gatewayError(res, requestId, 'INTERNAL_ERROR', 'Handler not loaded');

        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
        const methodArn = `arn:aws:execute-api:local:000000000000:local/local/${match.route.method}${match.route.path}`;

        let authorizer: APIGatewayProxyEvent['requestContext']['authorizer'] = null;
        if (match.route.scope !== null) {
          const key = headers['x-api-key'];
          if (!key) return gatewayError(res, requestId, 'UNAUTHORIZED', 'Missing or invalid x-api-key');
          try {
            authorizer = await authorize(key, {
              type: 'REQUEST',
              methodArn,
              resource: match.route.path,
              path: url.pathname,
              httpMethod: match.route.method,
              headers,
              multiValueHeaders: {},
              pathParameters: match.params,
              queryStringParameters: Object.fromEntries(url.searchParams),
              multiValueQueryStringParameters: {},
              stageVariables: {},
              requestContext: {} as APIGatewayRequestAuthorizerEvent['requestContext'],
            });
          } catch (error: unknown) {
            // As API Gateway: the authorizer's `Unauthorized` is a 401; any other failure (the key store unreachable)
            // is the 500 AUTHORIZER_FAILURE, never cached, which the stack renders as a retryable INTERNAL_ERROR.
            if (error instanceof Error && error.message === 'Unauthorized') {
              return gatewayError(res, requestId, 'UNAUTHORIZED', 'Missing or invalid x-api-key');
            }
            log.error('gateway: the authorizer failed', { error });
            return gatewayError(res, requestId, 'INTERNAL_ERROR', 'An internal error occurred; retry later');
          }
          const wait = limiter.take(key);
          if (wait > 0) {
            return gatewayError(res, requestId, 'RATE_LIMITED', 'Too many requests for this API key', {
              'retry-after': String(wait),
            });
          }
        }

        const body = await readBody(req, maxBody);
        if (body === null) {
          return gatewayError(
            res,
            requestId,
            'INVALID_REQUEST',
            'Request body exceeds 10 MB, the API limit',
            // The rest of the body is never read: the connection cannot carry another request.
            { connection: 'close' },
            { limitBytes: maxBody, issues: [{ path: '(root)', message: 'body too large' }] },
          );
        }

        const event: APIGatewayProxyEvent = {
          resource: match.route.path,
          path: url.pathname,
          httpMethod: match.route.method,
          headers,
          multiValueHeaders: {},
          // As API Gateway: the last value of a repeated parameter, and every value in the multi-value map.
          queryStringParameters: url.searchParams.size > 0 ? Object.fromEntries(url.searchParams) : null,
          multiValueQueryStringParameters: url.searchParams.size > 0 ? multiValues(url.searchParams) : null,
          pathParameters: Object.keys(match.params).length > 0 ? match.params : null,
          stageVariables: null,
          body: body.length > 0 ? body.toString('utf8') : null,
          isBase64Encoded: false,
          requestContext: {
            requestId,
            authorizer,
            resourcePath: match.route.path,
            httpMethod: match.route.method,
            path: url.pathname,
            stage: 'local',
          } as APIGatewayProxyEvent['requestContext'],
        };
        const result = await handler(event, lambdaContext(requestId, 29_000));
        res.writeHead(result.statusCode, result.headers as Record<string, string>);
        res.end(result.body);
      } catch (error: unknown) {
        log.error('gateway: unhandled error', { error });
        if (!res.headersSent) gatewayError(res, requestId, 'INTERNAL_ERROR', 'An internal error occurred; retry later');
      }
    })();
  });
  // A request Node cannot parse (headers over its 16 KB limit, a malformed request line) never reaches the handler
  // above; Node's own answer is a bare status without x-request-id. Answered in the contract's shape instead, written
  // to the socket (there is no response object). A request that timed out has no one left to answer.
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (error.code === 'ECONNRESET' || error.code === 'ERR_HTTP_REQUEST_TIMEOUT' || !socket.writable) {
      socket.destroy();
      return;
    }
    const requestId = randomUUID();
    const message =
      error.code === 'HPE_HEADER_OVERFLOW' ? 'Request headers are too large' : 'The HTTP request cannot be parsed';
    const body = toErrorBody(new ApiError('INVALID_REQUEST', message), requestId);
    const json = JSON.stringify(body);
    const status = body.error.status;
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: ${JSON_CONTENT_TYPE}\r\nx-request-id: ${requestId}\r\n` +
        `content-length: ${Buffer.byteLength(json)}\r\nconnection: close\r\n\r\n${json}`,
    );
  });
  // Idle keep-alive sockets are closed by the client first (undici and most HTTP clients after 4–5 s), never by the
  // server: with Node's default of 5 s, a server whose event loop was busy (OCR on a loaded machine) closed a socket
  // just as the client reused it, and a plain GET failed with ECONNRESET. 65 s is what load balancers use.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  return server;
}
