/**
 * One local HTTP server (test/support/fake-server.ts) standing in for the four providers' batch APIs, in each API's
 * wire format as its reference documents it, for the batch lane (issue 31): submit, status polling, results, partial
 * failures and expiry, each configurable. Beside bench/provider-fakes.ts (the synchronous APIs).
 * Over 400 lines: four wire protocols behind one server, so a bench or test starts one fake for every batch API.
 *
 * - OpenAI Batch: POST /v1/files (multipart, purpose "batch", a JSONL of {custom_id, method, url, body}), POST
 *   /v1/batches, GET /v1/batches/{id} (validating → in_progress → completed | expired), GET /v1/files/{id}/content
 *   (output JSONL {id, custom_id, response: {status_code, request_id, body}, error}; failures in the error file).
 * - Anthropic Message Batches: POST /v1/messages/batches ({requests: [{custom_id, params}]}, custom_id unique and of
 *   [a-zA-Z0-9_-]{1,64}, else 400), GET
 *   /v1/messages/batches/{id} (in_progress → ended, request_counts, results_url), GET …/results (JSONL {custom_id,
 *   result: {type: succeeded | errored | expired, …}}).
 * - Gemini Batch Mode: POST /v1beta/models/{model}:batchGenerateContent (inline requests {request, metadata: {key}},
 *   or `inputConfig.fileName`: a JSONL of {key, request} uploaded through the Files API's resumable protocol at POST
 *   /upload/v1beta/files), GET /v1beta/batches/{id} (an operation: metadata.state BATCH_STATE_PENDING → RUNNING →
 *   SUCCEEDED | EXPIRED; an inline batch's answers in metadata.output.inlinedResponses.inlinedResponses [{response |
 *   error, metadata}], a file batch's in metadata.output.responsesFile, a JSONL of {key, response | error} served at
 *   GET /download/v1beta/files/{id}:download?alt=media).
 * - Bedrock batch inference (REST, the control plane `bedrock`, which the SDK reaches through AWS_ENDPOINT_URL_BEDROCK):
 *   POST /model-invocation-job (S3 input JSONL of {recordId, modelInput}; the reference's patterns for the job name,
 *   role ARN and clientRequestToken; the same token answers the same job), GET /model-invocation-job/{jobArn}
 *   (Submitted → InProgress → Completed | PartiallyCompleted | Expired), POST …/{jobArn}/stop (→ Stopped, the records
 *   done so far kept), output `<outputUri><jobId>/<input file>.out` lines {recordId, modelInput, modelOutput | error}
 *   and `manifest.json.out`, read and written through the `storage` the test gives (a Map, or the local stack's S3:
 *   ./batch-fakes-s3.ts); a job of fewer than `bedrockMinRecords` records (100, Bedrock's default quota) is refused
 *   (ValidationException).
 *
 * What each item answers is the test's `outcome` callback: the answer (wrapped in the provider's response: a tool call
 * when the request defined tools, else text) with token usage, or an error. A batch answers "in progress" to
 * `pollsBeforeEnd` status reads, then ends; with `expire`, it ends expired after `doneBeforeExpiry` items.
 * Over 400 lines: four providers' batch wire formats in one server, so that their lifecycles (polling, partial
 * failure, expiry) share one state machine and stay alike, as bench/provider-fakes.ts does for the synchronous APIs.
 */
import { randomUUID } from 'node:crypto';
import {
  type FakeServer,
  type RecordedRequest,
  type ScriptedResponse,
  startFakeServer,
} from '../test/support/fake-server.js';

export type BatchProvider = 'openai' | 'anthropic' | 'gemini' | 'bedrock';

/** One request of a submitted batch, as the fake received it. */
export interface BatchItem {
  provider: BatchProvider;
  batchId: string;
  /** custom_id (OpenAI, Anthropic), metadata.key (Gemini), recordId (Bedrock). */
  customId: string;
  /** The request body the item carries (Responses, Messages, GenerateContent or the model's InvokeModel body). */
  body: Record<string, unknown>;
}

export type ItemOutcome =
  | { kind: 'ok'; answer: unknown; usage?: { input: number; output: number } }
  | { kind: 'error'; status: number; message: string };

export interface BatchFakeBehaviour {
  outcome: (item: BatchItem) => ItemOutcome;
  /** Status reads answered "in progress" before a batch ends (default 1). */
  pollsBeforeEnd: number;
  /** The batch ends expired: the provider's window passed. */
  expire: boolean;
  /** With `expire`: how many items (in order) were done before it expired (default 0). */
  doneBeforeExpiry: number;
  /**
   * Bedrock refuses a job of fewer records (ValidationException), as its default quota "minimum number of records
   * per batch inference job" does (default 100, https://docs.aws.amazon.com/general/latest/gr/bedrock.html).
   */
  bedrockMinRecords: number;
}

