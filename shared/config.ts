/**
 * Typed configuration, parsed from the environment once at cold start. A malformed value throws at import with a
 * message that names the variable. Resource names (tables, bucket, queue) are read with `resourceName`, which throws
 * when the variable is missing, so a function deployed without its grant-and-env binding fails at init, not mid-request.
 */
import { PROVIDER_IDS, type ProviderId } from './task.js';
// zod/mini like the contract (see contract.ts): every API handler loads this module.
import * as z from './zod.js';

const MiB = 1024 * 1024;

// zod 4 numbers are always finite (classic's `.finite()` is a no-op), so Infinity is refused here too.
const number = (fallback: number) => z._default(z.coerce.number().check(z.nonnegative()), fallback);
const positiveInt = (fallback: number) => z._default(z.coerce.number().check(z.int(), z.positive()), fallback);

const envSchema = z.object({
  SERVICE_COST_CONFIRMATION_THRESHOLD_USD: number(1),
  /** The client's margin over provider cost, in percent; unset: the pricing table's `marginPct`. */
  PRICING_MARGIN_PCT: z.pipe(
    z.transform((v: unknown) => (v === '' ? undefined : v)),
    z.optional(z.coerce.number().check(z.minimum(0), z.maximum(1000))),
  ),
  /** Comma-separated provider ids: exactly these are candidates, in this order. Unset: all with credentials, then local. */
  VISION_PROVIDERS: z.pipe(
    z.pipe(
      z.optional(z.string()),
      z.transform((v) => (v === undefined || v.trim() === '' ? undefined : v.split(',').map((s) => s.trim()))),
    ),
    z.optional(z.array(z.enum(PROVIDER_IDS)).check(z.minLength(1))),
  ),
  LIMIT_IMAGE_MAX_BYTES: positiveInt(20 * MiB),
  LIMIT_IMAGE_MAX_MEGAPIXELS: number(100),
  LIMIT_PDF_MAX_BYTES: positiveInt(50 * MiB),
  LIMIT_PDF_MAX_PAGES: positiveInt(200),
  LIMIT_PROMPT_MAX_CHARS: positiveInt(10_000),
  LIMIT_METADATA_MAX_KEYS: positiveInt(50),
  LIMIT_METADATA_MAX_BYTES: positiveInt(8 * 1024),
  /** Largest accepted JSON request body; API Gateway's own cap is 10 MB. */
  LIMIT_REQUEST_BODY_BYTES: positiveInt(256 * 1024),
  UPLOAD_URL_TTL_SECONDS: positiveInt(900),
  UPLOAD_RETENTION_HOURS: positiveInt(24),
  RUN_RETENTION_DAYS: positiveInt(90),
  IDEMPOTENCY_TTL_HOURS: positiveInt(24),
  /** Public base URL of presigned upload addresses, when it differs from the S3 endpoint the functions use. */
  UPLOAD_PUBLIC_ENDPOINT: z.optional(z.url()),
  LOG_LEVEL: z._default(z.enum(['debug', 'info', 'warn', 'error', 'silent']), 'info'),
});

function parseEnv(): z.infer<typeof envSchema> {
  const parsed = envSchema.safeParse(process.env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`Invalid configuration: ${problems}`);
  }
  return parsed.data;
}

const env = parseEnv();

/** Service configuration (limits, threshold, providers). */
export const config = {
  confirmationThresholdUsd: env.SERVICE_COST_CONFIRMATION_THRESHOLD_USD,
  /** Margin override in percent (PRICING_MARGIN_PCT); undefined keeps shared/pricing/pricing.json's. */
  marginPct: env.PRICING_MARGIN_PCT,
  providers: env.VISION_PROVIDERS as ProviderId[] | undefined,
  limits: {
    imageMaxBytes: env.LIMIT_IMAGE_MAX_BYTES,
    imageMaxPixels: Math.round(env.LIMIT_IMAGE_MAX_MEGAPIXELS * 1_000_000),
    pdfMaxBytes: env.LIMIT_PDF_MAX_BYTES,
    pdfMaxPages: env.LIMIT_PDF_MAX_PAGES,
    promptMaxChars: env.LIMIT_PROMPT_MAX_CHARS,
    metadataMaxKeys: env.LIMIT_METADATA_MAX_KEYS,
    metadataMaxBytes: env.LIMIT_METADATA_MAX_BYTES,
    requestBodyMaxBytes: env.LIMIT_REQUEST_BODY_BYTES,
  },
  uploadUrlTtlSeconds: env.UPLOAD_URL_TTL_SECONDS,
  uploadRetentionHours: env.UPLOAD_RETENTION_HOURS,
  runRetentionDays: env.RUN_RETENTION_DAYS,
  idempotencyTtlHours: env.IDEMPOTENCY_TTL_HOURS,
  uploadPublicEndpoint: env.UPLOAD_PUBLIC_ENDPOINT,
  logLevel: env.LOG_LEVEL,
} as const;

export type ServiceConfig = typeof config;
export type Limits = ServiceConfig['limits'];

export { resourceName } from './resource-name.js';
