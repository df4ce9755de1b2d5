/**
 * The API contract as zod schemas: every request body, query and response of interface.md + contract-v1.md; handlers
 * validate with these, docs/openapi.json is generated from them, types are inferred. Request objects are strict.
 * Not to undo: every module an API handler loads uses zod/mini (one classic schema brings ~100 KB back into each
 * bundle): docs/decisions.md#why-the-apis-schemas-use-zodmini.
 * Over 400 lines: the whole wire contract in one file, route by route, is what a client developer reads.
 */
import { config } from './config.js';
import { ERROR_CODES, type ErrorCode } from './errors.js';
import { SUPPORTED_MIME_TYPES } from './file-facts.js';
import { evaluationSettings } from './infra/resources.js';
import { SCOPES } from './infra/routes.js';
import { jsonProblem, STORED_MAX_DEPTH } from './json-limits.js';
import { FIELD_TYPES, PRIORITIES, PROVIDER_IDS } from './task.js';
import * as z from './zod.js';

const limits = config.limits;
/** Largest verify `corrections`, serialized. */
export const CORRECTIONS_MAX_BYTES = 64 * 1024;

/** A string of `min`..`max` characters (classic's `z.string().min(min).max(max)`). */
const text = (min: number, max: number) => z.string().check(z.minLength(min), z.maxLength(max));
/**
 * Control characters (C0, DEL, C1: NUL, CR, LF, ESC, …) and the bidirectional formatting characters (LRM, RLM, ALM,
 * the embeddings, overrides and isolates): text a person reads elsewhere (a terminal, a dashboard, a log line) where
 * they could rewrite or reorder what is shown.
 */
export const UNDISPLAYABLE = /[\p{Cc}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/u;
/** `text` that must show as what it is: no control or bidirectional formatting characters. */
const displayText = (min: number, max: number) =>
  text(min, max).check(
    z.refine((value) => !UNDISPLAYABLE.test(value), {
      message: 'must not contain control characters or bidirectional formatting characters',
    }),
  );
/** Whole numbers (classic's `z.number().int()`), with further checks. */
const integer = (...checks: z.core.$ZodCheck<number>[]) => z.number().check(z.int(), ...checks);
/** A share, 0 to 1. */
const fraction = () => z.number().check(z.minimum(0), z.maximum(1));

// ---------- shared pieces ----------

/** Money: US dollars as a JSON number with at most 6 decimals, never negative. */
export const usd = z.number().check(z.nonnegative(), z.meta({ description: 'US dollars, rounded to 6 decimals' }));
export const isoTimestamp = z.iso.datetime().check(z.meta({ description: 'ISO-8601 UTC timestamp' }));
export const runStatus = z.enum(['queued', 'completed', 'failed']);
export const outputFormat = z.enum(['json', 'text']);
export const strategy = z.enum(['direct_multimodal', 'ocr_then_analyze', 'generic_vision_summary']);

// Any JSON value: the interface promises arbitrary key-value pairs; the size limits below keep them small.
const metadataValue = z.json();

/** Refuses what DynamoDB cannot store as sent: nesting past STORED_MAX_DEPTH, numbers out of its range. */
const storable = z.superRefine((value: Record<string, unknown>, ctx) => {
  const problem = jsonProblem(value, { maxDepth: STORED_MAX_DEPTH, numbers: true });
  if (problem) ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path, input: value });
});

export const metadata = z.record(text(1, 128), metadataValue).check(
  storable,
  z.refine((m) => Object.keys(m).length <= limits.metadataMaxKeys, {
    message: `metadata may have at most ${limits.metadataMaxKeys} keys`,
  }),
  z.refine((m) => Buffer.byteLength(JSON.stringify(m)) <= limits.metadataMaxBytes, {
    message: `metadata may be at most ${limits.metadataMaxBytes} bytes serialized`,
  }),
  z.meta({ description: 'Arbitrary key-value pairs attached to the run (any JSON values)' }),
);

export const workflow = text(1, 64).check(
  z.regex(/^[A-Za-z0-9._:-]+$/, 'workflow may contain only letters, digits and . _ : -'),
);

/** An expected field of an inline schema: a bare name or a described field. */
export const expectedField = z.union([
  text(1, 128),
  z.strictObject({
    name: text(1, 128),
    type: z.optional(z.enum(FIELD_TYPES)),
    description: z.optional(z.string().check(z.maxLength(1000))),
    required: z.optional(z.boolean()),
  }),
]);

