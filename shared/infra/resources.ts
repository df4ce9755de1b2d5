/**
 * The stateful resources (tables, bucket, queues) as plain data. The CDK stateful stack and the local stack
 * (scripts/local.ts) both create exactly these, so the two cannot disagree. Runtime code finds the deployed names
 * through the environment variables named here.
 * Over 400 lines: every table, queue and setting in one place is the point (one source of truth for two stacks).
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
      // Sparse: the tenant's review queue (GET /v1/runs?review=needed). `reviewTenant` (the tenant id) is set by the
      // settlement of a run whose review is needed and removed by the verify that clears it; newest first by
      // `createdAt`. Every attribute, like byTenant: the listing answers from the index.
      {
        indexName: 'reviewNeeded',
        partitionKey: { name: 'reviewTenant', type: 'S' },
        sortKey: { name: 'createdAt', type: 'S' },
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
  // The batch lane (shared/batching/, docs/data-model.md): one item per provider request a batch run waits on
  // (`requestId`: run, provider, step, pages) and one per provider batch submitted (`batch#…`). Sparse `open`: an item
  // is in it while the batcher has something to do with it (`openState`), oldest first by `since`.
  batchRequests: {
    id: 'BatchRequests',
    envVar: 'BATCH_REQUESTS_TABLE',
    partitionKey: { name: 'requestId', type: 'S' },
    timeToLiveAttribute: 'expiresAtEpoch',
    globalIndexes: [
      {
        indexName: 'open',
        partitionKey: { name: 'openState', type: 'S' },
        sortKey: { name: 'since', type: 'S' },
      },
    ],
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
  // Accuracy from reviews (store/quality.ts): per tenant × UTC day of a run's creation × filter (any or one workflow ×
  // any or one schema), how many fields reviews found right and corrected, per provider, and a confidence histogram.
  // `slot` is `<workflow|*>#<schemaId|*>#<day>` (the histogram: `~h#` before it). Counted in the verify's
  // transaction; no TTL, like usage.
  quality: {
    id: 'Quality',
    envVar: 'QUALITY_TABLE',
    partitionKey: { name: 'tenantId', type: 'S' },
    sortKey: { name: 'slot', type: 'S' },
    globalIndexes: [],
  },
  // Evaluations (contract-v1.2 §1; store/evaluations.ts): one item per evaluation, with its hold, its progress and
  // money (moved by each item run's settlement) and its report once the last item settled.
  evaluations: {
    id: 'Evaluations',
    envVar: 'EVALUATIONS_TABLE',
    partitionKey: { name: 'evaluationId', type: 'S' },
    timeToLiveAttribute: 'expiresAtEpoch',
    globalIndexes: [
      {
        indexName: 'byTenant',
        partitionKey: { name: 'tenantId', type: 'S' },
        sortKey: { name: 'createdAt', type: 'S' },
      },
      // Sparse: an evaluation is in it until its report is written (`openShard` removed then), so the reconciler
      // finds one whose runs a crash left uncreated, or whose report a crash left unwritten.
      {
        indexName: 'open',
        partitionKey: { name: 'openShard', type: 'S' },
        sortKey: { name: 'createdAt', type: 'S' },
        projection: 'KEYS_ONLY',
      },
    ],
  },
  // One item per run of an evaluation (a document × a provider; `n` its position): what the run is made from, its
  // expected values, and its scored fields once it settled (written in the run's settlement transaction).
  evaluationItems: {
    id: 'EvaluationItems',
    envVar: 'EVALUATION_ITEMS_TABLE',
    partitionKey: { name: 'evaluationId', type: 'S' },
    sortKey: { name: 'n', type: 'N' },
    timeToLiveAttribute: 'expiresAtEpoch',
    globalIndexes: [],
  },
  // Webhook endpoints per tenant (store/webhooks.ts), and one counter item per tenant (`webhookId` = `#count`) that a
  // registration's transaction checks, so a tenant never holds more than webhookSettings.maxEndpoints.
  webhooks: {
    id: 'Webhooks',
    envVar: 'WEBHOOKS_TABLE',
    partitionKey: { name: 'tenantId', type: 'S' },
    sortKey: { name: 'webhookId', type: 'S' },
    globalIndexes: [],
  },
  // The event outbox (store/events.ts): one item per final run state, written in the settlement's transaction. Sparse
  // `pending` index: an event is in it until it was handed to the delivery queue (and the bus), so the sweep finds
  // the events whose dispatch a crash interrupted.
  events: {
    id: 'Events',
    envVar: 'EVENTS_TABLE',
    partitionKey: { name: 'eventId', type: 'S' },
    timeToLiveAttribute: 'expiresAtEpoch',
    globalIndexes: [
      {
        indexName: 'pending',
        partitionKey: { name: 'pendingShard', type: 'S' },
        sortKey: { name: 'createdAt', type: 'S' },
        projection: 'KEYS_ONLY',
      },
    ],
  },
  // Every delivery attempt per endpoint (store/webhooks.ts), newest last: `attemptKey` is
  // `<attemptedAt>#<eventId>#<attempt>`. GET /v1/webhooks/{id}/deliveries reads the last 100.
  webhookDeliveries: {
    id: 'WebhookDeliveries',
    envVar: 'WEBHOOK_DELIVERIES_TABLE',
    partitionKey: { name: 'webhookId', type: 'S' },
    sortKey: { name: 'attemptKey', type: 'S' },
    timeToLiveAttribute: 'expiresAtEpoch',
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

/**
 * The uploads bucket. Objects live under `uploads/{tenantId}/{uploadId}` and expire after `expireAfterDays`; the
 * worker's page images of a PDF run (shared/worker/page-previews.ts) live under
 * `previews/{tenantId}/{jobId}/page-{n}.jpg` and expire after the same number of days.
 */
