/**
 * Vision Analysis Service SDK (Node 20+, ESM, no runtime dependencies beyond Node built-ins): `VisionClient` and
 * `VisionError`. Published on its own as `@vision-analysis/sdk` (sdk/package.json): compiled by sdk/build.ts to
 * dist/index.mjs and .d.ts files; its wire types are sdk/types.ts, written without zod so the package needs nothing.
 * Decisions not to undo: only idempotent calls are retried after a network error or 5xx (createRun only with an
 * Idempotency-Key), and calls carrying the API key never follow a redirect. Retries, polling and cancellation:
 * docs/sdk.md.
 * Over 400 lines: the client is one self-contained module (dist/index.mjs) that its users read as one unit.
 */
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import type { RegistryResults, RegistrySchemaId } from './schemas.js';
import type {
  CompletedRun,
  CreatedWebhook,
  CreateEvaluationInput,
  CreateEvaluationResponse,
  CreateRunInput,
  CreateRunResponse,
  CreateWebhookInput,
  ErrorBody,
  ErrorCode,
  EstimateInput,
  EstimateResponse,
  Evaluation,
  FailedRun,
  FileUrlResponse,
  GetEvaluationInput,
  HealthResponse,
  InlineSchema,
  ListEvaluationsInput,
  ListEvaluationsResponse,
  ListRunsInput,
  ListRunsResponse,
  ListWebhooksResponse,
  PresignRequest,
  PresignResponse,
  QualityQuery,
  QualityResponse,
  RunProgress,
  RunResponse,
  SchemasResponse,
  SplitResult,
  TextResult,
  UsageQuery,
  UsageResponse,
  VerifyRequest,
  VerifyResponse,
  WebhookDeliveriesResponse,
  WebhookEvent,
  WhoamiResponse,
} from './types.js';

export type * from './schemas.js';
export type * from './types.js';

/** Contract codes, plus the client-side ones: ABORTED (signal/timeout), NETWORK_ERROR (unreachable), HTTP_ERROR (non-contract reply). */
export type VisionErrorCode =
  | ErrorCode
  | 'ABORTED'
  | 'NETWORK_ERROR'
  | 'HTTP_ERROR'
  | 'INVALID_ARGUMENT'
  | (string & {});

export class VisionError extends Error {
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
  }) {
    super(init.message, init.cause !== undefined ? { cause: init.cause } : undefined);
    this.name = 'VisionError';
    this.code = init.code;
    this.status = init.status;
    this.retryable = init.retryable;
    this.details = init.details;
    this.requestId = init.requestId;
    this.run = init.run;
    this.jobId = init.jobId ?? init.run?.jobId;
  }

  /** True for a run that was accepted and then ended `failed` (as opposed to a rejected request). */
  get isRunFailure(): boolean {
    return this.run !== undefined;
  }
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
export type ResultFor<P> = P extends { outputFormat: 'text' }
  ? TextResult
  : P extends { split: true }
    ? SplitResult
    : P extends { schemaId: infer S extends RegistrySchemaId }
      ? RegistryResults[S]
      : Record<string, unknown>;

/** Whether a completed run's result is a split result (`{documents: [...]}`). */
export function isSplitResult(result: unknown): result is SplitResult {
  return typeof result === 'object' && result !== null && Array.isArray((result as { documents?: unknown }).documents);
}

/**
 * Whether `run` is a completed run of the built-in schema `schemaId` (its `schemaId` says so, and it is json): its
 * `result` is then typed as that schema's, e.g. for a run from `getRun`, `waitForRun` or a webhook event.
 */
export function isSchemaRun<S extends RegistrySchemaId>(
  run: RunResponse,
  schemaId: S,
): run is CompletedRun<RegistryResults[S]> {
  return run.status === 'completed' && run.schemaId === schemaId && run.outputFormat === 'json';
}

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
  confirmCost?:
    | ((details: { estimatedCostUsd: number; thresholdUsd: number; uploadId: string }) => boolean | Promise<boolean>)
    | undefined;
}

/** A path, the bytes, a Blob/File, or an upload already made (`{ uploadId }`: no presign, no PUT). */
export type FileInput = string | Uint8Array | Blob | { uploadId: string };

/** The package's version (sdk/package.json; a unit test keeps the two equal). */
export const SDK_VERSION = '0.1.0';

/** The object without its `undefined` members (so an explicit `undefined` option keeps the default). */
function definedOnly<T extends object>(value: T | undefined): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value ?? {}).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}

const DEFAULT_RETRY = {
  retries: 4,
  baseDelayMs: 300,
  maxDelayMs: 5000,
  maxRetryAfterMs: 60_000,
  requestTimeoutMs: 30_000,
};

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Full-jitter capped exponential backoff: random(0, min(cap, base * 2^attempt)). */
export function backoffDelay(
  attempt: number,
  baseMs: number,
  capMs: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** attempt);
  return Math.floor(random() * ceiling);
}

