/**
 * Behaviour of the synthesized stacks, derived from the same data the stacks are built from
 * (shared/infra/resources.ts and shared/infra/routes.ts): adding a table, route or grant there is checked here
 * without touching this file.
 * Over 400 lines: one synthesis shared by every assertion (synthesizing is the slow part).
 */
import { Match } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { uploadExpiryDays } from '../../lib/app.js';
import { PROVIDER_SECRET_ENV } from '../../lib/bind.js';
import { ALARM_THRESHOLDS } from '../../lib/monitoring.js';
import { STATEFUL_OUTPUTS, STATELESS_OUTPUTS, tableOutputKey } from '../../lib/outputs.js';
import { TEXTRACT_ACTIONS } from '../../lib/provider-iam.js';
import {
  AUTHORIZER_CACHE_TTL_SECONDS,
  DEFAULT_STAGE_THROTTLE,
  PER_KEY_THROTTLE,
  PROVIDER_CONFIG_HANDLERS,
  type StatelessStack,
} from '../../lib/stateless-stack.js';
import { ERROR_CODES } from '../../shared/errors.js';
import { ENV } from '../../shared/infra/env.js';
import { METRIC_DIMENSIONS, METRIC_NAMES, METRICS_NAMESPACE } from '../../shared/infra/metrics.js';
import {
  batchSettings,
  eventBus,
  type IndexDefinition,
  type KeyAttribute,
  reconcileSettings,
  runQueue,
  type TableName,
  tables,
  uploadsBucket,
  webhookQueue,
  workerSettings,
} from '../../shared/infra/resources.js';
import { allHandlers, gatewaySettings, type HandlerName, handlerAccess, routes } from '../../shared/infra/routes.js';
import { buildTestApp, logicalIdOf, refersTo, templateOf } from './synth.js';

type Json = Record<string, unknown>;
interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
}

const { stateful, stateless } = buildTestApp();
const statefulTemplate = templateOf(stateful);
const statelessTemplate = templateOf(stateless);
const statelessResources = statelessTemplate.toJSON().Resources as Record<string, { Type: string; Properties: Json }>;

const tableNames = Object.keys(tables) as TableName[];
const handlers = Object.keys(stateless.functions) as HandlerName[];
const tableLogicalId = (name: TableName) => logicalIdOf(stateful, stateful.tables[name]);
const functionLogicalId = (handler: HandlerName) => logicalIdOf(stateless, stateless.functions[handler]);

function keySchema(partitionKey: KeyAttribute, sortKey?: KeyAttribute): Json[] {
  return [
    { AttributeName: partitionKey.name, KeyType: 'HASH' },
    ...(sortKey ? [{ AttributeName: sortKey.name, KeyType: 'RANGE' }] : []),
  ];
}

function functionProps(handler: HandlerName): Json {
  const resource = statelessResources[functionLogicalId(handler)];
  if (!resource) throw new Error(`no function for ${handler}`);
  return resource.Properties;
}

/** Every statement of the policies attached to a handler's role (in `stack`, default: the default app's). */
function statementsOf(handler: HandlerName, stack: StatelessStack = stateless): Statement[] {
  const resources = templateOf(stack).toJSON().Resources as Record<string, { Type: string; Properties: Json }>;
  const fn = resources[logicalIdOf(stack, stack.functions[handler])]?.Properties ?? {};
  const role = (fn.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
  return Object.values(resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy' && refersTo(r.Properties.Roles, role))
    .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

/** A function's environment variables in `stack`. */
function variablesOf(stack: StatelessStack, handler: HandlerName): Record<string, unknown> {
  const resources = templateOf(stack).toJSON().Resources as Record<string, { Properties: Json }>;
  const fn = resources[logicalIdOf(stack, stack.functions[handler])]?.Properties ?? {};
  return (fn.Environment as { Variables: Record<string, unknown> }).Variables;
}

const actionsOf = (s: Statement): string[] => (Array.isArray(s.Action) ? s.Action : [s.Action]);
const DYNAMODB_WRITE = /^dynamodb:(PutItem|UpdateItem|DeleteItem|BatchWriteItem|\*)$/;

describe('stateful stack', () => {
  test('one table per entry of `tables`', () => {
    statefulTemplate.resourceCountIs('AWS::DynamoDB::Table', tableNames.length);
  });

  test.each(tableNames)('table %s: keys, indexes, TTL, PITR, encryption, retained', (name) => {
    const def = tables[name];
    const sortKey = 'sortKey' in def ? def.sortKey : undefined;
    const ttl = 'timeToLiveAttribute' in def ? def.timeToLiveAttribute : undefined;
    const indexes = def.globalIndexes as readonly IndexDefinition[];
    const matching = statefulTemplate.findResources('AWS::DynamoDB::Table', {
      Properties: {
        KeySchema: keySchema(def.partitionKey, sortKey),
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        // SSEEnabled without a key = the AWS-managed KMS key (aws/dynamodb), not the default AWS-owned key.
        SSESpecification: { SSEEnabled: true },
        TimeToLiveSpecification: ttl ? { AttributeName: ttl, Enabled: true } : Match.absent(),
        GlobalSecondaryIndexes:
          indexes.length === 0
            ? Match.absent()
            : indexes.map((index) => ({
                IndexName: index.indexName,
                KeySchema: keySchema(index.partitionKey, index.sortKey),
                Projection: { ProjectionType: index.projection ?? 'ALL' },
              })),
      },
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
    // Tables of the same shape (usage and quality counters) match each other's properties: this one is among them.
    expect(Object.keys(matching)).toContain(tableLogicalId(name));
  });

  test('uploads bucket: no public access, SSE-S3, expiry of the upload prefix, browser PUT via CORS', () => {
    statefulTemplate.hasResourceProperties('AWS::S3::Bucket', {
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
      },
      // Versioned, so a run reads the version creation inspected; a replaced version is kept one day.
      VersioningConfiguration: { Status: 'Enabled' },
      LifecycleConfiguration: {
        Rules: Match.arrayWith([
          Match.objectLike({
            Prefix: uploadsBucket.keyPrefix,
            ExpirationInDays: uploadExpiryDays(24),
            NoncurrentVersionExpiration: { NoncurrentDays: 1 },
            Status: 'Enabled',
          }),
          Match.objectLike({ Prefix: uploadsBucket.keyPrefix, ExpiredObjectDeleteMarker: true, Status: 'Enabled' }),
          // Page images of PDF runs expire with the same retention as the uploads.
          Match.objectLike({
            Prefix: uploadsBucket.previewsPrefix,
            ExpirationInDays: uploadExpiryDays(24),
            NoncurrentVersionExpiration: { NoncurrentDays: 1 },
            Status: 'Enabled',
          }),
          Match.objectLike({
            Prefix: uploadsBucket.previewsPrefix,
            ExpiredObjectDeleteMarker: true,
            Status: 'Enabled',
          }),
        ]),
      },
      CorsConfiguration: {
        CorsRules: [
          Match.objectLike({
            AllowedMethods: ['PUT'],
            AllowedOrigins: ['*'],
            AllowedHeaders: Match.arrayWith(['Content-Type', 'Content-Length']),
          }),
        ],
      },
    });
  });

  test('uploads bucket policy denies requests without TLS', () => {
    statefulTemplate.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Principal: { AWS: '*' },
            Action: 's3:*',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ]),
      },
    });
  });

  test("run queue: visibility timeout at the worker's timeout (Lambda's floor; the lease hides a held message), DLQ redrive, encryption", () => {
    const dlq = logicalIdOf(stateful, stateful.runDeadLetterQueue);
    const queue = statefulTemplate.toJSON().Resources[logicalIdOf(stateful, stateful.runQueue)].Properties;
    // Lambda refuses an SQS event source whose visibility timeout is below the function's timeout.
    expect(queue.VisibilityTimeout).toBe(workerSettings.timeoutSeconds);
    // The heartbeat renews every third of the lease: a held message is never left to the queue's own timeout, and a
    // dead worker's message comes back within a lease, a fifteenth of the visibility timeout.
    expect(workerSettings.leaseSeconds * 15).toBeLessThanOrEqual(queue.VisibilityTimeout);
    // At least AWS's 5 receives; a poison message reaches the DLQ within 5 leases and receives (20 s long polls).
    expect(queue.RedrivePolicy.maxReceiveCount).toBeGreaterThanOrEqual(5);
    expect(runQueue.maxReceiveCount * (workerSettings.leaseSeconds + 20)).toBeLessThanOrEqual(10 * 60);
    expect(queue).toEqual(
      expect.objectContaining({
        VisibilityTimeout: runQueue.visibilityTimeoutSeconds,
        MessageRetentionPeriod: runQueue.retentionSeconds,
        SqsManagedSseEnabled: true,
        RedrivePolicy: {
          deadLetterTargetArn: { 'Fn::GetAtt': [dlq, 'Arn'] },
          maxReceiveCount: runQueue.maxReceiveCount,
        },
      }),
    );
    statefulTemplate.hasResourceProperties('AWS::SQS::Queue', {
      MessageRetentionPeriod: runQueue.deadLetter.retentionSeconds,
      SqsManagedSseEnabled: true,
    });
  });

  test('every queue denies requests without TLS', () => {
    const policies = statefulTemplate.findResources('AWS::SQS::QueuePolicy', {
      Properties: {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          ]),
        },
      },
    });
    expect(Object.keys(policies)).toHaveLength(Object.keys(statefulTemplate.findResources('AWS::SQS::Queue')).length);
    expect(Object.keys(policies).length).toBeGreaterThanOrEqual(6);
  });

  test('outputs the bucket name', () => {
    statefulTemplate.hasOutput('UploadsBucketName', {});
  });

  test.each(tableNames)('outputs the name of table %s (read by `npm run keys -- --stack`)', (name) => {
    statefulTemplate.hasOutput(tableOutputKey(name), { Value: { Ref: tableLogicalId(name) } });
  });

  test('its own outputs are exactly the ones lib/outputs.ts names', () => {
    // PublishOutput… are CDK's cross-stack references for the stateless stack (weak references), not ours.
    const own = Object.keys(statefulTemplate.toJSON().Outputs).filter((k) => !k.startsWith('PublishOutput'));
    expect(own.sort()).toEqual([...Object.values(STATEFUL_OUTPUTS), ...tableNames.map(tableOutputKey)].sort());
  });
});