export const inlineSchema = z.strictObject({
  label: text(1, 200),
  expectedFields: z.array(expectedField).check(
    z.minLength(1),
    z.maxLength(100),
    // Field names become the result's keys: two fields of one name would be one key.
    z.superRefine((fields, ctx) => {
      const names = fields.map((f) => (typeof f === 'string' ? f : f.name));
      const index = names.findIndex((name, i) => names.indexOf(name) !== i);
      if (index >= 0) {
        ctx.addIssue({
          code: 'custom',
          message: `duplicate field name "${names[index]}"`,
          path: [index],
          input: fields,
        });
      }
      // A result key "__proto__" would be swallowed as the result object's prototype.
      const reserved = names.indexOf('__proto__');
      if (reserved >= 0) {
        ctx.addIssue({
          code: 'custom',
          message: 'the field name "__proto__" is not allowed',
          path: [reserved],
          input: fields,
        });
      }
    }),
  ),
  promptScaffold: z
    .optional(z.string().check(z.maxLength(limits.promptMaxChars)))
    .check(z.meta({ description: 'Prompt template; {prompt} and {fields} are replaced' })),
});

/** An error: the body of every rejected request, and `error` on a failed run. */
export const errorObject = z.object({
  code: z.enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]]),
  message: z.string(),
  status: integer(),
  retryable: z.boolean(),
  details: z.optional(z.record(z.string(), z.unknown())),
  // A failed run's error quotes its creating request's id when the run recorded one.
  requestId: z.optional(z.string()),
});
/** A rejected request's body: always with the id of the request (also in the x-request-id header). */
export const errorResponse = z.object({ error: z.extend(errorObject, { requestId: z.string() }) });

// ---------- POST /v1/uploads/presign ----------

export const presignRequest = z.strictObject({
  fileName: displayText(1, 255).check(
    z.meta({ description: 'The file name with its extension; no control or bidirectional formatting characters' }),
  ),
  contentLength: integer(z.positive()),
});
export const presignResponse = z.object({
  uploadId: z.string(),
  uploadUrl: z.string(),
  expiresAt: isoTimestamp,
  method: z.literal('PUT'),
  headers: z.object({ 'Content-Type': z.literal('application/octet-stream') }),
  maxBytes: integer(),
});

// ---------- POST /v1/runs ----------

/** How soon the answer is needed (contract-v1.2 §4): `batch` goes through the provider's batch interface. */
export const priority = z.enum(PRIORITIES);
/** `schemaId: "auto"`: classify the whole file among the allowed schemas, then extract it (contract-v1.2 §3). */
export const AUTO_SCHEMA = 'auto';
/** Most schemas one packet may choose among (the registry is far smaller; a bound keeps requests small). */
export const PACKET_SCHEMAS_MAX = 50;

/** What a run asks besides its file: shared by POST /v1/runs and POST /v1/estimates (the same body, one schema). */
const runFields = {
  // Echoed exactly as sent (no trimming); a blank prompt is refused.
  prompt: z.string().check(
    z.maxLength(limits.promptMaxChars),
    z.refine((p) => p.trim().length > 0, { message: 'prompt must not be blank' }),
  ),
  outputFormat: z._default(outputFormat, 'json'),
  schemaId: z.optional(
    text(1, 64).check(
      z.meta({ description: 'A registry schema id, or "auto": classify the whole file first (contract-v1.2 §3)' }),
    ),
  ),
  schema: z.optional(inlineSchema),
  split: z.optional(
    z
      .boolean()
      .check(
        z.meta({ description: 'A PDF packet: assign every page to a document, class and extract each (v1.2 §3)' }),
      ),
  ),
  schemaIds: z.optional(
    z.array(text(1, 64)).check(
      z.minLength(1),
      z.maxLength(PACKET_SCHEMAS_MAX),
      z.refine((ids) => new Set(ids).size === ids.length, { message: 'schemaIds must not repeat an id' }),
      z.meta({ description: 'With split or schemaId "auto": the registry schemas allowed (default: all)' }),
    ),
  ),
  workflow: z.optional(workflow),
  metadata: z.optional(metadata),
  confirmCost: z.optional(z.boolean()),
  // At least one micro-dollar: a smaller budget would apply as 0 (budgets round down), which no run fits.
  maxCostUsd: z.optional(
    z
      .number()
      .check(z.minimum(0.000001, { message: 'must be at least 0.000001 (one micro-dollar)' }), z.maximum(1_000_000)),
  ),
};

const eitherSchemaIdOrSchema = z.refine<{ schemaId?: unknown; schema?: unknown }>(
  (b) => !(b.schemaId !== undefined && b.schema !== undefined),
  { message: 'send either schemaId or schema, not both', path: ['schema'] },
);

type PacketFields = {
  split?: boolean;
  schemaId?: string;
  schema?: unknown;
  schemaIds?: unknown;
  outputFormat?: string;
  priority?: string;
};

/** Packets (contract-v1.2 §3): split classes pages by registry schemas (schemaIds), so no schema of its own. */
const packetRules = [
  z.refine<PacketFields>((b) => !(b.split === true && (b.schemaId !== undefined || b.schema !== undefined)), {
    message: 'split chooses a schema per document: send schemaIds (or nothing), not schemaId or schema',
    path: ['split'],
  }),
  z.refine<PacketFields>((b) => b.schemaIds === undefined || b.split === true || b.schemaId === AUTO_SCHEMA, {
    message: 'schemaIds is only for split: true or schemaId "auto"',
    path: ['schemaIds'],
  }),
  z.refine<PacketFields>((b) => !((b.split === true || b.schemaId === AUTO_SCHEMA) && b.outputFormat === 'text'), {
    message: 'split and schemaId "auto" extract fields: outputFormat must be json',
    path: ['outputFormat'],
  }),
];

