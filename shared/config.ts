/**
 * Typed configuration from the environment (variable names: ./infra/env.ts). Each setting is parsed at its first use
 * and kept; a malformed value throws with a message naming the variable. A Lambda function still fails at cold start:
 * its `checkEnvironment()` parses every variable at init (docs/decisions.md#environment-read-at-first-use).
 */
import { ENV } from './infra/env.js';
import { batchSettings, workerSettings } from './infra/resources.js';
import { checkAtInit } from './resource-name.js';
import { PROVIDER_IDS, type ProviderId } from './task.js';
// zod/mini like the contract (see contract.ts): every API handler loads this module.
import * as z from './zod.js';

const MiB = 1024 * 1024;

// zod 4 numbers are always finite (classic's `.finite()` is a no-op), so Infinity is refused here too.
const number = (fallback: number) => z._default(z.coerce.number().check(z.nonnegative()), fallback);
const positiveInt = (fallback: number) => z._default(z.coerce.number().check(z.int(), z.positive()), fallback);

const envShape = {
  [ENV.confirmationThresholdUsd]: number(1),
  /** At least 1: a run may always cost what it was estimated at. */
  [ENV.maxOverrunRatio]: z._default(z.coerce.number().check(z.minimum(1), z.maximum(100)), 2),
  /** A share: 0 sends no run to review for a low field, 1 every run with a required field not certain. */
  [ENV.reviewConfidence]: z.pipe(
    // Empty is unset (coerced, it would be 0: no run would ever need review for a low field).
    z.transform((v: unknown) => (v === '' ? undefined : v)),
    z._default(z.coerce.number().check(z.minimum(0), z.maximum(1)), 0.8),
  ),
  [ENV.evidenceOcrBudgetMs]: positiveInt(6_000),
  /** Unset: the pricing table's `marginPct`. */
  [ENV.marginPct]: z.pipe(
    z.transform((v: unknown) => (v === '' ? undefined : v)),
    z.optional(z.coerce.number().check(z.minimum(0), z.maximum(1000))),
  ),
  /** Exactly these are candidates, in this order. Unset: all with credentials, then local. */
  [ENV.providers]: z.pipe(
    z.pipe(
      z.optional(z.string()),
      z.transform((v) => (v === undefined || v.trim() === '' ? undefined : v.split(',').map((s) => s.trim()))),
    ),
    z.optional(z.array(z.enum(PROVIDER_IDS)).check(z.minLength(1))),
  ),
  [ENV.imageMaxBytes]: positiveInt(20 * MiB),
  [ENV.imageMaxMegapixels]: number(100),
  [ENV.pdfMaxBytes]: positiveInt(100 * MiB),
  [ENV.pdfMaxPages]: positiveInt(1000),
  [ENV.promptMaxChars]: positiveInt(10_000),
  [ENV.metadataMaxKeys]: positiveInt(50),
  [ENV.metadataMaxBytes]: positiveInt(8 * 1024),
  /** Largest accepted JSON request body; API Gateway's own cap is 10 MB. */
  [ENV.requestBodyMaxBytes]: positiveInt(256 * 1024),
  [ENV.uploadUrlTtlSeconds]: positiveInt(900),
  [ENV.uploadRetentionHours]: positiveInt(24),
  [ENV.runRetentionDays]: positiveInt(90),
  [ENV.idempotencyTtlHours]: positiveInt(24),
  [ENV.uploadPublicEndpoint]: z.optional(z.url()),
  [ENV.runConcurrency]: positiveInt(32),
  [ENV.providerConcurrency]: positiveInt(64),
  [ENV.fanoutPages]: positiveInt(100),
  /** At least 2 s (the heartbeat renews every third of it); at most SQS's longest visibility timeout (12 h). */
  [ENV.leaseSeconds]: z._default(
    z.coerce.number().check(z.int(), z.minimum(2), z.maximum(43_200)),
    workerSettings.leaseSeconds,
  ),
  /** At most a day: a batch run must still finish within batchSettings.expiresWithinHours. */
  [ENV.batchMaxWaitSeconds]: z._default(
    z.coerce.number().check(z.int(), z.minimum(1), z.maximum(86_400)),
    batchSettings.maxWaitSeconds,
  ),
  [ENV.batchMaxRequests]: positiveInt(batchSettings.maxRequests),
  [ENV.logLevel]: z._default(z.enum(['debug', 'info', 'warn', 'error', 'silent']), 'info'),
  [ENV.webhookAllowLocalhost]: z._default(z.enum(['true', 'false']), 'false'),
  /** Unset: webhookSettings.retryDelaysSeconds. At least one wait (two tries); each 0 to 12 hours. */
  [ENV.webhookRetryDelays]: z.pipe(
    z.pipe(
      z.optional(z.string()),
      z.transform((v) =>
        v === undefined || v.trim() === '' ? undefined : v.split(',').map((s) => Number(s.trim() || Number.NaN)),
      ),
    ),
    z.optional(z.array(z.number().check(z.int(), z.minimum(0), z.maximum(12 * 3600))).check(z.minLength(1))),
  ),
};
const envSchema = z.object(envShape);
type Env = z.infer<typeof envSchema>;
type Name = keyof Env;

function invalid(issues: readonly z.core.$ZodIssue[], path: PropertyKey[] = []): Error {
  const problems = issues.map((i) => `${[...path, ...i.path].map(String).join('.')}: ${i.message}`).join('; ');
  return new Error(`Invalid configuration: ${problems}`);
}