describe('stateless stack: functions', () => {
  test('one function per handler in the route table, plus authorizer, worker and reconciler', () => {
    const expected = new Set<HandlerName>(allHandlers());
    expect(new Set(handlers)).toEqual(expected);
    statelessTemplate.resourceCountIs('AWS::Lambda::Function', expected.size);
  });

  test.each(handlers)('%s runs on arm64 with Node.js 22 (zip) or the Node.js 22 image', (handler) => {
    const props = functionProps(handler);
    expect(props.Architectures).toEqual(['arm64']);
    if (props.PackageType === 'Image') {
      expect(handler).toBe('worker');
      expect(props.ImageConfig).toEqual({ Command: ['index.handler'] });
    } else {
      expect(props.Runtime).toBe('nodejs22.x');
      expect(props.Handler).toBe('index.handler');
    }
    expect(props.TracingConfig).toEqual({ Mode: 'Active' });
  });

  test.each(handlers)('%s has exactly the resource env vars of its handlerAccess entry', (handler) => {
    const access = handlerAccess[handler];
    const variables = (functionProps(handler).Environment as { Variables: Json }).Variables;
    for (const name of tableNames) {
      const { envVar } = tables[name];
      const bound = envVar in variables && refersTo(variables[envVar], tableLogicalId(name));
      // Pairs with the variable name so a failure says which one.
      expect([envVar, bound]).toEqual([envVar, access.tables?.[name] !== undefined]);
      if (!bound) expect(variables).not.toHaveProperty(envVar);
    }
    expect(uploadsBucket.envVar in variables).toBe(access.bucket !== undefined || access.batchObjects !== undefined);
    // Presigned addresses are built on the bucket's regional domain name as CloudFormation resolves it (and the
    // dashboard's Content-Security-Policy names that host).
    const knowsHost = access.bucket !== undefined || access.storageAddress === true;
    expect(uploadsBucket.domainEnvVar in variables).toBe(knowsHost);
    if (knowsHost) expect(JSON.stringify(variables[uploadsBucket.domainEnvVar])).toContain('RegionalDomainName');
    expect(runQueue.envVar in variables).toBe(access.queue !== undefined);
    expect(webhookQueue.envVar in variables).toBe(access.webhookQueue !== undefined);
    expect(webhookQueue.deadLetter.envVar in variables).toBe(access.webhookQueue === 'consume');
    expect(eventBus.feedQueue.envVar in variables).toBe(access.eventBus !== undefined);
    expect(ENV.webhookSecretStore in variables).toBe(access.webhookSecrets !== undefined);
    // Receivers on localhost are for the local stack only.
    expect(ENV.webhookAllowLocalhost in variables).toBe(false);
    expect(variables.SERVICE_COST_CONFIRMATION_THRESHOLD_USD).toBe('1');
    expect(variables.NODE_OPTIONS).toBe('--enable-source-maps');
  });

  test.each(handlers)('%s: IAM grants follow handlerAccess (tables, bucket, queue)', (handler) => {
    const access = handlerAccess[handler];
    const statements = statementsOf(handler).filter((s) => s.Effect === 'Allow');
    for (const name of tableNames) {
      const touching = statements.filter((s) => refersTo(s.Resource, tableLogicalId(name)));
      const level = access.tables?.[name];
      if (level === undefined) {
        expect([name, touching]).toEqual([name, []]);
        continue;
      }
      const actions = touching.flatMap(actionsOf);
      expect(actions).toContain('dynamodb:GetItem');
      expect([name, actions.some((a) => DYNAMODB_WRITE.test(a))]).toEqual([name, level === 'readwrite']);
    }
    const actions = statements.flatMap(actionsOf);
    expect(actions.some((a) => a.startsWith('s3:'))).toBe(
      access.bucket !== undefined || access.batchObjects !== undefined,
    );
    expect(actions.some((a) => a.startsWith('s3:Put'))).toBe(
      access.bucket === 'presign-put' || access.previews === 'write' || access.batchObjects !== undefined,
    );
    const on = (resource: IConstruct) => {
      const id = logicalIdOf(stateful, resource);
      return statements.filter((st) => refersTo(st.Resource, id)).flatMap(actionsOf);
    };
    // The worker (consume) sends too: a long document's group messages.
    expect(on(stateful.runQueue).includes('sqs:SendMessage')).toBe(access.queue !== undefined);
    expect(on(stateful.runQueue).includes('sqs:ReceiveMessage')).toBe(access.queue === 'consume');
    // The worker hides the message it holds for as long as its lease (shared/worker/heartbeat.ts).
    expect(on(stateful.runQueue).includes('sqs:ChangeMessageVisibility')).toBe(access.queue === 'consume');
    expect(on(stateful.webhookQueue).includes('sqs:SendMessage')).toBe(access.webhookQueue !== undefined);
    expect(on(stateful.webhookQueue).includes('sqs:ReceiveMessage')).toBe(access.webhookQueue === 'consume');
    expect(on(stateful.webhookDeadLetterQueue).includes('sqs:SendMessage')).toBe(access.webhookQueue === 'consume');
    expect(on(stateful.eventBusFeedQueue).includes('sqs:SendMessage')).toBe(access.eventBus === 'publish');
    expect(on(stateful.webhookSecretKey)).toEqual(access.webhookSecrets ? ['secretsmanager:GetSecretValue'] : []);
  });

  test('the dashboard knows its bucket’s regional host, for its CSP, and has no permission on the bucket', () => {
    const variables = (functionProps('dashboard').Environment as { Variables: Json }).Variables;
    expect(refersTo(variables[uploadsBucket.domainEnvVar], logicalIdOf(stateful, stateful.uploadsBucket))).toBe(true);
    expect(JSON.stringify(variables[uploadsBucket.domainEnvVar])).toContain('RegionalDomainName');
    expect(uploadsBucket.envVar in variables).toBe(false);
    expect(
      statementsOf('dashboard')
        .flatMap(actionsOf)
        .filter((a) => a.startsWith('s3:')),
    ).toEqual([]);
  });

  test('create-run may send to the run queue and write the runs table', () => {
    const allowed = statementsOf('create-run').filter((s) => s.Effect === 'Allow');
    const allows = (action: string, logicalId: string) =>
      allowed.some((s) => actionsOf(s).includes(action) && refersTo(s.Resource, logicalId));
    expect(allows('sqs:SendMessage', logicalIdOf(stateful, stateful.runQueue))).toBe(true);
    expect(allows('dynamodb:PutItem', tableLogicalId('runs'))).toBe(true);
    expect(allows('dynamodb:UpdateItem', tableLogicalId('runs'))).toBe(true);
  });

  test('get-run has no write actions and no SQS actions', () => {
    const actions = statementsOf('get-run').flatMap(actionsOf);
    expect(actions.filter((a) => DYNAMODB_WRITE.test(a) || a.startsWith('sqs:') || a.startsWith('s3:'))).toEqual([]);
  });

  test('S3 grants are limited to the upload prefix, to one action each on the previews prefix, and to the batch prefix', () => {
    for (const handler of handlers) {
      for (const s of statementsOf(handler)) {
        if (!actionsOf(s).some((a) => a.startsWith('s3:Put') || a.startsWith('s3:GetObject'))) continue;
        const resource = JSON.stringify(s.Resource);
        if (resource.includes(`/${uploadsBucket.batchPrefix}*`)) {
          // The batch lane's lines and answers: the worker and the batcher only, and nothing else in that statement.
          expect([handler, handlerAccess[handler].batchObjects]).toEqual([handler, 'readwrite']);
          expect([handler, resource.includes(`/${uploadsBucket.keyPrefix}*`)]).toEqual([handler, false]);
          expect(actionsOf(s).sort()).toEqual(['s3:GetObject', 's3:PutObject']);
          continue;
        }
        if (resource.includes(`/${uploadsBucket.previewsPrefix}*`)) {
          expect([handler, resource.includes(`/${uploadsBucket.keyPrefix}*`)]).toEqual([handler, false]);
          expect([handler, actionsOf(s)]).toEqual([
            handler,
            [handlerAccess[handler].previews === 'write' ? 's3:PutObject' : 's3:GetObject'],
          ]);
          continue;
        }
        expect(resource).toContain(`/${uploadsBucket.keyPrefix}*`);
      }
    }
  });

  test('page images: only the worker writes them (PutObject only), only file-url reads them', () => {
    const onPreviews = (handler: HandlerName) =>
      statementsOf(handler)
        .filter((s) => s.Effect === 'Allow' && JSON.stringify(s.Resource).includes(`/${uploadsBucket.previewsPrefix}`))
        .flatMap(actionsOf);
    const granted = Object.fromEntries(
      handlers.map((handler) => [handler, onPreviews(handler)] as const).filter(([, actions]) => actions.length > 0),
    );
    expect(granted).toEqual({ worker: ['s3:PutObject'], 'file-url': ['s3:GetObject'] });
    // The worker may still only read uploads: no write action on the upload prefix.
    const uploadWrites = statementsOf('worker')
      .filter((s) => JSON.stringify(s.Resource).includes(`/${uploadsBucket.keyPrefix}`))
      .flatMap(actionsOf)
      .filter((a) => a.startsWith('s3:Put') || a.startsWith('s3:Delete'));
    expect(uploadWrites).toEqual([]);
  });

  test('every function behind a route answers within API Gateway’s 29 s integration timeout', () => {
    const routed = [...new Set(routes.map((r) => r.handler))];
    expect(routed.length).toBeGreaterThan(5);
    for (const handler of routed) {
      const timeout = Number(functionProps(handler).Timeout ?? 3);
      expect({ handler, under29s: timeout < 29 }).toEqual({ handler, under29s: true });
    }
    // usage reads a whole period of runs: more time and memory than the default.
    expect(functionProps('usage')).toMatchObject({ Timeout: 25, MemorySize: 1024 });
  });

  test('worker: SQS event source with partial batch failures, batch size and max concurrency', () => {
    // The worker's and the deliver function's (test/infra/events.test.ts).
    statelessTemplate.resourceCountIs('AWS::Lambda::EventSourceMapping', 2);
    statelessTemplate.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: functionLogicalId('worker') },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      BatchSize: workerSettings.batchSize,
      ScalingConfig: { MaximumConcurrency: workerSettings.maxConcurrency },
    });
    const props = functionProps('worker');
    expect(props.Timeout).toBe(workerSettings.timeoutSeconds);
    expect(props.MemorySize).toBe(workerSettings.memoryMb);
  });

  test('reconcile: invoked on a schedule, may send to the run queue and query the queued index, nothing else on SQS', () => {
    statelessTemplate.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: `rate(${reconcileSettings.everyMinutes} minutes)`,
      State: 'ENABLED',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [functionLogicalId('reconcile'), 'Arn'] } })],
    });
    statelessTemplate.hasResourceProperties('AWS::Lambda::Permission', {
      FunctionName: { 'Fn::GetAtt': [functionLogicalId('reconcile'), 'Arn'] },
      Principal: 'events.amazonaws.com',
    });
    const allowed = statementsOf('reconcile').filter((s) => s.Effect === 'Allow');
    const actions = allowed.flatMap(actionsOf);
    expect(actions).toContain('sqs:SendMessage');
    expect(actions).not.toContain('sqs:ReceiveMessage');
    expect(actions).toContain('dynamodb:Query');
    expect(actions.some((a) => a.startsWith('s3:'))).toBe(false);
  });

  test('batcher: invoked on a schedule, sends runs back to the run queue, the batch table and prefix only', () => {
    statelessTemplate.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: `rate(${batchSettings.everyMinutes} minutes)`,
      State: 'ENABLED',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [functionLogicalId('batcher'), 'Arn'] } })],
    });
    const actions = statementsOf('batcher')
      .filter((s) => s.Effect === 'Allow')
      .flatMap(actionsOf);
    expect(actions).toContain('sqs:SendMessage');
    expect(actions).not.toContain('sqs:ReceiveMessage');
    expect(actions.filter((a) => a.startsWith('s3:')).sort()).toEqual(['s3:GetObject', 's3:PutObject']);
  });

  test('log groups keep one month', () => {
    const groups = statelessTemplate.findResources('AWS::Logs::LogGroup', { Properties: { RetentionInDays: 30 } });
    expect(Object.keys(groups)).toHaveLength(handlers.length);
  });
});