export const createRunRequest = z
  .strictObject({
    uploadId: text(1, 128),
    ...runFields,
    priority: z.optional(priority).check(
      z.meta({
        description:
          "Default standard. batch: through the provider's batch interface at its discount, finished by expiresAt " +
          '(where a provider has none: in the next batch window at the normal price)',
      }),
    ),
  })
  .check(eitherSchemaIdOrSchema, ...packetRules);

// ---------- POST /v1/estimates (contract-v1.2 §4) ----------

/**
 * A file described instead of uploaded: what inspection would find. Estimated within the same limits as an upload
 * (size, pages, pixels); the service takes the client's word for it, so nothing is created or held.
 */
export const declaredFile = z
  .strictObject({
    type: z.enum(SUPPORTED_MIME_TYPES),
    sizeBytes: integer(z.positive()),
    pages: z.optional(integer(z.positive())).check(z.meta({ description: "A PDF's page count (default 1)" })),
    width: z.optional(integer(z.positive())).check(z.meta({ description: "An image's width in pixels" })),
    height: z.optional(integer(z.positive())).check(z.meta({ description: "An image's height in pixels" })),
    textLayer: z.optional(z.boolean()).check(
      z.meta({
        description:
          'A PDF: whether every page carries a text layer (read as text rather than as page images). Absent: ' +
          'guessed from the bytes per page, as for an upload',
      }),
    ),
  })
  .check(
    z.refine((f) => f.type === 'application/pdf' || (f.pages ?? 1) === 1, {
      message: 'an image has one page',
      path: ['pages'],
    }),
    z.refine((f) => f.type !== 'application/pdf' || (f.width === undefined && f.height === undefined), {
      message: 'width and height describe an image, not a PDF',
      path: ['width'],
    }),
    // One side alone would be estimated at a default size, and the pixel limit could not be checked.
    z.refine((f) => f.width === undefined || f.height !== undefined, {
      message: 'height is required with width',
      path: ['height'],
    }),
    z.refine((f) => f.height === undefined || f.width !== undefined, {
      message: 'width is required with height',
      path: ['width'],
    }),
    z.refine((f) => f.type === 'application/pdf' || f.textLayer === undefined, {
      message: 'textLayer describes a PDF, not an image',
      path: ['textLayer'],
    }),
  );

export const estimateRequest = z
  .strictObject({
    uploadId: z.optional(text(1, 128)),
    file: z.optional(declaredFile),
    ...runFields,
    priority: z
      .optional(priority)
      .check(
        z.meta({ description: "Accepted so that a run's body can be sent as it is; both prices are answered anyway" }),
      ),
  })
  .check(
    eitherSchemaIdOrSchema,
    ...packetRules,
    z.refine((b) => (b.uploadId === undefined) !== (b.file === undefined), {
      message: 'send either uploadId or file (one of them)',
      path: ['uploadId'],
    }),
  );

export const estimateResponse = z.object({
  standard: z.object({ estimatedCostUsd: usd }),
  batch: z.object({
    estimatedCostUsd: usd,
    expiresWithinHours: integer(z.positive()).check(
      z.meta({ description: 'A batch run finishes within this many hours of its creation' }),
    ),
  }),
  file: z
    .object({
      type: z.enum(SUPPORTED_MIME_TYPES),
      sizeBytes: integer(z.positive()),
      pages: integer(z.positive()),
      width: z.optional(integer(z.positive())),
      height: z.optional(integer(z.positive())),
    })
    .check(z.meta({ description: 'The file the prices are for: as inspected (uploadId) or as declared (file)' })),
});

const verification = z.object({
  accepted: z.boolean(),
  corrections: z.record(z.string(), z.unknown()),
  note: z.nullable(z.string()),
  verifiedAt: isoTimestamp,
  verifiedBy: z.string().check(z.meta({ description: 'Id of the API key that recorded this review' })),
  verifiedByLabel: z.optional(
    z.string().check(z.meta({ description: "That key's label, when it has one (reviews recorded since it was kept)" })),
  ),
});

/** What the service found in the upload (by its bytes), plus the client's file name. */
export const runFile = z
  .object({
    name: z.nullable(z.string()).check(z.meta({ description: 'File name given at presign (null for older runs)' })),
    type: z.enum(['image/jpeg', 'image/png', 'image/heic', 'application/pdf']),
    sizeBytes: integer(z.nonnegative()),
    pages: integer(z.positive()),
    width: z.optional(integer(z.positive())),
    height: z.optional(integer(z.positive())),
  })
  .check(z.meta({ description: 'The uploaded file as inspected at creation' }));