export const uploadsBucket = {
  id: 'Uploads',
  envVar: 'UPLOADS_BUCKET',
  /** The bucket's regional domain name (deployed only: presigned addresses are built on it, shared/aws/s3-urls.ts). */
  domainEnvVar: 'UPLOADS_BUCKET_DOMAIN',
  keyPrefix: 'uploads/',
  previewsPrefix: 'previews/',
  /** The batch lane's request lines and answers (shared/batching/objects.ts), and Bedrock's batch input and output. */
  batchPrefix: 'batch/',
  expireAfterDays: 1,
} as const;

/**
 * Bedrock batch inference (the batcher, shared/providers/bedrock/batch-api.ts): each job's records, record map and
 * output under `prefix` of the uploads bucket, and the service role Bedrock assumes to read and write them and to
 * invoke the model (lib/bedrock-batch.ts; its ARN reaches the batcher in `roleEnvVar`).
 */
export const bedrockBatch = {
  roleId: 'BedrockBatchRole',
  roleEnvVar: 'BEDROCK_BATCH_ROLE_ARN',
  prefix: `${uploadsBucket.batchPrefix}bedrock/`,
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
  /**
   * SERVICE_LEASE_SECONDS's default: a delivery holds the run (or the group) it claimed, and hides its message, for
   * this long at a time, renewed by its heartbeat every third of it (shared/worker/heartbeat.ts). A worker that dies
   * leaves its run to the next receive of its message after at most this long, not after the function's timeout.
   */
  leaseSeconds: 60,
} as const;

/**
 * The run queue and its dead-letter queue. How long each failure takes to surface with these numbers:
 * docs/decisions.md#a-lease-per-delivery-renewed-by-a-heartbeat.
 */
