/**
 * The stateless half: one Lambda function per handler, the REST API built from the route table, the API-key
 * authorizer and the SQS-triggered worker. Everything comes from shared/infra/routes.ts (routes, per-handler access)
 * and shared/infra/resources.ts (worker limits); nothing here lists routes or handlers by hand.
 */
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { ERROR_CODES, type ErrorCode } from '../shared/errors.js';
import { METRICS_STAGE_ENV } from '../shared/infra/metrics.js';
import { workerSettings } from '../shared/infra/resources.js';
import { gatewaySettings, type HandlerName, handlerAccess, routes } from '../shared/infra/routes.js';
import type { ProviderId } from '../shared/providers/types.js';
import { bindAccess, bindProviderSecret } from './bind.js';
import { Monitoring } from './monitoring.js';
import { grantProviders } from './provider-iam.js';
import type { StatefulResources } from './stateful-stack.js';
import { type Packaging, VisionFunction, WORKER_NATIVE_MODULES } from './vision-function.js';

/** How long API Gateway caches an authorizer answer per API key (shared with the local gateway). */
export const AUTHORIZER_CACHE_TTL_SECONDS = gatewaySettings.authorizerCacheSeconds;

/**
 * Stage-wide throttling: 20 rps / burst 40 for the whole stage, standing in for the contract's per-key rate.
 *
 * Per-key throttling is NOT implemented. API Gateway throttles per key only through usage plans, and a usage plan
 * counts requests against an API Gateway API key resource (AWS::ApiGateway::ApiKey) attached to the plan. With our
 * own keys (hashed in the apiKeys table, checked by the Lambda authorizer) that needs:
 * 1. `apiKeySourceType: AUTHORIZER` on the RestApi and `apiKeyRequired: true` on every authorized method;
 * 2. the authorizer returning `usageIdentifierKey` = the value of an API Gateway API key (not our secret key: a
 *    separate id stored on the apiKeys item), for every request it allows;
 * 3. one API Gateway API key per client key, created and attached to a usage plan (throttle 20/40, optional quota)
 *    when the client key is issued, and deleted on revocation: key lifecycle code (admin script or handler) calling
 *    apigateway:CreateApiKey / CreateUsagePlanKey / DeleteApiKey, plus IAM for it;
 * 4. limits to respect: 10,000 API keys per account and region by default (adjustable), 300 usage plans.
 * Until then a single client can use the whole stage budget; the worker's maxConcurrency caps provider load anyway.
 */
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
  /** Removal policy of the functions' and the API's log groups. @default RETAIN */
  readonly logRemovalPolicy?: RemovalPolicy;
  /** Candidate providers (VISION_PROVIDERS on create-run and the worker). @default ['local'] */
  readonly providers?: readonly ProviderId[];
  /** Model or inference profile id for bedrock; required when `providers` includes bedrock. */
  readonly bedrockModelId?: string;
  /** Create the account-wide API Gateway CloudWatch Logs role (needed for API logging). @default true */
  readonly apiGatewayCloudWatchRole?: boolean;
}

/** Handlers that plan runs and therefore need the provider configuration (VISION_PROVIDERS, BEDROCK_MODEL_ID). */
export const PROVIDER_CONFIG_HANDLERS: readonly HandlerName[] = ['create-run', 'worker'];

/** Days the API access log is kept. */
export const API_ACCESS_LOG_RETENTION = logs.RetentionDays.THREE_MONTHS;

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

/** cdk-nag findings every function has by design, each acknowledged with its reason. */
function acknowledgeFunctionFindings(fn: lambda.Function): void {
  Validations.of(fn).acknowledge({
    id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
    reason:
      'AWS-managed basic execution policy (logs:CreateLogGroup/CreateLogStream/PutLogEvents) maintained by AWS for Lambda; the function writes to its own CDK-managed log group only, all data access is granted separately per handler (lib/bind.ts).',
  });
  Validations.of(fn).acknowledge({
    id: 'AwsSolutions-IAM5[Resource::*]',
    reason:
      'Active X-Ray tracing: xray:PutTraceSegments and xray:PutTelemetryRecords have no resource-level permissions, so CDK grants them on "*".',
  });
  if (fn.runtime.name !== 'FROM_IMAGE') {
    Validations.of(fn).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        'Runtime pinned to Node.js 22 (NODE_RUNTIME in lib/vision-function.ts) by the design card: the bundles target node22 and the worker image is the Node.js 22 base image, so zip and image functions run the same Node; moving to a newer runtime is a deliberate change of both.',
    });
  }
}

export class StatelessStack extends Stack {
  readonly api: apigw.RestApi;
  readonly functions: Record<HandlerName, lambda.Function>;
  readonly monitoring: Monitoring;