const creationFields = {
  jobId: z.string(),
  uploadId: z.string(),
  prompt: z.string(),
  outputFormat,
  schemaId: z.nullable(z.string()),
  estimatedCostUsd: usd,
  metadata: z.record(z.string(), metadataValue),
  workflow: z.nullable(z.string()),
  createdAt: isoTimestamp,
  file: runFile,
  evaluationId: z
    .optional(z.string())
    .check(z.meta({ description: 'The evaluation this run is an item of (contract-v1.2 §1); absent otherwise' })),
  priority: z
    .optional(priority)
    .check(z.meta({ description: 'Present on a batch run (contract-v1.2 §4); absent: standard' })),
  expiresAt: z
    .optional(isoTimestamp)
    .check(z.meta({ description: 'A batch run: by when it is finished (completed or failed); absent otherwise' })),
};

// ---------- GET /v1/runs/{jobId} ----------

export const attempt = z.object({
  provider: z.string(),
  step: z.string(),
  outcome: z.enum(['succeeded', 'failed', 'skipped']),
  latencyMs: integer(z.nonnegative()),
  failure: z
    .optional(z.string())
    .check(z.meta({ description: 'Failure kind (timeout, rate_limited, server, …) when not succeeded' })),
});

export const usage = z.object({
  requests: integer(z.nonnegative()),
  billableUnits: z.number().check(z.nonnegative()),
  costUsd: usd,
  priceUsd: usd,
});

/** Where a queued run is: in the queue, with a worker, or (a batch run) waiting for its provider's batch. */
export const RUN_STAGES = ['waiting', 'processing', 'batched'] as const;

/** A run in page chunks while queued: its pages, how many are answered and checkpointed, its stage (v1.1 §2). */
export const runProgress = z.object({
  pagesTotal: integer(z.positive()),
  pagesDone: integer(z.nonnegative()),
  stage: z.enum(RUN_STAGES),
});

export const queuedRun = z.object({
  ...creationFields,
  status: z.literal('queued'),
  stage: z.enum(RUN_STAGES).check(
    z.meta({
      description: 'Progress detail: in the queue, a worker is on it, or (a batch run) waiting for its provider batch',
    }),
  ),
  progress: z.optional(runProgress),
});

/** One field of a schema, normalised: what GET /v1/schemas lists and a completed run's `expectedFields` carries. */
export const schemaField = z.object({
  name: z.string(),
  type: z.enum(FIELD_TYPES),
  description: z.optional(z.string()),
  required: z.boolean(),
});

/** `[x0, y0, x1, y1]` relative to the page, origin top-left, each in [0, 1] (contract-v1.1 §3). */
const bbox = z
  .tuple([fraction(), fraction(), fraction(), fraction()])
  .check(z.meta({ description: '[x0, y0, x1, y1] relative to the page, origin top-left, each in [0, 1]' }));

/** Where one value stands in the document, and how sure the run is of it (contract-v1.1 §3). */
export const fieldEvidence = z.object({
  confidence: fraction(),
  page: z.optional(integer(z.minimum(1))).check(z.meta({ description: '1-based page of the document' })),
  bbox: z.optional(bbox),
  source: z
    .optional(z.string().check(z.maxLength(500)))
    .check(z.meta({ description: 'The document text the value was read from' })),
  alternatives: z.optional(
    z
      .array(z.object({ value: z.unknown(), page: z.optional(integer(z.minimum(1))) }))
      .check(z.meta({ description: 'Other values the document gave for this field (pages read apart)' })),
  ),
  get items(): z.ZodMiniOptional<z.ZodMiniArray<z.ZodMiniRecord<z.ZodMiniString, typeof fieldEvidence>>> {
    return z.optional(
      z
        .array(z.record(z.string(), fieldEvidence))
        .check(z.meta({ description: "An array of objects: one entry per item, keyed by the item's fields" })),
    );
  },
});

/** Whether a person must check the result, and why (contract-v1.1 §3). */
export const review = z.object({
  needed: z.boolean().check(
    z.meta({
      description: 'True while the run is in the review queue (GET /v1/runs?review=needed); a verify sets it false',
    }),
  ),
  reasons: z.array(z.string()).check(z.meta({ description: 'Why a review is (or was) needed; kept after a verify' })),
});