/** Where Bedrock reads its input and writes its output (s3:// URIs). */
export interface ObjectStorage {
  read(uri: string): Promise<string>;
  write(uri: string, body: string): Promise<void>;
}

/** A Map-backed ObjectStorage for unit tests. */
export function memoryStorage(): ObjectStorage & { objects: Map<string, string> } {
  const objects = new Map<string, string>();
  return {
    objects,
    read: async (uri) => {
      const body = objects.get(uri);
      if (body === undefined) throw new Error(`no object at ${uri}`);
      return body;
    },
    write: async (uri, body) => {
      objects.set(uri, body);
    },
  };
}

export interface BatchFakes {
  url: string;
  /** Every batch submitted, in order, with its items (to check that no request is sent twice). */
  batches: Array<{ provider: BatchProvider; batchId: string; items: BatchItem[] }>;
  requests: RecordedRequest[];
  configure(behaviour: Partial<BatchFakeBehaviour>): void;
  close(): Promise<void>;
}

interface Batch {
  provider: BatchProvider;
  id: string;
  items: BatchItem[];
  polls: number;
  createdAt: Date;
  /** Set once the batch ended: each item's outcome, or `expired` for an item not done in time. */
  results?: Array<ItemOutcome | 'expired'>;
  /** Bedrock: where it writes, its model, and whether StopModelInvocationJob ended it. */
  outputUri?: string;
  inputFile?: string;
  model?: string;
  stopped?: boolean;
  /** Gemini: its input came as a file, so its answers go out as one (`responsesFile`). */
  geminiFileOutput?: boolean;
  /** OpenAI: its input, output and error files. */
  inputFileId?: string;
}

const DEFAULTS: BatchFakeBehaviour = {
  outcome: () => ({ kind: 'ok', answer: { ok: true } }),
  pollsBeforeEnd: 1,
  expire: false,
  doneBeforeExpiry: 0,
  bedrockMinRecords: 100,
};

const seconds = (d: Date) => Math.floor(d.getTime() / 1000);
const jsonl = (lines: unknown[]) => lines.map((l) => JSON.stringify(l)).join('\n') + (lines.length ? '\n' : '');
const usageOf = (item: BatchItem, outcome: Extract<ItemOutcome, { kind: 'ok' }>) =>
  outcome.usage ?? {
    input: Math.ceil(JSON.stringify(item.body).length / 4),
    output: Math.ceil(JSON.stringify(outcome.answer).length / 3),
  };
const hasTools = (body: Record<string, unknown>) => Array.isArray(body.tools) && body.tools.length > 0;
const toolName = (body: Record<string, unknown>): string => {
  const tool = (body.tools as Array<{ name?: string; toolSpec?: { name?: string } }>)[0];
  return tool?.name ?? tool?.toolSpec?.name ?? 'record_result';
};
const text = (answer: unknown) => (typeof answer === 'string' ? answer : JSON.stringify(answer));

// ---------- each provider's successful response body ----------

function openaiResponse(item: BatchItem, outcome: Extract<ItemOutcome, { kind: 'ok' }>) {
  const usage = usageOf(item, outcome);
  return {
    id: `resp_${randomUUID().replaceAll('-', '')}`,
    object: 'response',
    status: 'completed',
    model: item.body.model,
    output: [
      {
        type: 'message',
        id: `msg_${randomUUID().replaceAll('-', '')}`,
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: text(outcome.answer), annotations: [] }],
      },
    ],
    usage: {
      input_tokens: usage.input,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: usage.output,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: usage.input + usage.output,
    },
  };
}

/** The error type Anthropic's reference gives for an HTTP status. */
function anthropicErrorType(status: number): string {
  const types: Record<number, string> = {
    400: 'invalid_request_error',
    401: 'authentication_error',
    403: 'permission_error',
    404: 'not_found_error',
    413: 'request_too_large',
    429: 'rate_limit_error',
    529: 'overloaded_error',
  };
  return types[status] ?? 'api_error';
}