  constructor(scope: Construct, id: string, props: StatelessStackProps) {
    super(scope, id, props);
    const providers = props.providers ?? ['local'];

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
      if (PROVIDER_CONFIG_HANDLERS.includes(handler)) {
        vf.fn.addEnvironment('VISION_PROVIDERS', providers.join(','));
        if (props.bedrockModelId) vf.fn.addEnvironment('BEDROCK_MODEL_ID', props.bedrockModelId);
      }
      if (isWorker) {
        // Only the worker calls providers: it alone reads the keys and gets IAM for the IAM providers.
        bindProviderSecret(vf.fn, props.resources);
        grantProviders(vf.fn, { providers, ...(props.bedrockModelId ? { bedrockModelId: props.bedrockModelId } : {}) });
        vf.fn.addEnvironment(METRICS_STAGE_ENV, props.stageName);
      }
      acknowledgeFunctionFindings(vf.fn);
      functions[handler] = vf.fn;
    }
    this.functions = functions as Record<HandlerName, lambda.Function>;

    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', {
      retention: API_ACCESS_LOG_RETENTION,
      removalPolicy: props.logRemovalPolicy ?? RemovalPolicy.RETAIN,
    });

    this.api = new apigw.RestApi(this, 'Api', {
      restApiName: `vision-${props.stageName}`,
      description: 'Vision analysis service',
      endpointConfiguration: { types: [apigw.EndpointType.REGIONAL] },
      // Access and execution logging need the account-wide API Gateway CloudWatch Logs role (one per account and
      // region, AWS::ApiGateway::Account, retained on delete). `apiGatewayCloudWatchRole=false` when it exists already.
      cloudWatchRole: props.apiGatewayCloudWatchRole ?? true,
      deployOptions: {
        stageName: props.stageName,
        throttlingRateLimit: STAGE_THROTTLING.rateLimit,
        throttlingBurstLimit: STAGE_THROTTLING.burstLimit,
        tracingEnabled: true,
        metricsEnabled: true,
        // Errors only, and never request/response bodies (dataTrace): bodies carry customer documents and prompts.
        loggingLevel: apigw.MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        accessLogDestination: new apigw.LogGroupLogDestination(accessLogs),
        accessLogFormat: apigw.AccessLogFormat.jsonWithStandardFields(),
      },
    });

    // Request bodies are validated by the handlers against the contract's zod schemas (shared/contract.ts), which
    // answer in the contract's error shape. The validator enforces what methods declare (path parameters; body models
    // once they are generated from shared/openapi.ts) and is the place to add them.
    const requestValidator = this.api.addRequestValidator('RequestValidator', {
      validateRequestBody: true,
      validateRequestParameters: true,
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
      const pathParameters = Object.fromEntries(
        [...route.path.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map((m) => [`method.request.path.${m[1]}`, true]),
      );
      const method = this.api.root.resourceForPath(route.path).addMethod(route.method, integration, {
        requestValidator,
        ...(Object.keys(pathParameters).length > 0 ? { requestParameters: pathParameters } : {}),
        ...(route.scope === null
          ? { authorizationType: apigw.AuthorizationType.NONE }
          : { authorizationType: apigw.AuthorizationType.CUSTOM, authorizer }),
      });
      if (route.scope === null) {
        Validations.of(method).acknowledge({
          id: 'AwsSolutions-APIG4',
          reason: `${route.method} ${route.path} is public by design (route table scope null): a liveness check for load balancers and uptime probes, it returns no tenant data.`,
        });
      }
      Validations.of(method).acknowledge({
        id: 'AwsSolutions-COG4',
        reason:
          'Clients are machines holding service API keys, not Cognito users: authorized routes use the Lambda REQUEST authorizer that checks x-api-key against the hashed keys in the apiKeys table (by design, see shared/infra/routes.ts).',
      });
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

    Validations.of(this.api).acknowledge({
      id: 'AwsSolutions-APIG3',
      reason:
        'No WAF web ACL for now (about 5 USD/month + per-request fees per stage): every data route needs an API key, the stage is throttled (STAGE_THROTTLING) and bodies are size-limited; revisit when the API is exposed to browsers or abuse appears.',
    });
    if (props.apiGatewayCloudWatchRole ?? true) {
      Validations.of(this.api).acknowledge({
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
        reason:
          'The account-wide API Gateway logging role uses the AWS-managed policy AWS documents for it; it only writes API Gateway logs, and AWS maintains it as logging needs change.',
      });
    }

    this.monitoring = new Monitoring(this, 'Monitoring', {
      stage: props.stageName,
      api: this.api,
      worker: this.functions.worker,
      deadLetterQueue: props.resources.runDeadLetterQueue,
      functions: Object.values(this.functions),
    });

    new CfnOutput(this, 'ApiUrl', { value: this.api.url, description: 'Base URL of the API (stage included)' });
  }
}