export const completedRun = z.object({
  ...creationFields,
  status: z.literal('completed'),
  protocolVersion: z.literal('0.1.0'),
  requests: integer(z.nonnegative()),
  result: z.record(z.string(), z.unknown()),
  usage,
  chargedUsd: usd,
  refundedUsd: usd,
  confidence: fraction(),
  strategy,
  attempts: z.array(attempt),
  completedAt: isoTimestamp,
  verification: z.optional(verification),
  fields: z.optional(
    z.record(z.string(), fieldEvidence).check(
      z.meta({
        description:
          "Per-field confidence and where each value stands on the page, keyed like `result`'s top level (json runs)",
      }),
    ),
  ),
  review: z.optional(review),
  classification: z.optional(
    z
      .object({
        schemaId: z.string().check(z.meta({ description: 'The registry schema the file was classed as' })),
        confidence: fraction(),
      })
      .check(
        z.meta({
          description:
            'A `schemaId: "auto"` run: the schema it was classed as and extracted with (`expectedFields` are its ' +
            'fields), and how sure the classification is; below the review threshold the run needs review',
        }),
      ),
  ),
  expectedFields: z.optional(
    z.array(schemaField).check(
      z.meta({
        description:
          "The schema's fields (registry or inline) as the run used them, normalised: the names and types a review's corrections must have. Absent without a schema.",
      }),
    ),
  ),
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
  workflow: z.optional(workflow),
  status: z.optional(runStatus),
  review: z
    .optional(z.enum(['needed']))
    .check(z.meta({ description: 'Only the runs whose review is needed (the review queue), newest first' })),
  limit: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(100)), 20),
  cursor: z.optional(text(1, 2048)),
});
export const listRunsResponse = z.object({ items: z.array(runResponse), nextCursor: z.nullable(z.string()) });

// ---------- POST /v1/runs/{jobId}/verify ----------

export const verifyRequest = z.strictObject({
  accepted: z.boolean(),
  corrections: z.optional(
    z.record(text(1, 128), z.unknown()).check(
      storable,
      // Stored on the run item next to the result (and in the history table); DynamoDB items are at most 400 KB.
      z.refine((c) => Buffer.byteLength(JSON.stringify(c)) <= CORRECTIONS_MAX_BYTES, {
        message: `corrections may be at most ${CORRECTIONS_MAX_BYTES} bytes serialized`,
      }),
    ),
  ),
  note: z.optional(z.string().check(z.maxLength(2000))),
});
export const verifyResponse = z.object({ jobId: z.string(), status: runStatus, verification });

// ---------- GET /v1/schemas ----------

export const registrySchemaSummary = z.object({
  id: z.string(),
  label: z.string(),
  expectedFields: z.array(schemaField),
});
export const schemasResponse = z.object({ items: z.array(registrySchemaSummary) });

// ---------- GET /v1/usage ----------

export const USAGE_INTERVALS = ['hour', 'day', 'month'] as const;
export type UsageInterval = (typeof USAGE_INTERVALS)[number];
/** At most this many buckets per answer (a month of hours, two years of days). */
export const USAGE_MAX_BUCKETS = 744;

/** A period bound: ISO-8601 with `Z` or a UTC offset (`+02:00`); the answer states it in UTC. */
const periodBound = z.iso.datetime({ offset: true });

export const usageQuery = z
  .strictObject({
    from: z
      .optional(periodBound)
      .check(z.meta({ description: 'Start of the period (inclusive); default: 30 days before `to`' })),
    to: z.optional(periodBound).check(z.meta({ description: 'End of the period (exclusive); default: now' })),
    interval: z.optional(z.enum(USAGE_INTERVALS)).check(
      z.meta({
        description:
          'Width of each `series` bucket, starting at UTC hour, day or month boundaries. Default: day, or month when ' +
          `the period holds more than ${USAGE_MAX_BUCKETS} days`,
      }),
    ),
    workflow: z.optional(workflow).check(z.meta({ description: 'Only this workflow' })),
  })
  .check(
    // Compared as instants: timestamps may be written with or without milliseconds.
    z.refine((q) => q.from === undefined || q.to === undefined || Date.parse(q.from) < Date.parse(q.to), {
      message: 'from must be before to',
      path: ['from'],
    }),
  );
export const usageRow = z.object({
  workflow: z.nullable(z.string()),
  runs: integer(),
  completed: integer(),
  failed: integer(),
  queued: integer(),
  estimatedUsd: usd,
  chargedUsd: usd,
  refundedUsd: usd,
  verified: integer(),
  accepted: integer(),
  acceptanceRate: z.nullable(fraction()),
  meanConfidence: z.nullable(fraction()),
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
    .check(z.meta({ description: 'Every bucket from `from` to `to`, oldest first, empty ones included (for charts)' })),
});

// ---------- evaluations (contract-v1.2 §1) ----------

/** One document of an evaluation: an upload and the values it should give, by the schema's field names. */
export const evaluationItemRequest = z.strictObject({
  uploadId: text(1, 128),
  expected: z.record(text(1, 128), z.unknown()).check(
    storable,
    // An item nothing is compared on would be paid for and score nothing: a client's mistake, said at once.
    z.refine((e) => Object.keys(e).length > 0, { message: 'expected must name at least one field' }),
    z.refine((e) => Buffer.byteLength(JSON.stringify(e)) <= evaluationSettings.maxExpectedBytes, {
      message: `expected may be at most ${evaluationSettings.maxExpectedBytes} bytes serialized`,
    }),
    z.meta({ description: "The right values, keyed by the schema's field names; only the fields named are compared" }),
  ),
});

