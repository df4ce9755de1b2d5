/**
 * The stateful resources (tables, bucket, queues) as plain data. The CDK stateful stack and the local stack
 * (scripts/local.ts) both create exactly these, so the two cannot disagree. Runtime code finds the deployed names
 * through the environment variables named here.
 */

export type AttributeType = 'S' | 'N';

export interface KeyAttribute {
  name: string;
  type: AttributeType;
}

export interface IndexDefinition {
  indexName: string;
  partitionKey: KeyAttribute;
  sortKey?: KeyAttribute;
  /** What the index copies of each item: every attribute (default), or only the keys (read the item from the table). */
  projection?: 'ALL' | 'KEYS_ONLY';
}

export interface TableDefinition {
  /** Logical id in CDK and the suffix of the local table name. */
  id: string;
  /** Environment variable that carries the table's name to the functions. */
  envVar: string;
  partitionKey: KeyAttribute;
  sortKey?: KeyAttribute;
  /** Attribute holding an epoch-seconds expiry, for DynamoDB TTL. */
  timeToLiveAttribute?: string;
  globalIndexes: IndexDefinition[];
}

/** Table definitions; docs/data-model.md describes items and access patterns. */
export const tables = {
  tenants: {
    id: 'Tenants',
    envVar: 'TENANTS_TABLE',
    partitionKey: { name: 'tenantId', type: 'S' },
    globalIndexes: [],
  },
  apiKeys: {
    id: 'ApiKeys',
    envVar: 'API_KEYS_TABLE',
    partitionKey: { name: 'keyHash', type: 'S' },
    globalIndexes: [
      {
        indexName: 'byTenant',
        partitionKey: { name: 'tenantId', type: 'S' },
        sortKey: { name: 'createdAt', type: 'S' },
      },
    ],
  },
  uploads: {
    id: 'Uploads',
    envVar: 'UPLOADS_TABLE',
    partitionKey: { name: 'uploadId', type: 'S' },
    timeToLiveAttribute: 'expiresAtEpoch',
    globalIndexes: [],
  },
  runs: {
    id: 'Runs',
    envVar: 'RUNS_TABLE',
    partitionKey: { name: 'jobId', type: 'S' },
    timeToLiveAttribute: 'expiresAtEpoch',
    globalIndexes: [
      {
        indexName: 'byTenant',
        partitionKey: { name: 'tenantId', type: 'S' },
        sortKey: { name: 'createdAt', type: 'S' },
      },
      {
        indexName: 'byTenantWorkflow',
        partitionKey: { name: 'tenantWorkflow', type: 'S' },
        sortKey: { name: 'createdAt', type: 'S' },
      },
      // Sparse: a run is in it only while queued (`queuedShard` is set at creation and removed by the settlement).
      // Keys only: the reconciler reads each run from the table anyway (the index may lag a settlement).
      {
        indexName: 'queued',
        partitionKey: { name: 'queuedShard', type: 'S' },
        sortKey: { name: 'createdAt', type: 'S' },
        projection: 'KEYS_ONLY',
      },
    ],
  },
  // A completed run's result too large for the run item (DynamoDB items are at most 400 KB), in ordered parts written
  // in the settlement transaction (store/ledger.ts) and read back by get-run and list-runs (store/runs.ts).
  runResults: {
    id: 'RunResults',
    envVar: 'RUN_RESULTS_TABLE',
    partitionKey: { name: 'jobId', type: 'S' },
    sortKey: { name: 'part', type: 'N' },
    timeToLiveAttribute: 'expiresAtEpoch',
    globalIndexes: [],
  },
  // The checkpoints of a run in page chunks (store/chunks.ts): one item per finished chunk, keyed by its first page,
  // written before the next step so that a redelivered run never pays a provider twice for a chunk.
  runChunks: {
    id: 'RunChunks',
    envVar: 'RUN_CHUNKS_TABLE',
    partitionKey: { name: 'jobId', type: 'S' },
    sortKey: { name: 'first', type: 'N' },
    timeToLiveAttribute: 'expiresAtEpoch',
    globalIndexes: [],
  },
  verifications: {
    id: 'Verifications',
    envVar: 'VERIFICATIONS_TABLE',
    partitionKey: { name: 'jobId', type: 'S' },
    sortKey: { name: 'verificationId', type: 'S' },
    timeToLiveAttribute: 'expiresAtEpoch',
    globalIndexes: [],
  },
  ledger: {
    id: 'Ledger',
    envVar: 'LEDGER_TABLE',
    partitionKey: { name: 'tenantId', type: 'S' },
    sortKey: { name: 'entryId', type: 'S' },
    globalIndexes: [],
  },
  // Usage counters per tenant × workflow × hour and × day of creation (store/usage.ts): `slot` is `h#<hour>#<workflow>`
  // or `d#<day>#<workflow>`. No TTL: usage totals outlive the runs they count.
  usage: {
    id: 'Usage',
    envVar: 'USAGE_TABLE',
    partitionKey: { name: 'tenantId', type: 'S' },
    sortKey: { name: 'slot', type: 'S' },
    globalIndexes: [],
  },
  // Calibration of the estimates (store/calibration.ts): one small item per provider × task kind × step, holding the
  // most recent ratios actual ÷ predicted tokens of settled runs. No TTL: it is the service's memory of its providers.
  calibration: {
    id: 'Calibration',
    envVar: 'CALIBRATION_TABLE',
    partitionKey: { name: 'key', type: 'S' },
    globalIndexes: [],
  },
  idempotency: {
    id: 'Idempotency',
    envVar: 'IDEMPOTENCY_TABLE',
    partitionKey: { name: 'idempotencyKey', type: 'S' },
    timeToLiveAttribute: 'expiresAtEpoch',
    globalIndexes: [],
  },
} as const satisfies Record<string, TableDefinition>;

