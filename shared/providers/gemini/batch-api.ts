/**
 * Gemini Batch Mode for the batcher (shared/batching/batcher.ts): POST /v1beta/models/{model}:batchGenerateContent,
 * then GET /v1beta/{batches/…} until the batch's `metadata.state` ends (BATCH_STATE_SUCCEEDED | FAILED | CANCELLED |
 * EXPIRED; the SDK calls them JOB_STATE_*); POST /v1beta/{batches/…}:cancel (best effort: the batch then ends
 * CANCELLED with the answers it had). Two input modes, as the reference has them:
 * - inline requests (each keyed by its custom id in `metadata.key`) while the request body stays within the API's
 *   inline limit (20 MB; GEMINI_BATCH_INLINE_MAX_BYTES); the answers come inline, in
 *   `metadata.output.inlinedResponses.inlinedResponses`;
 * - above it, a JSONL file of `{key, request}` lines uploaded through the Files API (resumable upload) and named in
 *   `inputConfig.fileName`; the answers come as a file too (`metadata.output.responsesFile`, the SDK's
 *   `dest.fileName`), downloaded through the Files API: JSONL lines of `{key, response | error}`.
 * Plain fetch and the key alone: the batcher's bundle carries no SDK and no media code (test/infra/bundle-contents).
 * Not to undo: an answer is matched to its line by its key, never by position; a line with no answer in an ended
 * batch is left out of the results, so the batcher expires it (its run falls back). The key goes to the configured
 * origin only: an upload URL the API answers is followed on that origin, never on the host it names.
 */
import type { BatchApi, BatchItemResult } from '../batch-codec.js';
import { isPlainObject } from '../common.js';
import { apiKeyFor, requiredApiKey } from '../credentials.js';

const ENDED = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED', 'EXPIRED']);

/** The reference's limit of an inline batch's request ("under 20MB"); larger batches go as a file. */
export const INLINE_MAX_BYTES = 20 * 1024 * 1024;

/** The batch state without its prefix: the REST API says BATCH_STATE_*, the SDKs and guides JOB_STATE_*. */
const stateOf = (raw: unknown) => (typeof raw === 'string' ? raw.replace(/^(?:BATCH|JOB)_STATE_/, '') : '');

/** One answer, inline (`metadata.key`) or a line of the responses file (`key`). */
interface BatchAnswer {
  key?: unknown;
  response?: unknown;
  error?: { code?: number; message?: string; status?: string };
  metadata?: { key?: unknown };
}

/** The ended batch's output (the REST operation keeps it in metadata.output). */
function outputOf(operation: Record<string, unknown>): Record<string, unknown> {
  const metadata = isPlainObject(operation.metadata) ? operation.metadata : {};
  return isPlainObject(metadata.output) ? metadata.output : {};
}

function inlinedResponses(output: Record<string, unknown>): BatchAnswer[] {
  const inlined = isPlainObject(output.inlinedResponses) ? output.inlinedResponses.inlinedResponses : undefined;
  return Array.isArray(inlined) ? inlined.filter(isPlainObject) : [];
}

/** The lines of a responses file; a line that is not an object is skipped (its request then expires). */
function fileResponses(text: string): BatchAnswer[] {
  const answers: BatchAnswer[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const value: unknown = JSON.parse(line);
      if (isPlainObject(value)) answers.push(value);
    } catch {
      // A broken line answers nothing; the others still count.
    }
  }
  return answers;
}

/** What became of one request. */
function resultOf(item: BatchAnswer): BatchItemResult {
  if (item.response !== undefined && item.error === undefined) return { kind: 'answer', body: item.response };
  const code = item.error?.code ?? 500;
  const failure = code === 429 ? 'rate_limited' : code >= 500 ? 'server' : 'client';
  return { kind: 'failed', failure, message: `gemini batch: ${item.error?.status ?? 'error'} (${code})` };
}

/** The largest inline batch request: GEMINI_BATCH_INLINE_MAX_BYTES, at most the API's 20 MB. */
function inlineMaxBytes(env: NodeJS.ProcessEnv): number {
  const set = env.GEMINI_BATCH_INLINE_MAX_BYTES?.trim() ? Number(env.GEMINI_BATCH_INLINE_MAX_BYTES) : Number.NaN;
  return Number.isInteger(set) && set >= 0 ? Math.min(set, INLINE_MAX_BYTES) : INLINE_MAX_BYTES;
}