/** Parses Retry-After (delta seconds or HTTP date) into ms; undefined when absent or unparsable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Guesses a file extension from magic bytes (for Uint8Array/Blob input without a name). */
export function sniffFileName(bytes: Uint8Array): string | undefined {
  const b = bytes;
  if (b[0] === 0x25 && b[1] === 0x50 && b[2] === 0x44 && b[3] === 0x46) return 'upload.pdf';
  if (b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47) return 'upload.png';
  if (b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'upload.jpg';
  if (b.length >= 12 && String.fromCharCode(...b.subarray(4, 8)) === 'ftyp') {
    const brand = String.fromCharCode(...b.subarray(8, 12));
    if (/^(heic|heix|heim|heis|hevc|hevx|mif1|msf1)$/.test(brand)) return 'upload.heic';
  }
  return undefined;
}

function isUploadRef(file: FileInput): file is { uploadId: string } {
  return (
    typeof file === 'object' &&
    file !== null &&
    !(file instanceof Uint8Array) &&
    !(typeof Blob !== 'undefined' && file instanceof Blob) &&
    typeof (file as { uploadId?: unknown }).uploadId === 'string'
  );
}

/** A copy of a VisionError with more fields (VisionError's fields are read-only). */
function rebuilt(
  error: VisionError,
  extra: { details?: Record<string, unknown> | undefined; jobId?: string | undefined },
): VisionError {
  return new VisionError({
    code: error.code,
    message: error.message,
    status: error.status,
    retryable: error.retryable,
    ...(error.details || extra.details ? { details: { ...error.details, ...extra.details } } : {}),
    ...(error.requestId ? { requestId: error.requestId } : {}),
    ...(error.run ? { run: error.run } : {}),
    ...((extra.jobId ?? error.jobId) ? { jobId: extra.jobId ?? error.jobId } : {}),
    ...(error.cause !== undefined ? { cause: error.cause } : {}),
  });
}

/** The error with the run it concerns, once there is one (the run continues on the service). */
function withJob(error: unknown, jobId: string | undefined): unknown {
  if (!(error instanceof VisionError) || jobId === undefined || error.jobId !== undefined) return error;
  return rebuilt(error, { jobId, details: { jobId } });
}

function withDetails(error: VisionError, details: Record<string, unknown>): VisionError {
  return rebuilt(error, { details });
}

/** True when a creation ended without an answer from the service: the run may or may not exist. */
function outcomeUnknown(error: unknown, signal: AbortSignal | undefined): boolean {
  if (isAbort(error, signal)) return true;
  return error instanceof VisionError && (error.code === 'NETWORK_ERROR' || error.status >= 500);
}

/** A cancellation by the caller's signal as the SDK reports it (never a DOMException). */
function abortError(cause: unknown): VisionError {
  if (cause instanceof VisionError) return cause;
  const timedOut = cause instanceof Error && cause.name === 'TimeoutError';
  return new VisionError({
    code: 'ABORTED',
    message: timedOut ? 'timed out' : 'aborted',
    status: 0,
    retryable: timedOut,
    details: { reason: timedOut ? 'timeout' : 'aborted' },
    cause,
  });
}

function isAbort(error: unknown, signal?: AbortSignal): boolean {
  return (
    signal?.aborted === true ||
    (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')) ||
    (error instanceof VisionError && error.code === 'ABORTED')
  );
}

interface RequestSpec {
  method: string;
  path: string;
  /** Absolute URL instead of baseUrl + path (the presigned PUT). */
  url?: string | undefined;
  query?:
    | ListRunsInput
    | UsageQuery
    | GetEvaluationInput
    | ListEvaluationsInput
    | QualityQuery
    | { page?: number | undefined }
    | undefined;
  body?: unknown | undefined;
  rawBody?: Uint8Array | undefined;
  headers?: Record<string, string> | undefined;
  /** Safe to repeat after a network error or 5xx. */
  idempotent: boolean;
  /** Send x-api-key (false for the presigned PUT and health). */
  auth?: boolean | undefined;
  signal?: AbortSignal | undefined;
}

/** Why verifyWebhook refused a delivery. */
export class WebhookSignatureError extends Error {
  readonly reason: 'missing' | 'malformed' | 'expired' | 'mismatch';
  constructor(reason: WebhookSignatureError['reason'], message: string) {
    super(message);
    this.name = 'WebhookSignatureError';
    this.reason = reason;
  }
}

export interface VerifyWebhookOptions {
  /** Most seconds between the signature's timestamp and now, either way (default 300); a finite number ≥ 0. */
  toleranceSec?: number | undefined;
  /** The current time in epoch milliseconds (tests); a finite number. */
  now?: number | undefined;
}

/** An endpoint's signing secret as registration answers it: `whsec_` and at least 16 more characters. */
const WEBHOOK_SECRET = /^whsec_[A-Za-z0-9_-]{16,}$/;

/**
 * Verifies a webhook delivery: `rawBody` exactly as received (before any JSON parsing), the `Vision-Signature`
 * header, and the endpoint's `whsec_…` secret. Returns the parsed event; throws WebhookSignatureError when the
 * header is missing or malformed, its timestamp is outside the tolerance (a replay), or no `v1` signature matches
 * (compared in constant time). Deliveries are at least once: dedupe by the event's `id`.
 * Throws a TypeError, whatever the delivery, for a secret that is not a `whsec_…` secret (an empty one, an unset
 * variable: anyone can sign with the empty key) or a tolerance or time that is not a finite number (NaN would
 * switch the replay check off): a receiver set up wrong refuses everything rather than accepting forgeries.
 */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  signatureHeader: string | null | undefined,
  secret: string,
  { toleranceSec = 300, now = Date.now() }: VerifyWebhookOptions = {},
): WebhookEvent {
  if (typeof secret !== 'string' || !WEBHOOK_SECRET.test(secret)) {
    throw new TypeError("verifyWebhook: secret must be the endpoint's whsec_… signing secret");
  }
  if (typeof toleranceSec !== 'number' || !Number.isFinite(toleranceSec) || toleranceSec < 0) {
    throw new TypeError('verifyWebhook: toleranceSec must be a finite number of seconds, 0 or more');
  }
  if (typeof now !== 'number' || !Number.isFinite(now)) {
    throw new TypeError('verifyWebhook: now must be a finite time in epoch milliseconds');
  }
  if (!signatureHeader) throw new WebhookSignatureError('missing', 'no Vision-Signature header');
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of signatureHeader.split(',')) {
    const [name, value] = part.trim().split('=', 2);
    if (name === 't' && value !== undefined && /^\d+$/.test(value)) timestamp = Number(value);
    else if (name === 'v1' && value !== undefined && /^[0-9a-f]{64}$/i.test(value)) signatures.push(value);
  }
  if (timestamp === undefined || signatures.length === 0) {
    throw new WebhookSignatureError('malformed', 'Vision-Signature needs t=<seconds> and v1=<hex>');
  }
  if (Math.abs(now / 1000 - timestamp) > toleranceSec) {
    throw new WebhookSignatureError('expired', `the signature's timestamp is more than ${toleranceSec} s away`);
  }
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody);
  const expected = createHmac('sha256', secret).update(`${timestamp}.`, 'utf8').update(body).digest();
  const matches = signatures.some((hex) => timingSafeEqual(Buffer.from(hex, 'hex'), expected));
  if (!matches) throw new WebhookSignatureError('mismatch', 'no signature matches this body and secret');
  return JSON.parse(body.toString('utf8')) as WebhookEvent;
}