export const runQueue = {
  id: 'RunQueue',
  envVar: 'RUN_QUEUE_URL',
  // Lambda refuses an SQS event source whose visibility timeout is below the function's timeout, so this is that floor,
  // and no longer 6 x it: the worker hides the message it holds for one lease at a time (the heartbeat), so this
  // only bounds a receive that never reached a claim (an invocation throttled or crashed at init) and the time a
  // delivery may take from the receive to its claim.
  visibilityTimeoutSeconds: workerSettings.timeoutSeconds,
  // AWS guidance for Lambda's SQS event source: at least 5. A delivery that dies now costs its message one receive
  // per lease (about a minute), so a poison message reaches the DLQ in about 5 leases; receives lost to throttling
  // (a new account's low concurrency quota) cost a visibility timeout each, so 75 minutes of uninterrupted
  // throttling send a healthy run to the DLQ, where the reconciler fails and refunds it (retryable).
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
   * A run delivered maxReceiveCount times is dead once the queue's visibility timeout and this margin have passed since
   * its last delivery began and its last lease ended (SQS then moves the message to the DLQ; the margin covers the move,
   * a message of the run that may still come back, and clock skew).
   */
  deadMarginSeconds: 300,
  /** Partitions of the `queued` index. */
  shards: 4,
  /** Runs read per query, and most queries per shard and sweep (the next sweep takes any rest). */
  pageSize: 100,
  maxPages: 10,
} as const;

/** Evaluations (contract-v1.2 §1): sizes, and when the reconciler takes over an evaluation a crash left behind. */
/** The batch lane (contract v1.2 §4, docs/pricing.md "Batch"): what a batch run promises and how requests are grouped. */
export const batchSettings = {
  /** A batch run finishes within this many hours of its creation (its `expiresAt`). */
  expiresWithinHours: 24,
  /** SERVICE_BATCH_MAX_WAIT_SECONDS's default: a group is sent once its oldest request has waited this long. */
  maxWaitSeconds: 600,
  /** SERVICE_BATCH_MAX_REQUESTS's default: the most requests in one batch (a provider's own limit may be lower). */
  maxRequests: 2000,
  /**
   * A request that could not be batched in time (its group stays under the provider's minimum) is called normally
   * once its run's deadline is this close: the time a normal call, its fallbacks and settlement need.
   */
  directMarginSeconds: 3600,
  /** How often the batcher runs (deployed: an EventBridge rule; the local stack: LOCAL_BATCH_INTERVAL_SECONDS). */
  everyMinutes: 5,
  /** A request marked `submitting` this long ago whose batch was never recorded is waiting again (a batcher crash). */
  submitStaleSeconds: 900,
  /** Items and batches read per state and run of the batcher. */
  pageSize: 500,
} as const;

export const evaluationSettings = {
  /** Documents in one evaluation. */
  maxItems: 1000,
  /** The largest request body an evaluation may have (its expected values): above the other routes' 256 KiB. */
  maxBodyBytes: 4 * 1024 * 1024,
  /** The largest expected values of one document, serialized. */
  maxExpectedBytes: 16 * 1024,
  /** Uploads inspected at once while an evaluation is created. */
  inspectConcurrency: 8,
  /** Run records written at once while its runs are created. */
  writeConcurrency: 16,
  /**
   * An evaluation still open this long after its creation is looked at by the reconciler: runs not created yet are
   * created (the creating request died after the hold), a report not written is written (the last settlement's
   * worker died after it).
   */
  sweepAfterSeconds: 120,
  /**
   * The sweep's tries at writing an evaluation's runs: at the last, a run that still cannot be written is failed and
   * its share refunded (one DynamoDB refuses outright, e.g. too large, is failed at its first try).
   */
  materializeTries: 5,
  /** Partitions of the `open` index. */
  shards: 4,
} as const;

/** The deliver function's limits; the webhook queue's visibility timeout is derived from them. */
export const deliverSettings = {
  // A batch is delivered concurrently, each POST within webhookSettings.timeoutMs: one slow receiver never waits on
  // another. The margin covers resolving, reading the run and writing the attempt.
  timeoutSeconds: 30,
  memoryMb: 512,
  batchSize: 10,
  maxConcurrency: 10,
} as const;