function anthropicMessage(item: BatchItem, outcome: Extract<ItemOutcome, { kind: 'ok' }>) {
  const usage = usageOf(item, outcome);
  const tool = hasTools(item.body);
  return {
    id: `msg_${randomUUID().replaceAll('-', '')}`,
    type: 'message',
    role: 'assistant',
    model: item.body.model,
    content: tool
      ? [
          {
            type: 'tool_use',
            id: `toolu_${randomUUID().slice(0, 8)}`,
            name: toolName(item.body),
            input: outcome.answer,
          },
        ]
      : [{ type: 'text', text: text(outcome.answer) }],
    stop_reason: tool ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: {
      input_tokens: usage.input,
      output_tokens: usage.output,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    },
  };
}

function geminiResponse(item: BatchItem, outcome: Extract<ItemOutcome, { kind: 'ok' }>) {
  const usage = usageOf(item, outcome);
  return {
    candidates: [
      { content: { role: 'model', parts: [{ text: text(outcome.answer) }] }, finishReason: 'STOP', index: 0 },
    ],
    usageMetadata: {
      promptTokenCount: usage.input,
      candidatesTokenCount: usage.output,
      totalTokenCount: usage.input + usage.output,
    },
    modelVersion: String(item.body.model ?? ''),
  };
}

/** Bedrock batch records use the model's InvokeModel format; Nova's: {output: {message}, usage, stopReason}. */
function bedrockOutput(item: BatchItem, outcome: Extract<ItemOutcome, { kind: 'ok' }>) {
  const usage = usageOf(item, outcome);
  const tool = hasTools(item.body) || (item.body.toolConfig as { tools?: unknown[] } | undefined)?.tools?.length;
  return {
    output: {
      message: {
        role: 'assistant',
        content: tool
          ? [
              {
                toolUse: {
                  toolUseId: `tooluse_${randomUUID().slice(0, 8)}`,
                  name: 'record_result',
                  input: outcome.answer,
                },
              },
            ]
          : [{ text: text(outcome.answer) }],
      },
    },
    stopReason: tool ? 'tool_use' : 'end_turn',
    usage: { inputTokens: usage.input, outputTokens: usage.output, totalTokens: usage.input + usage.output },
  };
}

/** Bedrock's answer to a job under its minimum of records (a 400 ValidationException), or undefined. */
function bedrockTooFewRecords(records: number, minimum: number): ScriptedResponse | undefined {
  if (records >= minimum) return undefined;
  return {
    status: 400,
    headers: { 'x-amzn-errortype': 'ValidationException' },
    json: { message: `The job has ${records} records; the minimum number of records per job is ${minimum}.` },
  };
}

// ---------- the server ----------

