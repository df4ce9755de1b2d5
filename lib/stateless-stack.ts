/**
 * The stateless half: one Lambda function per handler, the REST API built from the route table, the API-key
 * authorizer, the SQS-triggered worker and the scheduled reconciler. Everything comes from shared/infra/routes.ts (routes, per-handler access)
 * and shared/infra/resources.ts (worker limits); nothing here lists routes or handlers by hand.
 */
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { ERROR_CODES, type ErrorCode, JSON_CONTENT_TYPE } from '../shared/errors.js';
import { ENV } from '../shared/infra/env.js';
import { batchSettings, deliverSettings, reconcileSettings, workerSettings } from '../shared/infra/resources.js';
import { allHandlers, gatewaySettings, type HandlerName, handlerAccess, routes } from '../shared/infra/routes.js';
import { batchTerms } from '../shared/providers/batch-terms.js';
import type { ProviderId } from '../shared/task.js';
import { grantBedrockBatch } from './bedrock-batch.js';
import { bindAccess, bindProviderSecret } from './bind.js';
import { Monitoring } from './monitoring.js';
import { STATELESS_OUTPUTS } from './outputs.js';
import { grantProviders } from './provider-iam.js';
import type { StatefulResources } from './stateful-stack.js';
import { type Packaging, VisionFunction, WORKER_NATIVE_MODULES } from './vision-function.js';

/** How long API Gateway caches an authorizer answer per API key (shared with the local gateway). */
export const AUTHORIZER_CACHE_TTL_SECONDS = gatewaySettings.authorizerCacheSeconds;

/**
 * Per-key throttling: a usage plan bound to the stage throttles every client key at the contract's rate
 * (`gatewaySettings.throttle`); the authorizer names the key's API Gateway key as `usageIdentifierKey`, and the keys
 * CLI owns those keys. How the pieces fit: docs/decisions.md#per-key-throttling.
 */
export const PER_KEY_THROTTLE = {
  rateLimit: gatewaySettings.throttle.ratePerSecond,
  burstLimit: gatewaySettings.throttle.burst,
} as const;

/**
 * Stage throttling, the outer bound over all keys together (and the only bound for the public routes): by default
 * 10 x the per-key rate, i.e. ten clients at their full rate at once. API Gateway applies these stage limits to each
 * method on its own ("per-API, per-stage throttling limits are applied at the API method level", Request throttling
 * in the API Gateway developer guide), not to the stage's methods together. CDK context `stageThrottleRps` /
 * `stageThrottleBurst` (lib/app.ts) override it; it must stay below the account's regional API Gateway quota
 * (10,000 rps by default, 2,500 in some newer regions), which all APIs of the account share.
 */
export const DEFAULT_STAGE_THROTTLE = {
  rateLimit: 10 * PER_KEY_THROTTLE.rateLimit,
  burstLimit: 10 * PER_KEY_THROTTLE.burstLimit,
} as const;

export interface ThrottleLimits {
  readonly rateLimit: number;
  readonly burstLimit: number;
}

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
  /** Stage-wide throttle over all keys together. @default DEFAULT_STAGE_THROTTLE */
  readonly stageThrottle?: ThrottleLimits;
  /** E-mail address subscribed to the alarm topic. @default no subscription */
  readonly alarmEmail?: string;
}

/** Handlers that plan runs and therefore need the provider configuration (VISION_PROVIDERS, BEDROCK_MODEL_ID). */
export const PROVIDER_CONFIG_HANDLERS: readonly HandlerName[] = [
  'create-run',
  'estimates',
  'evaluations-create',
  'worker',
  'batcher',
];

/** Days the API access log is kept. */
export const API_ACCESS_LOG_RETENTION = logs.RetentionDays.THREE_MONTHS;

