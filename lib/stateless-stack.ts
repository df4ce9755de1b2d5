/**
 * The stateless half: one Lambda function per handler, the REST API built from the route table, the API-key
 * authorizer and the SQS-triggered worker. Everything comes from shared/infra/routes.ts (routes, per-handler access)
 * and shared/infra/resources.ts (worker limits); nothing here lists routes or handlers by hand.
 */
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { Construct } from 'constructs';
import { ERROR_CODES, type ErrorCode } from '../shared/errors.js';
import { workerSettings } from '../shared/infra/resources.js';
import { gatewaySettings, type HandlerName, handlerAccess, routes } from '../shared/infra/routes.js';
import { bindAccess } from './bind.js';
import type { StatefulResources } from './stateful-stack.js';
import { type Packaging, VisionFunction, WORKER_NATIVE_MODULES } from './vision-function.js';

/** How long API Gateway caches an authorizer answer per API key (shared with the local gateway). */
export const AUTHORIZER_CACHE_TTL_SECONDS = gatewaySettings.authorizerCacheSeconds;

/** Stage-wide throttling. Per-tenant limits (usage plans + API keys) are a later issue. */
export const STAGE_THROTTLING = {
  rateLimit: gatewaySettings.throttle.ratePerSecond,
  burstLimit: gatewaySettings.throttle.burst,
} as const;

export interface StatelessStackProps extends StackProps {
  /** Tables, bucket and queue from the stateful stack. */
  readonly resources: StatefulResources;
  /** Deployment stage; also the API Gateway stage name. */
  readonly stageName: string;
  /** Service configuration passed to every function (see shared/config.ts), e.g. the confirmation threshold. */
  readonly serviceEnvironment: Readonly<Record<string, string>>;
  /** How the worker ships its native modules (see lib/vision-function.ts). @default 'image' */
  readonly workerPackaging?: Packaging;
  /** Removal policy of the functions' log groups. @default RETAIN */
  readonly logRemovalPolicy?: RemovalPolicy;
}

/** Memory and timeout per handler; API handlers must answer well within API Gateway's 29 s integration timeout. */
const sizing: Partial<Record<HandlerName, { memorySize: number; timeout: Duration }>> = {
  'create-run': { memorySize: 1024, timeout: Duration.seconds(20) },
  worker: { memorySize: workerSettings.memoryMb, timeout: Duration.seconds(workerSettings.timeoutSeconds) },
};

/** Converts `create-run` to `CreateRun` (and `DEFAULT_4XX` to `Default4xx`) for construct ids. */
function pascal(name: string): string {
  return name
    .split(/[^A-Za-z0-9]+/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1).toLowerCase())
    .join('');
}

/**
 * Errors produced by API Gateway itself (no handler ran), rendered in the contract's error body. Status and
 * retryability come from ERROR_CODES so they cannot disagree with the handlers' errors. `message` is either fixed
 * text or API Gateway's own message (`$context.error.messageString`, already a quoted JSON string).
 */
const gatewayErrors: { type: apigw.ResponseType; code: ErrorCode; message: string | null }[] = [
  { type: apigw.ResponseType.UNAUTHORIZED, code: 'UNAUTHORIZED', message: 'Missing or invalid x-api-key' },
  { type: apigw.ResponseType.ACCESS_DENIED, code: 'FORBIDDEN', message: 'This API key may not call this route' },
  { type: apigw.ResponseType.THROTTLED, code: 'RATE_LIMITED', message: 'Too many requests; retry later' },
  // Usage plans are not configured yet; this keeps a future quota answer in the contract's shape.
  { type: apigw.ResponseType.QUOTA_EXCEEDED, code: 'RATE_LIMITED', message: 'Request quota exceeded' },
  // API Gateway answers an unknown path or method with 403 "Missing Authentication Token"; it is a 404.
  { type: apigw.ResponseType.MISSING_AUTHENTICATION_TOKEN, code: 'NOT_FOUND', message: 'No such route' },
  {
    type: apigw.ResponseType.REQUEST_TOO_LARGE,
    code: 'FILE_TOO_LARGE',
    message: 'Request body exceeds the API limit; upload files with /v1/uploads/presign',
  },
  { type: apigw.ResponseType.DEFAULT_4XX, code: 'INVALID_REQUEST', message: null },
  { type: apigw.ResponseType.DEFAULT_5XX, code: 'INTERNAL_ERROR', message: null },
];