/** Starts the batch fakes; Bedrock reads and writes through `storage` (default: in memory). */
export async function startBatchFakes(
  options: {
    storage?: ObjectStorage;
    behaviour?: Partial<BatchFakeBehaviour>;
    /** Answers every other path (a provider's synchronous API on the same base URL); default 404. */
    otherwise?: (req: RecordedRequest) => ScriptedResponse | Promise<ScriptedResponse>;
  } = {},
): Promise<BatchFakes> {
  let behaviour: BatchFakeBehaviour = { ...DEFAULTS, ...options.behaviour };
  const storage = options.storage ?? memoryStorage();
  const files = new Map<string, string>();
  const batches = new Map<string, Batch>();
  const submitted: BatchFakes['batches'] = [];

  const submit = (provider: BatchProvider, id: string, items: BatchItem[], extra: Partial<Batch> = {}): Batch => {
    const batch: Batch = { provider, id, items, polls: 0, createdAt: new Date(), ...extra };
    batches.set(id, batch);
    submitted.push({ provider, batchId: id, items });
    return batch;
  };

  /** Ends a batch: the first `done` items get their outcome, the others are expired (never processed). */
  const endBatch = async (batch: Batch, done: number): Promise<void> => {
    batch.results = batch.items.map((item, index) => (index >= done ? 'expired' : behaviour.outcome(item)));
    if (batch.provider === 'bedrock') await writeBedrockOutput(batch);
  };
  /** Counts a status read; ends the batch after `pollsBeforeEnd` of them. */
  const poll = async (batch: Batch): Promise<boolean> => {
    if (batch.results) return true;
    batch.polls += 1;
    if (batch.polls <= behaviour.pollsBeforeEnd) return false;
    await endBatch(batch, behaviour.expire ? behaviour.doneBeforeExpiry : batch.items.length);
    return true;
  };
  /** A job identifier as GetModelInvocationJob takes it (its ARN, URL-encoded, or its id) → its id. */
  const jobIdOf = (identifier: string) => {
    const decoded = decodeURIComponent(identifier);
    return decoded.slice(decoded.lastIndexOf('/') + 1);
  };
  const expired = (batch: Batch) => batch.results?.some((r) => r === 'expired') ?? false;
  const counts = (batch: Batch) => ({
    ok: batch.results?.filter((r) => r !== 'expired' && r.kind === 'ok').length ?? 0,
    failed: batch.results?.filter((r) => r !== 'expired' && r.kind === 'error').length ?? 0,
    expired: batch.results?.filter((r) => r === 'expired').length ?? 0,
  });

  async function writeBedrockOutput(batch: Batch): Promise<void> {
    const lines = batch.items.map((item, i) => {
      const result = batch.results?.[i];
      const base = { recordId: item.customId, modelInput: item.body };
      if (result === undefined || result === 'expired') return null;
      return result.kind === 'ok'
        ? { ...base, modelOutput: bedrockOutput(item, result) }
        : { ...base, error: { errorCode: result.status, errorMessage: result.message } };
    });
    const out = `${batch.outputUri}${batch.id}/${batch.inputFile}.out`;
    await storage.write(out, jsonl(lines.filter((l) => l !== null)));
    const c = counts(batch);
    await storage.write(
      `${batch.outputUri}${batch.id}/manifest.json.out`,
      JSON.stringify({
        totalRecordCount: batch.items.length,
        processedRecordCount: c.ok + c.failed,
        successRecordCount: c.ok,
        errorRecordCount: c.failed,
      }),
    );
  }

  const notFound = (what: string): ScriptedResponse => ({
    status: 404,
    json: { error: { message: `${what} not found` } },
  });

  // ---------- OpenAI ----------
  async function openai(req: RecordedRequest, path: string): Promise<ScriptedResponse> {
    if (req.method === 'POST' && path === '/v1/files') {
      const form = await new Request('http://fake/', {
        method: 'POST',
        headers: { 'content-type': req.headers['content-type'] ?? '' },
        body: new Uint8Array(req.rawBody),
      }).formData();
      const file = form.get('file');
      if (form.get('purpose') !== 'batch' || !(file instanceof Blob)) {
        return { status: 400, json: { error: { message: 'purpose must be batch, with a file' } } };
      }
      const id = `file-${randomUUID().replaceAll('-', '')}`;
      const content = await file.text();
      files.set(id, content);
      return {
        json: {
          id,
          object: 'file',
          bytes: Buffer.byteLength(content),
          created_at: seconds(new Date()),
          filename: (file as File).name ?? 'batch.jsonl',
          purpose: 'batch',
        },
      };
    }
    if (req.method === 'POST' && path === '/v1/batches') {
      const body = req.body as { input_file_id?: string; endpoint?: string; completion_window?: string };
      const input = body.input_file_id ? files.get(body.input_file_id) : undefined;
      if (input === undefined) return { status: 400, json: { error: { message: 'input_file_id not found' } } };
      if (body.completion_window !== '24h') return { status: 400, json: { error: { message: 'completion_window' } } };
      const id = `batch_${randomUUID().replaceAll('-', '')}`;
      const lines = input
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as { custom_id: string; url: string; body: Record<string, unknown> });
      const batch = submit(
        'openai',
        id,
        lines.map((l) => ({ provider: 'openai', batchId: id, customId: l.custom_id, body: l.body })),
        { inputFileId: body.input_file_id },
      );
      return { json: openaiBatch(batch, String(body.endpoint)) };
    }
    const status = /^\/v1\/batches\/([^/]+)$/.exec(path);
    if (req.method === 'GET' && status) {
      const batch = batches.get(status[1] ?? '');
      if (!batch) return notFound('batch');
      await poll(batch);
      return { json: openaiBatch(batch, '/v1/responses') };
    }
    const content = /^\/v1\/files\/([^/]+)\/content$/.exec(path);
    if (req.method === 'GET' && content) {
      const body = files.get(content[1] ?? '');
      return body === undefined ? notFound('file') : { headers: { 'content-type': 'application/jsonl' }, raw: body };
    }
    return notFound(path);
  }

  function openaiBatch(batch: Batch, endpoint: string) {
    const ended = batch.results !== undefined;
    const c = counts(batch);
    let outputFileId: string | null = null;
    let errorFileId: string | null = null;
    if (ended) {
      const ok: unknown[] = [];
      const failed: unknown[] = [];
      batch.items.forEach((item, i) => {
        const result = batch.results?.[i];
        const id = `batch_req_${i}`;
        if (result === 'expired') {
          failed.push({
            id,
            custom_id: item.customId,
            response: null,
            error: {
              code: 'batch_expired',
              message: 'This request could not be executed before the completion window expired.',
            },
          });
        } else if (result?.kind === 'ok') {
          ok.push({
            id,
            custom_id: item.customId,
            response: { status_code: 200, request_id: `req_${i}`, body: openaiResponse(item, result) },
            error: null,
          });
        } else if (result) {
          failed.push({
            id,
            custom_id: item.customId,
            response: {
              status_code: result.status,
              request_id: `req_${i}`,
              body: { error: { message: result.message, type: 'server_error' } },
            },
            error: null,
          });
        }
      });
      outputFileId = `file-out-${batch.id}`;
      files.set(outputFileId, jsonl(ok));
      if (failed.length > 0) {
        errorFileId = `file-err-${batch.id}`;
        files.set(errorFileId, jsonl(failed));
      }
    }
    return {
      id: batch.id,
      object: 'batch',
      endpoint,
      errors: null,
      input_file_id: batch.inputFileId,
      completion_window: '24h',
      status: !ended ? (batch.polls === 0 ? 'validating' : 'in_progress') : expired(batch) ? 'expired' : 'completed',
      output_file_id: outputFileId,
      error_file_id: errorFileId,
      created_at: seconds(batch.createdAt),
      expires_at: seconds(batch.createdAt) + 86_400,
      request_counts: { total: batch.items.length, completed: c.ok, failed: c.failed + c.expired },
      metadata: null,
    };
  }

  // ---------- Anthropic ----------
  async function anthropic(req: RecordedRequest, path: string, base: string): Promise<ScriptedResponse> {
    if (req.method === 'POST' && path === '/v1/messages/batches') {
      const body = req.body as { requests?: Array<{ custom_id: string; params: Record<string, unknown> }> };
      if (!Array.isArray(body?.requests) || body.requests.length === 0) {
        return { status: 400, json: { type: 'error', error: { type: 'invalid_request_error', message: 'requests' } } };
      }
      // The reference: custom_id matches ^[a-zA-Z0-9_-]{1,64}$ and is unique within the batch.
      const ids = body.requests.map((r) => r.custom_id);
      const bad = ids.find((id) => typeof id !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(id));
      if (bad !== undefined || new Set(ids).size !== ids.length) {
        const message = bad !== undefined ? `custom_id ${JSON.stringify(bad)} is invalid` : 'custom_id must be unique';
        return { status: 400, json: { type: 'error', error: { type: 'invalid_request_error', message } } };
      }
      const id = `msgbatch_${randomUUID().replaceAll('-', '')}`;
      const batch = submit(
        'anthropic',
        id,
        body.requests.map((r) => ({ provider: 'anthropic', batchId: id, customId: r.custom_id, body: r.params })),
      );
      return { json: anthropicBatch(batch, base) };
    }
    const status = /^\/v1\/messages\/batches\/([^/]+)$/.exec(path);
    if (req.method === 'GET' && status) {
      const batch = batches.get(status[1] ?? '');
      if (!batch) return notFound('batch');
      await poll(batch);
      return { json: anthropicBatch(batch, base) };
    }
    const results = /^\/v1\/messages\/batches\/([^/]+)\/results$/.exec(path);
    if (req.method === 'GET' && results) {
      const batch = batches.get(results[1] ?? '');
      if (!batch?.results) return notFound('results');
      const lines = batch.items.map((item, i) => {
        const result = batch.results?.[i];
        if (result === 'expired' || result === undefined)
          return { custom_id: item.customId, result: { type: 'expired' } };
        return result.kind === 'ok'
          ? { custom_id: item.customId, result: { type: 'succeeded', message: anthropicMessage(item, result) } }
          : {
              custom_id: item.customId,
              result: {
                type: 'errored',
                error: { type: 'error', error: { type: anthropicErrorType(result.status), message: result.message } },
              },
            };
      });
      // "Results in the file are not guaranteed to be in the same order as requests": here, never.
      return { headers: { 'content-type': 'application/binary' }, raw: jsonl(lines.reverse()) };
    }
    return notFound(path);
  }

  function anthropicBatch(batch: Batch, base: string) {
    const ended = batch.results !== undefined;
    const c = counts(batch);
    return {
      id: batch.id,
      type: 'message_batch',
      processing_status: ended ? 'ended' : 'in_progress',
      request_counts: {
        processing: ended ? 0 : batch.items.length,
        succeeded: c.ok,
        errored: c.failed,
        canceled: 0,
        expired: c.expired,
      },
      ended_at: ended ? new Date().toISOString() : null,
      created_at: batch.createdAt.toISOString(),
      expires_at: new Date(batch.createdAt.getTime() + 86_400_000).toISOString(),
      archived_at: null,
      cancel_initiated_at: null,
      results_url: ended ? `${base}/v1/messages/batches/${batch.id}/results` : null,
    };
  }

  // ---------- Gemini ----------
  const geminiError = (status: number, code: string, message: string): ScriptedResponse => ({
    status,
    json: { error: { code: status, message, status: code } },
  });
  /** Upload sessions of the Files API's resumable protocol: upload id → the file's display name. */
  const uploads = new Map<string, string>();

  /** The Files API: POST /upload/v1beta/files (start, then `upload, finalize`), GET …/files/{id}:download?alt=media. */
  async function geminiFiles(req: RecordedRequest, path: string, base: string): Promise<ScriptedResponse> {
    const command = req.headers['x-goog-upload-command'];
    const uploadId = new URL(req.path, 'http://fake').searchParams.get('upload_id');
    if (req.method === 'POST' && path === '/upload/v1beta/files' && uploadId === null) {
      if (req.headers['x-goog-upload-protocol'] !== 'resumable' || command !== 'start') {
        return geminiError(400, 'INVALID_ARGUMENT', 'a resumable upload starts with X-Goog-Upload-Command: start');
      }
      const id = randomUUID().replaceAll('-', '');
      uploads.set(id, String((req.body as { file?: { displayName?: string } })?.file?.displayName ?? ''));
      return {
        headers: { 'x-goog-upload-url': `${base}/upload/v1beta/files?upload_id=${id}&upload_protocol=resumable` },
        json: {},
      };
    }
    if (req.method === 'POST' && path === '/upload/v1beta/files' && uploadId !== null) {
      if (!uploads.has(uploadId)) return geminiError(404, 'NOT_FOUND', 'no such upload');
      if (command !== 'upload, finalize' || req.headers['x-goog-upload-offset'] !== '0') {
        return geminiError(400, 'INVALID_ARGUMENT', 'the fake takes one chunk: upload, finalize at offset 0');
      }
      const name = `files/${randomUUID().replaceAll('-', '').slice(0, 12)}`;
      files.set(name, req.rawBody.toString('utf8'));
      uploads.delete(uploadId);
      return {
        headers: { 'x-goog-upload-status': 'final' },
        json: {
          file: {
            name,
            mimeType: 'application/jsonl',
            sizeBytes: String(req.rawBody.byteLength),
            state: 'ACTIVE',
            uri: `${base}/v1beta/${name}`,
          },
        },
      };
    }
    // The guide downloads from /download/v1beta/…, the SDK from /v1beta/…: both serve the file's bytes.
    const download = /^(?:\/download)?\/v1beta\/(files\/[^/:]+):download$/.exec(path);
    if (req.method === 'GET' && download) {
      const body = files.get(download[1] ?? '');
      return body === undefined ? geminiError(404, 'NOT_FOUND', 'file not found') : { raw: body };
    }
    return notFound(path);
  }

  async function gemini(req: RecordedRequest, path: string): Promise<ScriptedResponse> {
    const create = /^\/v1beta\/models\/([^/:]+):batchGenerateContent$/.exec(path);
    if (req.method === 'POST' && create) {
      type Line = { request?: Record<string, unknown>; metadata?: { key?: string }; key?: string };
      const body = req.body as {
        batch?: { displayName?: string; inputConfig?: { requests?: { requests?: Line[] }; fileName?: string } };
      };
      const input = body?.batch?.inputConfig;
      // The input is a union: inline requests or a file uploaded through the Files API, never both.
      const inline = input?.requests?.requests;
      const fromFile = input?.fileName;
      if ((inline === undefined) === (fromFile === undefined)) {
        return geminiError(400, 'INVALID_ARGUMENT', 'exactly one of inline requests or fileName');
      }
      let requests: Line[] | undefined = inline;
      if (fromFile !== undefined) {
        const content = files.get(fromFile);
        if (content === undefined) return geminiError(400, 'INVALID_ARGUMENT', `${fromFile} not found`);
        requests = content
          .split('\n')
          .filter((l) => l.trim() !== '')
          .map((l) => JSON.parse(l) as Line);
      }
      if (!Array.isArray(requests) || requests.length === 0) {
        return geminiError(400, 'INVALID_ARGUMENT', 'requests required');
      }
      const id = `batches/${randomUUID().replaceAll('-', '')}`;
      const model = `models/${create[1]}`;
      const batch = submit(
        'gemini',
        id,
        requests.map((r, i) => ({
          provider: 'gemini',
          batchId: id,
          customId: r.key ?? r.metadata?.key ?? String(i),
          body: { model, ...r.request },
        })),
        { geminiFileOutput: fromFile !== undefined },
      );
      return { json: geminiOperation(batch, model, body.batch?.displayName ?? '') };
    }
    const status = /^\/v1beta\/(batches\/[^/:]+)$/.exec(path);
    if (req.method === 'GET' && status) {
      const batch = batches.get(status[1] ?? '');
      if (!batch) return geminiError(404, 'NOT_FOUND', 'not found');
      await poll(batch);
      return { json: geminiOperation(batch, String(batch.items[0]?.body.model ?? ''), '') };
    }
    // Gemini's synchronous API shares the /v1beta/ prefix: it is the test's to answer.
    return options.otherwise ? options.otherwise(req) : notFound(path);
  }

  /** Each done item's answer: `{response | error}` with its key (inline: in metadata; a file line: beside it). */
  function geminiAnswers(batch: Batch): Array<Record<string, unknown>> {
    return batch.items.flatMap((item, i): Array<Record<string, unknown>> => {
      const result = batch.results?.[i];
      if (result === 'expired' || result === undefined) return [];
      const keyed = batch.geminiFileOutput ? { key: item.customId } : { metadata: { key: item.customId } };
      return result.kind === 'ok'
        ? [{ ...keyed, response: geminiResponse(item, result) }]
        : [{ ...keyed, error: { code: result.status, message: result.message, status: 'INTERNAL' } }];
    });
  }

  function geminiOperation(batch: Batch, model: string, displayName: string) {
    const ended = batch.results !== undefined;
    const state = !ended
      ? batch.polls === 0
        ? 'BATCH_STATE_PENDING'
        : 'BATCH_STATE_RUNNING'
      : expired(batch)
        ? 'BATCH_STATE_EXPIRED'
        : 'BATCH_STATE_SUCCEEDED';
    let output: Record<string, unknown> | undefined;
    if (ended && batch.geminiFileOutput) {
      const name = `files/batch-${batch.id.slice('batches/'.length, 'batches/'.length + 12)}`;
      files.set(name, jsonl(geminiAnswers(batch)));
      output = { responsesFile: name };
    } else if (ended) {
      output = { inlinedResponses: { inlinedResponses: geminiAnswers(batch) } };
    }
    const c = counts(batch);
    return {
      name: batch.id,
      metadata: {
        '@type': 'type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch',
        model,
        displayName,
        state,
        createTime: batch.createdAt.toISOString(),
        updateTime: new Date().toISOString(),
        ...(ended ? { endTime: new Date().toISOString() } : {}),
        batchStats: {
          requestCount: String(batch.items.length),
          successfulRequestCount: String(c.ok),
          failedRequestCount: String(c.failed),
          pendingRequestCount: String(ended ? c.expired : batch.items.length),
        },
        ...(output ? { output } : {}),
      },
      done: ended,
    };
  }

  // ---------- Bedrock ----------
  /** Jobs by clientRequestToken: the same token creates no second job (CreateModelInvocationJob is idempotent). */
  const bedrockTokens = new Map<string, string>();
  const bedrockArn = (jobId: string) => `arn:aws:bedrock:us-east-1:000000000000:model-invocation-job/${jobId}`;
  const bedrockError = (status: number, type: string, message: string): ScriptedResponse => ({
    status,
    headers: { 'x-amzn-errortype': type },
    json: { message },
  });

  async function bedrock(req: RecordedRequest, path: string): Promise<ScriptedResponse> {
    if (req.method === 'POST' && path === '/model-invocation-job') {
      const body = req.body as {
        jobName?: string;
        roleArn?: string;
        modelId?: string;
        clientRequestToken?: string;
        inputDataConfig?: { s3InputDataConfig?: { s3Uri?: string } };
        outputDataConfig?: { s3OutputDataConfig?: { s3Uri?: string } };
      };
      const inputUri = body?.inputDataConfig?.s3InputDataConfig?.s3Uri;
      const outputUri = body?.outputDataConfig?.s3OutputDataConfig?.s3Uri;
      if (!body?.jobName || !body.roleArn || !body.modelId || !inputUri || !outputUri) {
        return bedrockError(
          400,
          'ValidationException',
          'jobName, roleArn, modelId, input and output S3 URIs are required',
        );
      }
      // The reference's patterns for the job name and the service role.
      if (!/^[a-zA-Z0-9](-*[a-zA-Z0-9+\-.])*$/.test(body.jobName) || body.jobName.length > 63) {
        return bedrockError(400, 'ValidationException', 'jobName does not match its pattern');
      }
      if (!/^arn:aws(-[^:]+)?:iam::([0-9]{12})?:role\/.+$/.test(body.roleArn)) {
        return bedrockError(400, 'ValidationException', 'roleArn is not an IAM role ARN');
      }
      if (
        body.clientRequestToken !== undefined &&
        !/^[a-zA-Z0-9]{1,256}(-*[a-zA-Z0-9]){0,256}$/.test(body.clientRequestToken)
      ) {
        return bedrockError(400, 'ValidationException', 'clientRequestToken does not match its pattern');
      }
      const known = body.clientRequestToken ? bedrockTokens.get(body.clientRequestToken) : undefined;
      if (known !== undefined) return { json: { jobArn: bedrockArn(known) } };
      let input: string;
      try {
        input = await storage.read(inputUri);
      } catch {
        return bedrockError(400, 'ValidationException', 'the input S3 object cannot be read with the role');
      }
      const records = input
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as { recordId: string; modelInput: Record<string, unknown> });
      const refused = bedrockTooFewRecords(records.length, behaviour.bedrockMinRecords);
      if (refused) return refused;
      const jobId = randomUUID().replaceAll('-', '').slice(0, 12);
      if (body.clientRequestToken) bedrockTokens.set(body.clientRequestToken, jobId);
      submit(
        'bedrock',
        jobId,
        records.map((r) => ({ provider: 'bedrock', batchId: jobId, customId: r.recordId, body: r.modelInput })),
        {
          outputUri: outputUri.endsWith('/') ? outputUri : `${outputUri}/`,
          inputFile: inputUri.slice(inputUri.lastIndexOf('/') + 1),
          model: body.modelId,
        },
      );
      return { json: { jobArn: bedrockArn(jobId) } };
    }
    const stop = /^\/model-invocation-job\/(.+)\/stop$/.exec(path);
    if (req.method === 'POST' && stop) {
      const batch = batches.get(jobIdOf(stop[1] ?? ''));
      if (!batch) return bedrockError(404, 'ResourceNotFoundException', 'job not found');
      if (batch.results) return bedrockError(400, 'ValidationException', 'the job has already ended');
      // The records done so far (`doneBeforeExpiry`) keep their output; the others are never processed.
      batch.stopped = true;
      await endBatch(batch, behaviour.doneBeforeExpiry);
      return { json: {} };
    }
    const status = /^\/model-invocation-job\/(.+)$/.exec(path);
    if (req.method === 'GET' && status) {
      const jobId = jobIdOf(status[1] ?? '');
      const batch = batches.get(jobId);
      if (!batch) return bedrockError(404, 'ResourceNotFoundException', 'job not found');
      const ended = await poll(batch);
      const c = counts(batch);
      return {
        json: {
          jobArn: bedrockArn(jobId),
          jobName: `job-${jobId}`,
          modelId: batch.model ?? '',
          status: !ended
            ? batch.polls === 1
              ? 'Submitted'
              : 'InProgress'
            : batch.stopped
              ? 'Stopped'
              : expired(batch)
                ? 'Expired'
                : c.failed > 0
                  ? 'PartiallyCompleted'
                  : 'Completed',
          submitTime: batch.createdAt.toISOString(),
          ...(ended ? { endTime: new Date().toISOString() } : {}),
          jobExpirationTime: new Date(batch.createdAt.getTime() + 86_400_000).toISOString(),
          outputDataConfig: { s3OutputDataConfig: { s3Uri: batch.outputUri } },
        },
      };
    }
    return notFound(path);
  }

  let baseUrl = '';
  const server: FakeServer = await startFakeServer(async (req) => {
    const path = req.path.split('?')[0] ?? '';
    if (path.startsWith('/v1/messages/batches')) return anthropic(req, path, baseUrl);
    if (path.startsWith('/v1/batches') || path.startsWith('/v1/files')) return openai(req, path);
    if (path.startsWith('/upload/v1beta/') || /\/v1beta\/files\/[^/]+:download$/.test(path)) {
      return geminiFiles(req, path, baseUrl);
    }
    if (path.startsWith('/v1beta/')) return gemini(req, path);
    if (path.startsWith('/model-invocation-job')) return bedrock(req, path);
    return options.otherwise ? options.otherwise(req) : notFound(path);
  });
  baseUrl = server.url;

  return {
    url: server.url,
    batches: submitted,
    requests: server.requests,
    configure: (changes) => {
      behaviour = { ...behaviour, ...changes };
    },
    close: () => server.close(),
  };
}