describe('stateless stack: API', () => {
  /** Full path of every API Gateway resource, from the template's PathPart/ParentId chain. */
  const paths = new Map<string, string>();
  const resolvePath = (id: string): string => {
    const known = paths.get(id);
    if (known !== undefined) return known;
    const props = statelessResources[id]?.Properties;
    if (!props) throw new Error(`unknown resource ${id}`);
    const parent = props.ParentId as { Ref?: string };
    const full = `${parent.Ref ? resolvePath(parent.Ref) : ''}/${props.PathPart as string}`;
    paths.set(id, full);
    return full;
  };
  const methods = Object.values(statelessResources)
    .filter((r) => r.Type === 'AWS::ApiGateway::Method')
    .map((r) => {
      const resourceId = r.Properties.ResourceId as { Ref?: string };
      return {
        method: r.Properties.HttpMethod as string,
        path: resourceId.Ref ? resolvePath(resourceId.Ref) : '/',
        props: r.Properties,
      };
    });
  const authorizerId = logicalIdOf(stateless, stateless.node.findChild('ApiKeyAuthorizer'));

  test('exactly the routes of the route table exist', () => {
    expect(methods.map((m) => `${m.method} ${m.path}`).sort()).toEqual(
      routes.map((r) => `${r.method} ${r.path}`).sort(),
    );
  });

  test.each(routes.map((r) => [`${r.method} ${r.path}`, r] as const))(
    '%s: authorization and integration',
    (_, route) => {
      const method = methods.find((m) => m.method === route.method && m.path === route.path);
      expect(method).toBeDefined();
      if (route.scope === null) {
        expect(method?.props.AuthorizationType).toBe('NONE');
        expect(method?.props.AuthorizerId).toBeUndefined();
        expect(method?.props.ApiKeyRequired).toBe(false);
      } else {
        expect(method?.props.AuthorizationType).toBe('CUSTOM');
        expect(method?.props.AuthorizerId).toEqual({ Ref: authorizerId });
        // The usage plan counts the key the authorizer names (usageIdentifierKey) only where a key is required.
        expect(method?.props.ApiKeyRequired).toBe(true);
      }
      const integration = method?.props.Integration as { Type: string; Uri: unknown };
      expect(integration.Type).toBe('AWS_PROXY');
      expect(refersTo(integration.Uri, functionLogicalId(route.handler))).toBe(true);
    },
  );

  test('API keys are required on exactly the authorized methods', () => {
    const requiring = methods.filter((m) => m.props.ApiKeyRequired === true).map((m) => `${m.method} ${m.path}`);
    expect(requiring.sort()).toEqual(
      routes
        .filter((r) => r.scope !== null)
        .map((r) => `${r.method} ${r.path}`)
        .sort(),
    );
    expect(requiring.length).toBeGreaterThan(0);
  });

  test('the API takes its API keys from the authorizer (usageIdentifierKey), not from a header', () => {
    statelessTemplate.resourceCountIs('AWS::ApiGateway::RestApi', 1);
    statelessTemplate.hasResourceProperties('AWS::ApiGateway::RestApi', { ApiKeySourceType: 'AUTHORIZER' });
  });

  test('a usage plan throttles each key at the contract rate (20 rps / burst 40), bound to the API stage', () => {
    expect(PER_KEY_THROTTLE).toEqual({
      rateLimit: gatewaySettings.throttle.ratePerSecond,
      burstLimit: gatewaySettings.throttle.burst,
    });
    expect(PER_KEY_THROTTLE).toEqual({ rateLimit: 20, burstLimit: 40 });
    const plans = statelessTemplate.findResources('AWS::ApiGateway::UsagePlan');
    expect(Object.keys(plans)).toHaveLength(1);
    const plan = Object.values(plans)[0]?.Properties as Json;
    expect(plan.Throttle).toEqual({ RateLimit: 20, BurstLimit: 40 });
    expect(plan.Quota).toBeUndefined();
    const restApiId = logicalIdOf(stateless, stateless.api);
    const stageId = logicalIdOf(stateless, stateless.api.deploymentStage);
    expect(plan.ApiStages).toEqual([expect.objectContaining({ ApiId: { Ref: restApiId }, Stage: { Ref: stageId } })]);
    // The CLI attaches keys at run time; the template has none.
    statelessTemplate.resourceCountIs('AWS::ApiGateway::ApiKey', 0);
    statelessTemplate.resourceCountIs('AWS::ApiGateway::UsagePlanKey', 0);
  });

  test('/health is public', () => {
    expect(methods.find((m) => m.path === '/health')?.props.AuthorizationType).toBe('NONE');
  });

  test('the API-key authorizer reads x-api-key and caches for at most 60 s', () => {
    const authorizer = statelessResources[authorizerId]?.Properties;
    expect(authorizer?.Type).toBe('REQUEST');
    expect(authorizer?.IdentitySource).toBe('method.request.header.x-api-key');
    expect(authorizer?.AuthorizerResultTtlInSeconds).toBeLessThanOrEqual(60);
    expect(authorizer?.AuthorizerResultTtlInSeconds).toBe(AUTHORIZER_CACHE_TTL_SECONDS);
    expect(refersTo(authorizer?.AuthorizerUri, functionLogicalId('authorizer'))).toBe(true);
  });

  test('stage throttling (the outer bound over all keys): 10 x the per-key limits by default, on every method', () => {
    expect(DEFAULT_STAGE_THROTTLE).toEqual({ rateLimit: 200, burstLimit: 400 });
    statelessTemplate.hasResourceProperties('AWS::ApiGateway::Stage', {
      MethodSettings: Match.arrayWith([
        Match.objectLike({
          HttpMethod: '*',
          ResourcePath: '/*',
          ThrottlingRateLimit: DEFAULT_STAGE_THROTTLE.rateLimit,
          ThrottlingBurstLimit: DEFAULT_STAGE_THROTTLE.burstLimit,
        }),
      ]),
      TracingEnabled: true,
    });
  });

  test('stage throttling follows the stageThrottleRps / stageThrottleBurst context; the per-key plan does not', () => {
    const { stateless: l } = buildTestApp({ stageThrottleRps: '50', stageThrottleBurst: '100' });
    const t = templateOf(l);
    t.hasResourceProperties('AWS::ApiGateway::Stage', {
      MethodSettings: Match.arrayWith([
        Match.objectLike({ ResourcePath: '/*', ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 }),
      ]),
    });
    t.hasResourceProperties('AWS::ApiGateway::UsagePlan', { Throttle: { RateLimit: 20, BurstLimit: 40 } });
  });

  test.each([
    ['UNAUTHORIZED', 'UNAUTHORIZED'],
    ['ACCESS_DENIED', 'FORBIDDEN'],
    // A valid client key without a usage-plan key (not synced, or deleted by revoke): 403 in the contract's shape.
    ['INVALID_API_KEY', 'FORBIDDEN'],
    ['THROTTLED', 'RATE_LIMITED'],
    ['QUOTA_EXCEEDED', 'RATE_LIMITED'],
    ['DEFAULT_4XX', 'INVALID_REQUEST'],
    ['DEFAULT_5XX', 'INTERNAL_ERROR'],
    // Over API Gateway's 10 MB: answered like the handlers' body limit, with the limit in details.
    ['REQUEST_TOO_LARGE', 'INVALID_REQUEST'],
  ] as const)('gateway response %s renders the contract error %s', (type, code) => {
    const found = Object.values(
      statelessTemplate.findResources('AWS::ApiGateway::GatewayResponse', { Properties: { ResponseType: type } }),
    );
    expect(found).toHaveLength(1);
    const props = found[0]?.Properties as Json;
    const { status, retryable } = ERROR_CODES[code];
    expect(props.StatusCode).toBe(String(status));
    expect(props.ResponseParameters).toEqual({
      'gatewayresponse.header.content-type': "'application/json; charset=utf-8'",
      'gatewayresponse.header.x-request-id': 'context.requestId',
      // The contract's RATE_LIMITED carries Retry-After (per-key token buckets refill within a second).
      ...(type === 'THROTTLED' ? { 'gatewayresponse.header.retry-after': "'1'" } : {}),
    });
    const template = (props.ResponseTemplates as Json)['application/json'] as string;
    const rendered = template
      .replaceAll('$context.requestId', 'req-123')
      .replaceAll('$context.error.messageString', '"gateway message"');
    expect(JSON.parse(rendered)).toEqual({
      error: {
        code,
        message: expect.any(String),
        status,
        retryable,
        ...(type === 'REQUEST_TOO_LARGE'
          ? { details: { limitBytes: 10 * 1024 * 1024, issues: [{ path: '(root)', message: 'body too large' }] } }
          : {}),
        requestId: 'req-123',
      },
    });
  });

  test('outputs the API URL, the REST API id, the usage plan id and the alarm topic ARN (lib/outputs.ts)', () => {
    statelessTemplate.hasOutput('ApiUrl', {});
    expect(Object.keys(statelessTemplate.toJSON().Outputs)).toEqual(
      expect.arrayContaining(Object.values(STATELESS_OUTPUTS)),
    );
    statelessTemplate.hasOutput(STATELESS_OUTPUTS.restApiId, { Value: { Ref: logicalIdOf(stateless, stateless.api) } });
    statelessTemplate.hasOutput(STATELESS_OUTPUTS.usagePlanId, {
      Value: { Ref: logicalIdOf(stateless, stateless.usagePlan) },
    });
    statelessTemplate.hasOutput(STATELESS_OUTPUTS.alarmTopicArn, {
      Value: { Ref: logicalIdOf(stateless, stateless.monitoring.alarmTopic) },
    });
  });
});