export class VisionClient {
  readonly baseUrl: string;
  private readonly apiKey: string;
  private readonly fetchImpl: typeof globalThis.fetch;
  private readonly retry: typeof DEFAULT_RETRY & {
    random?: () => number;
    sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  };
  private readonly poll: { initialDelayMs: number; maxDelayMs: number; maxErrorMs: number };
  private readonly userAgent: string;

  constructor(options: VisionClientOptions) {
    if (!options?.baseUrl) throw new TypeError('VisionClient: baseUrl is required');
    if (!options.apiKey) throw new TypeError('VisionClient: apiKey is required');
    if (!URL.canParse(options.baseUrl) || !/^https?:$/.test(new URL(options.baseUrl).protocol)) {
      throw new TypeError(`VisionClient: baseUrl must be an http(s) URL, got ${JSON.stringify(options.baseUrl)}`);
    }
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.apiKey = options.apiKey;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.retry = { ...DEFAULT_RETRY, ...definedOnly(options.retry) };
    this.poll = { initialDelayMs: 500, maxDelayMs: 5000, maxErrorMs: 120_000, ...definedOnly(options.poll) };
    this.userAgent = options.userAgent ?? `vision-sdk/${SDK_VERSION}`;
  }

  // ---------- low-level calls, one per endpoint ----------

  health(options: CallOptions = {}): Promise<HealthResponse> {
    return this.request({ method: 'GET', path: '/health', idempotent: true, auth: false, signal: options.signal });
  }

  presign(body: PresignRequest, options: CallOptions = {}): Promise<PresignResponse> {
    return this.request({
      method: 'POST',
      path: '/v1/uploads/presign',
      body,
      idempotent: true,
      signal: options.signal,
    });
  }

  /** PUTs the bytes to the presigned address with the presign's headers; resolves with the store's ETag (if any). */
  async upload(
    presigned: Pick<PresignResponse, 'uploadUrl'> & Partial<Pick<PresignResponse, 'headers' | 'method'>>,
    bytes: Uint8Array,
    options: CallOptions = {},
  ): Promise<{ etag: string | null }> {
    const headers: Record<string, string> = {
      ...(presigned.headers ?? { 'Content-Type': 'application/octet-stream' }),
    };
    const response = await this.send({
      method: presigned.method ?? 'PUT',
      path: '',
      url: presigned.uploadUrl,
      rawBody: bytes,
      headers,
      idempotent: true,
      auth: false,
      signal: options.signal,
    });
    await response.arrayBuffer().catch(() => undefined);
    return { etag: response.headers.get('etag') };
  }

