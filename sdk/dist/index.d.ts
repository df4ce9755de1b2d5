import type { RegistryResults, RegistrySchemaId } from './schemas.js';
import type { CompletedRun, CreatedWebhook, CreateEvaluationInput, CreateEvaluationResponse, CreateRunInput, CreateRunResponse, CreateWebhookInput, ErrorCode, EstimateInput, EstimateResponse, Evaluation, FailedRun, FileUrlResponse, GetEvaluationInput, HealthResponse, InlineSchema, ListEvaluationsInput, ListEvaluationsResponse, ListRunsInput, ListRunsResponse, ListWebhooksResponse, PresignRequest, PresignResponse, QualityQuery, QualityResponse, RunProgress, RunResponse, SchemasResponse, SplitResult, TextResult, UsageQuery, UsageResponse, VerifyRequest, VerifyResponse, WebhookDeliveriesResponse, WebhookEvent, WhoamiResponse } from './types.js';
export type * from './schemas.js';
export type * from './types.js';
/** Contract codes, plus the client-side ones: ABORTED (signal/timeout), NETWORK_ERROR (unreachable), HTTP_ERROR (non-contract reply). */
export type VisionErrorCode = ErrorCode | 'ABORTED' | 'NETWORK_ERROR' | 'HTTP_ERROR' | 'INVALID_ARGUMENT' | (string & {});
export declare class VisionError extends Error {
    readonly code: VisionErrorCode;
    /** HTTP status (the contract's `error.status`); 0 for client-side errors (network, abort, bad argument). */
    readonly status: number;
    readonly retryable: boolean;
    readonly details: Record<string, unknown> | undefined;
    readonly requestId: string | undefined;
    /** Set when the error is a run that ended `failed` (the failed envelope). */
    readonly run: FailedRun | undefined;
    /** The run concerned, when known (failed run, or cancelled while polling). */
    readonly jobId: string | undefined;
    constructor(init: {
        code: VisionErrorCode;
        message: string;
        status: number;
        retryable: boolean;
        details?: Record<string, unknown> | undefined;
        requestId?: string | undefined;
        run?: FailedRun | undefined;
        jobId?: string | undefined;
        cause?: unknown;
    });
    /** True for a run that was accepted and then ended `failed` (as opposed to a rejected request). */
    get isRunFailure(): boolean;
}
export interface RetryOptions {
    /** Retries after the first attempt (default 4). */
    retries?: number | undefined;
    /** Backoff base in ms (default 300). */
    baseDelayMs?: number | undefined;
    /** Backoff cap in ms (default 5000). */
    maxDelayMs?: number | undefined;
    /** Longest Retry-After waited for, in ms (default 60 000); a longer one ends the call with `details.retryAfterMs`. */
    maxRetryAfterMs?: number | undefined;
    /** Longest wait for the response to one attempt of an API call, in ms (default 30 000; the upload PUT has none). */
    requestTimeoutMs?: number | undefined;
    /** For tests: random in [0, 1) and the sleep function. */
    random?: (() => number) | undefined;
    sleep?: ((ms: number, signal?: AbortSignal) => Promise<void>) | undefined;
}
export interface PollOptions {
    /** First polling interval cap in ms (default 500). */
    initialDelayMs?: number | undefined;
    /** Polling interval cap in ms (default 5000). */
    maxDelayMs?: number | undefined;
    /** How long polling rides out transient errors (network, 5xx, 429) in a row before it gives up, in ms (default 120 000). */
    maxErrorMs?: number | undefined;
}
export interface VisionClientOptions {
    baseUrl: string;
    apiKey: string;
    fetch?: typeof globalThis.fetch | undefined;
    retry?: RetryOptions | undefined;
    poll?: PollOptions | undefined;
    userAgent?: string | undefined;
}
export interface CallOptions {
    signal?: AbortSignal | undefined;
}
/** `fileUrl`'s options: `page` asks for that page's image of a PDF run instead of the file. */
export interface FileUrlOptions extends CallOptions {
    /** 1-based page; the answer carries `page`, `width` and `height`. 404 NOT_FOUND when the page has no image. */
    page?: number | undefined;
}
export interface ProgressEvent {
    stage: 'uploading' | 'queued' | 'processing' | 'completed';
    uploadedBytes?: number | undefined;
    totalBytes?: number | undefined;
    elapsedMs: number;
    jobId?: string | undefined;
    /** A long document's pages done so far, while the run is queued (when the service reports it). */
    progress?: RunProgress | undefined;
}
export interface AnalyzeParams {
    prompt: string;
    schemaId?: string | undefined;
    schema?: InlineSchema | undefined;
    /** A PDF packet: every page assigned to a document, each classed and extracted (`result` is a `SplitResult`). */
    split?: boolean | undefined;
    /** With `split` or `schemaId: "auto"`: the registry schemas a document may be (default: all). */
    schemaIds?: string[] | undefined;
    outputFormat?: 'json' | 'text' | undefined;
    workflow?: string | undefined;
    metadata?: Record<string, unknown> | undefined;
    maxCostUsd?: number | undefined;
    confirmCost?: boolean | undefined;
    /** File name sent to presign (its extension matters). Defaults: the path's base name, a File's name, or sniffed from the bytes. */
    fileName?: string | undefined;
    /** Idempotency-Key for run creation; generated when absent. */
    idempotencyKey?: string | undefined;
}
/**
 * The result type of a run asked with `params`: text for `outputFormat: 'text'`, a built-in schema's result type for
 * its `schemaId` (sdk/schemas.ts, generated from the registry), else any JSON object (an inline schema, no schema).
 */
