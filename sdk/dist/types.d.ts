/**
 * The wire types of the API as the SDK's users see them: plain TypeScript, no zod, so the published `.d.ts` stands
 * alone (the package has no dependencies, not even for its types).
 * Not to undo: these are written by hand from shared/contract.ts, and test/types/sdk-contract.ts fails the
 * typecheck when they drift (a field the contract has and the SDK lacks, or an SDK type narrower than the contract's).
 * Request fields are `?: T | undefined` so callers compiled with exactOptionalPropertyTypes may pass `undefined`.
 * Why by hand: docs/decisions.md#the-sdk-as-its-own-package.
 * Over 400 lines: every wire type in one file, as the contract has them, so the drift check reads one module.
 */
/** Any JSON value (what `metadata` holds). */
export type JsonValue = string | number | boolean | null | JsonValue[] | {
    [key: string]: JsonValue;
};
/** The contract's error codes (contract-v1.md, "Errors"). */
export type ErrorCode = 'INVALID_REQUEST' | 'UNKNOWN_SCHEMA' | 'UNAUTHORIZED' | 'FORBIDDEN' | 'NOT_FOUND' | 'UPLOAD_NOT_FOUND' | 'UPLOAD_INCOMPLETE' | 'RUN_NOT_COMPLETED' | 'IDEMPOTENCY_KEY_REUSED' | 'FILE_TOO_LARGE' | 'TOO_MANY_PAGES' | 'UNSUPPORTED_MEDIA_TYPE' | 'UNSUPPORTED_FILE_TYPE' | 'UPLOAD_SIZE_MISMATCH' | 'CORRUPT_FILE' | 'COST_CONFIRMATION_REQUIRED' | 'BUDGET_EXCEEDED' | 'INSUFFICIENT_CREDIT' | 'RATE_LIMITED' | 'INTERNAL_ERROR' | 'PROVIDER_ERROR';
/** An error: the body of every rejected request (`ErrorBody.error`), and `error` on a failed run. */
export interface ApiErrorObject {
    code: ErrorCode;
    message: string;
    status: number;
    retryable: boolean;
    details?: Record<string, unknown>;
    requestId?: string;
}
/** A rejected request's body. */
export interface ErrorBody {
    error: ApiErrorObject & {
        requestId: string;
    };
}
export type RunStatus = 'queued' | 'completed' | 'failed';
export type OutputFormat = 'json' | 'text';
export type Strategy = 'direct_multimodal' | 'ocr_then_analyze' | 'generic_vision_summary';
export type FieldType = 'string' | 'number' | 'integer' | 'boolean' | 'date' | 'array' | 'object';
export interface PresignRequest {
    fileName: string;
    contentLength: number;
}
export interface PresignResponse {
    uploadId: string;
    uploadUrl: string;
    expiresAt: string;
    method: 'PUT';
    headers: {
        'Content-Type': 'application/octet-stream';
    };
    maxBytes: number;
}
/** An expected field of an inline schema: a bare name or a described field. */
export type ExpectedField = string | {
    name: string;
    type?: FieldType | undefined;
    description?: string | undefined;
    required?: boolean | undefined;
};
/** An inline custom schema (request field `schema`). */
export interface InlineSchema {
    label: string;
    expectedFields: ExpectedField[];
    /** Prompt template; {prompt} and {fields} are replaced. */
    promptScaffold?: string | undefined;
}
/** The body of POST /v1/runs as a client sends it (`outputFormat` defaults to `json`). */
export interface CreateRunInput {
    uploadId: string;
    prompt: string;
    outputFormat?: OutputFormat | undefined;
    /** A registry schema id, or `"auto"`: classify the whole file among `schemaIds` first (contract-v1.2 §3). */
    schemaId?: string | undefined;
    schema?: InlineSchema | undefined;
    /** A PDF packet: every page assigned to a document, each classed and extracted (contract-v1.2 §3). */
    split?: boolean | undefined;
    /** With `split` or `schemaId: "auto"`: the registry schemas a document may be (default: all). */
    schemaIds?: string[] | undefined;
    workflow?: string | undefined;
    metadata?: Record<string, JsonValue> | undefined;
    confirmCost?: boolean | undefined;
    maxCostUsd?: number | undefined;
    /**
     * Default `standard`. `batch`: through the provider's batch interface at its discount (about half the price),
     * finished by the run's `expiresAt` (within 24 hours); where a provider has none, in the next batch window at the
     * normal price. The estimate and the hold are the batch price.
     */
    priority?: 'standard' | 'batch' | undefined;
}
/** A file described instead of uploaded, for POST /v1/estimates (checked against the same limits as an upload). */
export interface DeclaredFile {
    type: 'image/jpeg' | 'image/png' | 'image/heic' | 'application/pdf';
    sizeBytes: number;
    /** A PDF's page count (default 1; an image has one). */
    pages?: number | undefined;
    /** An image's size in pixels. */
    width?: number | undefined;
    height?: number | undefined;
    /** A PDF: whether every page carries a text layer. Absent: guessed from the bytes per page. */
    textLayer?: boolean | undefined;
}
/**
 * The body of POST /v1/estimates: a run's body, with exactly one of `uploadId` and a declared `file` (the service
 * answers 400 INVALID_REQUEST otherwise). `priority` is accepted so that a run's body can be sent as it is; both prices
 * are answered whatever it says.
 */
