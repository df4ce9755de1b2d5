/**
 * The OpenAPI 3.1 document, generated from the route table and the zod contract (never written by hand).
 * `npm run openapi` writes docs/openapi.json; a unit test fails when the committed file drifts from this.
 */
import * as contract from './contract.js';
import { ERROR_CODES } from './errors.js';
import { type HandlerName, requiredScopes, routes, type UNROUTED_HANDLERS } from './infra/routes.js';
// The contract's zod/mini (see contract.ts); toJSONSchema is core's, the same as classic's.
import * as z from './zod.js';

interface Operation {
  summary: string;
  request?: z.core.$ZodType;
  query?: z.core.$ZodType;
  /** `schema` null: the success answer has no body (204). */
  success: { status: number; schema: z.core.$ZodType | null; description: string };
  errors: (keyof typeof ERROR_CODES)[];
}

/** Every /v1 route: INVALID_REQUEST too, since a route without query parameters refuses any (shared/http.ts). */
const common: (keyof typeof ERROR_CODES)[] = [
  'INVALID_REQUEST',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'RATE_LIMITED',
  'INTERNAL_ERROR',
];

/** What a body naming an upload and a schema can be refused for (creation, estimates, evaluations), in check order. */
const uploadAndSchemaChecks: (keyof typeof ERROR_CODES)[] = [
  'UNSUPPORTED_MEDIA_TYPE',
  'UPLOAD_NOT_FOUND',
  'UPLOAD_INCOMPLETE',
  'UPLOAD_SIZE_MISMATCH',
  'UNSUPPORTED_FILE_TYPE',
  'FILE_TOO_LARGE',
  'TOO_MANY_PAGES',
  'CORRUPT_FILE',
  'UNKNOWN_SCHEMA',
];

const requestIdHeader = {
  'x-request-id': {
    description: 'The request id (also `error.requestId` in an error body); quote it when reporting a problem',
    schema: { type: 'string' },
  },
};

/** Headers of a success response besides x-request-id. */
const idempotentReplayed = {
  description: '`true` when this is the original response of an earlier request with the same Idempotency-Key',
  schema: { type: 'string', enum: ['true'] },
};
const successHeaders: Partial<Record<keyof typeof operations, Record<string, unknown>>> = {
  'create-run': {
    location: { description: 'The run: `/v1/runs/{jobId}`', schema: { type: 'string' } },
    'idempotent-replayed': idempotentReplayed,
  },
  'evaluations-create': {
    location: { description: 'The evaluation: `/v1/evaluations/{evaluationId}`', schema: { type: 'string' } },
    'idempotent-replayed': idempotentReplayed,
  },
};