/**
 * The webhook delivery queue: one message per (event, endpoint, try). Retries are new messages with the try's delay
 * (shared/events/deliver.ts), so the redrive policy only catches a message whose handling keeps throwing (the
 * tables unreachable); a delivery whose every try failed is sent to the dead-letter queue by the deliver function.
 */
export const webhookQueue = {
  id: 'WebhookQueue',
  envVar: 'WEBHOOK_QUEUE_URL',
  visibilityTimeoutSeconds: 6 * deliverSettings.timeoutSeconds,
  maxReceiveCount: 5,
  retentionSeconds: 4 * 24 * 3600,
  /** SQS's largest DelaySeconds: a longer wait is taken in hops of this (a message that comes early is sent again). */
  maxDelaySeconds: 900,
  deadLetter: { id: 'WebhookDeadLetterQueue', envVar: 'WEBHOOK_DLQ_URL', retentionSeconds: 14 * 24 * 3600 },
} as const;

/**
 * The EventBridge bus every run event also goes to (deployed only; contract-v1.1 §4). Events reach it through a
 * feed queue and an EventBridge Pipe (lib/stateful-stack.ts): the functions only send SQS messages, so they need no
 * EventBridge client. The local stack has no bus.
 */
export const eventBus = {
  id: 'RunEventBus',
  source: 'vision.runs',
  detailTypes: { 'run.completed': 'Run Completed', 'run.failed': 'Run Failed' },
  feedQueue: { id: 'EventBusFeed', envVar: 'EVENT_BUS_FEED_URL', retentionSeconds: 4 * 24 * 3600, maxReceiveCount: 5 },
  /** EventBridge's largest event; a run over it goes without its `result` and `fields` (`resultOmitted: true`). */
  maxEventBytes: 256 * 1024,
} as const;

/** Webhooks (contract-v1.1 §4): endpoint limits, delivery rules and the retry schedule's default. */
export const webhookSettings = {
  maxEndpoints: 10,
  urlMaxLength: 2048,
  /** A 2xx within this long is delivered. */
  timeoutMs: 10_000,
  /** The most a webhook host's DNS lookup may take, at registration and before each try. */
  dnsTimeoutMs: 3_000,
  /**
   * Tries of one tenant in flight at once, across every deliver invocation (shared/store/delivery-slots.ts): a tenant
   * whose receivers hang holds at most this many of the deliver function's maxConcurrency × batchSize.
   */
  maxInFlightPerTenant: 5,
  /** A try that finds its tenant's slots all held waits 2, 4, 8, … seconds (jittered) up to this, then tries again. */
  busyWaitMaxSeconds: 60,
  /** Most bytes of a response read; the rest is never read. */
  responseReadMaxBytes: 64 * 1024,
  /** Most bytes of a response kept in the delivery record. */
  responseStoredMaxBytes: 1024,
  /**
   * Seconds to wait after each failed try (WEBHOOK_RETRY_DELAYS_SECONDS overrides it): 10 tries over about 23.6 hours,
   * each wait jittered by ±`jitter`. After the last try the delivery is dead-lettered and recorded `failed`.
   */
  retryDelaysSeconds: [10, 60, 300, 1800, 3600, 7200, 14400, 28800, 28800],
  jitter: 0.2,
  /** Attempts listed by GET /v1/webhooks/{id}/deliveries, and how long attempts are kept. */
  deliveriesListed: 100,
  deliveryRetentionDays: 30,
  /** How long an event stays in the outbox table (it is needed while its deliveries are retried). */
  eventRetentionDays: 3,
  /** The sweep hands on an event still pending this long after it was written (its dispatcher crashed). */
  sweepAfterSeconds: 60,
  /** Partitions of the `pending` index, and most events read per shard and sweep. */
  shards: 4,
  sweepPageSize: 100,
} as const;