describe('app settings', () => {
  test('context overrides arrive as strings and are parsed', () => {
    const { stateful: s, stateless: l } = buildTestApp({
      stage: 'prod',
      confirmationThresholdUsd: '2.5',
      destroyOnRemoval: 'true',
    });
    expect(s.stackName).toBe('VisionStateful-prod');
    expect(l.stackName).toBe('VisionStateless-prod');
    const t = templateOf(s);
    t.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Delete' });
    const worker = templateOf(l).toJSON().Resources[logicalIdOf(l, l.functions.worker)].Properties;
    expect(worker.Environment.Variables.SERVICE_COST_CONFIRMATION_THRESHOLD_USD).toBe('2.5');
  });

  test('marginPct reaches every function that prices (create-run estimates, the worker settles) as PRICING_MARGIN_PCT', () => {
    const variables = (l: ReturnType<typeof buildTestApp>['stateless'], handler: 'create-run' | 'worker') =>
      templateOf(l).toJSON().Resources[logicalIdOf(l, l.functions[handler])].Properties.Environment.Variables;
    const { stateless: withMargin } = buildTestApp({ marginPct: '45' });
    expect(variables(withMargin, 'create-run').PRICING_MARGIN_PCT).toBe('45');
    expect(variables(withMargin, 'worker').PRICING_MARGIN_PCT).toBe('45');
    // Unset: the pricing table's margin applies (no variable).
    const { stateless: plain } = buildTestApp();
    expect(variables(plain, 'worker').PRICING_MARGIN_PCT).toBeUndefined();
    expect(() => buildTestApp({ marginPct: '-1' })).toThrow(/"marginPct"/);
    expect(() => buildTestApp({ marginPct: '5000' })).toThrow(/"marginPct"/);
  });

  test('workerPackaging=zip ships the worker as a Node.js 22 arm64 zip', () => {
    const { stateless: l } = buildTestApp({ workerPackaging: 'zip' });
    const worker = templateOf(l).toJSON().Resources[logicalIdOf(l, l.functions.worker)].Properties;
    expect(worker.Runtime).toBe('nodejs22.x');
    expect(worker.Architectures).toEqual(['arm64']);
  });

  test('invalid settings fail with a message naming the key', () => {
    expect(() => buildTestApp({ stage: 'Prod_1' })).toThrow(/"stage"/);
    expect(() => buildTestApp({ confirmationThresholdUsd: 'abc' })).toThrow(/confirmationThresholdUsd/);
    expect(() => buildTestApp({ costConfirmationThresholdUsd: '2' })).toThrow(/renamed to "confirmationThresholdUsd"/);
    expect(() => buildTestApp({ workerPackaging: 'layer' })).toThrow(/workerPackaging/);
    expect(() => buildTestApp({ providers: 'openai,foo' })).toThrow(/"providers"/);
    expect(() => buildTestApp({ providers: '' })).toThrow(/"providers"/);
    expect(() => buildTestApp({ providers: 'local,local' })).toThrow(/"providers"/);
    expect(() => buildTestApp({ imageMaxBytes: '1.5' })).toThrow(/imageMaxBytes/);
    expect(() => buildTestApp({ pdfMaxPages: '0' })).toThrow(/pdfMaxPages/);
    expect(() => buildTestApp({ runRetentionDays: '-1' })).toThrow(/runRetentionDays/);
    expect(() => buildTestApp({ uploadRetentionHours: 'x' })).toThrow(/uploadRetentionHours/);
    expect(() => buildTestApp({ destroyOnRemoval: 'yes' })).toThrow(/destroyOnRemoval/);
    // The stage throttle may not be below one key's own limits.
    expect(() => buildTestApp({ stageThrottleRps: '10' })).toThrow(/stageThrottleRps.*>= 20/);
    expect(() => buildTestApp({ stageThrottleBurst: '39' })).toThrow(/stageThrottleBurst.*>= 40/);
    expect(() => buildTestApp({ stageThrottleRps: '25.5' })).toThrow(/stageThrottleRps/);
    expect(() => buildTestApp({ alarmEmail: 'ops' })).toThrow(/alarmEmail/);
    expect(() => buildTestApp({ alarmEmail: 'a@example.com,b@example.com' })).toThrow(/alarmEmail/);
    expect(() => buildTestApp({ providers: 'bedrock', bedrockModelId: 'us.unknown-model-v1:0' })).toThrow(
      /bedrockModelId.*no price/,
    );
    expect(() => buildTestApp({ providers: 'bedrock', bedrockModelId: 'arn:aws:bedrock:x' })).toThrow(/bedrockModelId/);
    expect(() => buildTestApp({ providers: 'local', bedrockModelId: 'us.amazon.nova-2-lite-v1:0' })).toThrow(
      /does not include bedrock/,
    );
  });

  test('defaults: VISION_PROVIDERS=local on create-run and worker only, retention and threshold on every function', () => {
    for (const handler of handlers) {
      const variables = variablesOf(stateless, handler);
      expect([handler, variables.VISION_PROVIDERS]).toEqual([
        handler,
        PROVIDER_CONFIG_HANDLERS.includes(handler) ? 'local' : undefined,
      ]);
      expect(variables.BEDROCK_MODEL_ID).toBeUndefined();
      expect(variables.RUN_RETENTION_DAYS).toBe('90');
      expect(variables.UPLOAD_RETENTION_HOURS).toBe('24');
      // Limits not set in context keep shared/config.ts's defaults: no variable.
      expect(variables.LIMIT_IMAGE_MAX_BYTES).toBeUndefined();
    }
    // Without bedrock or textract the worker has no AI-service IAM at all.
    const actions = statementsOf('worker').flatMap(actionsOf);
    expect(actions.filter((a) => a.startsWith('bedrock:') || a.startsWith('textract:'))).toEqual([]);
  });

  test('providers, limits, retention and bedrockModelId reach the functions', () => {
    const { stateful: s, stateless: l } = buildTestApp({
      providers: 'bedrock,openai,local',
      bedrockModelId: 'eu.amazon.nova-2-lite-v1:0',
      imageMaxBytes: '1048576',
      pdfMaxBytes: '2097152',
      pdfMaxPages: '10',
      runRetentionDays: '30',
      uploadRetentionHours: '48',
    });
    for (const handler of Object.keys(l.functions) as HandlerName[]) {
      const variables = variablesOf(l, handler);
      const planner = PROVIDER_CONFIG_HANDLERS.includes(handler);
      expect([handler, variables.VISION_PROVIDERS, variables.BEDROCK_MODEL_ID]).toEqual(
        planner ? [handler, 'bedrock,openai,local', 'eu.amazon.nova-2-lite-v1:0'] : [handler, undefined, undefined],
      );
      expect(variables).toEqual(
        expect.objectContaining({
          LIMIT_IMAGE_MAX_BYTES: '1048576',
          LIMIT_PDF_MAX_BYTES: '2097152',
          LIMIT_PDF_MAX_PAGES: '10',
          RUN_RETENTION_DAYS: '30',
          UPLOAD_RETENTION_HOURS: '48',
        }),
      );
    }
    templateOf(s).hasResourceProperties('AWS::S3::Bucket', {
      LifecycleConfiguration: {
        Rules: Match.arrayWith([
          Match.objectLike({ Prefix: uploadsBucket.keyPrefix, ExpirationInDays: uploadExpiryDays(48) }),
          Match.objectLike({ Prefix: uploadsBucket.previewsPrefix, ExpirationInDays: uploadExpiryDays(48) }),
        ]),
      },
    });
  });

  test('uploads expire after the retention plus the queue time, in whole days', () => {
    // A run's message may be received maxReceiveCount times, each held for at most the worker's timeout (the visibility
    // timeout): 5 x 15 min = 1.25 h.
    const queueHours = (runQueue.maxReceiveCount * runQueue.visibilityTimeoutSeconds) / 3600;
    expect(queueHours).toBe(1.25);
    expect(uploadExpiryDays(24)).toBe(2);
    expect(uploadExpiryDays(1)).toBe(1);
    expect(uploadExpiryDays(22)).toBe(1);
    expect(uploadExpiryDays(23)).toBe(2);
    expect(uploadExpiryDays(46)).toBe(2);
    expect(uploadExpiryDays(47)).toBe(3);
  });
});