const operations: Record<Exclude<HandlerName, (typeof UNROUTED_HANDLERS)[number] | 'dashboard'>, Operation> = {
  health: {
    summary: 'Service health (no key)',
    success: { status: 200, schema: contract.healthResponse, description: 'The service can serve' },
    errors: ['INTERNAL_ERROR'],
  },
  presign: {
    summary: 'Request an upload slot and a presigned PUT address',
    request: contract.presignRequest,
    success: { status: 200, schema: contract.presignResponse, description: 'Upload slot' },
    errors: [...common, 'UNSUPPORTED_MEDIA_TYPE', 'UNSUPPORTED_FILE_TYPE', 'FILE_TOO_LARGE'],
  },
  'create-run': {
    summary: 'Create a run (queued); the estimate is held. Optional Idempotency-Key header.',
    request: contract.createRunRequest,
    success: { status: 202, schema: contract.createRunResponse, description: 'Run queued' },
    errors: [
      ...common,
      ...uploadAndSchemaChecks,
      'BUDGET_EXCEEDED',
      'COST_CONFIRMATION_REQUIRED',
      'INSUFFICIENT_CREDIT',
      'IDEMPOTENCY_KEY_REUSED',
    ],
  },
  estimates: {
    summary:
      'What a run of this body would cost now (standard) and as a batch, for an upload or a declared file; creates ' +
      'nothing and holds nothing',
    request: contract.estimateRequest,
    success: { status: 200, schema: contract.estimateResponse, description: 'Both prices' },
    errors: [...common, ...uploadAndSchemaChecks],
  },
  'list-runs': {
    summary: "The tenant's runs, newest first",
    query: contract.listRunsQuery,
    success: { status: 200, schema: contract.listRunsResponse, description: 'A page of runs' },
    errors: common,
  },
  'get-run': {
    summary: 'A run in its current state (poll until completed or failed)',
    success: { status: 200, schema: contract.runResponse, description: 'The run' },
    errors: [...common, 'NOT_FOUND'],
  },
  'verify-run': {
    summary: 'Accept or correct a completed run (QA metadata; status never changes)',
    request: contract.verifyRequest,
    success: { status: 200, schema: contract.verifyResponse, description: 'Verification recorded' },
    errors: [...common, 'UNSUPPORTED_MEDIA_TYPE', 'NOT_FOUND', 'RUN_NOT_COMPLETED'],
  },
  schemas: {
    summary: 'The built-in schema registry',
    success: { status: 200, schema: contract.schemasResponse, description: 'Registry' },
    errors: common,
  },
  usage: {
    summary: 'Totals per workflow over a period',
    query: contract.usageQuery,
    success: { status: 200, schema: contract.usageResponse, description: 'Usage' },
    errors: common,
  },
  'file-url': {
    summary:
      "A short-lived address (5 min) to read the run's uploaded file, e.g. for a preview; with `page`, the address " +
      "of that page's image (JPEG) of a PDF run, to draw its fields' boxes on",
    query: contract.fileUrlQuery,
    success: { status: 200, schema: contract.fileUrlResponse, description: 'Read address' },
    errors: [...common, 'NOT_FOUND'],
  },
  whoami: {
    summary: 'The calling API key: its id, label, tenant and scopes (never the key)',
    success: { status: 200, schema: contract.whoamiResponse, description: 'The key' },
    errors: common,
  },
  'evaluations-create': {
    summary:
      'Create an evaluation: every document run once per listed provider (or once with the normal plan), scored ' +
      'against its expected values; one hold for the whole evaluation. Optional Idempotency-Key header.',
    request: contract.createEvaluationRequest,
    success: { status: 202, schema: contract.createEvaluationResponse, description: 'Evaluation queued' },
    errors: [
      ...common,
      ...uploadAndSchemaChecks,
      'BUDGET_EXCEEDED',
      'COST_CONFIRMATION_REQUIRED',
      'INSUFFICIENT_CREDIT',
      'IDEMPOTENCY_KEY_REUSED',
    ],
  },
  'evaluations-get': {
    summary: 'An evaluation: progress, money, its report once every item settled, and its items page by page',
    query: contract.getEvaluationQuery,
    success: { status: 200, schema: contract.evaluationView, description: 'The evaluation' },
    errors: [...common, 'NOT_FOUND'],
  },
  'evaluations-list': {
    summary: "The tenant's evaluations, newest first (without their items)",
    query: contract.listEvaluationsQuery,
    success: { status: 200, schema: contract.listEvaluationsResponse, description: 'A page of evaluations' },
    errors: common,
  },
  quality: {
    summary:
      'Accuracy from reviews: per field, per provider and calibration over the verified runs of a period (counted ' +
      'when each run was verified)',
    query: contract.qualityQuery,
    success: { status: 200, schema: contract.qualityResponse, description: 'Quality' },
    errors: common,
  },
  'webhooks-create': {
    summary:
      'Register a webhook endpoint (at most 10 per tenant; scopes webhooks:manage and runs:read: events carry whole ' +
      'runs); the answer carries its signing secret, shown only here. ' +
      'Deliveries: POST {id, type, createdAt, data: the run} signed in Vision-Signature (docs/webhooks.md)',
    request: contract.createWebhookRequest,
    success: { status: 201, schema: contract.createWebhookResponse, description: 'Endpoint registered' },
    errors: [...common, 'UNSUPPORTED_MEDIA_TYPE'],
  },
  'webhooks-list': {
    summary: "The tenant's webhook endpoints (never their secrets)",
    success: { status: 200, schema: contract.listWebhooksResponse, description: 'Endpoints' },
    errors: common,
  },
  'webhooks-delete': {
    summary: 'Delete a webhook endpoint; nothing more is delivered to it',
    success: { status: 204, schema: null, description: 'Deleted' },
    errors: [...common, 'NOT_FOUND'],
  },
  'webhook-deliveries': {
    summary: "An endpoint's last 100 delivery attempts, newest first",
    success: { status: 200, schema: contract.webhookDeliveriesResponse, description: 'Attempts' },
    errors: [...common, 'NOT_FOUND'],
  },
};