/** Parses every variable at once, naming each malformed one. Run at a function's init (checkEnvironment). */
export function checkConfig(): void {
  const parsed = envSchema.safeParse(process.env);
  if (!parsed.success) throw invalid(parsed.error.issues);
}
checkAtInit(checkConfig);

const parsedValues = new Map<Name, unknown>();

/** One variable, parsed at its first use and kept. */
function read<N extends Name>(name: N): Env[N] {
  if (!parsedValues.has(name)) {
    const parsed = (envShape[name] as z.ZodMiniType).safeParse(process.env[name]);
    if (!parsed.success) throw invalid(parsed.error.issues, [name]);
    parsedValues.set(name, parsed.data);
  }
  return parsedValues.get(name) as Env[N];
}

/** Upload, request and metadata limits. */
export interface Limits {
  readonly imageMaxBytes: number;
  readonly imageMaxPixels: number;
  readonly pdfMaxBytes: number;
  readonly pdfMaxPages: number;
  readonly promptMaxChars: number;
  readonly metadataMaxKeys: number;
  readonly metadataMaxBytes: number;
  readonly requestBodyMaxBytes: number;
}

let limits: Limits | undefined;

/** Service configuration (limits, threshold, providers); every property reads its variable at first use. */
export const config = {
  get confirmationThresholdUsd(): number {
    return read(ENV.confirmationThresholdUsd);
  },
  /** The spend limit: a run's price may reach this multiple of its estimate, the service absorbing the excess. */
  get maxOverrunRatio(): number {
    return read(ENV.maxOverrunRatio);
  },
  /**
   * SERVICE_REVIEW_CONFIDENCE: a required field below this confidence needs review (contract-v1.1 §3). The worker
   * passes it to grounding as `reviewThreshold`.
   */
  get reviewConfidence(): number {
    return read(ENV.reviewConfidence);
  },
  /** The most time OCR for evidence may add to a run (shared/worker/grounding.ts). */
  get evidenceOcrBudgetMs(): number {
    return read(ENV.evidenceOcrBudgetMs);
  },
  /** Margin override in percent (PRICING_MARGIN_PCT); undefined keeps shared/pricing/pricing.json's. */
  get marginPct(): number | undefined {
    return read(ENV.marginPct);
  },
  get providers(): ProviderId[] | undefined {
    return read(ENV.providers) as ProviderId[] | undefined;
  },
  get limits(): Limits {
    limits ??= {
      imageMaxBytes: read(ENV.imageMaxBytes),
      imageMaxPixels: Math.round(read(ENV.imageMaxMegapixels) * 1_000_000),
      pdfMaxBytes: read(ENV.pdfMaxBytes),
      pdfMaxPages: read(ENV.pdfMaxPages),
      promptMaxChars: read(ENV.promptMaxChars),
      metadataMaxKeys: read(ENV.metadataMaxKeys),
      metadataMaxBytes: read(ENV.metadataMaxBytes),
      requestBodyMaxBytes: read(ENV.requestBodyMaxBytes),
    };
    return limits;
  },
  get uploadUrlTtlSeconds(): number {
    return read(ENV.uploadUrlTtlSeconds);
  },
  get uploadRetentionHours(): number {
    return read(ENV.uploadRetentionHours);
  },
  get runRetentionDays(): number {
    return read(ENV.runRetentionDays);
  },
  get idempotencyTtlHours(): number {
    return read(ENV.idempotencyTtlHours);
  },
  get uploadPublicEndpoint(): string | undefined {
    return read(ENV.uploadPublicEndpoint);
  },
  /** Provider calls one run's page chunks make at once (contract v1.1 §2). */
  get runConcurrency(): number {
    return read(ENV.runConcurrency);
  },
  /** Calls to one provider at once from every run of a worker process (shared/worker/pool.ts). */
  get providerConcurrency(): number {
    return read(ENV.providerConcurrency);
  },
  /** A chunked run of more pages fans out in groups of at most this many (shared/worker/fanout.ts). */
  get fanoutPages(): number {
    return read(ENV.fanoutPages);
  },
  /** How long a worker's claim on a run or a group lasts unless its heartbeat renews it (shared/worker/heartbeat.ts). */
  get leaseSeconds(): number {
    return read(ENV.leaseSeconds);
  },
  /** Seconds a batch group's oldest request waits before the group is sent (shared/batching/groups.ts). */
  get batchMaxWaitSeconds(): number {
    return read(ENV.batchMaxWaitSeconds);
  },
  /** The most requests one batch holds (a provider's own limit may be lower). */
  get batchMaxRequests(): number {
    return read(ENV.batchMaxRequests);
  },
  get logLevel(): Env[typeof ENV.logLevel] {
    return read(ENV.logLevel);
  },
  /** Webhook URLs may also name 127.0.0.1 or localhost over http or https (the local stack only). */
  get webhookAllowLocalhost(): boolean {
    return read(ENV.webhookAllowLocalhost) === 'true';
  },
  /** Seconds to wait after each failed try; undefined keeps webhookSettings.retryDelaysSeconds. */
  get webhookRetryDelaysSeconds(): number[] | undefined {
    return read(ENV.webhookRetryDelays);
  },
};

export type ServiceConfig = typeof config;

export { resourceName } from './resource-name.js';