export interface EstimateInput extends Omit<CreateRunInput, 'uploadId'> {
    uploadId?: string | undefined;
    file?: DeclaredFile | undefined;
}
/** What a run would cost now and as a batch (POST /v1/estimates); nothing was created or held. */
export interface EstimateResponse {
    standard: {
        estimatedCostUsd: number;
    };
    /** Through the providers' batch interfaces at their discount; the run finishes within `expiresWithinHours`. */
    batch: {
        estimatedCostUsd: number;
        expiresWithinHours: number;
    };
    /** The file the prices are for: as inspected (uploadId) or as declared (file). */
    file: {
        type: DeclaredFile['type'];
        sizeBytes: number;
        pages: number;
        width?: number;
        height?: number;
    };
}
/** The uploaded file as inspected at creation. */
export interface RunFile {
    /** File name given at presign (null for older runs). */
    name: string | null;
    type: 'image/jpeg' | 'image/png' | 'image/heic' | 'application/pdf';
    sizeBytes: number;
    pages: number;
    width?: number;
    height?: number;
}
export interface Attempt {
    provider: string;
    step: string;
    outcome: 'succeeded' | 'failed' | 'skipped';
    latencyMs: number;
    /** Failure kind (timeout, rate_limited, server, …) when not succeeded. */
    failure?: string;
}
export interface Usage {
    requests: number;
    billableUnits: number;
    costUsd: number;
    priceUsd: number;
}
export interface Verification {
    accepted: boolean;
    corrections: Record<string, unknown>;
    note: string | null;
    verifiedAt: string;
    /** Id of the API key that recorded this review. */
    verifiedBy: string;
    /** That key's label, when it has one. */
    verifiedByLabel?: string;
}
/** Fields every run has, from creation on. */
export interface RunBase {
    jobId: string;
    uploadId: string;
    prompt: string;
    outputFormat: OutputFormat;
    schemaId: string | null;
    estimatedCostUsd: number;
    metadata: Record<string, JsonValue>;
    workflow: string | null;
    createdAt: string;
    file: RunFile;
    /** The evaluation this run is an item of (contract-v1.2 §1); absent otherwise. */
    evaluationId?: string;
    /** `batch` on a batch run (contract-v1.2 §4); absent: standard. */
    priority?: 'standard' | 'batch';
    /** A batch run: by when it is finished, completed or failed (ISO 8601); absent otherwise. */
    expiresAt?: string;
}
/** How far a long document has got (contract-v1.1 §2); a queued run may carry it. */
export interface RunProgress {
    pagesTotal: number;
    pagesDone: number;
    stage: 'waiting' | 'processing' | 'batched';
}
export interface QueuedRun extends RunBase {
    status: 'queued';
    /** In the queue, a worker is on it, or (a batch run) waiting for its provider's batch. */
    stage: 'waiting' | 'processing' | 'batched';
    progress?: RunProgress;
}
/**
 * A completed run. `R` is its result's type: a built-in schema's (`CompletedRun<ReceiptResult>`, what `analyze` gives
 * for `schemaId: 'receipt'`, sdk/schemas.ts), a text run's (`TextResult`), or any JSON object by default.
 */