  /** POST /v1/runs. With `idempotencyKey`, retries after network errors/5xx are safe and happen automatically. */
  createRun(
    body: CreateRunInput,
    options: CallOptions & { idempotencyKey?: string | undefined } = {},
  ): Promise<CreateRunResponse> {
    const headers: Record<string, string> = {};
    if (options.idempotencyKey) headers['Idempotency-Key'] = options.idempotencyKey;
    return this.request({
      method: 'POST',
      path: '/v1/runs',
      body,
      headers,
      idempotent: options.idempotencyKey !== undefined,
      signal: options.signal,
    });
  }

  /**
   * POST /v1/estimates: what a run of this body would cost now and as a batch, for an upload or a declared file.
   * Creates and holds nothing, so it is retried like a read.
   */
  estimate(body: EstimateInput, options: CallOptions = {}): Promise<EstimateResponse> {
    return this.request({ method: 'POST', path: '/v1/estimates', body, idempotent: true, signal: options.signal });
  }

  getRun(jobId: string, options: CallOptions = {}): Promise<RunResponse> {
    return this.request({
      method: 'GET',
      path: `/v1/runs/${encodeURIComponent(jobId)}`,
      idempotent: true,
      signal: options.signal,
    });
  }

  listRuns(query: ListRunsInput = {}, options: CallOptions = {}): Promise<ListRunsResponse> {
    return this.request({ method: 'GET', path: '/v1/runs', query, idempotent: true, signal: options.signal });
  }

  /** POST /v1/runs/{jobId}/verify (not retried after network errors/5xx: a later verify adds history). */
  verify(jobId: string, body: VerifyRequest, options: CallOptions = {}): Promise<VerifyResponse> {
    return this.request({
      method: 'POST',
      path: `/v1/runs/${encodeURIComponent(jobId)}/verify`,
      body,
      idempotent: false,
      signal: options.signal,
    });
  }

  schemas(options: CallOptions = {}): Promise<SchemasResponse> {
    return this.request({ method: 'GET', path: '/v1/schemas', idempotent: true, signal: options.signal });
  }

  /** GET /v1/usage: totals per workflow, plus `series` per `interval` (hour | day) for charts. */
  usage(query: Partial<UsageQuery> = {}, options: CallOptions = {}): Promise<UsageResponse> {
    return this.request({ method: 'GET', path: '/v1/usage', query, idempotent: true, signal: options.signal });
  }

  /** GET /v1/whoami: the calling key's id, label, tenant and scopes (never the key). */
  whoami(options: CallOptions = {}): Promise<WhoamiResponse> {
    return this.request({ method: 'GET', path: '/v1/whoami', idempotent: true, signal: options.signal });
  }

  /**
   * GET /v1/runs/{jobId}/file: a 5-minute address to read the run's uploaded file (404 once the upload expired); with
   * `page`, the address of that page's image (JPEG) of a PDF run, on which its fields' boxes can be drawn (404 when
   * the worker stored none for that page: it renders the pages with a boxed field).
   */
  fileUrl(jobId: string, options: FileUrlOptions = {}): Promise<FileUrlResponse> {
    return this.request({
      method: 'GET',
      path: `/v1/runs/${encodeURIComponent(jobId)}/file`,
      query: { page: options.page },
      idempotent: true,
      signal: options.signal,
    });
  }

  // ---------- evaluations and accuracy from reviews (contract-v1.2 §1) ----------

  /**
   * POST /v1/evaluations: every document run once per listed provider (or with the normal plan), scored against its
   * expected values; one hold for the whole. With `idempotencyKey`, retries after network errors/5xx are safe.
   */
  createEvaluation(
    body: CreateEvaluationInput,
    options: CallOptions & { idempotencyKey?: string | undefined } = {},
  ): Promise<CreateEvaluationResponse> {
    const headers: Record<string, string> = {};
    if (options.idempotencyKey) headers['Idempotency-Key'] = options.idempotencyKey;
    return this.request({
      method: 'POST',
      path: '/v1/evaluations',
      body,
      headers,
      idempotent: options.idempotencyKey !== undefined,
      signal: options.signal,
    });
  }

  /** GET /v1/evaluations/{id}: progress, money, the report once every run settled, and a page of items. */
  getEvaluation(id: string, query: GetEvaluationInput = {}, options: CallOptions = {}): Promise<Evaluation> {
    return this.request({
      method: 'GET',
      path: `/v1/evaluations/${encodeURIComponent(id)}`,
      query,
      idempotent: true,
      signal: options.signal,
    });
  }

  /** GET /v1/evaluations: the tenant's evaluations, newest first (without items). */
  listEvaluations(query: ListEvaluationsInput = {}, options: CallOptions = {}): Promise<ListEvaluationsResponse> {
    return this.request({ method: 'GET', path: '/v1/evaluations', query, idempotent: true, signal: options.signal });
  }

  /**
   * Polls an evaluation until it is completed or failed (every `intervalMs`, default 2 s), calling `onProgress` with
   * each reading; resolves with the final evaluation (without items).
   */
  async waitForEvaluation(
    id: string,
    options: CallOptions & { intervalMs?: number; onProgress?: (evaluation: Evaluation) => void } = {},
  ): Promise<Evaluation> {
    for (;;) {
      const evaluation = await this.getEvaluation(id, { itemsLimit: 0 }, { signal: options.signal });
      options.onProgress?.(evaluation);
      if (evaluation.status !== 'queued') return evaluation;
      await sleep(options.intervalMs ?? 2000, options.signal);
    }
  }