/** The contract's error body as an API Gateway (VTL) template. */
export function gatewayErrorTemplate(code: ErrorCode, message: string | null): string {
  const { status, retryable } = ERROR_CODES[code];
  const text = message === null ? '$context.error.messageString' : JSON.stringify(message);
  return `{"error":{"code":"${code}","message":${text},"status":${status},"retryable":${retryable},"requestId":"$context.requestId"}}`;
}

export class StatelessStack extends Stack {
  readonly api: apigw.RestApi;
  readonly functions: Record<HandlerName, lambda.Function>;

  constructor(scope: Construct, id: string, props: StatelessStackProps) {
    super(scope, id, props);

    // One function per handler named in the route table, plus the two that no route invokes directly.
    const handlers = [...new Set<HandlerName>([...routes.map((r) => r.handler), 'authorizer', 'worker'])];
    const functions: Partial<Record<HandlerName, lambda.Function>> = {};
    for (const handler of handlers) {
      const isWorker = handler === 'worker';
      const vf = new VisionFunction(this, pascal(handler), {
        handler,
        ...sizing[handler],
        environment: props.serviceEnvironment,
        logRemovalPolicy: props.logRemovalPolicy ?? RemovalPolicy.RETAIN,
        ...(isWorker ? { nodeModules: WORKER_NATIVE_MODULES, packaging: props.workerPackaging ?? 'image' } : {}),
      });
      bindAccess(vf.fn, handlerAccess[handler], props.resources);
      functions[handler] = vf.fn;
    }
    this.functions = functions as Record<HandlerName, lambda.Function>;

    this.api = new apigw.RestApi(this, 'Api', {
      restApiName: `vision-${props.stageName}`,
      description: 'Vision analysis service',
      endpointConfiguration: { types: [apigw.EndpointType.REGIONAL] },
      // Execution/access logging needs the account-wide API Gateway CloudWatch role; the hardening issue adds it.
      cloudWatchRole: false,
      deployOptions: {
        stageName: props.stageName,
        throttlingRateLimit: STAGE_THROTTLING.rateLimit,
        throttlingBurstLimit: STAGE_THROTTLING.burstLimit,
        tracingEnabled: true,
        metricsEnabled: true,
      },
    });

    // The authorizer allows every route for a valid key (its policy is cached per key for all routes); each handler
    // checks the route's scope. For per-key usage plans later: apiKeySourceType AUTHORIZER + usageIdentifierKey.
    const authorizer = new apigw.RequestAuthorizer(this, 'ApiKeyAuthorizer', {
      handler: this.functions.authorizer,
      identitySources: [apigw.IdentitySource.header('x-api-key')],
      resultsCacheTtl: Duration.seconds(AUTHORIZER_CACHE_TTL_SECONDS),
    });

    for (const route of routes) {
      const integration = new apigw.LambdaIntegration(this.functions[route.handler], { allowTestInvoke: false });
      this.api.root
        .resourceForPath(route.path)
        .addMethod(
          route.method,
          integration,
          route.scope === null
            ? { authorizationType: apigw.AuthorizationType.NONE }
            : { authorizationType: apigw.AuthorizationType.CUSTOM, authorizer },
        );
    }

    for (const { type, code, message } of gatewayErrors) {
      this.api.addGatewayResponse(`${pascal(type.responseType)}Response`, {
        type,
        statusCode: String(ERROR_CODES[code].status),
        responseHeaders: {
          'content-type': "'application/json'",
          'x-request-id': 'context.requestId',
        },
        templates: { 'application/json': gatewayErrorTemplate(code, message) },
      });
    }

    new CfnOutput(this, 'ApiUrl', { value: this.api.url, description: 'Base URL of the API (stage included)' });
  }
}