describe('provider secret', () => {
  const secretId = logicalIdOf(stateful, stateful.providerSecret);

  test('the stateful stack creates it with an empty JSON object and retains it', () => {
    expect(statefulTemplate.toJSON().Resources[secretId]).toEqual(
      expect.objectContaining({
        Properties: expect.objectContaining({ SecretString: '{}' }),
        DeletionPolicy: 'Retain',
        UpdateReplacePolicy: 'Retain',
      }),
    );
    // This one and the webhook secrets' key (test/infra/events.test.ts).
    statefulTemplate.resourceCountIs('AWS::SecretsManager::Secret', 2);
  });

  test('only the worker and the batcher may read it (GetSecretValue only) and only they know its ARN', () => {
    for (const handler of handlers) {
      const touching = statementsOf(handler).filter((s) => refersTo(s.Resource, secretId));
      const webhookKeyId = logicalIdOf(stateful, stateful.webhookSecretKey);
      const secretActions = statementsOf(handler)
        .filter((s) => !refersTo(s.Resource, webhookKeyId))
        .flatMap(actionsOf)
        .filter((a) => a.startsWith('secretsmanager:'));
      const variables = variablesOf(stateless, handler);
      if (handler === 'worker' || handler === 'batcher') {
        expect(touching.flatMap(actionsOf)).toEqual(['secretsmanager:GetSecretValue']);
        expect(secretActions).toEqual(['secretsmanager:GetSecretValue']);
        expect(refersTo(variables[PROVIDER_SECRET_ENV], secretId)).toBe(true);
      } else {
        expect([handler, touching, secretActions]).toEqual([handler, [], []]);
        expect([handler, PROVIDER_SECRET_ENV in variables]).toEqual([handler, false]);
      }
    }
  });
});

