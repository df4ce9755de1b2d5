/**
 * The API contract as zod schemas: every request body, query and response of interface.md + contract-v1.md.
 * Handlers validate with these; docs/openapi.json is generated from them (scripts/openapi.ts); types are inferred.
 * Request objects are strict (unknown fields → 400 INVALID_REQUEST) so typos surface.
 */
// Namespace import: zod 4's named `z` object defeats tree-shaking and drags every locale into each bundle.
import * as z from 'zod';
import { config } from './config.js';
import { FIELD_TYPES } from './providers/types.js';

const limits = config.limits;

// ---------- shared pieces ----------

/** Money: US dollars as a JSON number with at most 6 decimals, never negative. */
export const usd = z.number().nonnegative().meta({ description: 'US dollars, rounded to 6 decimals' });
export const isoTimestamp = z.iso.datetime().meta({ description: 'ISO-8601 UTC timestamp' });
export const runStatus = z.enum(['queued', 'completed', 'failed']);
export const outputFormat = z.enum(['json', 'text']);
export const strategy = z.enum(['direct_multimodal', 'ocr_then_analyze', 'generic_vision_summary']);

// Any JSON value: the interface promises arbitrary key-value pairs; the size limits below keep them small.
const metadataValue = z.json();
export const metadata = z
  .record(z.string().min(1).max(128), metadataValue)
  .refine((m) => Object.keys(m).length <= limits.metadataMaxKeys, {
    message: `metadata may have at most ${limits.metadataMaxKeys} keys`,
  })
  .refine((m) => Buffer.byteLength(JSON.stringify(m)) <= limits.metadataMaxBytes, {
    message: `metadata may be at most ${limits.metadataMaxBytes} bytes serialized`,
  })
  .meta({ description: 'Arbitrary key-value pairs attached to the run (any JSON values)' });

export const workflow = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9._:-]+$/, 'workflow may contain only letters, digits and . _ : -');

/** An expected field of an inline schema: a bare name or a described field. */
export const expectedField = z.union([
  z.string().min(1).max(128),
  z.strictObject({
    name: z.string().min(1).max(128),
    type: z.enum(FIELD_TYPES).optional(),
    description: z.string().max(1000).optional(),
    required: z.boolean().optional(),
  }),
]);

export const inlineSchema = z.strictObject({
  label: z.string().min(1).max(200),
  expectedFields: z.array(expectedField).min(1).max(100),
  promptScaffold: z
    .string()
    .max(limits.promptMaxChars)
    .optional()
    .meta({ description: 'Prompt template; {prompt} and {fields} are replaced' }),
});

export const errorObject = z.object({
  code: z.string(),
  message: z.string(),
  status: z.number().int(),
  retryable: z.boolean(),
  details: z.record(z.string(), z.unknown()).optional(),
  requestId: z.string().optional(),
});
export const errorResponse = z.object({ error: errorObject });

// ---------- POST /v1/uploads/presign ----------

export const presignRequest = z.strictObject({
  fileName: z.string().min(1).max(255),
  contentLength: z.number().int().positive(),
});
export const presignResponse = z.object({
  uploadId: z.string(),
  uploadUrl: z.string(),
  expiresAt: isoTimestamp,
  method: z.literal('PUT'),
  headers: z.object({ 'Content-Type': z.literal('application/octet-stream') }),
  maxBytes: z.number().int(),
});

// ---------- POST /v1/runs ----------

export const createRunRequest = z
  .strictObject({
    uploadId: z.string().min(1).max(128),
    // Echoed exactly as sent (no trimming); a blank prompt is refused.
    prompt: z
      .string()
      .max(limits.promptMaxChars)
      .refine((p) => p.trim().length > 0, { message: 'prompt must not be blank' }),
    outputFormat: outputFormat.default('json'),
    schemaId: z.string().min(1).max(64).optional(),
    schema: inlineSchema.optional(),
    workflow: workflow.optional(),
    metadata: metadata.optional(),
    confirmCost: z.boolean().optional(),
    maxCostUsd: z.number().positive().max(1_000_000).optional(),
  })
  .refine((b) => !(b.schemaId !== undefined && b.schema !== undefined), {
    message: 'send either schemaId or schema, not both',
    path: ['schema'],
  });

