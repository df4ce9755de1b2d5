/**
 * HTTP plumbing shared by every API handler: middy middlewares that (1) turn any thrown error into the contract's
 * error body — the one mapping point, (2) read the authorizer's context and enforce the route's scope from the route
 * table, (3) check content-type and size, parse JSON and validate body and query with zod. Handlers receive a typed
 * `ApiRequest` and return an `ApiResponse`; they never touch raw events or error formatting.
 */
import middy, { type MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { config } from './config.js';
import {
  ApiError,
  ForbiddenError,
  InvalidRequestError,
  JSON_CONTENT_TYPE,
  toErrorBody,
  UnauthorizedError,
  UnsupportedMediaTypeError,
  type ValidationIssue,
} from './errors.js';
import { type HandlerName, type RouteDefinition, requiredScopes, routes, type Scope } from './infra/routes.js';
import { BODY_MAX_DEPTH, jsonProblem } from './json-limits.js';
import { log } from './log.js';
import * as z from './zod.js';

/** Who is calling: set by the API-key authorizer. */
export interface AuthContext {
  tenantId: string;
  keyId: string;
  /** The key's label (its name in `npm run keys -- list`); empty when it has none. */
  keyLabel: string;
  scopes: Scope[];
}

/** A parsed, validated request as handlers see it. */
export interface ApiRequest<TBody = undefined, TQuery = undefined> {
  requestId: string;
  auth: AuthContext;
  body: TBody;
  query: TQuery;
  pathParameters: Record<string, string>;
  /** Header names lower-cased. */
  headers: Record<string, string>;
  /** The raw body text (for idempotency fingerprints). */
  rawBody: string;
  /** The path as the client sent it, stage prefix included when deployed (`/prod/`); absent in bare test events. */
  publicPath?: string;
}

export interface ApiResponse {
  statusCode: number;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as is instead of `body` (pages of the dashboard); set `content-type` in `headers`. */
  text?: string;
  headers?: Record<string, string>;
}

type ApiEvent = APIGatewayProxyEvent & { parsed?: ApiRequest<unknown, unknown> };

const JSON_HEADERS = { 'content-type': JSON_CONTENT_TYPE };

/**
 * A declared query parameter sent empty (`?workflow=&status=`, as the contract writes the routes, or a form's blank
 * filter) counts as not sent: its default applies. An unknown one stays, so the strict schema still refuses it.
 */
function withoutEmptyValues(schema: z.core.$ZodType, params: Record<string, string | undefined>) {
  const def = schema._zod.def as { shape?: Record<string, unknown> };
  const declared = new Set(Object.keys(def.shape ?? {}));
  return Object.fromEntries(Object.entries(params).filter(([name, value]) => !(value === '' && declared.has(name))));
}

/** Converts zod issues to the contract's `details.issues[]`, each naming the offending field. */
export function toIssues(error: z.core.$ZodError): ValidationIssue[] {
  return error.issues.flatMap((issue) => issuesOf(issue, []));
}

function issuesOf(issue: z.core.$ZodIssue, base: readonly PropertyKey[]): ValidationIssue[] {
  const path = [...base, ...issue.path];
  const at = (p: readonly PropertyKey[]) => p.map(String).join('.') || '(root)';
  // One issue per unknown field, at the field itself (zod reports them all at the object that holds them).
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => ({ path: at([...path, key]), message: `Unrecognized key: "${key}"` }));
  }
  if (issue.code === 'invalid_union') {
    // A field given as a name or as {name, type, ...}: the form whose kind the value has says what is wrong in it
    // (`expectedFields.0.type`), rather than "Invalid input" for the whole item.
    const kindMismatch = (option: readonly z.core.$ZodIssue[]) =>
      option.some((i) => i.code === 'invalid_type' && i.path.length === 0);
    const matched = issue.errors.filter((option) => !kindMismatch(option));
    if (matched.length === 1) return (matched[0] ?? []).flatMap((i) => issuesOf(i, path));
    if (matched.length === 0) {
      const kinds = issue.errors.flatMap((option) =>
        option.flatMap((i) => (i.code === 'invalid_type' && i.path.length === 0 ? [i.expected] : [])),
      );
      return [{ path: at(path), message: `Invalid input: expected ${kinds.join(' or ')}` }];
    }
  }
  return [{ path: at(path), message: issue.message }];
}

