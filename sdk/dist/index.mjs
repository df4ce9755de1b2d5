// Generated from sdk/index.ts by `npm run build`: do not edit.

// sdk/index.ts
import { createHmac, randomUUID, timingSafeEqual } from "node:crypto";
import { readFile } from "node:fs/promises";
import { basename } from "node:path";
var VisionError = class extends Error {
  code;
  /** HTTP status (the contract's `error.status`); 0 for client-side errors (network, abort, bad argument). */
  status;
  retryable;
  details;
  requestId;
  /** Set when the error is a run that ended `failed` (the failed envelope). */
  run;
  /** The run concerned, when known (failed run, or cancelled while polling). */
  jobId;
  constructor(init) {
    super(init.message, init.cause !== void 0 ? { cause: init.cause } : void 0);
    this.name = "VisionError";
    this.code = init.code;
    this.status = init.status;
    this.retryable = init.retryable;
    this.details = init.details;
    this.requestId = init.requestId;
    this.run = init.run;
    this.jobId = init.jobId ?? init.run?.jobId;
  }
  /** True for a run that was accepted and then ended `failed` (as opposed to a rejected request). */
  get isRunFailure() {
    return this.run !== void 0;
  }
};
function isSplitResult(result) {
  return typeof result === "object" && result !== null && Array.isArray(result.documents);
}
function isSchemaRun(run, schemaId) {
  return run.status === "completed" && run.schemaId === schemaId && run.outputFormat === "json";
}
var SDK_VERSION = "0.1.0";
function definedOnly(value) {
  return Object.fromEntries(Object.entries(value ?? {}).filter(([, v]) => v !== void 0));
}
var DEFAULT_RETRY = {
  retries: 4,
  baseDelayMs: 300,
  maxDelayMs: 5e3,
  maxRetryAfterMs: 6e4,
  requestTimeoutMs: 3e4
};
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
function backoffDelay(attempt, baseMs, capMs, random = Math.random) {
  const ceiling = Math.min(capMs, baseMs * 2 ** attempt);
  return Math.floor(random() * ceiling);
}
function parseRetryAfter(value, now = Date.now()) {
  if (value === null || value.trim() === "") return void 0;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1e3);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? void 0 : Math.max(0, date - now);
}
function sniffFileName(bytes) {
  const b = bytes;
  if (b[0] === 37 && b[1] === 80 && b[2] === 68 && b[3] === 70) return "upload.pdf";
  if (b[0] === 137 && b[1] === 80 && b[2] === 78 && b[3] === 71) return "upload.png";
  if (b[0] === 255 && b[1] === 216 && b[2] === 255) return "upload.jpg";
  if (b.length >= 12 && String.fromCharCode(...b.subarray(4, 8)) === "ftyp") {
    const brand = String.fromCharCode(...b.subarray(8, 12));
    if (/^(heic|heix|heim|heis|hevc|hevx|mif1|msf1)$/.test(brand)) return "upload.heic";
  }
  return void 0;
}
function isUploadRef(file) {
  return typeof file === "object" && file !== null && !(file instanceof Uint8Array) && !(typeof Blob !== "undefined" && file instanceof Blob) && typeof file.uploadId === "string";
}
function rebuilt(error, extra) {
  return new VisionError({
    code: error.code,
    message: error.message,
    status: error.status,
    retryable: error.retryable,
    ...error.details || extra.details ? { details: { ...error.details, ...extra.details } } : {},
    ...error.requestId ? { requestId: error.requestId } : {},
    ...error.run ? { run: error.run } : {},
    ...extra.jobId ?? error.jobId ? { jobId: extra.jobId ?? error.jobId } : {},
    ...error.cause !== void 0 ? { cause: error.cause } : {}
  });
}
function withJob(error, jobId) {
  if (!(error instanceof VisionError) || jobId === void 0 || error.jobId !== void 0) return error;
  return rebuilt(error, { jobId, details: { jobId } });
}
function withDetails(error, details) {
  return rebuilt(error, { details });
}
function outcomeUnknown(error, signal) {
  if (isAbort(error, signal)) return true;
  return error instanceof VisionError && (error.code === "NETWORK_ERROR" || error.status >= 500);
}
function abortError(cause) {
  if (cause instanceof VisionError) return cause;
  const timedOut = cause instanceof Error && cause.name === "TimeoutError";
  return new VisionError({
    code: "ABORTED",
    message: timedOut ? "timed out" : "aborted",
    status: 0,
    retryable: timedOut,
    details: { reason: timedOut ? "timeout" : "aborted" },
    cause
  });
}
function isAbort(error, signal) {
  return signal?.aborted === true || error instanceof Error && (error.name === "AbortError" || error.name === "TimeoutError") || error instanceof VisionError && error.code === "ABORTED";
}
var WebhookSignatureError = class extends Error {
  reason;
  constructor(reason, message) {
    super(message);
    this.name = "WebhookSignatureError";
    this.reason = reason;
  }
};
var WEBHOOK_SECRET = /^whsec_[A-Za-z0-9_-]{16,}$/;
function verifyWebhook(rawBody, signatureHeader, secret, { toleranceSec = 300, now = Date.now() } = {}) {
  if (typeof secret !== "string" || !WEBHOOK_SECRET.test(secret)) {
    throw new TypeError("verifyWebhook: secret must be the endpoint's whsec_\u2026 signing secret");
  }
  if (typeof toleranceSec !== "number" || !Number.isFinite(toleranceSec) || toleranceSec < 0) {
    throw new TypeError("verifyWebhook: toleranceSec must be a finite number of seconds, 0 or more");
  }
  if (typeof now !== "number" || !Number.isFinite(now)) {
    throw new TypeError("verifyWebhook: now must be a finite time in epoch milliseconds");
  }
  if (!signatureHeader) throw new WebhookSignatureError("missing", "no Vision-Signature header");
  let timestamp;
  const signatures = [];
  for (const part of signatureHeader.split(",")) {
    const [name, value] = part.trim().split("=", 2);
    if (name === "t" && value !== void 0 && /^\d+$/.test(value)) timestamp = Number(value);
    else if (name === "v1" && value !== void 0 && /^[0-9a-f]{64}$/i.test(value)) signatures.push(value);
  }
  if (timestamp === void 0 || signatures.length === 0) {
    throw new WebhookSignatureError("malformed", "Vision-Signature needs t=<seconds> and v1=<hex>");
  }
  if (Math.abs(now / 1e3 - timestamp) > toleranceSec) {
    throw new WebhookSignatureError("expired", `the signature's timestamp is more than ${toleranceSec} s away`);
  }
  const body = typeof rawBody === "string" ? Buffer.from(rawBody, "utf8") : Buffer.from(rawBody);
  const expected = createHmac("sha256", secret).update(`${timestamp}.`, "utf8").update(body).digest();
  const matches = signatures.some((hex) => timingSafeEqual(Buffer.from(hex, "hex"), expected));
  if (!matches) throw new WebhookSignatureError("mismatch", "no signature matches this body and secret");
  return JSON.parse(body.toString("utf8"));
}
var VisionClient = class {
  baseUrl;
  apiKey;
  fetchImpl;
  retry;
  poll;
  userAgent;
  constructor(options) {
    if (!options?.baseUrl) throw new TypeError("VisionClient: baseUrl is required");
    if (!options.apiKey) throw new TypeError("VisionClient: apiKey is required");
    if (!URL.canParse(options.baseUrl) || !/^https?:$/.test(new URL(options.baseUrl).protocol)) {
      throw new TypeError(`VisionClient: baseUrl must be an http(s) URL, got ${JSON.stringify(options.baseUrl)}`);
    }
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.apiKey = options.apiKey;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.retry = { ...DEFAULT_RETRY, ...definedOnly(options.retry) };
    this.poll = { initialDelayMs: 500, maxDelayMs: 5e3, maxErrorMs: 12e4, ...definedOnly(options.poll) };
    this.userAgent = options.userAgent ?? `vision-sdk/${SDK_VERSION}`;
  }
  // ---------- low-level calls, one per endpoint ----------
  health(options = {}) {
    return this.request({ method: "GET", path: "/health", idempotent: true, auth: false, signal: options.signal });
  }
  presign(body, options = {}) {
    return this.request({
      method: "POST",
      path: "/v1/uploads/presign",
      body,
      idempotent: true,
      signal: options.signal
    });
  }
  /** PUTs the bytes to the presigned address with the presign's headers; resolves with the store's ETag (if any). */
  async upload(presigned, bytes, options = {}) {
    const headers = {
      ...presigned.headers ?? { "Content-Type": "application/octet-stream" }
    };
    const response = await this.send({
      method: presigned.method ?? "PUT",
      path: "",
      url: presigned.uploadUrl,
      rawBody: bytes,
      headers,
      idempotent: true,
      auth: false,
      signal: options.signal
    });
    await response.arrayBuffer().catch(() => void 0);
    return { etag: response.headers.get("etag") };
  }
  /** POST /v1/runs. With `idempotencyKey`, retries after network errors/5xx are safe and happen automatically. */
  createRun(body, options = {}) {
    const headers = {};
    if (options.idempotencyKey) headers["Idempotency-Key"] = options.idempotencyKey;
    return this.request({
      method: "POST",
      path: "/v1/runs",
      body,
      headers,
      idempotent: options.idempotencyKey !== void 0,
      signal: options.signal
    });
  }
  /**
   * POST /v1/estimates: what a run of this body would cost now and as a batch, for an upload or a declared file.
   * Creates and holds nothing, so it is retried like a read.
   */
  estimate(body, options = {}) {
    return this.request({ method: "POST", path: "/v1/estimates", body, idempotent: true, signal: options.signal });
  }
  getRun(jobId, options = {}) {
    return this.request({
      method: "GET",
      path: `/v1/runs/${encodeURIComponent(jobId)}`,
      idempotent: true,
      signal: options.signal
    });
  }
  listRuns(query = {}, options = {}) {
    return this.request({ method: "GET", path: "/v1/runs", query, idempotent: true, signal: options.signal });
  }
  /** POST /v1/runs/{jobId}/verify (not retried after network errors/5xx: a later verify adds history). */
  verify(jobId, body, options = {}) {
    return this.request({
      method: "POST",
      path: `/v1/runs/${encodeURIComponent(jobId)}/verify`,
      body,
      idempotent: false,
      signal: options.signal
    });
  }
  schemas(options = {}) {
    return this.request({ method: "GET", path: "/v1/schemas", idempotent: true, signal: options.signal });
  }
  /** GET /v1/usage: totals per workflow, plus `series` per `interval` (hour | day) for charts. */
  usage(query = {}, options = {}) {
    return this.request({ method: "GET", path: "/v1/usage", query, idempotent: true, signal: options.signal });
  }
  /** GET /v1/whoami: the calling key's id, label, tenant and scopes (never the key). */
  whoami(options = {}) {
    return this.request({ method: "GET", path: "/v1/whoami", idempotent: true, signal: options.signal });
  }
  /**
   * GET /v1/runs/{jobId}/file: a 5-minute address to read the run's uploaded file (404 once the upload expired); with
   * `page`, the address of that page's image (JPEG) of a PDF run, on which its fields' boxes can be drawn (404 when
   * the worker stored none for that page: it renders the pages with a boxed field).
   */
  fileUrl(jobId, options = {}) {
    return this.request({
      method: "GET",
      path: `/v1/runs/${encodeURIComponent(jobId)}/file`,
      query: { page: options.page },
      idempotent: true,
      signal: options.signal
    });
  }
  // ---------- evaluations and accuracy from reviews (contract-v1.2 §1) ----------
  /**
   * POST /v1/evaluations: every document run once per listed provider (or with the normal plan), scored against its
   * expected values; one hold for the whole. With `idempotencyKey`, retries after network errors/5xx are safe.
   */
  createEvaluation(body, options = {}) {
    const headers = {};
    if (options.idempotencyKey) headers["Idempotency-Key"] = options.idempotencyKey;
    return this.request({
      method: "POST",
      path: "/v1/evaluations",
      body,
      headers,
      idempotent: options.idempotencyKey !== void 0,
      signal: options.signal
    });
  }
  /** GET /v1/evaluations/{id}: progress, money, the report once every run settled, and a page of items. */
  getEvaluation(id, query = {}, options = {}) {
    return this.request({
      method: "GET",
      path: `/v1/evaluations/${encodeURIComponent(id)}`,
      query,
      idempotent: true,
      signal: options.signal
    });
  }
  /** GET /v1/evaluations: the tenant's evaluations, newest first (without items). */
  listEvaluations(query = {}, options = {}) {
    return this.request({ method: "GET", path: "/v1/evaluations", query, idempotent: true, signal: options.signal });
  }
  /**
   * Polls an evaluation until it is completed or failed (every `intervalMs`, default 2 s), calling `onProgress` with
   * each reading; resolves with the final evaluation (without items).
   */
  async waitForEvaluation(id, options = {}) {
    for (; ; ) {
      const evaluation = await this.getEvaluation(id, { itemsLimit: 0 }, { signal: options.signal });
      options.onProgress?.(evaluation);
      if (evaluation.status !== "queued") return evaluation;
      await sleep(options.intervalMs ?? 2e3, options.signal);
    }
  }
  /** GET /v1/quality: accuracy from reviews per field and provider, with calibration, over a period. */
  quality(query = {}, options = {}) {
    return this.request({ method: "GET", path: "/v1/quality", query, idempotent: true, signal: options.signal });
  }
  // ---------- webhooks ----------
  /**
   * POST /v1/webhooks: registers an endpoint; the answer's `secret` is shown only here (keep it for verifyWebhook).
   * Not retried after a network error or 5xx: a retry could register a second endpoint.
   */
  createWebhook(body, options = {}) {
    return this.request({ method: "POST", path: "/v1/webhooks", body, idempotent: false, signal: options.signal });
  }
  /** GET /v1/webhooks: the tenant's endpoints (never their secrets). */
  listWebhooks(options = {}) {
    return this.request({ method: "GET", path: "/v1/webhooks", idempotent: true, signal: options.signal });
  }
  /** DELETE /v1/webhooks/{id}: nothing more is delivered to it. Not retried (a retry of a done delete is a 404). */
  async deleteWebhook(id, options = {}) {
    await this.request({
      method: "DELETE",
      path: `/v1/webhooks/${encodeURIComponent(id)}`,
      idempotent: false,
      signal: options.signal
    });
  }
  /** GET /v1/webhooks/{id}/deliveries: the endpoint's last 100 delivery attempts, newest first. */
  listWebhookDeliveries(id, options = {}) {
    return this.request({
      method: "GET",
      path: `/v1/webhooks/${encodeURIComponent(id)}/deliveries`,
      idempotent: true,
      signal: options.signal
    });
  }
  // ---------- high-level flow ----------
  /**
   * presign → PUT → create (with an Idempotency-Key) → poll until final. Resolves with the completed envelope, its
   * `result` typed for what was asked (`schemaId: 'receipt'` gives a `ReceiptResult`: `ResultFor`); rejects with a
   * VisionError for a rejected request, a run that ended `failed` (`error.run` set), or cancellation (ABORTED).
   */
  async analyze(file, params, options = {}) {
    const started = Date.now();
    const { signal, cleanup } = this.deadline(options);
    let jobId;
    try {
      const created = await this.submitWithin(file, params, options, signal, started);
      jobId = created.jobId;
      return await this.pollUntilFinal(created.jobId, signal, options.onProgress, started);
    } catch (error) {
      throw withJob(this.normalizeAbort(error, signal, options, jobId), jobId);
    } finally {
      cleanup();
    }
  }
  /** presign → PUT → create; resolves with the queued creation envelope (no polling). */
  async submit(file, params, options = {}) {
    const started = Date.now();
    const { signal, cleanup } = this.deadline(options);
    try {
      return await this.submitWithin(file, params, options, signal, started);
    } catch (error) {
      throw this.normalizeAbort(error, signal, options, void 0);
    } finally {
      cleanup();
    }
  }
  /** Polls a run until `completed` (resolves) or `failed` (rejects with the run's error as a VisionError). */
  async waitForRun(jobId, options = {}) {
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
  async submitWithin(file, params, options, signal, started) {
    const progress = (event) => options.onProgress?.({ ...event, elapsedMs: Date.now() - started });
    let uploadId;
    if (isUploadRef(file)) {
      uploadId = file.uploadId;
    } else {
      const { bytes, fileName } = await readInput(file, params.fileName);
      const presigned = await this.presign({ fileName, contentLength: bytes.byteLength }, { signal });
      progress({ stage: "uploading", uploadedBytes: 0, totalBytes: bytes.byteLength });
      await this.upload(presigned, bytes, { signal });
      progress({ stage: "uploading", uploadedBytes: bytes.byteLength, totalBytes: bytes.byteLength });
      uploadId = presigned.uploadId;
    }
    const body = { uploadId, prompt: params.prompt };
    if (params.outputFormat !== void 0) body.outputFormat = params.outputFormat;
    if (params.schemaId !== void 0) body.schemaId = params.schemaId;
    if (params.schema !== void 0) body.schema = params.schema;
    if (params.split !== void 0) body.split = params.split;
    if (params.schemaIds !== void 0) body.schemaIds = params.schemaIds;
    if (params.workflow !== void 0) body.workflow = params.workflow;
    if (params.metadata !== void 0) body.metadata = params.metadata;
    if (params.maxCostUsd !== void 0) body.maxCostUsd = params.maxCostUsd;
    if (params.confirmCost !== void 0) body.confirmCost = params.confirmCost;
    const idempotencyKey = params.idempotencyKey ?? randomUUID();
    const create = (input) => this.createRun(input, { idempotencyKey, signal }).catch((error) => {
      if (!outcomeUnknown(error, signal)) throw error;
      const confirmed = input.confirmCost === true && params.confirmCost !== true ? { confirmCost: true } : {};
      throw withDetails(error, { uploadId, idempotencyKey, ...confirmed });
    });
    let created;
    try {
      created = await create(body);
    } catch (error) {
      if (!(error instanceof VisionError) || error.code !== "COST_CONFIRMATION_REQUIRED" || options.confirmCost === void 0) {
        throw error;
      }
      const { estimatedCostUsd, thresholdUsd } = error.details ?? {};
      const asked = { estimatedCostUsd: Number(estimatedCostUsd), thresholdUsd: Number(thresholdUsd), uploadId };
      if (!await options.confirmCost(asked)) throw error;
      created = await create({ ...body, confirmCost: true });
    }
    progress({ stage: "queued", jobId: created.jobId });
    return created;
  }
  async pollUntilFinal(jobId, signal, onProgress, started) {
    let last;
    const progress = (stage, pages) => {
      const key = JSON.stringify([stage, pages?.pagesDone, pages?.pagesTotal, pages?.stage]);
      if (key === last) return;
      last = key;
      onProgress?.({ stage, jobId, elapsedMs: Date.now() - started, ...pages ? { progress: pages } : {} });
    };
    const random = this.retry.random ?? Math.random;
    const wait = this.retry.sleep ?? sleep;
    let failingSince;
    for (let attempt = 0; ; attempt++) {
      let run;
      try {
        run = await this.getRun(jobId, { signal });
        failingSince = void 0;
      } catch (error) {
        if (!(error instanceof VisionError) || !error.retryable || error.code === "ABORTED") throw error;
        failingSince ??= Date.now();
        if (Date.now() - failingSince >= this.poll.maxErrorMs) throw error;
        await wait(backoffDelay(attempt, this.poll.initialDelayMs, this.poll.maxDelayMs, random), signal);
        continue;
      }
      if (run.status === "completed") {
        progress("completed");
        return run;
      }
      if (run.status === "failed") {
        throw new VisionError({
          code: run.error.code,
          message: run.error.message,
          status: run.error.status,
          retryable: run.error.retryable,
          ...run.error.details ? { details: run.error.details } : {},
          ...run.error.requestId ? { requestId: run.error.requestId } : {},
          run
        });
      }
      progress(run.stage === "processing" ? "processing" : "queued", run.progress);
      const delay = Math.max(50, backoffDelay(attempt, this.poll.initialDelayMs, this.poll.maxDelayMs, random));
      await wait(delay, signal);
    }
  }
  // ---------- plumbing ----------
  deadline(options) {
    const signals = [];
    if (options.signal) signals.push(options.signal);
    let timer;
    const timeout = new AbortController();
    if (options.timeoutMs !== void 0) {
      timer = setTimeout(
        () => timeout.abort(new DOMException(`timed out after ${options.timeoutMs} ms`, "TimeoutError")),
        options.timeoutMs
      );
      signals.push(timeout.signal);
    }
    const signal = signals.length === 0 ? void 0 : signals.length === 1 ? signals[0] : AbortSignal.any(signals);
    return { signal, cleanup: () => timer !== void 0 && clearTimeout(timer) };
  }
  normalizeAbort(error, signal, options, jobId) {
    if (error instanceof VisionError && error.code !== "ABORTED") return error;
    if (!isAbort(error, signal)) return error;
    const timedOut = options.signal?.aborted !== true && signal?.aborted === true;
    return new VisionError({
      code: "ABORTED",
      message: timedOut ? `timed out after ${options.timeoutMs} ms${jobId ? ` (run ${jobId} continues on the service)` : ""}` : `aborted${jobId ? ` (run ${jobId} continues on the service)` : ""}`,
      status: 0,
      retryable: timedOut,
      details: { reason: timedOut ? "timeout" : "aborted", ...jobId ? { jobId } : {} },
      ...jobId ? { jobId } : {},
      cause: error instanceof VisionError ? error.cause : error
    });
  }
  async request(spec) {
    const response = await this.send(spec);
    const text = await response.text().catch((cause) => {
      if (spec.signal?.aborted) throw abortError(spec.signal.reason);
      throw new VisionError({
        code: "NETWORK_ERROR",
        message: `${spec.method} ${spec.path}: the response broke off (${cause?.message ?? String(cause)})`,
        status: 0,
        retryable: true,
        cause
      });
    });
    if (text === "") return {};
    try {
      return JSON.parse(text);
    } catch (cause) {
      throw new VisionError({
        code: "HTTP_ERROR",
        message: `${spec.method} ${spec.path}: response is not JSON`,
        status: response.status,
        retryable: false,
        requestId: response.headers.get("x-request-id") ?? void 0,
        cause
      });
    }
  }
  /** One call with retries; resolves with an OK response, or throws a VisionError. */
  async send(spec) {
    const url = new URL(spec.url ?? `${this.baseUrl}${spec.path}`);
    for (const [k, v] of Object.entries(spec.query ?? {})) if (v !== void 0) url.searchParams.set(k, String(v));
    const headers = {
      // The presigned PUT gets only the headers it was signed with (and the user agent).
      ...spec.auth === false ? {} : { accept: "application/json" },
      "user-agent": this.userAgent,
      ...spec.headers
    };
    if (spec.auth !== false) headers["x-api-key"] = this.apiKey;
    let body;
    if (spec.rawBody !== void 0) body = new Blob([spec.rawBody]);
    else if (spec.body !== void 0) {
      body = JSON.stringify(spec.body);
      headers["content-type"] = "application/json";
    }
    const random = this.retry.random ?? Math.random;
    const wait = this.retry.sleep ?? sleep;
    const pause = (ms) => wait(ms, spec.signal).catch((reason) => Promise.reject(abortError(reason)));
    const attemptTimeoutMs = spec.url === void 0 ? this.retry.requestTimeoutMs : void 0;
    for (let attempt = 0; ; attempt++) {
      if (spec.signal?.aborted) throw abortError(spec.signal.reason);
      let response;
      const attemptTimer = attemptTimeoutMs !== void 0 ? AbortSignal.timeout(attemptTimeoutMs) : void 0;
      const signal = attemptTimer && spec.signal ? AbortSignal.any([spec.signal, attemptTimer]) : attemptTimer ?? spec.signal;
      try {
        response = await this.fetchImpl(url, {
          method: spec.method,
          headers,
          ...body !== void 0 ? { body } : {},
          ...signal ? { signal } : {},
          // The key must never reach another host: a redirect is answered as an error, not followed.
          ...spec.auth !== false ? { redirect: "manual" } : {}
        });
      } catch (cause) {
        const timedOut = attemptTimer?.aborted === true && spec.signal?.aborted !== true;
        if (!timedOut && isAbort(cause, spec.signal)) throw abortError(spec.signal?.reason ?? cause);
        if (spec.idempotent && attempt < this.retry.retries) {
          await pause(backoffDelay(attempt, this.retry.baseDelayMs, this.retry.maxDelayMs, random));
          continue;
        }
        const inner = cause?.cause;
        const detail = typeof inner?.code === "string" ? inner.code : inner?.message;
        const reason = timedOut ? `no response within ${attemptTimeoutMs} ms` : `${cause?.message ?? String(cause)}${typeof detail === "string" && detail !== "" ? ` (${detail})` : ""}`;
        throw new VisionError({
          code: "NETWORK_ERROR",
          message: `${spec.method} ${url.origin}${url.pathname}: ${reason}`,
          status: 0,
          retryable: true,
          // The system's code (ECONNREFUSED, ENOTFOUND, …) for callers that explain it.
          ...typeof inner?.code === "string" ? { details: { cause: inner.code } } : {},
          cause
        });
      }
      if (response.ok) return response;
      if (response.type === "opaqueredirect" || response.status >= 300 && response.status < 400) {
        await response.arrayBuffer().catch(() => void 0);
        throw new VisionError({
          code: "HTTP_ERROR",
          message: `${spec.method} ${spec.path} was redirected${response.headers.get("location") ? ` to ${response.headers.get("location")}` : ""}; not followed (the API key is sent to the base URL only)`,
          status: response.status,
          retryable: false,
          ...response.headers.get("x-request-id") ? { requestId: response.headers.get("x-request-id") ?? "" } : {}
        });
      }
      const status = response.status;
      const always = status === 429 || status === 503;
      const retryAfter = always ? parseRetryAfter(response.headers.get("retry-after")) : void 0;
      const tooLong = retryAfter !== void 0 && retryAfter > this.retry.maxRetryAfterMs;
      const retry = (always || spec.idempotent && status >= 500) && attempt < this.retry.retries && !tooLong;
      if (retry) {
        await response.arrayBuffer().catch(() => void 0);
        const delay = retryAfter ?? backoffDelay(attempt, this.retry.baseDelayMs, this.retry.maxDelayMs, random);
        await pause(delay);
        continue;
      }
      const error = await errorFromResponse(response, spec);
      throw retryAfter !== void 0 ? withDetails(error, { retryAfterMs: retryAfter }) : error;
    }
  }
};
async function errorFromResponse(response, spec) {
  const requestId = response.headers.get("x-request-id") ?? void 0;
  const text = await response.text().catch(() => "");
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = void 0;
  }
  const err = parsed?.error;
  if (err && typeof err.code === "string") {
    return new VisionError({
      code: err.code,
      message: err.message ?? `HTTP ${response.status}`,
      status: typeof err.status === "number" ? err.status : response.status,
      retryable: typeof err.retryable === "boolean" ? err.retryable : response.status >= 500 || response.status === 429,
      ...err.details ? { details: err.details } : {},
      ...err.requestId ?? requestId ? { requestId: err.requestId ?? requestId } : {}
    });
  }
  return new VisionError({
    code: "HTTP_ERROR",
    message: `${spec.method} ${spec.url ? "upload URL" : spec.path} answered ${response.status}${text ? `: ${text.slice(0, 200)}` : ""}`,
    status: response.status,
    retryable: response.status >= 500 || response.status === 429,
    ...requestId ? { requestId } : {}
  });
}
async function readInput(file, fileName) {
  let bytes;
  let name = fileName;
  if (typeof file === "string") {
    try {
      bytes = new Uint8Array(await readFile(file));
    } catch (cause) {
      const code = cause.code;
      const why = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "a directory" : cause.message;
      throw new VisionError({
        code: "INVALID_ARGUMENT",
        message: `cannot read ${file}: ${why}`,
        status: 0,
        retryable: false,
        cause
      });
    }
    name ??= basename(file);
  } else if (file instanceof Uint8Array) {
    bytes = file;
  } else if (typeof Blob !== "undefined" && file instanceof Blob) {
    bytes = new Uint8Array(await file.arrayBuffer());
    const named = file.name;
    if (typeof named === "string" && named !== "") name ??= named;
  } else {
    throw new VisionError({
      code: "INVALID_ARGUMENT",
      message: "file must be a path, a Uint8Array or a Blob",
      status: 0,
      retryable: false
    });
  }
  if (bytes.byteLength === 0) {
    throw new VisionError({ code: "INVALID_ARGUMENT", message: "the file is empty", status: 0, retryable: false });
  }
  name ??= sniffFileName(bytes);
  if (!name) {
    throw new VisionError({
      code: "INVALID_ARGUMENT",
      message: "cannot tell the file type: pass fileName (with its extension)",
      status: 0,
      retryable: false
    });
  }
  return { bytes, fileName: name };
}
export {
  SDK_VERSION,
  VisionClient,
  VisionError,
  WebhookSignatureError,
  backoffDelay,
  isSchemaRun,
  isSplitResult,
  parseRetryAfter,
  sleep,
  sniffFileName,
  verifyWebhook
};