describe('worker IAM for IAM providers', () => {
  const allowed = (stack: StatelessStack) => statementsOf('worker', stack).filter((s) => s.Effect === 'Allow');

  test('textract: exactly the adapter actions on "*" (no resource-level permissions), only when enabled', () => {
    const { stateless: l } = buildTestApp({ providers: 'textract,local' });
    const textract = allowed(l).filter((s) => actionsOf(s).some((a) => a.startsWith('textract:')));
    // minimizePolicies merges it with the X-Ray statement (also on "*"); the Textract actions are exactly the adapter's.
    expect(textract).toHaveLength(1);
    const actions = actionsOf(textract[0] as Statement).filter((a) => a.startsWith('textract:'));
    expect(actions.sort()).toEqual([...TEXTRACT_ACTIONS].sort());
    expect(textract[0]?.Resource).toBe('*');
    for (const handler of Object.keys(l.functions) as HandlerName[]) {
      if (handler === 'worker') continue;
      expect(
        statementsOf(handler, l)
          .flatMap(actionsOf)
          .filter((a) => a.startsWith('textract:')),
      ).toEqual([]);
    }
    expect(
      allowed(l)
        .flatMap(actionsOf)
        .filter((a) => a.startsWith('bedrock:')),
    ).toEqual([]);
  });

  test('bedrock through an inference profile: the profile, plus the base model only via that profile', () => {
    const { stateless: l } = buildTestApp({ providers: 'bedrock,local', bedrockModelId: 'us.amazon.nova-2-lite-v1:0' });
    const bedrock = allowed(l).filter((s) => actionsOf(s).some((a) => a.startsWith('bedrock:')));
    expect(bedrock.flatMap(actionsOf)).toEqual(['bedrock:InvokeModel', 'bedrock:InvokeModel']);
    const resources = bedrock.map((s) => JSON.stringify(s.Resource));
    expect(resources.some((r) => r.includes(':inference-profile/us.amazon.nova-2-lite-v1:0'))).toBe(true);
    const model = bedrock.find((s) => JSON.stringify(s.Resource).includes(':bedrock:*::foundation-model/'));
    expect(JSON.stringify(model?.Resource)).toContain('foundation-model/amazon.nova-2-lite-v1:0');
    expect(JSON.stringify((model as unknown as { Condition: unknown }).Condition)).toContain(
      'inference-profile/us.amazon.nova-2-lite-v1:0',
    );
    expect(variablesOf(l, 'worker').BEDROCK_MODEL_ID).toBe('us.amazon.nova-2-lite-v1:0');
    expect(
      allowed(l)
        .flatMap(actionsOf)
        .filter((a) => a.startsWith('textract:')),
    ).toEqual([]);
  });

  test('bedrock with a plain model id: that foundation model in the stack region', () => {
    const { stateless: l } = buildTestApp({ providers: 'bedrock', bedrockModelId: 'amazon.nova-lite-v1:0' });
    const bedrock = allowed(l).filter((s) => actionsOf(s).some((a) => a.startsWith('bedrock:')));
    expect(bedrock).toHaveLength(1);
    const resource = JSON.stringify(bedrock[0]?.Resource);
    expect(resource).toContain('::foundation-model/amazon.nova-lite-v1:0');
    expect(resource).toContain('AWS::Region');
  });

  test('bedrock without bedrockModelId: the default model through the global profile (region unknown at synth)', () => {
    const { stateless: l } = buildTestApp({ providers: 'bedrock' });
    expect(variablesOf(l, 'worker').BEDROCK_MODEL_ID).toBe('global.amazon.nova-2-lite-v1:0');
    expect(variablesOf(l, 'create-run').BEDROCK_MODEL_ID).toBe('global.amazon.nova-2-lite-v1:0');
  });
});