  /** GET /v1/quality: accuracy from reviews per field and provider, with calibration, over a period. */
  quality(query: QualityQuery = {}, options: CallOptions = {}): Promise<QualityResponse> {
    return this.request({ method: 'GET', path: '/v1/quality', query, idempotent: true, signal: options.signal });
  }

  // ---------- webhooks ----------

  /**
   * POST /v1/webhooks: registers an endpoint; the answer's `secret` is shown only here (keep it for verifyWebhook).
   * Not retried after a network error or 5xx: a retry could register a second endpoint.
   */
  createWebhook(body: CreateWebhookInput, options: CallOptions = {}): Promise<CreatedWebhook> {
    return this.request({ method: 'POST', path: '/v1/webhooks', body, idempotent: false, signal: options.signal });
  }

  /** GET /v1/webhooks: the tenant's endpoints (never their secrets). */
  listWebhooks(options: CallOptions = {}): Promise<ListWebhooksResponse> {
    return this.request({ method: 'GET', path: '/v1/webhooks', idempotent: true, signal: options.signal });
  }

  /** DELETE /v1/webhooks/{id}: nothing more is delivered to it. Not retried (a retry of a done delete is a 404). */
  async deleteWebhook(id: string, options: CallOptions = {}): Promise<void> {
    await this.request({
      method: 'DELETE',
      path: `/v1/webhooks/${encodeURIComponent(id)}`,
      idempotent: false,
      signal: options.signal,
    });
  }

  /** GET /v1/webhooks/{id}/deliveries: the endpoint's last 100 delivery attempts, newest first. */
  listWebhookDeliveries(id: string, options: CallOptions = {}): Promise<WebhookDeliveriesResponse> {
    return this.request({
      method: 'GET',
      path: `/v1/webhooks/${encodeURIComponent(id)}/deliveries`,
      idempotent: true,
      signal: options.signal,
    });
  }

  // ---------- high-level flow ----------

  /**
   * presign → PUT → create (with an Idempotency-Key) → poll until final. Resolves with the completed envelope, its
   * `result` typed for what was asked (`schemaId: 'receipt'` gives a `ReceiptResult`: `ResultFor`); rejects with a
   * VisionError for a rejected request, a run that ended `failed` (`error.run` set), or cancellation (ABORTED).
   */
  async analyze<const P extends AnalyzeParams>(
    file: FileInput,
    params: P,
    options: AnalyzeOptions = {},
  ): Promise<CompletedRun<ResultFor<P>>> {
    const started = Date.now();
    const { signal, cleanup } = this.deadline(options);
    let jobId: string | undefined;
    try {
      const created = await this.submitWithin(file, params, options, signal, started);
      jobId = created.jobId;
      // The service shapes the result by the schema and format the run was created with (ResultFor says how).
      return (await this.pollUntilFinal(created.jobId, signal, options.onProgress, started)) as CompletedRun<
        ResultFor<P>
      >;
    } catch (error) {
      throw withJob(this.normalizeAbort(error, signal, options, jobId), jobId);
    } finally {
      cleanup();
    }
  }

  /** presign → PUT → create; resolves with the queued creation envelope (no polling). */
  async submit(file: FileInput, params: AnalyzeParams, options: AnalyzeOptions = {}): Promise<CreateRunResponse> {
    const started = Date.now();
    const { signal, cleanup } = this.deadline(options);
    try {
      return await this.submitWithin(file, params, options, signal, started);
    } catch (error) {
      throw this.normalizeAbort(error, signal, options, undefined);
    } finally {
      cleanup();
    }
  }

  /** Polls a run until `completed` (resolves) or `failed` (rejects with the run's error as a VisionError). */
  async waitForRun(
    jobId: string,
    options: Pick<AnalyzeOptions, 'onProgress' | 'signal' | 'timeoutMs'> = {},
  ): Promise<CompletedRun> {
    const started = Date.now();
    const { signal, cleanup } = this.deadline(options);
    try {
      return await this.pollUntilFinal(jobId, signal, options.onProgress, started);
    } catch (error) {
      throw withJob(this.normalizeAbort(error, signal, options, jobId), jobId);
    } finally {
      cleanup();
    }
  }

