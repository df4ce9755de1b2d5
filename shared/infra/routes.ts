/**
 * The route table: every HTTP route with its handler module and required scope, plus what each handler may touch.
 * The CDK stateless stack creates one function per handler and grants exactly `access`; the local stack
 * (scripts/local.ts) dispatches requests with the same table. Add a route here and both follow.
 */
import type { TableName } from './resources.js';

export const SCOPES = ['runs:write', 'runs:read', 'runs:verify', 'webhooks:manage', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

/** Name of a module in functions/ (without extension). */
export type HandlerName =
  | 'presign'
  | 'create-run'
  | 'estimates'
  | 'get-run'
  | 'list-runs'
  | 'verify-run'
  | 'schemas'
  | 'usage'
  | 'file-url'
  | 'whoami'
  | 'evaluations-create'
  | 'evaluations-get'
  | 'evaluations-list'
  | 'quality'
  | 'webhooks-create'
  | 'webhooks-list'
  | 'webhooks-delete'
  | 'webhook-deliveries'
  | 'dashboard'
  | 'health'
  | 'authorizer'
  | 'worker'
  | 'reconcile'
  | 'deliver'
  | 'batcher';

/** What a handler may touch; turned into IAM grants + environment variables in CDK. */
export interface ResourceAccess {
  tables?: Partial<Record<TableName, 'read' | 'readwrite'>>;
  bucket?: 'read' | 'presign-put';
  /**
   * The page images of PDF runs (`previews/` in the uploads bucket): the worker writes them, file-url reads them.
   * Needs `bucket` too (the bucket's name and domain come with it).
   */
  previews?: 'read' | 'write';
  /**
   * The batch lane's lines and answers (`batch/` in the uploads bucket, shared/batching/objects.ts): read and written by
   * the worker and the batcher. Carries the bucket's name; no access to the uploads themselves.
   */
  batchObjects?: 'readwrite';
  /** The run queue: send (create a run, resend one), or consume (the worker, which also sends a run's group messages). */
  queue?: 'send' | 'consume';
  /** The webhook delivery queue: send (dispatch an event), or consume (the deliver function, which also retries). */
  webhookQueue?: 'send' | 'consume';
  /** Seal (encrypt) or open (decrypt) webhook signing secrets (shared/events/secrets.ts). */
  webhookSecrets?: 'seal' | 'open';
  /** Send run events to the EventBridge bus's feed queue (deployed only). */
  eventBus?: 'publish';
  /**
   * The uploads bucket's regional host name only (its domain variable), without any permission: the dashboard names
   * it in its Content-Security-Policy, the one origin previews load from. Implied by `bucket`.
   */
  storageAddress?: true;
}

export interface RouteDefinition {
  method: 'GET' | 'POST' | 'DELETE';
  /** API Gateway path syntax: `{name}` for a path parameter. */
  path: string;
  handler: HandlerName;
  /** Scope the API key must carry; null for public routes (no key). */
  scope: Scope | null;
  /** Scopes the key must carry as well (each of them, or `admin`): what the route hands out needs them too. */
  alsoScopes?: readonly Scope[];
  /** Why a public route (scope null) needs no key; required for them, shown in the cdk-nag acknowledgement. */
  publicReason?: string;
  /** A JSON API operation (in the OpenAPI document), or a page of the dashboard (HTML and static assets). */
  kind?: 'api' | 'page';
}

export const routes: readonly RouteDefinition[] = [
  {
    method: 'GET',
    path: '/health',
    handler: 'health',
    scope: null,
    publicReason: 'a liveness check for load balancers and uptime probes; it returns no tenant data',
  },
  {
    method: 'GET',
    path: '/',
    handler: 'dashboard',
    scope: null,
    kind: 'page',
    publicReason:
      'the review dashboard page (static HTML); it holds no data, the operator pastes an API key that the page sends as x-api-key',
  },
  {
    method: 'GET',
    path: '/dashboard/{asset}',
    handler: 'dashboard',
    scope: null,
    kind: 'page',
    publicReason: "the dashboard's static script and stylesheet; no data",
  },
  { method: 'POST', path: '/v1/uploads/presign', handler: 'presign', scope: 'runs:write' },
  { method: 'POST', path: '/v1/runs', handler: 'create-run', scope: 'runs:write' },
  // Creates and holds nothing: a read of prices (and of the tenant's upload, when named).
  { method: 'POST', path: '/v1/estimates', handler: 'estimates', scope: 'runs:read' },
  { method: 'GET', path: '/v1/runs', handler: 'list-runs', scope: 'runs:read' },
  { method: 'GET', path: '/v1/runs/{jobId}', handler: 'get-run', scope: 'runs:read' },
  { method: 'POST', path: '/v1/runs/{jobId}/verify', handler: 'verify-run', scope: 'runs:verify' },
  { method: 'GET', path: '/v1/schemas', handler: 'schemas', scope: 'runs:read' },
  { method: 'GET', path: '/v1/usage', handler: 'usage', scope: 'runs:read' },
  { method: 'GET', path: '/v1/runs/{jobId}/file', handler: 'file-url', scope: 'runs:read' },
  { method: 'GET', path: '/v1/whoami', handler: 'whoami', scope: 'runs:read' },
  { method: 'POST', path: '/v1/evaluations', handler: 'evaluations-create', scope: 'runs:write' },
  { method: 'GET', path: '/v1/evaluations', handler: 'evaluations-list', scope: 'runs:read' },
  { method: 'GET', path: '/v1/evaluations/{evaluationId}', handler: 'evaluations-get', scope: 'runs:read' },
  { method: 'GET', path: '/v1/quality', handler: 'quality', scope: 'runs:read' },
  // Events carry whole runs (every run of the tenant, whichever key created it): registering reads runs.
  {
    method: 'POST',
    path: '/v1/webhooks',
    handler: 'webhooks-create',
    scope: 'webhooks:manage',
    alsoScopes: ['runs:read'],
  },
  { method: 'GET', path: '/v1/webhooks', handler: 'webhooks-list', scope: 'webhooks:manage' },
  { method: 'DELETE', path: '/v1/webhooks/{webhookId}', handler: 'webhooks-delete', scope: 'webhooks:manage' },
  {
    method: 'GET',
    path: '/v1/webhooks/{webhookId}/deliveries',
    handler: 'webhook-deliveries',
    scope: 'webhooks:manage',
  },
];

/**
 * The functions no route invokes: the API's authorizer, the queue's worker, the scheduled reconciler, and the
 * webhook delivery queue's deliver function. The stack creates one function per handler: these plus every handler of
 * the route table (`allHandlers`).
 */
export const UNROUTED_HANDLERS = [
  'authorizer',
  'worker',
  'reconcile',
  'deliver',
  'batcher',
] as const satisfies readonly HandlerName[];

/** Every scope a key needs for `route` (empty for a public route). */
export function requiredScopes(route: Pick<RouteDefinition, 'scope' | 'alsoScopes'>): Scope[] {
  return route.scope === null ? [] : [route.scope, ...(route.alsoScopes ?? [])];
}

/** Every function of the service, each once. */
export function allHandlers(): HandlerName[] {
  return [...new Set<HandlerName>([...routes.map((r) => r.handler), ...UNROUTED_HANDLERS])];
}

/** Per-handler resource access (least privilege). Handlers not listed touch nothing. */
export const handlerAccess: Record<HandlerName, ResourceAccess> = {
  health: { tables: { tenants: 'read' } },
  authorizer: { tables: { apiKeys: 'read' } },
  presign: { tables: { uploads: 'readwrite' }, bucket: 'presign-put' },
  'create-run': {
    tables: {
      uploads: 'read',
      runs: 'readwrite',
      tenants: 'readwrite',
      ledger: 'readwrite',
      idempotency: 'readwrite',
      usage: 'readwrite',
      calibration: 'read',
    },
    bucket: 'read',
    queue: 'send',
  },
  // Inspects the upload as creation does and reads the tenant's calibration; writes nothing.
  estimates: { tables: { uploads: 'read', calibration: 'read' }, bucket: 'read' },
  'get-run': { tables: { runs: 'read', runResults: 'read' } },
  'list-runs': { tables: { runs: 'read', runResults: 'read' } },
  'verify-run': {
    tables: {
      runs: 'readwrite',
      runResults: 'read',
      verifications: 'readwrite',
      usage: 'readwrite',
      quality: 'readwrite',
    },
  },
  schemas: {},
  usage: { tables: { runs: 'read', usage: 'read' } },
  'file-url': { tables: { runs: 'read' }, bucket: 'read', previews: 'read' },
  // Answers from the authorizer's context alone.
  whoami: {},
  // An evaluation is created as a run is (inspect, estimate, one hold), then its runs are written and queued.
  'evaluations-create': {
    tables: {
      uploads: 'read',
      runs: 'readwrite',
      tenants: 'readwrite',
      ledger: 'readwrite',
      idempotency: 'readwrite',
      usage: 'readwrite',
      calibration: 'read',
      evaluations: 'readwrite',
      evaluationItems: 'readwrite',
    },
    bucket: 'read',
    queue: 'send',
  },
  // Writes the report itself when the last settlement's worker could not (shared/evaluations/finish.ts).
  'evaluations-get': { tables: { evaluations: 'readwrite', evaluationItems: 'read' } },
  'evaluations-list': { tables: { evaluations: 'read' } },
  // Writes back the snapshot of a day's confidence histogram when it is stale (store/quality-read.ts).
  quality: { tables: { quality: 'readwrite' } },
  'webhooks-create': { tables: { webhooks: 'readwrite' }, webhookSecrets: 'seal' },
  'webhooks-list': { tables: { webhooks: 'read' } },
  'webhooks-delete': { tables: { webhooks: 'readwrite' } },
  'webhook-deliveries': { tables: { webhooks: 'read', webhookDeliveries: 'read' } },
  // Names the bucket's host in its Content-Security-Policy (previews load from there only).
  dashboard: { storageAddress: true },
  worker: {
    tables: {
      runs: 'readwrite',
      tenants: 'readwrite',
      ledger: 'readwrite',
      runResults: 'readwrite',
      usage: 'readwrite',
      runChunks: 'readwrite',
      calibration: 'readwrite',
      // The settlement writes the run's event; the worker then hands it to the endpoints' queue and the bus.
      events: 'readwrite',
      webhooks: 'read',
      // An evaluation's run scores itself and moves its evaluation's progress in its settlement; the last writes the report.
      evaluations: 'readwrite',
      evaluationItems: 'readwrite',
      // A batch run's provider calls wait in the batch lane (shared/worker/batch-lane.ts).
      batchRequests: 'readwrite',
    },
    bucket: 'read',
    batchObjects: 'readwrite',
    // Stores a PDF run's page images for the dashboard's boxes (shared/worker/page-previews.ts).
    previews: 'write',
    queue: 'consume',
    webhookQueue: 'send',
    eventBus: 'publish',
  },
  // Resends a lost run message; fails and refunds a dead one (settlements of failed runs write no result parts); hands
  // on the events whose dispatch a crash interrupted (shared/events/dispatch.ts).
  reconcile: {
    tables: {
      runs: 'readwrite',
      tenants: 'readwrite',
      ledger: 'readwrite',
      runResults: 'read',
      usage: 'readwrite',
      events: 'readwrite',
      webhooks: 'read',
      // Creates the runs of an evaluation whose creating request died after its hold; writes a report left unwritten.
      evaluations: 'readwrite',
      evaluationItems: 'readwrite',
    },
    queue: 'send',
    webhookQueue: 'send',
    eventBus: 'publish',
  },
  // The batch lane on a schedule (shared/batching/batcher.ts): submits, polls, and sends resolved runs back.
  batcher: {
    tables: { batchRequests: 'readwrite' },
    batchObjects: 'readwrite',
    queue: 'send',
  },
  // Signs and POSTs one event to one endpoint, records the attempt, and sends the next try (or the dead letter).
  deliver: {
    // Webhooks: the endpoint, and its tenant's delivery slots (store/delivery-slots.ts), which it takes and gives back.
    tables: { webhooks: 'readwrite', runs: 'read', runResults: 'read', webhookDeliveries: 'readwrite' },
    webhookQueue: 'consume',
    webhookSecrets: 'open',
  },
};

/** What a concrete path is to a route's template: its parameters, a parameter that cannot be decoded, or no match. */
export type PathMatch = { params: Record<string, string> } | { malformedParameter: string } | null;

/**
 * Matches a concrete path against `/v1/runs/{jobId}` and decodes its parameters once, as API Gateway does. Never
 * throws: a parameter that is not valid percent-encoding (`run_%`, `%E0%A4%A`) is reported by name, and the gateway
 * answers it 400 INVALID_REQUEST (docs/decisions.md, "Requests and errors").
 */
export function matchPath(template: string, path: string): PathMatch {
  const names: string[] = [];
  const pattern = template.replace(/\{([A-Za-z0-9_]+)\}/g, (_m, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  const match = new RegExp(`^${pattern}$`).exec(path);
  if (!match) return null;
  const params: Record<string, string> = {};
  for (const [i, name] of names.entries()) {
    try {
      params[name] = decodeURIComponent(match[i + 1] ?? '');
    } catch {
      return { malformedParameter: name };
    }
  }
  return { params };
}

/** API Gateway behaviour shared by the deployed REST API and the local gateway. */
export const gatewaySettings = {
  /** How long an authorizer answer is cached per API key: a revoked key stops working within this time. */
  authorizerCacheSeconds: 60,
  /** Requests per second and burst (the contract's default per-key rate). */
  throttle: { ratePerSecond: 20, burst: 40 },
  /** API Gateway's payload cap (fixed by AWS); answered 400 INVALID_REQUEST with this as `details.limitBytes`. */
  maxBodyBytes: 10 * 1024 * 1024,
} as const;