/** Memory and timeout per handler; API handlers must answer well within API Gateway's 29 s integration timeout. */
const sizing: Partial<Record<HandlerName, { memorySize: number; timeout: Duration }>> = {
  'create-run': { memorySize: 1024, timeout: Duration.seconds(20) },
  // Inspects an upload and plans it as create-run does (twice: standard and batch), without writing.
  estimates: { memorySize: 1024, timeout: Duration.seconds(20) },
  // Inspects up to 1,000 uploads (8 at a time) and writes up to a few thousand runs: the most an API call may take.
  'evaluations-create': { memorySize: 1024, timeout: Duration.seconds(28) },
  // The report of an evaluation whose last worker died: one query of up to a few thousand items.
  'evaluations-get': { memorySize: 1024, timeout: Duration.seconds(20) },
  worker: { memorySize: workerSettings.memoryMb, timeout: Duration.seconds(workerSettings.timeoutSeconds) },
  // Usage reads every run of the period (a few attributes of each, but DynamoDB still reads whole items, 1 MB a page):
  // a busy month is tens of pages. More memory is also more CPU for summing them.
  usage: { memorySize: 1024, timeout: Duration.seconds(25) },
  // A sweep reads a few hundred queued runs at most (reconcileSettings.pageSize per shard).
  reconcile: { memorySize: 512, timeout: Duration.seconds(120) },
  // Reads up to batchSettings.pageSize lines (each a document) and uploads them as one batch file.
  batcher: { memorySize: 1024, timeout: Duration.seconds(300) },
  // A batch of POSTs at once, each within webhookSettings.timeoutMs.
  deliver: { memorySize: deliverSettings.memoryMb, timeout: Duration.seconds(deliverSettings.timeoutSeconds) },
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
const gatewayErrors: {
  type: apigw.ResponseType;
  code: ErrorCode;
  message: string | null;
  /** The error's `details` (literal JSON). */
  details?: Record<string, unknown>;
  /** Extra response headers, as API Gateway mapping values (a literal in single quotes). */
  headers?: Record<string, string>;
}[] = [
  { type: apigw.ResponseType.UNAUTHORIZED, code: 'UNAUTHORIZED', message: 'Missing or invalid x-api-key' },
  { type: apigw.ResponseType.ACCESS_DENIED, code: 'FORBIDDEN', message: 'This API key may not call this route' },
  // A valid client key (the authorizer allowed it) whose usage-plan key is missing, deleted or not attached to this
  // stage's usage plan: API Gateway refuses it (403) before any handler runs. `keys sync-usage-plan` repairs it.
  {
    type: apigw.ResponseType.INVALID_API_KEY,
    code: 'FORBIDDEN',
    message: 'This API key is not enabled for this API (it has no usage plan key); ask the operator to enable it',
  },
  // The key's usage-plan throttle (PER_KEY_THROTTLE) or the stage throttle.
  // The contract's RATE_LIMITED carries Retry-After; a token bucket refills within a second at these rates.
  {
    type: apigw.ResponseType.THROTTLED,
    code: 'RATE_LIMITED',
    message: 'Too many requests; retry later',
    headers: { 'retry-after': "'1'" },
  },
  // The usage plan sets no quota; this keeps a quota answer in the contract's shape should one be added.
  { type: apigw.ResponseType.QUOTA_EXCEEDED, code: 'RATE_LIMITED', message: 'Request quota exceeded' },
  // API Gateway answers an unknown path or method with 403 "Missing Authentication Token"; it is a 404.
  { type: apigw.ResponseType.MISSING_AUTHENTICATION_TOKEN, code: 'NOT_FOUND', message: 'No such route' },
  // Answered like the handlers' body limit (decisions.md): 413 FILE_TOO_LARGE is for uploads, not request bodies.
  {
    type: apigw.ResponseType.REQUEST_TOO_LARGE,
    code: 'INVALID_REQUEST',
    message: 'Request body exceeds 10 MB, the API limit; upload files with /v1/uploads/presign',
    details: { limitBytes: gatewaySettings.maxBodyBytes, issues: [{ path: '(root)', message: 'body too large' }] },
  },
  { type: apigw.ResponseType.DEFAULT_4XX, code: 'INVALID_REQUEST', message: null },
  { type: apigw.ResponseType.DEFAULT_5XX, code: 'INTERNAL_ERROR', message: null },
];

/** The contract's error body as an API Gateway (VTL) template. */
export function gatewayErrorTemplate(
  code: ErrorCode,
  message: string | null,
  details?: Record<string, unknown>,
): string {
  const { status, retryable } = ERROR_CODES[code];
  const text = message === null ? '$context.error.messageString' : JSON.stringify(message);
  const extra = details ? `,"details":${JSON.stringify(details)}` : '';
  return `{"error":{"code":"${code}","message":${text},"status":${status},"retryable":${retryable}${extra},"requestId":"$context.requestId"}}`;
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
  readonly usagePlan: apigw.UsagePlan;

  constructor(scope: Construct, id: string, props: StatelessStackProps) {
    super(scope, id, props);
    const providers = props.providers ?? ['local'];
    const stageThrottle = props.stageThrottle ?? DEFAULT_STAGE_THROTTLE;

    // One function per handler named in the route table, plus those no route invokes (UNROUTED_HANDLERS).
    const handlers = allHandlers();
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
        vf.fn.addEnvironment(ENV.providers, providers.join(','));
        if (props.bedrockModelId) vf.fn.addEnvironment(ENV.bedrockModelId, props.bedrockModelId);
      }
      if (isWorker) {
        // Only the worker calls providers: it alone reads the keys and gets IAM for the IAM providers.
        bindProviderSecret(vf.fn, props.resources);
        grantProviders(vf.fn, { providers, ...(props.bedrockModelId ? { bedrockModelId: props.bedrockModelId } : {}) });
        vf.fn.addEnvironment(ENV.metricsStage, props.stageName);
      }
      acknowledgeFunctionFindings(vf.fn);
      functions[handler] = vf.fn;
    }
    this.functions = functions as Record<HandlerName, lambda.Function>;

    // The batcher submits and polls provider batches on a schedule (shared/batching/batcher.ts); it reads the
    // providers' keys (their batch APIs), as the worker does.
    bindProviderSecret(this.functions.batcher, props.resources);
    // Bedrock's batch inference runs as jobs with a service role, for a model its batch interface takes (the same
    // table the estimate reads, shared/providers/batch-terms.ts).
    const bedrockModelId = props.bedrockModelId;
    if (
      providers.includes('bedrock') &&
      bedrockModelId !== undefined &&
      batchTerms('bedrock', { [ENV.bedrockModelId]: bedrockModelId }).viaInterface
    ) {
      grantBedrockBatch(this.functions.batcher, props.resources.uploadsBucket, bedrockModelId);
    }
    new events.Rule(this, 'BatcherSchedule', {
      description: 'Submits waiting batch requests to the providers, polls their batches, and sends answered runs back',
      schedule: events.Schedule.rate(Duration.minutes(batchSettings.everyMinutes)),
      targets: [new targets.LambdaFunction(this.functions.batcher, { retryAttempts: 0 })],
    });

    // The reconciler sweeps the queued runs on a schedule (shared/worker/reconcile.ts).
    new events.Rule(this, 'ReconcileSchedule', {
      description: 'Resends lost run messages; fails and refunds runs whose message was dead-lettered or expired',
      schedule: events.Schedule.rate(Duration.minutes(reconcileSettings.everyMinutes)),
      targets: [new targets.LambdaFunction(this.functions.reconcile, { retryAttempts: 0 })],
    });

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
      // The authorizer hands API Gateway the usage-plan key of the caller (usageIdentifierKey); see PER_KEY_THROTTLE.
      apiKeySourceType: apigw.ApiKeySourceType.AUTHORIZER,
      deployOptions: {
        stageName: props.stageName,
        throttlingRateLimit: stageThrottle.rateLimit,
        throttlingBurstLimit: stageThrottle.burstLimit,
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
    // checks the route's scope. Its answer also names the key's usage-plan key (usageIdentifierKey).
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
          ? { authorizationType: apigw.AuthorizationType.NONE, apiKeyRequired: false }
          : { authorizationType: apigw.AuthorizationType.CUSTOM, authorizer, apiKeyRequired: true }),
      });
      if (route.scope === null) {
        Validations.of(method).acknowledge({
          id: 'AwsSolutions-APIG4',
          reason: `${route.method} ${route.path} is public by design (route table scope null): ${route.publicReason ?? 'no reason given'}.`,
        });
      }
      Validations.of(method).acknowledge({
        id: 'AwsSolutions-COG4',
        reason:
          'Clients are machines holding service API keys, not Cognito users: authorized routes use the Lambda REQUEST authorizer that checks x-api-key against the hashed keys in the apiKeys table (by design, see shared/infra/routes.ts).',
      });
    }

    for (const { type, code, message, details, headers } of gatewayErrors) {
      this.api.addGatewayResponse(`${pascal(type.responseType)}Response`, {
        type,
        statusCode: String(ERROR_CODES[code].status),
        responseHeaders: {
          'content-type': `'${JSON_CONTENT_TYPE}'`,
          'x-request-id': 'context.requestId',
          ...headers,
        },
        templates: { 'application/json': gatewayErrorTemplate(code, message, details) },
      });
    }

    Validations.of(this.api).acknowledge({
      id: 'AwsSolutions-APIG3',
      reason:
        'No WAF web ACL for now (about 5 USD/month + per-request fees per stage): every data route needs an API key, each key is throttled by the usage plan (PER_KEY_THROTTLE), the stage as a whole too (stage throttle), and bodies are size-limited; revisit when the API is exposed to browsers or abuse appears.',
    });
    if (props.apiGatewayCloudWatchRole ?? true) {
      Validations.of(this.api).acknowledge({
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
        reason:
          'The account-wide API Gateway logging role uses the AWS-managed policy AWS documents for it; it only writes API Gateway logs, and AWS maintains it as logging needs change.',
      });
    }

    // Per-key throttling (PER_KEY_THROTTLE). No quota: spending is bounded by each tenant's credit, not a request count.
    this.usagePlan = this.api.addUsagePlan('UsagePlan', {
      name: `vision-${props.stageName}`,
      description: `Vision analysis service (${props.stageName}): per-key throttle; one API key per client key (npm run keys)`,
      throttle: PER_KEY_THROTTLE,
      apiStages: [{ api: this.api, stage: this.api.deploymentStage }],
    });

    this.monitoring = new Monitoring(this, 'Monitoring', {
      stage: props.stageName,
      api: this.api,
      worker: this.functions.worker,
      reconciler: this.functions.reconcile,
      deadLetterQueue: props.resources.runDeadLetterQueue,
      runQueue: props.resources.runQueue,
      deliverer: this.functions.deliver,
      webhookDeadLetterQueue: props.resources.webhookDeadLetterQueue,
      eventBusFeedDeadLetterQueue: props.resources.eventBusFeedDeadLetterQueue,
      functions: Object.values(this.functions),
      ...(props.alarmEmail ? { alarmEmail: props.alarmEmail } : {}),
    });

    new CfnOutput(this, STATELESS_OUTPUTS.apiUrl, {
      value: this.api.url,
      description: 'Base URL of the API (stage included)',
    });
    new CfnOutput(this, STATELESS_OUTPUTS.restApiId, { value: this.api.restApiId, description: 'REST API id' });
    new CfnOutput(this, STATELESS_OUTPUTS.usagePlanId, {
      value: this.usagePlan.usagePlanId,
      description: 'Usage plan that throttles each client key (the keys CLI attaches API Gateway keys to it)',
    });
    new CfnOutput(this, STATELESS_OUTPUTS.alarmTopicArn, {
      value: this.monitoring.alarmTopic.topicArn,
      description: 'SNS topic notified by every alarm (ALARM and OK)',
    });
  }
}