  private async submitWithin(
    file: FileInput,
    params: AnalyzeParams,
    options: AnalyzeOptions,
    signal: AbortSignal | undefined,
    started: number,
  ): Promise<CreateRunResponse> {
    const progress = (event: Omit<ProgressEvent, 'elapsedMs'>) =>
      options.onProgress?.({ ...event, elapsedMs: Date.now() - started });

    let uploadId: string;
    if (isUploadRef(file)) {
      uploadId = file.uploadId;
    } else {
      const { bytes, fileName } = await readInput(file, params.fileName);
      const presigned = await this.presign({ fileName, contentLength: bytes.byteLength }, { signal });
      progress({ stage: 'uploading', uploadedBytes: 0, totalBytes: bytes.byteLength });
      await this.upload(presigned, bytes, { signal });
      progress({ stage: 'uploading', uploadedBytes: bytes.byteLength, totalBytes: bytes.byteLength });
      uploadId = presigned.uploadId;
    }

    const body: CreateRunInput = { uploadId, prompt: params.prompt };
    if (params.outputFormat !== undefined) body.outputFormat = params.outputFormat;
    if (params.schemaId !== undefined) body.schemaId = params.schemaId;
    if (params.schema !== undefined) body.schema = params.schema;
    if (params.split !== undefined) body.split = params.split;
    if (params.schemaIds !== undefined) body.schemaIds = params.schemaIds;
    if (params.workflow !== undefined) body.workflow = params.workflow;
    if (params.metadata !== undefined) body.metadata = params.metadata as CreateRunInput['metadata'];
    if (params.maxCostUsd !== undefined) body.maxCostUsd = params.maxCostUsd;
    if (params.confirmCost !== undefined) body.confirmCost = params.confirmCost;

    const idempotencyKey = params.idempotencyKey ?? randomUUID();
    // A creation that ends without an answer may have created the run: say how to ask again without a second one.
    // The key answers only the same body again, so the details say when it was the confirmed one.
    const create = (input: CreateRunInput) =>
      this.createRun(input, { idempotencyKey, signal }).catch((error: unknown) => {
        if (!outcomeUnknown(error, signal)) throw error;
        const confirmed = input.confirmCost === true && params.confirmCost !== true ? { confirmCost: true } : {};
        throw withDetails(error as VisionError, { uploadId, idempotencyKey, ...confirmed });
      });
    let created: CreateRunResponse;
    try {
      created = await create(body);
    } catch (error) {
      if (
        !(error instanceof VisionError) ||
        error.code !== 'COST_CONFIRMATION_REQUIRED' ||
        options.confirmCost === undefined
      ) {
        throw error;
      }
      const { estimatedCostUsd, thresholdUsd } = error.details ?? {};
      const asked = { estimatedCostUsd: Number(estimatedCostUsd), thresholdUsd: Number(thresholdUsd), uploadId };
      if (!(await options.confirmCost(asked))) throw error;
      // The same key: the service remembers only accepted creations, so the refused one left nothing behind it, and
      // a later call with this key and the confirmed body still answers with this run.
      created = await create({ ...body, confirmCost: true });
    }
    progress({ stage: 'queued', jobId: created.jobId });
    return created;
  }

  private async pollUntilFinal(
    jobId: string,
    signal: AbortSignal | undefined,
    onProgress: AnalyzeOptions['onProgress'],
    started: number,
  ): Promise<CompletedRun> {
    // One event per change: of the stage, or of a long document's pages (the run's `progress`, when it has one).
    let last: string | undefined;
    const progress = (stage: ProgressEvent['stage'], pages?: RunProgress) => {
      const key = JSON.stringify([stage, pages?.pagesDone, pages?.pagesTotal, pages?.stage]);
      if (key === last) return;
      last = key;
      onProgress?.({ stage, jobId, elapsedMs: Date.now() - started, ...(pages ? { progress: pages } : {}) });
    };
    const random = this.retry.random ?? Math.random;
    const wait = this.retry.sleep ?? sleep;
    let failingSince: number | undefined;
    for (let attempt = 0; ; attempt++) {
      let run: RunResponse;
      try {
        run = await this.getRun(jobId, { signal });
        failingSince = undefined;
      } catch (error) {
        // The run goes on whatever happens to this client's reads: ride out an outage (each read already retried)
        // rather than hand the caller an error that invites creating the run again.
        if (!(error instanceof VisionError) || !error.retryable || error.code === 'ABORTED') throw error;
        failingSince ??= Date.now();
        if (Date.now() - failingSince >= this.poll.maxErrorMs) throw error;
        await wait(backoffDelay(attempt, this.poll.initialDelayMs, this.poll.maxDelayMs, random), signal);
        continue;
      }
      if (run.status === 'completed') {
        progress('completed');
        return run;
      }
      if (run.status === 'failed') {
        throw new VisionError({
          code: run.error.code,
          message: run.error.message,
          status: run.error.status,
          retryable: run.error.retryable,
          ...(run.error.details ? { details: run.error.details } : {}),
          ...(run.error.requestId ? { requestId: run.error.requestId } : {}),
          run,
        });
      }
      progress(run.stage === 'processing' ? 'processing' : 'queued', run.progress);
      // Full jitter, but never hammer: at least 50 ms between polls.
      const delay = Math.max(50, backoffDelay(attempt, this.poll.initialDelayMs, this.poll.maxDelayMs, random));
      await wait(delay, signal);
    }
  }

  // ---------- plumbing ----------