export interface CompletedRun<R = Record<string, unknown>> extends RunBase {
    status: 'completed';
    protocolVersion: '0.1.0';
    requests: number;
    result: R;
    usage: Usage;
    chargedUsd: number;
    refundedUsd: number;
    confidence: number;
    strategy: Strategy;
    attempts: Attempt[];
    completedAt: string;
    verification?: Verification;
    /** Per-field confidence and where each value stands on the page, keyed like `result` (json runs). */
    fields?: Record<string, FieldEvidence>;
    /** Whether a person must check the result, and why (json runs). */
    review?: Review;
    /** The schema's fields as the run used them: the names and types a review's corrections must have. */
    expectedFields?: SchemaField[];
    /**
     * A `schemaId: 'auto'` run (contract-v1.2 §3): the registry schema the file was classed as and extracted with
     * (`schemaId` stays `'auto'`, as asked; `expectedFields` are the chosen schema's), and how sure the class is, in
     * [0, 1]. Below the review threshold the run's review is needed.
     */
    classification?: {
        schemaId: string;
        confidence: number;
    };
}
/** The result of a run with `outputFormat: 'text'`: the text, and the same text page by page (contract-v1.1 §2). */
export type TextResult = {
    text: string;
    pages: {
        page: number;
        text: string;
    }[];
};
/**
 * The result of a split run (`split: true`, contract-v1.2 §3): its documents in page order; every page of the packet
 * is in exactly one. An `other` document carries no extraction.
 */