export const createEvaluationRequest = z
  .strictObject({
    name: text(1, 200),
    schemaId: z.optional(text(1, 64)),
    schema: z.optional(inlineSchema),
    prompt: z.optional(
      z.string().check(
        z.maxLength(limits.promptMaxChars),
        z.refine((p) => p.trim().length > 0, { message: 'prompt must not be blank' }),
      ),
    ),
    providers: z.optional(
      z.array(z.enum(PROVIDER_IDS)).check(
        z.minLength(1),
        z.refine((p) => new Set(p).size === p.length, { message: 'providers must not repeat' }),
        z.meta({
          description:
            'Each item runs once per provider, with that provider alone (no fallback); absent: the normal plan',
        }),
      ),
    ),
    items: z.array(evaluationItemRequest).check(z.minLength(1), z.maxLength(evaluationSettings.maxItems)),
    priority: z.optional(priority).check(
      z.meta({
        description:
          'Default standard. batch: every run of the evaluation is a batch run (contract-v1.2 §4), held and priced at ' +
          'the batch price and finished by its expiresAt',
      }),
    ),
    workflow: z.optional(workflow).check(z.meta({ description: "The workflow the evaluation's runs count under" })),
    confirmCost: z.optional(z.boolean()),
    maxCostUsd: z.optional(
      z
        .number()
        .check(z.minimum(0.000001, { message: 'must be at least 0.000001 (one micro-dollar)' }), z.maximum(1_000_000)),
    ),
    metadata: z.optional(metadata),
  })
  .check(
    z.refine((b) => (b.schemaId === undefined) !== (b.schema === undefined), {
      message: 'send either schemaId or schema (one of them)',
      path: ['schemaId'],
    }),
  );

export const evaluationStatus = z.enum(['queued', 'completed', 'failed']);

export const createEvaluationResponse = z.object({
  evaluationId: z.string(),
  status: z.literal('queued'),
  name: z.string(),
  items: integer(z.positive()).check(
    z.meta({
      description: 'The runs the evaluation makes: its documents × its providers (one each without providers)',
    }),
  ),
  documents: integer(z.positive()),
  providers: z.nullable(z.array(z.enum(PROVIDER_IDS))),
  estimatedCostUsd: usd,
  createdAt: isoTimestamp,
  priority: z
    .optional(priority)
    .check(z.meta({ description: 'Present on a batch evaluation (contract-v1.2 §4); absent: standard' })),
  expiresAt: z
    .optional(isoTimestamp)
    .check(z.meta({ description: 'A batch evaluation: by when each of its runs is finished; absent otherwise' })),
});

const share = () => z.nullable(fraction());

export const calibrationReport = z.object({
  auroc: share().check(z.meta({ description: "P(a right value's confidence > a wrong one's); null without both" })),
  ece: share().check(z.meta({ description: 'Expected calibration error over 10 equal-width bins' })),
  brier: share(),
  bins: z.array(z.object({ from: fraction(), to: fraction(), count: z.number(), accuracy: share() })),
});

export const evaluationReport = z.object({
  perField: z.record(
    z.string(),
    z.object({
      compared: integer(),
      right: integer(),
      accuracy: share(),
      missing: integer(),
      extra: integer(),
      meanScore: share(),
    }),
  ),
  perProvider: z.record(
    z.string(),
    z.object({
      accuracy: share(),
      runs: integer(),
      failed: integer(),
      costUsd: usd,
      p50LatencyMs: z.nullable(z.number()),
    }),
  ),
  calibration: calibrationReport,
  review: z.object({
    wrongRuns: integer(),
    wrongFlagged: integer(),
    rightRuns: integer(),
    rightFlagged: integer(),
  }),
  accuracy: share(),
  costUsd: usd,
});

export const fieldOutcome = z.object({
  expected: z.unknown(),
  got: z.unknown(),
  outcome: z.enum(['right', 'wrong', 'missing', 'extra']),
  score: fraction(),
  confidence: z.nullable(fraction()),
  precision: z.optional(fraction()),
  recall: z.optional(fraction()),
  f1: z.optional(fraction()),
});

export const evaluationItem = z.object({
  index: integer(z.nonnegative()).check(z.meta({ description: "The document's position in the request's items" })),
  uploadId: z.string(),
  jobId: z.string(),
  provider: z.nullable(z.string()).check(z.meta({ description: 'The listed provider, or the one that answered' })),
  status: runStatus,
  chargedUsd: z.optional(usd),
  latencyMs: z.optional(z.nullable(z.number())),
  reviewNeeded: z.optional(z.nullable(z.boolean())),
  fields: z.optional(z.record(z.string(), fieldOutcome)),
});