describe('alarms and dashboard', () => {
  const alarms = Object.values(statelessTemplate.findResources('AWS::CloudWatch::Alarm')).map(
    (r) => (r as { Properties: Json }).Properties,
  );
  const alarmOn = (metricName: string, namespace: string) => {
    const found = alarms.filter((a) => a.MetricName === metricName && a.Namespace === namespace);
    expect([metricName, found.length]).toEqual([metricName, 1]);
    return found[0] as Json;
  };

  test('one alarm per threshold, none breaching on missing data', () => {
    expect(alarms).toHaveLength(Object.keys(ALARM_THRESHOLDS).length);
    for (const alarm of alarms) {
      expect(alarm.TreatMissingData).toBe('notBreaching');
      expect(alarm.ComparisonOperator).toBe('GreaterThanThreshold');
    }
  });

  const topicId = logicalIdOf(stateless, stateless.monitoring.alarmTopic);
  const keyId = logicalIdOf(stateless, stateless.monitoring.alarmTopicKey);

  test('every alarm notifies the alarm topic when it fires and when it recovers', () => {
    for (const alarm of alarms) {
      expect([alarm.AlarmName, alarm.AlarmActions, alarm.OKActions]).toEqual([
        alarm.AlarmName,
        [{ Ref: topicId }],
        [{ Ref: topicId }],
      ]);
    }
  });

  test('the alarm topic is encrypted with its own rotating KMS key that CloudWatch alarms may use', () => {
    statelessTemplate.resourceCountIs('AWS::SNS::Topic', 1);
    statelessTemplate.hasResourceProperties('AWS::SNS::Topic', {
      TopicName: 'vision-dev-alarms',
      KmsMasterKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] },
    });
    statelessTemplate.hasResource('AWS::KMS::Key', {
      Properties: {
        EnableKeyRotation: true,
        KeyPolicy: {
          Statement: Match.arrayWith([
            Match.objectLike({
              Effect: 'Allow',
              Principal: { Service: 'cloudwatch.amazonaws.com' },
              Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
              Condition: {
                StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } },
                ArnLike: { 'aws:SourceArn': Match.anyValue() },
              },
            }),
          ]),
        },
      },
      DeletionPolicy: 'Delete',
    });
  });

  test("the topic policy denies requests without TLS and lets only this stage's alarms publish", () => {
    const policies = Object.values(statelessTemplate.findResources('AWS::SNS::TopicPolicy')).map(
      (r) => (r as { Properties: Json }).Properties,
    );
    expect(policies).toHaveLength(1);
    expect(policies[0]?.Topics).toEqual([{ Ref: topicId }]);
    const statements = (policies[0]?.PolicyDocument as { Statement: Json[] } | undefined)?.Statement ?? [];
    expect(statements).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          Effect: 'Deny',
          Action: 'sns:Publish',
          Condition: { Bool: { 'aws:SecureTransport': 'false' } },
        }),
        expect.objectContaining({
          Effect: 'Allow',
          Principal: { Service: 'cloudwatch.amazonaws.com' },
          Action: 'sns:Publish',
          Resource: { Ref: topicId },
        }),
      ]),
    );
    const allow = statements.find((st) => st.Effect === 'Allow') as { Condition: { ArnLike: Json } };
    expect(JSON.stringify(allow.Condition.ArnLike)).toContain(':alarm:vision-dev-*');
  });

  test('no subscription by default; alarmEmail subscribes that address', () => {
    statelessTemplate.resourceCountIs('AWS::SNS::Subscription', 0);
    const { stateless: l } = buildTestApp({ alarmEmail: 'oncall@example.com' });
    const t = templateOf(l);
    t.resourceCountIs('AWS::SNS::Subscription', 1);
    t.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'oncall@example.com',
      TopicArn: { Ref: logicalIdOf(l, l.monitoring.alarmTopic) },
    });
  });

  test('run queue backlog: the oldest message older than the reconciler waits before resending', () => {
    const alarm = alarmOn('ApproximateAgeOfOldestMessage', 'AWS/SQS');
    expect(alarm).toEqual(
      expect.objectContaining({ Threshold: reconcileSettings.resendAfterSeconds, Statistic: 'Maximum' }),
    );
    expect(refersTo(alarm.Dimensions, logicalIdOf(stateful, stateful.runQueue))).toBe(true);
  });

  test('every dead-letter queue: visible messages > 0', () => {
    const found = alarms.filter(
      (a) => a.MetricName === 'ApproximateNumberOfMessagesVisible' && a.Namespace === 'AWS/SQS',
    );
    expect(found).toHaveLength(3);
    for (const queue of [
      stateful.runDeadLetterQueue,
      stateful.webhookDeadLetterQueue,
      stateful.eventBusFeedDeadLetterQueue,
    ]) {
      const alarm = found.find((a) => refersTo(a.Dimensions, logicalIdOf(stateful, queue)));
      expect(alarm).toEqual(expect.objectContaining({ Threshold: 0, Statistic: 'Maximum', EvaluationPeriods: 1 }));
    }
  });

  test('worker, reconciler and deliver function errors > 0 (each a run or delivery left for a retry)', () => {
    const lambdaErrors = alarms.filter((a) => a.MetricName === 'Errors' && a.Namespace === 'AWS/Lambda');
    expect(lambdaErrors).toHaveLength(3);
    for (const name of ['worker', 'reconcile', 'deliver'] as const) {
      const alarm = lambdaErrors.find((a) => refersTo((a as Json).Dimensions, functionLogicalId(name))) as Json;
      expect(alarm).toEqual(expect.objectContaining({ Threshold: 0, Statistic: 'Sum' }));
    }
  });

  test('API 5XXError and p99 Latency on the stage', () => {
    const errors = alarmOn('5XXError', 'AWS/ApiGateway');
    expect(errors).toEqual(expect.objectContaining({ Threshold: ALARM_THRESHOLDS.api5xx, Statistic: 'Sum' }));
    const latency = alarmOn('Latency', 'AWS/ApiGateway');
    expect(latency).toEqual(
      expect.objectContaining({ Threshold: ALARM_THRESHOLDS.apiLatencyP99Ms, ExtendedStatistic: 'p99' }),
    );
    for (const alarm of [errors, latency]) {
      expect(alarm.Dimensions).toEqual(
        expect.arrayContaining([expect.objectContaining({ Name: 'Stage', Value: expect.anything() })]),
      );
    }
  });

  test('custom metrics: provider failures and fallbacks in the service namespace, per stage', () => {
    for (const [name, threshold] of [
      [METRIC_NAMES.providerAttemptFailed, ALARM_THRESHOLDS.providerAttemptFailed],
      [METRIC_NAMES.providerFallback, ALARM_THRESHOLDS.providerFallback],
    ] as const) {
      const alarm = alarmOn(name, METRICS_NAMESPACE);
      expect(alarm).toEqual(expect.objectContaining({ Threshold: threshold, Statistic: 'Sum' }));
      expect(alarm.Dimensions).toEqual([{ Name: METRIC_DIMENSIONS.stage, Value: 'dev' }]);
    }
  });

  test('a dashboard shows the custom metrics', () => {
    const dashboards = Object.values(statelessTemplate.findResources('AWS::CloudWatch::Dashboard'));
    expect(dashboards).toHaveLength(1);
    const body = JSON.stringify((dashboards[0] as { Properties: Json }).Properties.DashboardBody);
    for (const name of Object.values(METRIC_NAMES)) expect(body).toContain(name);
  });
});

describe('API logging and validation', () => {
  test('access log to a log group, execution logging of errors without bodies', () => {
    statelessTemplate.hasResourceProperties('AWS::ApiGateway::Stage', {
      AccessLogSetting: { DestinationArn: Match.anyValue(), Format: Match.anyValue() },
      MethodSettings: Match.arrayWith([
        Match.objectLike({ HttpMethod: '*', ResourcePath: '/*', LoggingLevel: 'ERROR', DataTraceEnabled: false }),
      ]),
    });
  });

  test('every method uses the request validator', () => {
    const validators = Object.keys(statelessTemplate.findResources('AWS::ApiGateway::RequestValidator'));
    expect(validators).toHaveLength(1);
    const methods = Object.values(statelessTemplate.findResources('AWS::ApiGateway::Method'));
    for (const m of methods) {
      expect((m as { Properties: Json }).Properties.RequestValidatorId).toEqual({ Ref: validators[0] });
    }
  });
});