export type ResultFor<P> = P extends {
    outputFormat: 'text';
} ? TextResult : P extends {
    split: true;
} ? SplitResult : P extends {
    schemaId: infer S extends RegistrySchemaId;
} ? RegistryResults[S] : Record<string, unknown>;
/** Whether a completed run's result is a split result (`{documents: [...]}`). */
export declare function isSplitResult(result: unknown): result is SplitResult;
/**
 * Whether `run` is a completed run of the built-in schema `schemaId` (its `schemaId` says so, and it is json): its
 * `result` is then typed as that schema's, e.g. for a run from `getRun`, `waitForRun` or a webhook event.
 */
export declare function isSchemaRun<S extends RegistrySchemaId>(run: RunResponse, schemaId: S): run is CompletedRun<RegistryResults[S]>;
export interface AnalyzeOptions {
    onProgress?: ((event: ProgressEvent) => void) | undefined;
    signal?: AbortSignal | undefined;
    /** Overall deadline (upload, creation and polling); on expiry a VisionError ABORTED with details.reason 'timeout'. */
    timeoutMs?: number | undefined;
    /**
     * Called when creation answers COST_CONFIRMATION_REQUIRED; resolve true to retry with `confirmCost: true`
     * (the upload is reused). Without it the VisionError is thrown. `uploadId` is the upload the run is for, e.g. to
     * show `estimate({ uploadId, ... })`'s batch price beside the one asked about.
     */
    confirmCost?: ((details: {
        estimatedCostUsd: number;
        thresholdUsd: number;
        uploadId: string;
    }) => boolean | Promise<boolean>) | undefined;
}
/** A path, the bytes, a Blob/File, or an upload already made (`{ uploadId }`: no presign, no PUT). */
export type FileInput = string | Uint8Array | Blob | {
    uploadId: string;
};
/** The package's version (sdk/package.json; a unit test keeps the two equal). */
export declare const SDK_VERSION = "0.1.0";
/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export declare function sleep(ms: number, signal?: AbortSignal): Promise<void>;
/** Full-jitter capped exponential backoff: random(0, min(cap, base * 2^attempt)). */
export declare function backoffDelay(attempt: number, baseMs: number, capMs: number, random?: () => number): number;
/** Parses Retry-After (delta seconds or HTTP date) into ms; undefined when absent or unparsable. */
export declare function parseRetryAfter(value: string | null, now?: number): number | undefined;
/** Guesses a file extension from magic bytes (for Uint8Array/Blob input without a name). */
export declare function sniffFileName(bytes: Uint8Array): string | undefined;
/** Why verifyWebhook refused a delivery. */
export declare class WebhookSignatureError extends Error {
    readonly reason: 'missing' | 'malformed' | 'expired' | 'mismatch';
    constructor(reason: WebhookSignatureError['reason'], message: string);
}
export interface VerifyWebhookOptions {
    /** Most seconds between the signature's timestamp and now, either way (default 300); a finite number ≥ 0. */
    toleranceSec?: number | undefined;
    /** The current time in epoch milliseconds (tests); a finite number. */
    now?: number | undefined;
}
/**
 * Verifies a webhook delivery: `rawBody` exactly as received (before any JSON parsing), the `Vision-Signature`
 * header, and the endpoint's `whsec_…` secret. Returns the parsed event; throws WebhookSignatureError when the
 * header is missing or malformed, its timestamp is outside the tolerance (a replay), or no `v1` signature matches
 * (compared in constant time). Deliveries are at least once: dedupe by the event's `id`.
 * Throws a TypeError, whatever the delivery, for a secret that is not a `whsec_…` secret (an empty one, an unset
 * variable: anyone can sign with the empty key) or a tolerance or time that is not a finite number (NaN would
 * switch the replay check off): a receiver set up wrong refuses everything rather than accepting forgeries.
 */