  private deadline(options: { signal?: AbortSignal | undefined; timeoutMs?: number | undefined }) {
    const signals: AbortSignal[] = [];
    if (options.signal) signals.push(options.signal);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new AbortController();
    if (options.timeoutMs !== undefined) {
      timer = setTimeout(
        () => timeout.abort(new DOMException(`timed out after ${options.timeoutMs} ms`, 'TimeoutError')),
        options.timeoutMs,
      );
      signals.push(timeout.signal);
    }
    const signal = signals.length === 0 ? undefined : signals.length === 1 ? signals[0] : AbortSignal.any(signals);
    return { signal, cleanup: () => timer !== undefined && clearTimeout(timer) };
  }

  private normalizeAbort(
    error: unknown,
    signal: AbortSignal | undefined,
    options: { signal?: AbortSignal | undefined; timeoutMs?: number | undefined },
    jobId: string | undefined,
  ): unknown {
    if (error instanceof VisionError && error.code !== 'ABORTED') return error;
    if (!isAbort(error, signal)) return error;
    const timedOut = options.signal?.aborted !== true && signal?.aborted === true;
    return new VisionError({
      code: 'ABORTED',
      message: timedOut
        ? `timed out after ${options.timeoutMs} ms${jobId ? ` (run ${jobId} continues on the service)` : ''}`
        : `aborted${jobId ? ` (run ${jobId} continues on the service)` : ''}`,
      status: 0,
      retryable: timedOut,
      details: { reason: timedOut ? 'timeout' : 'aborted', ...(jobId ? { jobId } : {}) },
      ...(jobId ? { jobId } : {}),
      cause: error instanceof VisionError ? error.cause : error,
    });
  }

  private async request<T>(spec: RequestSpec): Promise<T> {
    const response = await this.send(spec);
    // The body may still break off (the attempt's deadline, the connection): a VisionError like any other failure.
    const text = await response.text().catch((cause: unknown) => {
      if (spec.signal?.aborted) throw abortError(spec.signal.reason);
      throw new VisionError({
        code: 'NETWORK_ERROR',
        message: `${spec.method} ${spec.path}: the response broke off (${(cause as Error)?.message ?? String(cause)})`,
        status: 0,
        retryable: true,
        cause,
      });
    });
    if (text === '') return {} as T;
    try {
      return JSON.parse(text) as T;
    } catch (cause) {
      throw new VisionError({
        code: 'HTTP_ERROR',
        message: `${spec.method} ${spec.path}: response is not JSON`,
        status: response.status,
        retryable: false,
        requestId: response.headers.get('x-request-id') ?? undefined,
        cause,
      });
    }
  }