export interface SplitResult {
    documents: SplitDocument[];
}
/** One document of a packet: its pages (the packet's, 1-based, both included), class, and extraction. */
export interface SplitDocument {
    index: number;
    /** The registry schema it was classed as, or `other`. */
    schemaId: string;
    pages: {
        first: number;
        last: number;
    };
    classification: {
        confidence: number;
    };
    result?: Record<string, unknown>;
    /** Keyed like `result`; pages are the packet's. */
    fields?: Record<string, FieldEvidence>;
    review?: Review;
}
/** `[x0, y0, x1, y1]` relative to the page, origin top-left, each in [0, 1]. */
export type BBox = [number, number, number, number];
/** Where one value stands in the document, and how sure the run is of it (contract-v1.1 §3). */
export interface FieldEvidence {
    /** In [0, 1]. */
    confidence: number;
    /** 1-based page of the document. */
    page?: number;
    /** Absent when no text of the document supports the value. */
    bbox?: BBox;
    /** The document text the value was read from (at most 500 characters). */
    source?: string;
    /** Other values the document gave for this field. */
    alternatives?: {
        value?: unknown;
        page?: number;
    }[];
    /** For an array of objects: one entry per item, keyed by the item's fields. */
    items?: Record<string, FieldEvidence>[];
}
/** Whether a person must check a run's result: `needed` until a verify clears it; the reasons stay. */
export interface Review {
    needed: boolean;
    reasons: string[];
}
/** One field of a schema, normalised. */
export interface SchemaField {
    name: string;
    type: FieldType;
    description?: string;
    required: boolean;
}
export interface FailedRun extends RunBase {
    status: 'failed';
    error: ApiErrorObject;
    chargedUsd: number;
    refundedUsd: number;
    attempts: Attempt[];
    completedAt: string;
}
export type RunResponse = QueuedRun | CompletedRun | FailedRun;
/** The creation envelope is the queued run. */
export type CreateRunResponse = QueuedRun;
export interface ListRunsInput {
    workflow?: string | undefined;
    status?: RunStatus | undefined;
    /** `needed`: only the runs whose review is needed (the review queue). */
    review?: 'needed' | undefined;
    /** 1 to 100 (default 20). */
    limit?: number | undefined;
    cursor?: string | undefined;
}
export interface ListRunsResponse {
    items: RunResponse[];
    nextCursor: string | null;
}
export interface VerifyRequest {
    accepted: boolean;
    corrections?: Record<string, unknown> | undefined;
    note?: string | undefined;
}
export interface VerifyResponse {
    jobId: string;
    status: RunStatus;
    verification: Verification;
}
export interface RegistrySchemaSummary {
    id: string;
    label: string;
    expectedFields: SchemaField[];
}
export interface SchemasResponse {
    items: RegistrySchemaSummary[];
}
export type UsageInterval = 'hour' | 'day' | 'month';
export interface UsageQuery {
    /** Start of the period (inclusive), ISO-8601 with `Z` or an offset; default: 30 days before `to`. */
    from?: string | undefined;
    /** End of the period (exclusive); default: now. */
    to?: string | undefined;
    interval?: UsageInterval | undefined;
    workflow?: string | undefined;
}
export interface UsageRow {
    workflow: string | null;
    runs: number;
    completed: number;
    failed: number;
    queued: number;
    estimatedUsd: number;
    chargedUsd: number;
    refundedUsd: number;
    verified: number;
    accepted: number;
    acceptanceRate: number | null;
    meanConfidence: number | null;
}
export interface UsageBucket {
    start: string;
    end: string;
    totals: UsageRow;
    workflows: UsageRow[];
}
export interface UsageResponse {
    from: string;
    to: string;
    interval: UsageInterval;
    workflows: UsageRow[];
    totals: UsageRow;
    /** Every bucket from `from` to `to`, oldest first, empty ones included. */
    series: UsageBucket[];
}
/** GET /v1/whoami: the calling key as the service knows it (never the key itself). */
export interface WhoamiResponse {
    keyId: string;
    /** The name given to the key when it was created; may be empty. */
    label: string;
    tenantId: string;
    scopes: string[];
}
export interface FileUrlResponse {
    jobId: string;
    /** Short-lived address to GET the uploaded bytes, or the page image with `page` (no key needed). */
    url: string;
    expiresAt: string;
    contentType: string;
    fileName: string | null;
    /** With `page`: the page the image shows. */
    page?: number;
    /** With `page`: the image's width in pixels (boxes are relative to it). */
    width?: number;
    /** With `page`: the image's height in pixels. */
    height?: number;
}
export interface HealthResponse {
    status: 'ok';
}
export type WebhookEventType = 'run.completed' | 'run.failed';
/** POST /v1/webhooks. */
export interface CreateWebhookInput {
    /** https, resolving to public addresses only (the local stack also takes http://127.0.0.1… and http://localhost…). */
    url: string;
    /** Default: every event type. */
    events?: WebhookEventType[] | undefined;
    description?: string | undefined;
}
export interface Webhook {
    id: string;
    url: string;
    events: WebhookEventType[];
    description?: string;
    createdAt: string;
}
/** The registration's answer: the only time the signing secret (`whsec_…`) is shown. */
export interface CreatedWebhook extends Webhook {
    secret: string;
}
export interface ListWebhooksResponse {
    items: Webhook[];
}
/** One delivery attempt to an endpoint. */
export interface WebhookDelivery {
    eventId: string;
    type: WebhookEventType;
    /** 1 for the first try. */
    attempt: number;
    status: 'delivered' | 'retrying' | 'failed';
    attemptedAt: string;
    /** The receiver's HTTP status, when it answered. */
    statusCode: number | null;
    /**
     * Why the try failed: `connect_failed`, `tls_error`, `timeout`, `url_refused` (the URL no longer passes the
     * service's check) or `http_<status>` (redirects included); null when delivered.
     */
    error: string | null;
    latencyMs: number;
    /** When the next try is due; null once delivered or failed. */
    nextTryAt: string | null;
    /** The start of the receiver's answer (at most 1 KB). */
    response: string;
}
export interface WebhookDeliveriesResponse {
    items: WebhookDelivery[];
}
/** The body of every delivery: `data` is the run as GET /v1/runs/{jobId} returns it. */
export interface WebhookEvent {
    id: string;
    type: WebhookEventType;
    createdAt: string;
    data: RunResponse;
}
export type ProviderId = 'openai' | 'anthropic' | 'gemini' | 'bedrock' | 'textract' | 'local';
/** One document of an evaluation: an upload and the values it should give, by the schema's field names. */
export interface EvaluationItemInput {
    uploadId: string;
    expected: Record<string, unknown>;
}
/** POST /v1/evaluations (send `schemaId` or `schema`). */
export interface CreateEvaluationInput {
    name: string;
    schemaId?: string | undefined;
    schema?: InlineSchema | undefined;
    prompt?: string | undefined;
    /** Each document runs once per provider, with that provider alone; absent: once with the normal plan. */
    providers?: ProviderId[] | undefined;
    items: EvaluationItemInput[];
    /** Default standard. batch: every run of the evaluation is a batch run, held at the batch price. */
    priority?: 'standard' | 'batch' | undefined;
    workflow?: string | undefined;
    confirmCost?: boolean | undefined;
    maxCostUsd?: number | undefined;
    metadata?: Record<string, JsonValue> | undefined;
}
export interface CreateEvaluationResponse {
    evaluationId: string;
    status: 'queued';
    name: string;
    /** The runs it makes: documents × providers. */
    items: number;
    documents: number;
    providers: ProviderId[] | null;
    estimatedCostUsd: number;
    createdAt: string;
    /** A batch evaluation: `batch`, and by when each of its runs is finished. */
    priority?: 'standard' | 'batch';
    expiresAt?: string;
}
export interface CalibrationReport {
    auroc: number | null;
    ece: number | null;
    brier: number | null;
    bins: {
        from: number;
        to: number;
        count: number;
        accuracy: number | null;
    }[];
}
export interface EvaluationReport {
    perField: Record<string, {
        compared: number;
        right: number;
        accuracy: number | null;
        missing: number;
        extra: number;
        meanScore: number | null;
    }>;
    perProvider: Record<string, {
        accuracy: number | null;
        runs: number;
        failed: number;
        costUsd: number;
        p50LatencyMs: number | null;
    }>;
    calibration: CalibrationReport;
    review: {
        wrongRuns: number;
        wrongFlagged: number;
        rightRuns: number;
        rightFlagged: number;
    };
    accuracy: number | null;
    costUsd: number;
}
export type FieldOutcomeKind = 'right' | 'wrong' | 'missing' | 'extra';
export interface FieldOutcome {
    expected?: unknown;
    got?: unknown;
    outcome: FieldOutcomeKind;
    score: number;
    confidence: number | null;
    precision?: number;
    recall?: number;
    f1?: number;
}
/** One run of an evaluation (a document × a provider). */
export interface EvaluationItem {
    index: number;
    uploadId: string;
    jobId: string;
    provider: string | null;
    status: RunStatus;
    chargedUsd?: number;
    latencyMs?: number | null;
    reviewNeeded?: boolean | null;
    fields?: Record<string, FieldOutcome>;
}
export interface Evaluation {
    evaluationId: string;
    name: string;
    status: 'queued' | 'completed' | 'failed';
    schemaId: string | null;
    providers: ProviderId[] | null;
    workflow: string | null;
    metadata: Record<string, JsonValue>;
    progress: {
        itemsTotal: number;
        itemsDone: number;
    };
    estimatedCostUsd: number;
    chargedUsd: number;
    refundedUsd: number;
    createdAt: string;
    completedAt?: string;
    report?: EvaluationReport;
    items?: EvaluationItem[];
    nextItemsCursor?: string | null;
}
/** GET /v1/evaluations/{id} query: items per page (0: none) and the page's cursor. */
export interface GetEvaluationInput {
    itemsLimit?: number | undefined;
    itemsCursor?: string | undefined;
}
export interface ListEvaluationsInput {
    limit?: number | undefined;
    cursor?: string | undefined;
}
export interface ListEvaluationsResponse {
    items: Evaluation[];
    nextCursor: string | null;
}
/** GET /v1/quality query. */
export interface QualityQuery {
    workflow?: string | undefined;
    schemaId?: string | undefined;
    from?: string | undefined;
    to?: string | undefined;
}
export type QualityFields = Record<string, {
    verified: number;
    corrected: number;
    accuracy: number | null;
}>;
export interface QualityResponse {
    from: string;
    to: string;
    verifiedRuns: number;
    accuracy: number | null;
    fields: QualityFields;
    providers: Record<string, {
        verifiedRuns: number;
        verified: number;
        corrected: number;
        accuracy: number | null;
    }>;
    calibration: CalibrationReport;
    series: {
        start: string;
        fields: QualityFields;
    }[];
}