export const evaluationView = z.object({
  evaluationId: z.string(),
  name: z.string(),
  status: evaluationStatus,
  schemaId: z.nullable(z.string()),
  providers: z.nullable(z.array(z.enum(PROVIDER_IDS))),
  workflow: z.nullable(z.string()),
  metadata: z.record(z.string(), metadataValue),
  progress: z.object({ itemsTotal: integer(), itemsDone: integer() }),
  estimatedCostUsd: usd,
  chargedUsd: usd,
  refundedUsd: usd,
  createdAt: isoTimestamp,
  completedAt: z.optional(isoTimestamp),
  report: z.optional(evaluationReport),
  items: z.optional(z.array(evaluationItem)),
  nextItemsCursor: z.optional(z.nullable(z.string())),
});

export const getEvaluationQuery = z.strictObject({
  itemsLimit: z
    ._default(z.coerce.number().check(z.int(), z.minimum(0), z.maximum(1000)), 100)
    .check(z.meta({ description: 'Items per page (0: none), in request order' })),
  itemsCursor: z.optional(text(1, 2048)),
});

export const listEvaluationsQuery = z.strictObject({
  limit: z._default(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(100)), 20),
  cursor: z.optional(text(1, 2048)),
});
export const listEvaluationsResponse = z.object({ items: z.array(evaluationView), nextCursor: z.nullable(z.string()) });

// ---------- GET /v1/quality (contract-v1.2 §1) ----------

export const qualityQuery = z
  .strictObject({
    workflow: z.optional(workflow),
    schemaId: z.optional(text(1, 64)),
    from: z.optional(periodBound).check(z.meta({ description: 'Start (its UTC day included); default: 30 days ago' })),
    to: z
      .optional(periodBound)
      .check(z.meta({ description: 'End (exclusive; a time inside a day includes that UTC day); default: now' })),
  })
  .check(
    z.refine((q) => q.from === undefined || q.to === undefined || Date.parse(q.from) < Date.parse(q.to), {
      message: 'from must be before to',
      path: ['from'],
    }),
  );

export const qualityFields = z.record(
  z.string(),
  z.object({ verified: integer(), corrected: integer(), accuracy: share() }),
);

export const qualityResponse = z.object({
  from: isoTimestamp.check(z.meta({ description: "The period counted: the first counted UTC day's start" })),
  to: isoTimestamp.check(z.meta({ description: 'The end of the last counted UTC day (exclusive)' })),
  verifiedRuns: integer(),
  accuracy: share().check(z.meta({ description: 'Verified fields found right, over every verified field' })),
  fields: qualityFields,
  providers: z.record(
    z.string(),
    z.object({ verifiedRuns: integer(), verified: integer(), corrected: integer(), accuracy: share() }),
  ),
  calibration: calibrationReport,
  series: z
    .array(z.object({ start: isoTimestamp, fields: qualityFields }))
    .check(z.meta({ description: 'Per UTC day with verified runs, oldest first (accuracy per field over time)' })),
});

// ---------- GET /v1/runs/{jobId}/file ----------

export const fileUrlQuery = z.strictObject({
  page: z.optional(z.coerce.number().check(z.int(), z.minimum(1))).check(
    z.meta({
      description:
        "A page of a PDF run (1-based, at most the file's pages): the address of that page's image (JPEG, rendered " +
        'by the worker for the pages with a boxed field) instead of the file; 404 NOT_FOUND with ' +
        '`details.reason: "no_page_preview"` when the page has none',
    }),
  ),
});
export const fileUrlResponse = z.object({
  jobId: z.string(),
  url: z.string().check(
    z.meta({
      description: 'Short-lived address to GET the uploaded bytes, or the page image with `page` (no key needed)',
    }),
  ),
  expiresAt: isoTimestamp,
  contentType: z.string(),
  fileName: z.nullable(z.string()),
  page: z.optional(integer(z.minimum(1))).check(z.meta({ description: 'With `page`: the page the image shows' })),
  width: z
    .optional(integer(z.positive()))
    .check(z.meta({ description: "With `page`: the image's width in pixels (boxes are relative to it)" })),
  height: z.optional(integer(z.positive())).check(z.meta({ description: "With `page`: the image's height in pixels" })),
});

// ---------- GET /v1/whoami ----------

/** The calling key as the service knows it: never the key itself. */
export const whoamiResponse = z.object({
  keyId: z.string(),
  label: z.string().check(z.meta({ description: 'The name given to the key when it was created; may be empty' })),
  tenantId: z.string(),
  scopes: z.array(z.enum(SCOPES)),
});

// ---------- webhooks (contract-v1.1 §4) ----------

export const WEBHOOK_EVENT_TYPES = ['run.completed', 'run.failed'] as const;
export const webhookEventType = z.enum(WEBHOOK_EVENT_TYPES);

export const createWebhookRequest = z.strictObject({
  url: text(1, 2048).check(
    z.meta({ description: 'https URL whose every address is public (the local stack also takes http://127.0.0.1…)' }),
  ),
  events: z.optional(
    z.array(webhookEventType).check(
      z.minLength(1),
      z.refine((events) => new Set(events).size === events.length, { message: 'events must not repeat' }),
      z.meta({ description: 'The event types to send; default: every type' }),
    ),
  ),
  description: z.optional(
    displayText(0, 500).check(z.meta({ description: 'No control or bidirectional formatting characters' })),
  ),
});

