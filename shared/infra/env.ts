/**
 * The names of the service's environment variables, in one place: shared/config.ts reads them, lib/ sets them on the
 * functions, scripts/ and tests set them locally. Resource names (tables, bucket, queue) are the `envVar` fields of
 * ./resources.ts; provider keys and models are read by each provider (shared/providers/).
 */
export const ENV = {
  /** Runs estimated above this many USD need confirmation. */
  confirmationThresholdUsd: 'SERVICE_COST_CONFIRMATION_THRESHOLD_USD',
  /** The most a run may cost the service, as a multiple of its estimate (the spend limit; default 2). */
  maxOverrunRatio: 'SERVICE_MAX_OVERRUN_RATIO',
  /** The client's margin over provider cost, in percent. */
  marginPct: 'PRICING_MARGIN_PCT',
  /** A required field whose confidence is below this (in [0, 1], default 0.8) puts the run in the review queue. */
  reviewConfidence: 'SERVICE_REVIEW_CONFIDENCE',
  /** The most time (ms, default 6000) the worker's OCR for evidence may add to a run (shared/worker/grounding.ts). */
  evidenceOcrBudgetMs: 'SERVICE_EVIDENCE_OCR_BUDGET_MS',
  /** Comma-separated candidate provider ids, in order. */
  providers: 'VISION_PROVIDERS',
  imageMaxBytes: 'LIMIT_IMAGE_MAX_BYTES',
  imageMaxMegapixels: 'LIMIT_IMAGE_MAX_MEGAPIXELS',
  pdfMaxBytes: 'LIMIT_PDF_MAX_BYTES',
  pdfMaxPages: 'LIMIT_PDF_MAX_PAGES',
  promptMaxChars: 'LIMIT_PROMPT_MAX_CHARS',
  metadataMaxKeys: 'LIMIT_METADATA_MAX_KEYS',
  metadataMaxBytes: 'LIMIT_METADATA_MAX_BYTES',
  requestBodyMaxBytes: 'LIMIT_REQUEST_BODY_BYTES',
  uploadUrlTtlSeconds: 'UPLOAD_URL_TTL_SECONDS',
  uploadRetentionHours: 'UPLOAD_RETENTION_HOURS',
  runRetentionDays: 'RUN_RETENTION_DAYS',
  idempotencyTtlHours: 'IDEMPOTENCY_TTL_HOURS',
  /** Public base URL of presigned upload addresses, when it differs from the S3 endpoint the functions use. */
  uploadPublicEndpoint: 'UPLOAD_PUBLIC_ENDPOINT',
  logLevel: 'LOG_LEVEL',
  /** ARN of the Secrets Manager secret holding the provider API keys (the worker only). */
  providerSecretArn: 'PROVIDER_SECRET_ARN',
  /** Bedrock model or inference profile id (create-run and the worker, with bedrock enabled). */
  bedrockModelId: 'BEDROCK_MODEL_ID',
  /** Provider calls one run's page chunks make at once (the worker only). */
  runConcurrency: 'SERVICE_RUN_CONCURRENCY',
  /** Calls to one provider at once from every run of a worker process (the worker only). */
  providerConcurrency: 'SERVICE_PROVIDER_CONCURRENCY',
  /** A run of more pages fans out to other worker invocations, in groups of at most this many (the worker only). */
  fanoutPages: 'SERVICE_FANOUT_PAGES',
  /**
   * Seconds a worker holds a run (or a group) it claimed, renewed by its heartbeat while it works; a run whose worker
   * died is taken up again after at most this long (the worker only; default workerSettings.leaseSeconds).
   */
  leaseSeconds: 'SERVICE_LEASE_SECONDS',
  /** Seconds a batch group's oldest request waits before the group is sent (default batchSettings.maxWaitSeconds). */
  batchMaxWaitSeconds: 'SERVICE_BATCH_MAX_WAIT_SECONDS',
  /** The most requests one batch holds (default batchSettings.maxRequests; a provider's own limit may be lower). */
  batchMaxRequests: 'SERVICE_BATCH_MAX_REQUESTS',
  /** Deployment stage, the `Stage` dimension of the worker's metrics (shared/infra/metrics.ts). */
  metricsStage: 'METRICS_STAGE',
  /**
   * Where webhook signing secrets are kept: the ARN of the Secrets Manager secret holding the key that encrypts them
   * (deployed), or `local-table` (the local stack: the secret as it is, in the webhooks table).
   */
  webhookSecretStore: 'WEBHOOK_SECRET_STORE',
  /** `true` on the local stack only: webhook URLs may also be http(s)://127.0.0.1 and http(s)://localhost. */
  webhookAllowLocalhost: 'WEBHOOK_ALLOW_LOCALHOST',
  /** Comma-separated seconds to wait after each failed delivery try (default: webhookSettings.retryDelaysSeconds). */
  webhookRetryDelays: 'WEBHOOK_RETRY_DELAYS_SECONDS',
} as const;

export type EnvName = (typeof ENV)[keyof typeof ENV];