/** Gemini's Batch Mode at GEMINI_BASE_URL (default https://generativelanguage.googleapis.com). */
export function geminiBatchApi(env: NodeJS.ProcessEnv = process.env): BatchApi {
  const origin = () =>
    (
      env.GEMINI_BASE_URL?.trim() ||
      env.GOOGLE_GEMINI_BASE_URL?.trim() ||
      'https://generativelanguage.googleapis.com'
    ).replace(/\/$/, '');
  /** Fetches `path` (below the origin) with the key; the status alone on failure (Google's text may quote data). */
  const send = async (path: string, init: RequestInit = {}): Promise<Response> => {
    const key = await requiredApiKey('gemini', () => apiKeyFor('gemini', env));
    const response = await fetch(`${origin()}${path}`, {
      ...init,
      headers: { 'x-goog-api-key': key, ...(init.headers ?? {}) },
    });
    const what = path.split('?')[0];
    if (!response.ok) throw new Error(`gemini batch: HTTP ${response.status} on ${init.method ?? 'GET'} ${what}`);
    return response;
  };
  const json = async (path: string, init: RequestInit = {}): Promise<Record<string, unknown>> => {
    const body: unknown = await (await send(path, init)).json();
    if (!isPlainObject(body)) throw new Error(`gemini batch: ${path} answered something other than an object`);
    return body;
  };

  /** Uploads the JSONL through the Files API (resumable: start, then one upload-and-finalize); answers its name. */
  async function uploadFile(jsonl: string): Promise<string> {
    const bytes = Buffer.from(jsonl);
    const start = await send('/upload/v1beta/files', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-goog-upload-protocol': 'resumable',
        'x-goog-upload-command': 'start',
        'x-goog-upload-header-content-length': String(bytes.byteLength),
        'x-goog-upload-header-content-type': 'application/jsonl',
      },
      body: JSON.stringify({ file: { displayName: 'vision-batch-input' } }),
    });
    const uploadUrl = start.headers.get('x-goog-upload-url');
    if (!uploadUrl) throw new Error('gemini batch: the Files API gave no upload URL');
    const target = new URL(uploadUrl);
    const uploaded = await json(`${target.pathname}${target.search}`, {
      method: 'POST',
      headers: { 'x-goog-upload-command': 'upload, finalize', 'x-goog-upload-offset': '0' },
      body: bytes,
    });
    const file = isPlainObject(uploaded.file) ? uploaded.file : {};
    if (typeof file.name !== 'string' || !file.name.startsWith('files/')) {
      throw new Error('gemini batch: the uploaded file has no name');
    }
    return file.name;
  }

  return {
    id: 'gemini',
    async submit(model, lines) {
      const requests = lines.map((l) => ({ request: l.body, metadata: { key: l.customId } }));
      const inline = { requests: { requests } };
      const asFile = Buffer.byteLength(JSON.stringify(inline)) > inlineMaxBytes(env);
      const inputConfig = asFile
        ? {
            fileName: await uploadFile(
              lines.map((l) => JSON.stringify({ key: l.customId, request: l.body })).join('\n'),
            ),
          }
        : inline;
      const operation = await json(`/v1beta/models/${encodeURIComponent(model)}:batchGenerateContent`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ batch: { displayName: `vision-batch-${lines.length}`, inputConfig } }),
      });
      if (typeof operation.name !== 'string' || !operation.name.startsWith('batches/')) {
        throw new Error('gemini batch: the created batch has no name');
      }
      return operation.name;
    },
    async poll(ref) {
      const operation = await json(`/v1beta/${ref}`);
      const metadata = isPlainObject(operation.metadata) ? operation.metadata : {};
      if (!ENDED.has(stateOf(metadata.state))) return undefined;
      const output = outputOf(operation);
      const file = output.responsesFile;
      const answers =
        typeof file === 'string' && file.startsWith('files/')
          ? fileResponses(await (await send(`/download/v1beta/${file}:download?alt=media`)).text())
          : inlinedResponses(output);
      const results = new Map<string, BatchItemResult>();
      for (const item of answers) {
        const key = item.key ?? item.metadata?.key;
        if (typeof key === 'string') results.set(key, resultOf(item));
      }
      return results;
    },
    async cancel(ref) {
      await send(`/v1beta/${ref}:cancel`, { method: 'POST' });
    },
  };
}