const verification = z.object({
  accepted: z.boolean(),
  corrections: z.record(z.string(), z.unknown()),
  note: z.string().nullable(),
  verifiedAt: isoTimestamp,
  verifiedBy: z.string(),
});

/** What the service found in the upload (by its bytes), plus the client's file name. */
export const runFile = z
  .object({
    name: z.string().nullable().meta({ description: 'File name given at presign (null for older runs)' }),
    type: z.enum(['image/jpeg', 'image/png', 'image/heic', 'application/pdf']),
    sizeBytes: z.number().int().nonnegative(),
    pages: z.number().int().positive(),
    width: z.number().int().positive().optional(),
    height: z.number().int().positive().optional(),
  })
  .meta({ description: 'The uploaded file as inspected at creation' });

const creationFields = {
  jobId: z.string(),
  uploadId: z.string(),
  prompt: z.string(),
  outputFormat,
  schemaId: z.string().nullable(),
  estimatedCostUsd: usd,
  metadata: z.record(z.string(), metadataValue),
  workflow: z.string().nullable(),
  createdAt: isoTimestamp,
  file: runFile,
};

// ---------- GET /v1/runs/{jobId} ----------

export const attempt = z.object({
  provider: z.string(),
  step: z.string(),
  outcome: z.enum(['succeeded', 'failed', 'skipped']),
  latencyMs: z.number().int().nonnegative(),
  failure: z
    .string()
    .optional()
    .meta({ description: 'Failure kind (timeout, rate_limited, server, …) when not succeeded' }),
});

export const usage = z.object({
  requests: z.number().int().nonnegative(),
  billableUnits: z.number().nonnegative(),
  costUsd: usd,
  priceUsd: usd,
});

export const queuedRun = z.object({
  ...creationFields,
  status: z.literal('queued'),
  stage: z.enum(['waiting', 'processing']).meta({ description: 'Progress detail: in the queue, or a worker is on it' }),
});

export const completedRun = z.object({
  ...creationFields,
  status: z.literal('completed'),
  protocolVersion: z.literal('0.1.0'),
  requests: z.number().int().nonnegative(),
  result: z.record(z.string(), z.unknown()),
  usage,
  chargedUsd: usd,
  refundedUsd: usd,
  confidence: z.number().min(0).max(1),
  strategy,
  attempts: z.array(attempt),
  completedAt: isoTimestamp,
  verification: verification.optional(),
});

export const failedRun = z.object({
  ...creationFields,
  status: z.literal('failed'),
  error: errorObject,
  chargedUsd: usd,
  refundedUsd: usd,
  attempts: z.array(attempt),
  completedAt: isoTimestamp,
});

/** The creation envelope is the queued run. */
export const createRunResponse = queuedRun;

export const runResponse = z.discriminatedUnion('status', [queuedRun, completedRun, failedRun]);

// ---------- GET /v1/runs ----------

export const listRunsQuery = z.strictObject({
  workflow: workflow.optional(),
  status: runStatus.optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().min(1).max(2048).optional(),
});
export const listRunsResponse = z.object({ items: z.array(runResponse), nextCursor: z.string().nullable() });

// ---------- POST /v1/runs/{jobId}/verify ----------

export const verifyRequest = z.strictObject({
  accepted: z.boolean(),
  corrections: z.record(z.string().min(1).max(128), z.unknown()).optional(),
  note: z.string().max(2000).optional(),
});
export const verifyResponse = z.object({ jobId: z.string(), status: runStatus, verification });

// ---------- GET /v1/schemas ----------

export const registrySchemaSummary = z.object({
  id: z.string(),
  label: z.string(),
  expectedFields: z.array(
    z.object({
      name: z.string(),
      type: z.enum(FIELD_TYPES),
      description: z.string().optional(),
      required: z.boolean(),
    }),
  ),
});
export const schemasResponse = z.object({ items: z.array(registrySchemaSummary) });