function requestIdOf(event: APIGatewayProxyEvent, context: Context | undefined): string {
  return event.requestContext?.requestId ?? context?.awsRequestId ?? 'unknown';
}

function lowerCaseHeaders(headers: APIGatewayProxyEvent['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) if (typeof v === 'string') out[k.toLowerCase()] = v;
  return out;
}

/** Middleware: maps errors to responses (the one place) and stamps `x-request-id` and JSON content-type on every response. */
function contractResponses(): MiddlewareObj<ApiEvent, APIGatewayProxyResult> {
  return {
    after: (request) => {
      const id = requestIdOf(request.event, request.context);
      if (request.response) request.response.headers = { ...request.response.headers, 'x-request-id': id };
    },
    onError: (request) => {
      const id = requestIdOf(request.event, request.context);
      const error = request.error;
      if (!(error instanceof ApiError)) {
        log.error('unhandled error', { requestId: id, error });
      } else if (error.status >= 500) {
        log.error('server error', { requestId: id, code: error.code });
      }
      const body = toErrorBody(error, id);
      const headers: Record<string, string> = { ...JSON_HEADERS, 'x-request-id': id };
      const retryAfter = (error as { retryAfterSeconds?: unknown }).retryAfterSeconds;
      if (typeof retryAfter === 'number') headers['retry-after'] = String(retryAfter);
      request.response = { statusCode: body.error.status, headers, body: JSON.stringify(body) };
    },
  };
}

function readAuth(event: APIGatewayProxyEvent): AuthContext | null {
  const ctx = event.requestContext?.authorizer as Record<string, unknown> | null | undefined;
  if (!ctx || typeof ctx.tenantId !== 'string' || typeof ctx.keyId !== 'string') return null;
  const scopes = typeof ctx.scopes === 'string' ? (ctx.scopes.split(',').filter(Boolean) as Scope[]) : [];
  const keyLabel = typeof ctx.keyLabel === 'string' ? ctx.keyLabel : '';
  return { tenantId: ctx.tenantId, keyId: ctx.keyId, keyLabel, scopes };
}

// Core schema types: the contract's zod/mini schemas, or classic ones (both are core schemas).
interface RequestSpec<TBody, TQuery> {
  body?: z.core.$ZodType<TBody, unknown>;
  query?: z.core.$ZodType<TQuery, unknown>;
  /** A route whose bodies are larger by nature (an evaluation's expected values); default: the configured limit. */
  maxBodyBytes?: number;
}

/** Middleware: auth context + scope, content-type, body size, JSON parse, zod validation — in the contract's order. */
function parseRequest<TBody, TQuery>(
  route: RouteDefinition,
  spec: RequestSpec<TBody, TQuery>,
): MiddlewareObj<ApiEvent, APIGatewayProxyResult> {
  const scope = route.scope;
  return {
    before: (request) => {
      const event = request.event;
      const auth = readAuth(event);
      if (scope !== null) {
        if (!auth) throw new UnauthorizedError();
        const missing = requiredScopes(route).find((s) => !auth.scopes.includes(s));
        if (missing !== undefined && !auth.scopes.includes('admin')) throw new ForbiddenError(missing);
      }
      const headers = lowerCaseHeaders(event.headers);
      const rawBody =
        event.body == null
          ? ''
          : event.isBase64Encoded
            ? Buffer.from(event.body, 'base64').toString('utf8')
            : event.body;

      let body: unknown;
      if (spec.body) {
        const contentType = headers['content-type'];
        if (contentType?.split(';')[0]?.trim().toLowerCase() !== 'application/json') {
          throw new UnsupportedMediaTypeError(contentType);
        }
        const size = Buffer.byteLength(rawBody);
        const limitBytes = spec.maxBodyBytes ?? config.limits.requestBodyMaxBytes;
        if (size > limitBytes) {
          throw new InvalidRequestError(
            `Request body is ${size} bytes; the limit is ${limitBytes}`,
            [{ path: '(root)', message: 'body too large' }],
            { limitBytes },
          );
        }
        let json: unknown;
        try {
          json = JSON.parse(rawBody);
        } catch {
          throw new InvalidRequestError('Request body is not valid JSON', [
            { path: '(root)', message: 'malformed JSON' },
          ]);
        }
        // Before zod (whose schemas recurse): a pathologically deep body is a 400, not a stack overflow.
        const problem = jsonProblem(json, { maxDepth: BODY_MAX_DEPTH });
        if (problem) {
          throw new InvalidRequestError('Request body failed validation', [
            { path: problem.path.map(String).join('.') || '(root)', message: problem.message },
          ]);
        }
        body = validate(spec.body, json, 'Request body');
      }
      const params = { ...(event.queryStringParameters ?? {}) };
      // API Gateway keeps the last of repeated parameters (`?status=completed&status=queued`); on a /v1 route two
      // values for one parameter are refused rather than one silently dropped.
      const repeated = Object.entries(event.multiValueQueryStringParameters ?? {}).filter(
        ([, v]) => (v?.length ?? 0) > 1,
      );
      if (scope !== null && repeated.length > 0) {
        throw new InvalidRequestError(
          'Query string failed validation',
          repeated.map(([name]) => ({ path: name, message: 'given more than once' })),
        );
      }
      // A /v1 route without query parameters refuses any, as bodies refuse unknown fields (contract: typos surface).
      if (!spec.query && scope !== null && Object.keys(params).length > 0) {
        throw new InvalidRequestError(
          'Query string failed validation',
          Object.keys(params).map((name) => ({ path: name, message: 'unknown query parameter' })),
        );
      }
      const query = spec.query
        ? validate(spec.query, withoutEmptyValues(spec.query, params), 'Query string')
        : undefined;

      event.parsed = {
        requestId: requestIdOf(event, request.context),
        auth: auth ?? { tenantId: '', keyId: '', keyLabel: '', scopes: [] },
        body,
        query,
        pathParameters: { ...(event.pathParameters ?? {}) } as Record<string, string>,
        headers,
        rawBody,
        ...(event.requestContext?.path ? { publicPath: event.requestContext.path } : {}),
      };
    },
  };
}

function validate<T>(schema: z.core.$ZodType<T, unknown>, value: unknown, what: string): T {
  const result = z.safeParse(schema, value);
  if (!result.success) throw new InvalidRequestError(`${what} failed validation`, toIssues(result.error));
  return result.data;
}

/**
 * Builds a Lambda handler for the route whose handler is `name`: scope from the route table, then the standard
 * middlewares, then `fn`. Returns the middy-wrapped handler.
 */
export function apiHandler<TBody = undefined, TQuery = undefined>(
  name: HandlerName,
  spec: RequestSpec<TBody, TQuery>,
  fn: (request: ApiRequest<TBody, TQuery>) => Promise<ApiResponse>,
) {
  const route = routes.find((r) => r.handler === name);
  if (!route) throw new Error(`No route uses handler ${name}`);
  return middy<ApiEvent, APIGatewayProxyResult>()
    .use(contractResponses())
    .use(parseRequest(route, spec))
    .handler(async (event): Promise<APIGatewayProxyResult> => {
      const parsed = event.parsed as ApiRequest<TBody, TQuery>;
      const response = await fn(parsed);
      if (response.text !== undefined) {
        return { statusCode: response.statusCode, headers: { ...response.headers }, body: response.text };
      }
      return {
        statusCode: response.statusCode,
        headers: { ...JSON_HEADERS, ...response.headers },
        body: JSON.stringify(response.body),
      };
    });
}