export type TableName = keyof typeof tables;

/** The uploads bucket. Objects live under `uploads/{tenantId}/{uploadId}` and expire after `expireAfterDays`. */
export const uploadsBucket = {
  id: 'Uploads',
  envVar: 'UPLOADS_BUCKET',
  /** The bucket's regional domain name (deployed only: presigned addresses are built on it, shared/aws/s3-urls.ts). */
  domainEnvVar: 'UPLOADS_BUCKET_DOMAIN',
  keyPrefix: 'uploads/',
  expireAfterDays: 1,
} as const;

/** The worker function's limits; the queue's visibility timeout is derived from them. */
export const workerSettings = {
  // Lambda's longest: a 1,000-page run at a real model's speed takes minutes (its chunks run concurrently, ~5 pages a
  // second), and a run handed back for lack of time waits out the visibility timeout before it resumes.
  timeoutSeconds: 900,
  memoryMb: 2048,
  // One run per invocation: runs of a batch are processed one after another, so a second run would get only the time
  // the first left, and a healthy run could fail for lack of it. Concurrency, not batching, gives throughput.
  batchSize: 1,
  /** Caps concurrent worker executions so provider rate limits are not overrun. */
  maxConcurrency: 10,
} as const;

/** The run queue and its dead-letter queue. */
export const runQueue = {
  id: 'RunQueue',
  envVar: 'RUN_QUEUE_URL',
  // AWS guidance for SQS event sources: visibility timeout >= 6 x the function timeout.
  visibilityTimeoutSeconds: 6 * workerSettings.timeoutSeconds,
  // AWS guidance for Lambda's SQS event source: at least 5, so that receives lost to throttling (a new account's low
  // concurrency quota) do not send healthy runs to the DLQ, where the reconciler fails them.
  maxReceiveCount: 5,
  retentionSeconds: 4 * 24 * 3600,
  deadLetter: { id: 'RunDeadLetterQueue', retentionSeconds: 14 * 24 * 3600 },
} as const;

/**
 * The reconciler (functions/reconcile.ts, shared/worker/reconcile.ts): a scheduled sweep over the runs that are still
 * queued, so that no run waits forever with its hold. A run whose message never reached a worker is sent again; a
 * run whose message went to the DLQ, or can no longer exist, is failed and refunded.
 */
export const reconcileSettings = {
  /** How often it runs. */
  everyMinutes: 5,
  /** A run never delivered this long after its (last) message is sent again. */
  resendAfterSeconds: 600,
  /** At most this many times per run. */
  maxResends: 3,
  /**
   * After its last delivery began, a run delivered maxReceiveCount times is dead once the queue's visibility timeout
   * and this margin have passed (SQS then moves the message to the DLQ; the margin covers the move and clock skew).
   */
  deadMarginSeconds: 300,
  /** Partitions of the `queued` index. */
  shards: 4,
  /** Runs read per query, and most queries per shard and sweep (the next sweep takes any rest). */
  pageSize: 100,
  maxPages: 10,
} as const;