export const webhook = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(webhookEventType),
  description: z.optional(z.string()),
  createdAt: isoTimestamp,
});

/** The registration's answer: the only time the signing secret is shown. */
export const createWebhookResponse = z.extend(webhook, {
  secret: z.string().check(z.meta({ description: '`whsec_…`: signs every delivery; shown only here' })),
});

export const listWebhooksResponse = z.object({ items: z.array(webhook) });

export const webhookDelivery = z.object({
  eventId: z.string(),
  type: webhookEventType,
  attempt: integer(z.minimum(1)),
  status: z.enum(['delivered', 'retrying', 'failed']),
  attemptedAt: isoTimestamp,
  statusCode: z.nullable(integer()),
  error: z.nullable(z.string()).check(
    z.meta({
      description:
        'Why the try failed, as a class: connect_failed, tls_error, timeout, url_refused (the URL no longer passes ' +
        'the check) or http_<status> (any other answer than 2xx, redirects included); null when delivered',
    }),
  ),
  latencyMs: integer(z.nonnegative()),
  nextTryAt: z.nullable(isoTimestamp),
  response: z.string().check(z.meta({ description: "The start of the receiver's answer (at most 1 KB)" })),
});

export const webhookDeliveriesResponse = z.object({ items: z.array(webhookDelivery) });

/** The body of every delivery (and, for `data` with the run's `tenantId` added, the EventBridge event's `detail`). */
export const webhookEvent = z.object({
  id: z.string(),
  type: webhookEventType,
  createdAt: isoTimestamp,
  data: runResponse,
});

// ---------- GET /health ----------

export const healthResponse = z.object({ status: z.literal('ok') });

// ---------- inferred types ----------

export type PresignRequest = z.infer<typeof presignRequest>;
export type PresignResponse = z.infer<typeof presignResponse>;
export type CreateRunRequest = z.infer<typeof createRunRequest>;
export type CreateRunResponse = z.infer<typeof createRunResponse>;
export type EstimateRequest = z.infer<typeof estimateRequest>;
export type EstimateResponse = z.infer<typeof estimateResponse>;
export type DeclaredFile = z.infer<typeof declaredFile>;
export type RunResponse = z.infer<typeof runResponse>;
export type Attempt = z.infer<typeof attempt>;
export type Usage = z.infer<typeof usage>;
export type ListRunsQuery = z.infer<typeof listRunsQuery>;
export type ListRunsResponse = z.infer<typeof listRunsResponse>;
export type VerifyRequest = z.infer<typeof verifyRequest>;
export type VerifyResponse = z.infer<typeof verifyResponse>;
export type Verification = z.infer<typeof verification>;
export type FieldEvidenceView = z.infer<typeof fieldEvidence>;
export type ReviewView = z.infer<typeof review>;
export type SchemasResponse = z.infer<typeof schemasResponse>;
export type UsageQuery = z.infer<typeof usageQuery>;
export type UsageRow = z.infer<typeof usageRow>;
export type UsageResponse = z.infer<typeof usageResponse>;
export type UsageBucket = z.infer<typeof usageBucket>;
export type FileUrlQuery = z.infer<typeof fileUrlQuery>;
export type FileUrlResponse = z.infer<typeof fileUrlResponse>;
export type WhoamiResponse = z.infer<typeof whoamiResponse>;
export type RunFile = z.infer<typeof runFile>;
export type ErrorBody = z.infer<typeof errorResponse>;
export type InlineSchema = z.infer<typeof inlineSchema>;
export type CreateWebhookRequest = z.infer<typeof createWebhookRequest>;
export type CreateWebhookResponse = z.infer<typeof createWebhookResponse>;
export type Webhook = z.infer<typeof webhook>;
export type ListWebhooksResponse = z.infer<typeof listWebhooksResponse>;
export type WebhookDelivery = z.infer<typeof webhookDelivery>;
export type WebhookDeliveriesResponse = z.infer<typeof webhookDeliveriesResponse>;
export type WebhookEvent = z.infer<typeof webhookEvent>;
export type CreateEvaluationRequest = z.infer<typeof createEvaluationRequest>;
export type CreateEvaluationResponse = z.infer<typeof createEvaluationResponse>;
export type EvaluationView = z.infer<typeof evaluationView>;
export type EvaluationItemView = z.infer<typeof evaluationItem>;
export type GetEvaluationQuery = z.infer<typeof getEvaluationQuery>;
export type ListEvaluationsQuery = z.infer<typeof listEvaluationsQuery>;
export type ListEvaluationsResponse = z.infer<typeof listEvaluationsResponse>;
export type QualityQuery = z.infer<typeof qualityQuery>;
export type QualityResponse = z.infer<typeof qualityResponse>;
