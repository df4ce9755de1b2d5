/**
 * Behaviour of the synthesized stacks, derived from the same data the stacks are built from
 * (shared/infra/resources.ts and shared/infra/routes.ts): adding a table, route or grant there is checked here
 * without touching this file.
 */
import { Match, Template } from 'aws-cdk-lib/assertions';
import { AUTHORIZER_CACHE_TTL_SECONDS, STAGE_THROTTLING } from '../../lib/stateless-stack.js';
import { ERROR_CODES } from '../../shared/errors.js';
import {
  type KeyAttribute,
  runQueue,
  type TableName,
  tables,
  uploadsBucket,
  workerSettings,
} from '../../shared/infra/resources.js';
import { type HandlerName, handlerAccess, routes } from '../../shared/infra/routes.js';
import { buildTestApp, logicalIdOf, refersTo } from './synth.js';

type Json = Record<string, unknown>;
interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
}

const { stateful, stateless } = buildTestApp();
const statefulTemplate = Template.fromStack(stateful);
const statelessTemplate = Template.fromStack(stateless);
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

/** Every statement of the policies attached to a handler's role. */
function statementsOf(handler: HandlerName): Statement[] {
  const role = (functionProps(handler).Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
  return Object.values(statelessResources)
    .filter((r) => r.Type === 'AWS::IAM::Policy' && refersTo(r.Properties.Roles, role))
    .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
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
    const indexes = def.globalIndexes as readonly {
      indexName: string;
      partitionKey: KeyAttribute;
      sortKey?: KeyAttribute;
    }[];
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
                Projection: { ProjectionType: 'ALL' },
              })),
      },
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
    expect(Object.keys(matching)).toEqual([tableLogicalId(name)]);
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
      LifecycleConfiguration: {
        Rules: Match.arrayWith([
          Match.objectLike({
            Prefix: uploadsBucket.keyPrefix,
            ExpirationInDays: uploadsBucket.expireAfterDays,
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

  test('run queue: visibility timeout >= 6 x worker timeout, DLQ redrive, encryption', () => {
    const dlq = logicalIdOf(stateful, stateful.runDeadLetterQueue);
    const queue = statefulTemplate.toJSON().Resources[logicalIdOf(stateful, stateful.runQueue)].Properties;
    expect(queue.VisibilityTimeout).toBeGreaterThanOrEqual(6 * workerSettings.timeoutSeconds);
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

  test('both queues deny requests without TLS', () => {
    const policies = statefulTemplate.findResources('AWS::SQS::QueuePolicy', {
      Properties: {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          ]),
        },
      },
    });
    expect(Object.keys(policies)).toHaveLength(2);
  });

  test('outputs the bucket name', () => {
    statefulTemplate.hasOutput('UploadsBucketName', {});
  });
});

describe('stateless stack: functions', () => {
  test('one function per handler in the route table, plus authorizer and worker', () => {
    const expected = new Set<HandlerName>([...routes.map((r) => r.handler), 'authorizer', 'worker']);
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
    expect(uploadsBucket.envVar in variables).toBe(access.bucket !== undefined);
    expect(runQueue.envVar in variables).toBe(access.queue !== undefined);
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
    expect(actions.some((a) => a.startsWith('s3:'))).toBe(access.bucket !== undefined);
    expect(actions.some((a) => a.startsWith('s3:Put'))).toBe(access.bucket === 'presign-put');
    expect(actions.includes('sqs:SendMessage')).toBe(access.queue === 'send');
    expect(actions.includes('sqs:ReceiveMessage')).toBe(access.queue === 'consume');
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

  test('S3 grants are limited to the upload prefix', () => {
    for (const handler of handlers) {
      for (const s of statementsOf(handler)) {
        if (!actionsOf(s).some((a) => a.startsWith('s3:Put') || a.startsWith('s3:GetObject'))) continue;
        expect(JSON.stringify(s.Resource)).toContain(`/${uploadsBucket.keyPrefix}*`);
      }
    }
  });

  test('worker: SQS event source with partial batch failures, batch size and max concurrency', () => {
    statelessTemplate.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
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
      } else {
        expect(method?.props.AuthorizationType).toBe('CUSTOM');
        expect(method?.props.AuthorizerId).toEqual({ Ref: authorizerId });
      }
      const integration = method?.props.Integration as { Type: string; Uri: unknown };
      expect(integration.Type).toBe('AWS_PROXY');
      expect(refersTo(integration.Uri, functionLogicalId(route.handler))).toBe(true);
    },
  );

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

  test('stage throttling 20 rps / burst 40 on every method', () => {
    statelessTemplate.hasResourceProperties('AWS::ApiGateway::Stage', {
      MethodSettings: Match.arrayWith([
        Match.objectLike({
          HttpMethod: '*',
          ResourcePath: '/*',
          ThrottlingRateLimit: STAGE_THROTTLING.rateLimit,
          ThrottlingBurstLimit: STAGE_THROTTLING.burstLimit,
        }),
      ]),
      TracingEnabled: true,
    });
  });

  test.each([
    ['UNAUTHORIZED', 'UNAUTHORIZED'],
    ['ACCESS_DENIED', 'FORBIDDEN'],
    ['THROTTLED', 'RATE_LIMITED'],
    ['DEFAULT_4XX', 'INVALID_REQUEST'],
    ['DEFAULT_5XX', 'INTERNAL_ERROR'],
  ] as const)('gateway response %s renders the contract error %s', (type, code) => {
    const found = Object.values(
      statelessTemplate.findResources('AWS::ApiGateway::GatewayResponse', { Properties: { ResponseType: type } }),
    );
    expect(found).toHaveLength(1);
    const props = found[0]?.Properties as Json;
    const { status, retryable } = ERROR_CODES[code];
    expect(props.StatusCode).toBe(String(status));
    expect(props.ResponseParameters).toEqual({
      'gatewayresponse.header.content-type': "'application/json'",
      'gatewayresponse.header.x-request-id': 'context.requestId',
    });
    const template = (props.ResponseTemplates as Json)['application/json'] as string;
    const rendered = template
      .replaceAll('$context.requestId', 'req-123')
      .replaceAll('$context.error.messageString', '"gateway message"');
    expect(JSON.parse(rendered)).toEqual({
      error: { code, message: expect.any(String), status, retryable, requestId: 'req-123' },
    });
  });

  test('outputs the API URL', () => {
    statelessTemplate.hasOutput('ApiUrl', {});
  });
});

describe('app settings', () => {
  test('context overrides arrive as strings and are parsed', () => {
    const { stateful: s, stateless: l } = buildTestApp({
      stage: 'prod',
      costConfirmationThresholdUsd: '2.5',
      destroyOnRemoval: 'true',
    });
    expect(s.stackName).toBe('VisionStateful-prod');
    expect(l.stackName).toBe('VisionStateless-prod');
    const t = Template.fromStack(s);
    t.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Delete' });
    const worker = Template.fromStack(l).toJSON().Resources[logicalIdOf(l, l.functions.worker)].Properties;
    expect(worker.Environment.Variables.SERVICE_COST_CONFIRMATION_THRESHOLD_USD).toBe('2.5');
  });

  test('workerPackaging=zip ships the worker as a Node.js 22 arm64 zip', () => {
    const { stateless: l } = buildTestApp({ workerPackaging: 'zip' });
    const worker = Template.fromStack(l).toJSON().Resources[logicalIdOf(l, l.functions.worker)].Properties;
    expect(worker.Runtime).toBe('nodejs22.x');
    expect(worker.Architectures).toEqual(['arm64']);
  });

  test('invalid settings fail with a message naming the key', () => {
    expect(() => buildTestApp({ stage: 'Prod_1' })).toThrow(/"stage"/);
    expect(() => buildTestApp({ costConfirmationThresholdUsd: 'abc' })).toThrow(/costConfirmationThresholdUsd/);
    expect(() => buildTestApp({ workerPackaging: 'layer' })).toThrow(/workerPackaging/);
  });
});
