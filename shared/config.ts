/**
 * Typed configuration, parsed from the environment once at cold start. A malformed value throws at import with a
 * message that names the variable. Resource names (tables, bucket, queue) are read with `resourceName`, which throws
 * when the variable is missing, so a function deployed without its grant-and-env binding fails at init, not mid-request.
 */
// Namespace import: zod 4's named `z` object defeats tree-shaking and drags every locale into each bundle.
import * as z from 'zod';
import { PROVIDER_IDS, type ProviderId } from './providers/types.js';

const MiB = 1024 * 1024;

const number = (fallback: number) => z.coerce.number().finite().nonnegative().default(fallback);
const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);

const envSchema = z.object({
  SERVICE_COST_CONFIRMATION_THRESHOLD_USD: number(1),
  /** The client's margin over provider cost, in percent; unset: the pricing table's `marginPct`. */
  PRICING_MARGIN_PCT: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.coerce.number().finite().min(0).max(1000).optional(),
  ),
  /** Comma-separated provider ids: exactly these are candidates, in this order. Unset: all with credentials, then local. */
  VISION_PROVIDERS: z
    .string()
    .optional()
    .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.split(',').map((s) => s.trim())))
    .pipe(z.array(z.enum(PROVIDER_IDS)).min(1).optional()),
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
  UPLOAD_PUBLIC_ENDPOINT: z.url().optional(),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
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