function jsonSchema(schema: z.core.$ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
  }) as Record<string, unknown>;
  return rest;
}

function queryParameters(schema: z.core.$ZodType): Record<string, unknown>[] {
  const json = jsonSchema(schema, 'input') as { properties?: Record<string, unknown>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, s]) => ({
    name,
    in: 'query',
    required: json.required?.includes(name) ?? false,
    schema: s,
  }));
}

/** Builds the OpenAPI document. */
export function buildOpenApi(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  // Dashboard pages are HTML, not API operations.
  for (const route of routes.filter((r) => r.kind !== 'page')) {
    const op = operations[route.handler as keyof typeof operations];
    const parameters = [
      ...[...route.path.matchAll(/\{([^}]+)\}/g)].map((m) => ({
        name: m[1],
        in: 'path',
        required: true,
        schema: { type: 'string' },
      })),
      ...(op.query ? queryParameters(op.query) : []),
      ...(route.handler === 'create-run' || route.handler === 'evaluations-create'
        ? [{ name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 255 } }]
        : []),
    ];
    const responses: Record<string, unknown> = {
      [String(op.success.status)]: {
        description: op.success.description,
        headers: { ...requestIdHeader, ...successHeaders[route.handler as keyof typeof operations] },
        ...(op.success.schema
          ? { content: { 'application/json': { schema: jsonSchema(op.success.schema, 'output') } } }
          : {}),
      },
    };
    for (const code of op.errors) {
      const status = String(ERROR_CODES[code].status);
      const existing = responses[status] as { description: string } | undefined;
      responses[status] = {
        description: existing ? `${existing.description}, ${code}` : code,
        headers: {
          ...requestIdHeader,
          ...(code === 'RATE_LIMITED'
            ? { 'retry-after': { description: 'Seconds to wait before retrying', schema: { type: 'string' } } }
            : {}),
        },
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    }
    const pathItem = paths[route.path] ?? {};
    paths[route.path] = pathItem;
    pathItem[route.method.toLowerCase()] = {
      operationId: route.handler,
      summary: op.summary,
      ...(route.scope
        ? {
            security: [{ apiKey: [] }],
            'x-required-scope': route.scope,
            ...(route.alsoScopes ? { 'x-required-scopes': requiredScopes(route) } : {}),
          }
        : { security: [] }),
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(op.request
        ? {
            requestBody: {
              required: true,
              content: { 'application/json': { schema: jsonSchema(op.request, 'input') } },
            },
          }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Vision Analysis Service',
      version: '0.1.0',
      description:
        'Image or PDF + prompt → structured result, with the cost agreed before the run. Generated from shared/contract.ts.',
    },
    servers: [{ url: '{base_url}', variables: { base_url: { default: 'http://127.0.0.1:8787' } } }],
    components: {
      securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' } },
      schemas: {
        Error: jsonSchema(contract.errorResponse, 'output'),
        ErrorCode: { type: 'string', enum: Object.keys(ERROR_CODES) },
        // Not an answer of the API: what the service POSTs to a webhook endpoint (docs/webhooks.md).
        WebhookEvent: jsonSchema(contract.webhookEvent, 'output'),
      },
    },
    paths,
  };
}