// ---------- GET /v1/usage ----------

export const USAGE_INTERVALS = ['hour', 'day', 'month'] as const;
export type UsageInterval = (typeof USAGE_INTERVALS)[number];
/** At most this many buckets per answer (a month of hours, two years of days). */
export const USAGE_MAX_BUCKETS = 744;

export const usageQuery = z
  .strictObject({
    from: z.iso
      .datetime()
      .optional()
      .meta({ description: 'Start of the period (inclusive); default: 30 days before `to`' }),
    to: z.iso.datetime().optional().meta({ description: 'End of the period (exclusive); default: now' }),
    interval: z
      .enum(USAGE_INTERVALS)
      .optional()
      .meta({
        description:
          'Width of each `series` bucket, starting at UTC hour, day or month boundaries. Default: day, or month when ' +
          `the period holds more than ${USAGE_MAX_BUCKETS} days`,
      }),
    workflow: workflow.optional().meta({ description: 'Only this workflow' }),
  })
  // Compared as instants: timestamps may be written with or without milliseconds.
  .refine((q) => q.from === undefined || q.to === undefined || Date.parse(q.from) < Date.parse(q.to), {
    message: 'from must be before to',
    path: ['from'],
  });
export const usageRow = z.object({
  workflow: z.string().nullable(),
  runs: z.number().int(),
  completed: z.number().int(),
  failed: z.number().int(),
  queued: z.number().int(),
  estimatedUsd: usd,
  chargedUsd: usd,
  refundedUsd: usd,
  verified: z.number().int(),
  accepted: z.number().int(),
  acceptanceRate: z.number().min(0).max(1).nullable(),
  meanConfidence: z.number().min(0).max(1).nullable(),
});
export const usageBucket = z.object({
  start: isoTimestamp,
  end: isoTimestamp,
  totals: usageRow,
  workflows: z.array(usageRow),
});
export const usageResponse = z.object({
  from: isoTimestamp,
  to: isoTimestamp,
  interval: z.enum(USAGE_INTERVALS),
  workflows: z.array(usageRow),
  totals: usageRow,
  series: z
    .array(usageBucket)
    .meta({ description: 'Every bucket from `from` to `to`, oldest first, empty ones included (for charts)' }),
});

// ---------- GET /v1/runs/{jobId}/file ----------

export const fileUrlResponse = z.object({
  jobId: z.string(),
  url: z.string().meta({ description: 'Short-lived address to GET the uploaded bytes (no key needed)' }),
  expiresAt: isoTimestamp,
  contentType: z.string(),
  fileName: z.string().nullable(),
});

// ---------- GET /health ----------

export const healthResponse = z.object({ status: z.literal('ok') });

// ---------- inferred types ----------

export type PresignRequest = z.infer<typeof presignRequest>;
export type PresignResponse = z.infer<typeof presignResponse>;
export type CreateRunRequest = z.infer<typeof createRunRequest>;
export type CreateRunResponse = z.infer<typeof createRunResponse>;
export type RunResponse = z.infer<typeof runResponse>;
export type Attempt = z.infer<typeof attempt>;
export type Usage = z.infer<typeof usage>;
export type ListRunsQuery = z.infer<typeof listRunsQuery>;
export type ListRunsResponse = z.infer<typeof listRunsResponse>;
export type VerifyRequest = z.infer<typeof verifyRequest>;
export type VerifyResponse = z.infer<typeof verifyResponse>;
export type Verification = z.infer<typeof verification>;
export type SchemasResponse = z.infer<typeof schemasResponse>;
export type UsageQuery = z.infer<typeof usageQuery>;
export type UsageRow = z.infer<typeof usageRow>;
export type UsageResponse = z.infer<typeof usageResponse>;
export type UsageBucket = z.infer<typeof usageBucket>;
export type FileUrlResponse = z.infer<typeof fileUrlResponse>;
export type RunFile = z.infer<typeof runFile>;
export type ErrorBody = z.infer<typeof errorResponse>;
export type InlineSchema = z.infer<typeof inlineSchema>;