export declare function verifyWebhook(rawBody: string | Uint8Array, signatureHeader: string | null | undefined, secret: string, { toleranceSec, now }?: VerifyWebhookOptions): WebhookEvent;
export declare class VisionClient {
    readonly baseUrl: string;
    private readonly apiKey;
    private readonly fetchImpl;
    private readonly retry;
    private readonly poll;
    private readonly userAgent;
    constructor(options: VisionClientOptions);
    health(options?: CallOptions): Promise<HealthResponse>;
    presign(body: PresignRequest, options?: CallOptions): Promise<PresignResponse>;
    /** PUTs the bytes to the presigned address with the presign's headers; resolves with the store's ETag (if any). */
    upload(presigned: Pick<PresignResponse, 'uploadUrl'> & Partial<Pick<PresignResponse, 'headers' | 'method'>>, bytes: Uint8Array, options?: CallOptions): Promise<{
        etag: string | null;
    }>;
    /** POST /v1/runs. With `idempotencyKey`, retries after network errors/5xx are safe and happen automatically. */
    createRun(body: CreateRunInput, options?: CallOptions & {
        idempotencyKey?: string | undefined;
    }): Promise<CreateRunResponse>;
    /**
     * POST /v1/estimates: what a run of this body would cost now and as a batch, for an upload or a declared file.
     * Creates and holds nothing, so it is retried like a read.
     */
    estimate(body: EstimateInput, options?: CallOptions): Promise<EstimateResponse>;
    getRun(jobId: string, options?: CallOptions): Promise<RunResponse>;
    listRuns(query?: ListRunsInput, options?: CallOptions): Promise<ListRunsResponse>;
    /** POST /v1/runs/{jobId}/verify (not retried after network errors/5xx: a later verify adds history). */
    verify(jobId: string, body: VerifyRequest, options?: CallOptions): Promise<VerifyResponse>;
    schemas(options?: CallOptions): Promise<SchemasResponse>;
    /** GET /v1/usage: totals per workflow, plus `series` per `interval` (hour | day) for charts. */
    usage(query?: Partial<UsageQuery>, options?: CallOptions): Promise<UsageResponse>;
    /** GET /v1/whoami: the calling key's id, label, tenant and scopes (never the key). */
    whoami(options?: CallOptions): Promise<WhoamiResponse>;
    /**
     * GET /v1/runs/{jobId}/file: a 5-minute address to read the run's uploaded file (404 once the upload expired); with
     * `page`, the address of that page's image (JPEG) of a PDF run, on which its fields' boxes can be drawn (404 when
     * the worker stored none for that page: it renders the pages with a boxed field).
     */
    fileUrl(jobId: string, options?: FileUrlOptions): Promise<FileUrlResponse>;
    /**
     * POST /v1/evaluations: every document run once per listed provider (or with the normal plan), scored against its
     * expected values; one hold for the whole. With `idempotencyKey`, retries after network errors/5xx are safe.
     */
    createEvaluation(body: CreateEvaluationInput, options?: CallOptions & {
        idempotencyKey?: string | undefined;
    }): Promise<CreateEvaluationResponse>;
    /** GET /v1/evaluations/{id}: progress, money, the report once every run settled, and a page of items. */
    getEvaluation(id: string, query?: GetEvaluationInput, options?: CallOptions): Promise<Evaluation>;
    /** GET /v1/evaluations: the tenant's evaluations, newest first (without items). */
    listEvaluations(query?: ListEvaluationsInput, options?: CallOptions): Promise<ListEvaluationsResponse>;
    /**
     * Polls an evaluation until it is completed or failed (every `intervalMs`, default 2 s), calling `onProgress` with
     * each reading; resolves with the final evaluation (without items).
     */
    waitForEvaluation(id: string, options?: CallOptions & {
        intervalMs?: number;
        onProgress?: (evaluation: Evaluation) => void;
    }): Promise<Evaluation>;
    /** GET /v1/quality: accuracy from reviews per field and provider, with calibration, over a period. */
    quality(query?: QualityQuery, options?: CallOptions): Promise<QualityResponse>;
    /**
     * POST /v1/webhooks: registers an endpoint; the answer's `secret` is shown only here (keep it for verifyWebhook).
     * Not retried after a network error or 5xx: a retry could register a second endpoint.
     */
    createWebhook(body: CreateWebhookInput, options?: CallOptions): Promise<CreatedWebhook>;
    /** GET /v1/webhooks: the tenant's endpoints (never their secrets). */
    listWebhooks(options?: CallOptions): Promise<ListWebhooksResponse>;
    /** DELETE /v1/webhooks/{id}: nothing more is delivered to it. Not retried (a retry of a done delete is a 404). */
    deleteWebhook(id: string, options?: CallOptions): Promise<void>;
    /** GET /v1/webhooks/{id}/deliveries: the endpoint's last 100 delivery attempts, newest first. */
    listWebhookDeliveries(id: string, options?: CallOptions): Promise<WebhookDeliveriesResponse>;
    /**
     * presign → PUT → create (with an Idempotency-Key) → poll until final. Resolves with the completed envelope, its
     * `result` typed for what was asked (`schemaId: 'receipt'` gives a `ReceiptResult`: `ResultFor`); rejects with a
     * VisionError for a rejected request, a run that ended `failed` (`error.run` set), or cancellation (ABORTED).
     */
    analyze<const P extends AnalyzeParams>(file: FileInput, params: P, options?: AnalyzeOptions): Promise<CompletedRun<ResultFor<P>>>;
    /** presign → PUT → create; resolves with the queued creation envelope (no polling). */
    submit(file: FileInput, params: AnalyzeParams, options?: AnalyzeOptions): Promise<CreateRunResponse>;
    /** Polls a run until `completed` (resolves) or `failed` (rejects with the run's error as a VisionError). */
    waitForRun(jobId: string, options?: Pick<AnalyzeOptions, 'onProgress' | 'signal' | 'timeoutMs'>): Promise<CompletedRun>;
    private submitWithin;
    private pollUntilFinal;
    private deadline;
    private normalizeAbort;
    private request;
    /** One call with retries; resolves with an OK response, or throws a VisionError. */
    private send;
}
