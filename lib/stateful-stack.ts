/**
 * The stateful half of the service: DynamoDB tables, the uploads bucket, the run queue and its dead-letter queue.
 * Everything is created from the plain data in shared/infra/resources.ts (the local stack reads the same file), so
 * this stack never spells a table name, key or limit itself. Kept apart from the stateless stack so functions and the
 * API can be replaced freely while data stays put (RETAIN by default).
 */
import { CfnOutput, Duration, RemovalPolicy, SecretValue, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as pipes from 'aws-cdk-lib/aws-pipes';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import {
  type AttributeType,
  eventBus,
  type KeyAttribute,
  runQueue,
  type TableName,
  tables,
  uploadsBucket,
  webhookQueue,
} from '../shared/infra/resources.js';
import { STATEFUL_OUTPUTS, tableOutputKey } from './outputs.js';

export interface StatefulStackProps extends StackProps {
  /**
   * What happens to tables, bucket and queues when they leave the stack. RETAIN (default) keeps the data;
   * DESTROY is meant for throwaway dev stages (the bucket is then emptied by a custom resource on delete).
   */
  readonly removalPolicy?: RemovalPolicy;
  /** Days after which uploads expire (lib/app.ts `uploadExpiryDays`). @default uploadsBucket.expireAfterDays */
  readonly uploadExpiryDays?: number;
  /** Deployment stage: names the event bus (`vision-<stage>-runs`). @default 'default' */
  readonly stage?: string;
}

/** Days S3 server access logs of the uploads bucket are kept. */
export const ACCESS_LOG_RETENTION_DAYS = 90;

/** The resources the stateless stack needs; `bindAccess` takes exactly this shape. */
export interface StatefulResources {
  readonly tables: Readonly<Record<TableName, dynamodb.ITable>>;
  readonly uploadsBucket: s3.IBucket;
  readonly runQueue: sqs.IQueue;
  /** Where runs go after maxReceiveCount failed deliveries (alarmed on by the stateless stack). */
  readonly runDeadLetterQueue: sqs.IQueue;
  /** Provider API keys (JSON object of API_KEY_VARIABLES names → keys); only the worker may read it. */
  readonly providerSecret: secretsmanager.ISecret;
  /** One message per (run event, endpoint, try), consumed by the deliver function. */
  readonly webhookQueue: sqs.IQueue;
  /** Deliveries whose every try failed (sent by the deliver function) and messages whose handling kept failing. */
  readonly webhookDeadLetterQueue: sqs.IQueue;
  /** The key webhook signing secrets are sealed under (shared/events/secrets.ts). */
  readonly webhookSecretKey: secretsmanager.ISecret;
  /** Run events for the bus: the pipe puts each on `runEventBus`. */
  readonly eventBusFeedQueue: sqs.IQueue;
  /** Feed messages the pipe could not put on the bus. */
  readonly eventBusFeedDeadLetterQueue: sqs.IQueue;
  readonly runEventBus: events.IEventBus;
}

const attributeTypes: Record<AttributeType, dynamodb.AttributeType> = {
  S: dynamodb.AttributeType.STRING,
  N: dynamodb.AttributeType.NUMBER,
};

function toAttribute(key: KeyAttribute): dynamodb.Attribute {
  return { name: key.name, type: attributeTypes[key.type] };
}

/** `Object.keys` typed for a record whose keys are known. */
function keysOf<T extends object>(record: T): (keyof T)[] {
  return Object.keys(record) as (keyof T)[];
}

export class StatefulStack extends Stack implements StatefulResources {
  readonly tables: Record<TableName, dynamodb.Table>;
  readonly uploadsBucket: s3.Bucket;
  readonly runQueue: sqs.Queue;
  readonly runDeadLetterQueue: sqs.Queue;
  readonly providerSecret: secretsmanager.Secret;
  readonly accessLogsBucket: s3.Bucket;
  readonly webhookQueue: sqs.Queue;
  readonly webhookDeadLetterQueue: sqs.Queue;
  readonly webhookSecretKey: secretsmanager.Secret;
  readonly eventBusFeedQueue: sqs.Queue;
  readonly eventBusFeedDeadLetterQueue: sqs.Queue;
  readonly runEventBus: events.EventBus;

  constructor(scope: Construct, id: string, props: StatefulStackProps = {}) {
    super(scope, id, props);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;

    const created: Partial<Record<TableName, dynamodb.Table>> = {};
    for (const name of keysOf(tables)) {
      const def: (typeof tables)[TableName] = tables[name];
      const sortKey = 'sortKey' in def ? def.sortKey : undefined;
      const ttl = 'timeToLiveAttribute' in def ? def.timeToLiveAttribute : undefined;
      const table = new dynamodb.Table(this, def.id, {
        partitionKey: toAttribute(def.partitionKey),
        ...(sortKey ? { sortKey: toAttribute(sortKey) } : {}),
        ...(ttl ? { timeToLiveAttribute: ttl } : {}),
        billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        encryption: dynamodb.TableEncryption.AWS_MANAGED,
        removalPolicy,
      });
      for (const index of def.globalIndexes) {
        const indexSortKey = 'sortKey' in index ? index.sortKey : undefined;
        table.addGlobalSecondaryIndex({
          indexName: index.indexName,
          partitionKey: toAttribute(index.partitionKey),
          ...(indexSortKey ? { sortKey: toAttribute(indexSortKey) } : {}),
          projectionType:
            'projection' in index && index.projection === 'KEYS_ONLY'
              ? dynamodb.ProjectionType.KEYS_ONLY
              : dynamodb.ProjectionType.ALL,
        });
      }
      created[name] = table;
    }
    this.tables = created as Record<TableName, dynamodb.Table>;

    const destroy = removalPolicy === RemovalPolicy.DESTROY;
    // S3 server access logs of the uploads bucket (AwsSolutions-S1). Not logged itself: it would log its own writes.
    this.accessLogsBucket = new s3.Bucket(this, 'AccessLogsBucket', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      lifecycleRules: [{ id: 'ExpireAccessLogs', expiration: Duration.days(ACCESS_LOG_RETENTION_DAYS) }],
      removalPolicy,
      autoDeleteObjects: destroy,
    });
    Validations.of(this.accessLogsBucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason: 'This is the server access log bucket of the uploads bucket; logging its own log writes adds nothing.',
    });

    // `Bucket` suffix: the uploads table already uses the id `Uploads` in this scope.
    this.uploadsBucket = new s3.Bucket(this, `${uploadsBucket.id}Bucket`, {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      // Versions: a run reads the version its creation inspected, so a second PUT to the same presigned address
      // cannot change what a run processes (docs/decisions.md#a-run-reads-the-bytes-it-inspected). A replaced
      // version is kept one day, long past any queued run's need.
      versioned: true,
      lifecycleRules: [
        {
          id: 'ExpireUploads',
          prefix: uploadsBucket.keyPrefix,
          expiration: Duration.days(props.uploadExpiryDays ?? uploadsBucket.expireAfterDays),
          noncurrentVersionExpiration: Duration.days(1),
          abortIncompleteMultipartUploadAfter: Duration.days(1),
        },
        { id: 'RemoveExpiredDeleteMarkers', prefix: uploadsBucket.keyPrefix, expiredObjectDeleteMarker: true },
        // A PDF run's page images (written by the worker) expire after as many days as the uploads: the same
        // retention (file-url also refuses them past the upload's own retention, as it refuses the file).
        {
          id: 'ExpirePreviews',
          prefix: uploadsBucket.previewsPrefix,
          expiration: Duration.days(props.uploadExpiryDays ?? uploadsBucket.expireAfterDays),
          noncurrentVersionExpiration: Duration.days(1),
          abortIncompleteMultipartUploadAfter: Duration.days(1),
        },
        {
          id: 'RemoveExpiredPreviewDeleteMarkers',
          prefix: uploadsBucket.previewsPrefix,
          expiredObjectDeleteMarker: true,
        },
      ],
      // Browsers PUT straight to the presigned URL, so the bucket (not the API) answers the CORS preflight.
      cors: [
        {
          allowedMethods: [s3.HttpMethods.PUT],
          allowedOrigins: ['*'],
          allowedHeaders: ['Content-Type', 'Content-Length'],
          exposedHeaders: ['ETag'],
          maxAge: 3600,
        },
      ],
      serverAccessLogsBucket: this.accessLogsBucket,
      serverAccessLogsPrefix: 'uploads-bucket/',
      removalPolicy,
      autoDeleteObjects: destroy,
    });

    this.runDeadLetterQueue = new sqs.Queue(this, runQueue.deadLetter.id, {
      retentionPeriod: Duration.seconds(runQueue.deadLetter.retentionSeconds),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      removalPolicy,
    });
    this.runQueue = new sqs.Queue(this, runQueue.id, {
      visibilityTimeout: Duration.seconds(runQueue.visibilityTimeoutSeconds),
      retentionPeriod: Duration.seconds(runQueue.retentionSeconds),
      deadLetterQueue: { queue: this.runDeadLetterQueue, maxReceiveCount: runQueue.maxReceiveCount },
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      removalPolicy,
    });

    // Provider API keys, set by the operator after deploy (`aws secretsmanager put-secret-value`). The template value
    // is an empty JSON object, not a secret; CloudFormation never overwrites a value put later unless this changes.
    this.providerSecret = new secretsmanager.Secret(this, 'ProviderKeys', {
      description: 'Vision service provider API keys: JSON object {OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY}',
      secretStringValue: SecretValue.unsafePlainText('{}'),
      removalPolicy,
    });
    Validations.of(this.providerSecret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'Third-party provider API keys (OpenAI, Anthropic, Gemini) are issued in the providers consoles; Secrets Manager cannot rotate them. The operator rotates them by hand with put-secret-value.',
    });

    const eventResources = this.createEventResources(props.stage ?? 'default', removalPolicy);
    this.webhookQueue = eventResources.webhookQueue;
    this.webhookDeadLetterQueue = eventResources.webhookDeadLetterQueue;
    this.webhookSecretKey = eventResources.webhookSecretKey;
    this.eventBusFeedQueue = eventResources.eventBusFeedQueue;
    this.eventBusFeedDeadLetterQueue = eventResources.eventBusFeedDeadLetterQueue;
    this.runEventBus = eventResources.runEventBus;

    new CfnOutput(this, STATEFUL_OUTPUTS.providerSecretArn, { value: this.providerSecret.secretArn });
    new CfnOutput(this, STATEFUL_OUTPUTS.eventBusName, {
      value: this.runEventBus.eventBusName,
      description: `EventBridge bus of run events (source "${eventBus.source}"): route them with rules on it`,
    });
    new CfnOutput(this, STATEFUL_OUTPUTS.eventBusArn, { value: this.runEventBus.eventBusArn });
    new CfnOutput(this, STATEFUL_OUTPUTS.uploadsBucketName, { value: this.uploadsBucket.bucketName });
    // Every table's name, for operator tools (`npm run keys -- --stack <stage>` reads them with DescribeStacks).
    for (const name of keysOf(tables)) {
      new CfnOutput(this, tableOutputKey(name), {
        value: this.tables[name].tableName,
        description: `Name of the ${tables[name].id} table (${tables[name].envVar})`,
      });
    }
  }

  /**
   * Run events (contract-v1.1 §4): the webhook delivery queue and its dead-letter queue, the key webhook secrets are
   * sealed under, and the EventBridge bus with the pipe that feeds it from a queue (the functions send SQS messages
   * only). Why a pipe: docs/decisions.md#the-event-bus-fed-by-a-pipe
   */
  private createEventResources(stage: string, removalPolicy: RemovalPolicy) {
    const queue = (id: string, props: sqs.QueueProps) =>
      new sqs.Queue(this, id, {
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        removalPolicy,
        ...props,
      });
    const webhookDeadLetterQueue = queue(webhookQueue.deadLetter.id, {
      retentionPeriod: Duration.seconds(webhookQueue.deadLetter.retentionSeconds),
    });
    const webhooks = queue(webhookQueue.id, {
      visibilityTimeout: Duration.seconds(webhookQueue.visibilityTimeoutSeconds),
      retentionPeriod: Duration.seconds(webhookQueue.retentionSeconds),
      deadLetterQueue: { queue: webhookDeadLetterQueue, maxReceiveCount: webhookQueue.maxReceiveCount },
    });

    // 64 random letters and digits; the AES key is their SHA-256. Generated by Secrets Manager, never in the template.
    const webhookSecretKey = new secretsmanager.Secret(this, 'WebhookSecretKey', {
      description: 'Vision service: the key webhook signing secrets are sealed under (AES-256-GCM of its SHA-256)',
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
      removalPolicy,
    });
    Validations.of(webhookSecretKey).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'Rotating it would leave every sealed webhook secret unreadable by the new value: each sealed secret names the key version it was sealed under and is opened with that version (shared/events/secrets.ts); a new version is put by hand with put-secret-value when wanted, never by a rotation Lambda.',
    });

    const eventBusFeedDeadLetterQueue = queue(`${eventBus.feedQueue.id}DeadLetter`, {
      retentionPeriod: Duration.seconds(webhookQueue.deadLetter.retentionSeconds),
    });
    const eventBusFeedQueue = queue(eventBus.feedQueue.id, {
      retentionPeriod: Duration.seconds(eventBus.feedQueue.retentionSeconds),
      deadLetterQueue: { queue: eventBusFeedDeadLetterQueue, maxReceiveCount: eventBus.feedQueue.maxReceiveCount },
    });
    const runEventBus = new events.EventBus(this, eventBus.id, { eventBusName: `vision-${stage}-runs` });

    const pipeRole = new iam.Role(this, 'RunEventPipeRole', {
      assumedBy: new iam.ServicePrincipal('pipes.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': this.account } },
      }),
      description: 'Lets the run event pipe read the feed queue and put events on the run event bus',
    });
    eventBusFeedQueue.grantConsumeMessages(pipeRole);
    runEventBus.grantPutEventsTo(pipeRole);
    new pipes.CfnPipe(this, 'RunEventPipe', {
      description: 'Run events from the feed queue onto the run event bus',
      roleArn: pipeRole.roleArn,
      source: eventBusFeedQueue.queueArn,
      sourceParameters: { sqsQueueParameters: { batchSize: 10 } },
      target: runEventBus.eventBusArn,
      targetParameters: {
        // The message is {detailType, detail}: `detail` (the run) becomes the event's detail.
        inputTemplate: '<$.body.detail>',
        eventBridgeEventBusParameters: { source: eventBus.source, detailType: '$.body.detailType' },
      },
    });
    return {
      webhookQueue: webhooks,
      webhookDeadLetterQueue,
      webhookSecretKey,
      eventBusFeedQueue,
      eventBusFeedDeadLetterQueue,
      runEventBus,
    };
  }
}