  /** One call with retries; resolves with an OK response, or throws a VisionError. */
  private async send(spec: RequestSpec): Promise<Response> {
    const url = new URL(spec.url ?? `${this.baseUrl}${spec.path}`);
    for (const [k, v] of Object.entries(spec.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = {
      // The presigned PUT gets only the headers it was signed with (and the user agent).
      ...(spec.auth === false ? {} : { accept: 'application/json' }),
      'user-agent': this.userAgent,
      ...spec.headers,
    };
    if (spec.auth !== false) headers['x-api-key'] = this.apiKey;
    let body: Blob | string | undefined;
    if (spec.rawBody !== undefined) body = new Blob([spec.rawBody as Uint8Array<ArrayBuffer>]);
    else if (spec.body !== undefined) {
      body = JSON.stringify(spec.body);
      headers['content-type'] = 'application/json';
    }

    const random = this.retry.random ?? Math.random;
    const wait = this.retry.sleep ?? sleep;
    const pause = (ms: number) => wait(ms, spec.signal).catch((reason: unknown) => Promise.reject(abortError(reason)));
    // API calls get a deadline per attempt; the upload PUT (spec.url) may take as long as the bytes need.
    const attemptTimeoutMs = spec.url === undefined ? this.retry.requestTimeoutMs : undefined;
    for (let attempt = 0; ; attempt++) {
      if (spec.signal?.aborted) throw abortError(spec.signal.reason);
      let response: Response;
      const attemptTimer = attemptTimeoutMs !== undefined ? AbortSignal.timeout(attemptTimeoutMs) : undefined;
      const signal =
        attemptTimer && spec.signal ? AbortSignal.any([spec.signal, attemptTimer]) : (attemptTimer ?? spec.signal);
      try {
        response = await this.fetchImpl(url, {
          method: spec.method,
          headers,
          ...(body !== undefined ? { body } : {}),
          ...(signal ? { signal } : {}),
          // The key must never reach another host: a redirect is answered as an error, not followed.
          ...(spec.auth !== false ? { redirect: 'manual' as const } : {}),
        });
      } catch (cause) {
        const timedOut = attemptTimer?.aborted === true && spec.signal?.aborted !== true;
        if (!timedOut && isAbort(cause, spec.signal)) throw abortError(spec.signal?.reason ?? cause);
        if (spec.idempotent && attempt < this.retry.retries) {
          await pause(backoffDelay(attempt, this.retry.baseDelayMs, this.retry.maxDelayMs, random));
          continue;
        }
        // fetch says only "fetch failed"; what a user can act on (ECONNREFUSED, ENOTFOUND, a TLS error) is its cause.
        const inner = (cause as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
        const detail = typeof inner?.code === 'string' ? inner.code : inner?.message;
        const reason = timedOut
          ? `no response within ${attemptTimeoutMs} ms`
          : `${(cause as Error)?.message ?? String(cause)}${typeof detail === 'string' && detail !== '' ? ` (${detail})` : ''}`;
        throw new VisionError({
          code: 'NETWORK_ERROR',
          message: `${spec.method} ${url.origin}${url.pathname}: ${reason}`,
          status: 0,
          retryable: true,
          // The system's code (ECONNREFUSED, ENOTFOUND, …) for callers that explain it.
          ...(typeof inner?.code === 'string' ? { details: { cause: inner.code } } : {}),
          cause,
        });
      }
      if (response.ok) return response;
      if (response.type === 'opaqueredirect' || (response.status >= 300 && response.status < 400)) {
        await response.arrayBuffer().catch(() => undefined);
        throw new VisionError({
          code: 'HTTP_ERROR',
          message: `${spec.method} ${spec.path} was redirected${response.headers.get('location') ? ` to ${response.headers.get('location')}` : ''}; not followed (the API key is sent to the base URL only)`,
          status: response.status,
          retryable: false,
          ...(response.headers.get('x-request-id') ? { requestId: response.headers.get('x-request-id') ?? '' } : {}),
        });
      }

      const status = response.status;
      const always = status === 429 || status === 503;
      const retryAfter = always ? parseRetryAfter(response.headers.get('retry-after')) : undefined;
      // Asked to wait longer than we would: answer now, with the wait, rather than ask again too early.
      const tooLong = retryAfter !== undefined && retryAfter > this.retry.maxRetryAfterMs;
      const retry = (always || (spec.idempotent && status >= 500)) && attempt < this.retry.retries && !tooLong;
      if (retry) {
        await response.arrayBuffer().catch(() => undefined);
        const delay = retryAfter ?? backoffDelay(attempt, this.retry.baseDelayMs, this.retry.maxDelayMs, random);
        await pause(delay);
        continue;
      }
      const error = await errorFromResponse(response, spec);
      throw retryAfter !== undefined ? withDetails(error, { retryAfterMs: retryAfter }) : error;
    }
  }
}

async function errorFromResponse(response: Response, spec: RequestSpec): Promise<VisionError> {
  const requestId = response.headers.get('x-request-id') ?? undefined;
  const text = await response.text().catch(() => '');
  let parsed: Partial<ErrorBody> | undefined;
  try {
    parsed = JSON.parse(text) as Partial<ErrorBody>;
  } catch {
    parsed = undefined;
  }
  const err = parsed?.error;
  if (err && typeof err.code === 'string') {
    return new VisionError({
      code: err.code,
      message: err.message ?? `HTTP ${response.status}`,
      status: typeof err.status === 'number' ? err.status : response.status,
      retryable: typeof err.retryable === 'boolean' ? err.retryable : response.status >= 500 || response.status === 429,
      ...(err.details ? { details: err.details } : {}),
      ...((err.requestId ?? requestId) ? { requestId: err.requestId ?? requestId } : {}),
    });
  }
  return new VisionError({
    code: 'HTTP_ERROR',
    message: `${spec.method} ${spec.url ? 'upload URL' : spec.path} answered ${response.status}${text ? `: ${text.slice(0, 200)}` : ''}`,
    status: response.status,
    retryable: response.status >= 500 || response.status === 429,
    ...(requestId ? { requestId } : {}),
  });
}

async function readInput(file: FileInput, fileName?: string): Promise<{ bytes: Uint8Array; fileName: string }> {
  let bytes: Uint8Array;
  let name = fileName;
  if (typeof file === 'string') {
    try {
      bytes = new Uint8Array(await readFile(file));
    } catch (cause) {
      const code = (cause as NodeJS.ErrnoException).code;
      const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'a directory' : (cause as Error).message;
      throw new VisionError({
        code: 'INVALID_ARGUMENT',
        message: `cannot read ${file}: ${why}`,
        status: 0,
        retryable: false,
        cause,
      });
    }
    name ??= basename(file);
  } else if (file instanceof Uint8Array) {
    bytes = file;
  } else if (typeof Blob !== 'undefined' && file instanceof Blob) {
    bytes = new Uint8Array(await file.arrayBuffer());
    const named = (file as Blob & { name?: unknown }).name;
    if (typeof named === 'string' && named !== '') name ??= named;
  } else {
    throw new VisionError({
      code: 'INVALID_ARGUMENT',
      message: 'file must be a path, a Uint8Array or a Blob',
      status: 0,
      retryable: false,
    });
  }
  if (bytes.byteLength === 0) {
    throw new VisionError({ code: 'INVALID_ARGUMENT', message: 'the file is empty', status: 0, retryable: false });
  }
  name ??= sniffFileName(bytes);
  if (!name) {
    throw new VisionError({
      code: 'INVALID_ARGUMENT',
      message: 'cannot tell the file type: pass fileName (with its extension)',
      status: 0,
      retryable: false,
    });
  }
  return { bytes, fileName: name };
}
