/**
 * Gemini Batch Mode for the batcher (shared/batching/batcher.ts): POST /v1beta/models/{model}:batchGenerateContent with
 * the lines as inline requests (each keyed by its custom id in `metadata.key`), then GET /v1beta/{batches/…} until the
 * batch's `metadata.state` ends (BATCH_STATE_SUCCEEDED | FAILED | CANCELLED | EXPIRED; the SDK calls them JOB_STATE_*),
 * its answers in `metadata.output.inlinedResponses.inlinedResponses`. Plain fetch and the key alone: the batcher's
 * bundle carries no SDK and no media code (test/infra/bundle-contents.test.ts).
 * Not to undo: an answer is matched to its line by `metadata.key`, never by position; a line with no answer in an
 * ended batch is left out of the results, so the batcher expires it (its run falls back).
 */
import { ProviderFailure } from '../../task.js';
import type { BatchApi, BatchItemResult } from '../batch-codec.js';
import { isPlainObject } from '../common.js';
import { apiKeyFor } from '../credentials.js';

const ENDED = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED', 'EXPIRED']);

/** The batch state without its prefix: the REST API says BATCH_STATE_*, the SDKs and guides JOB_STATE_*. */
const stateOf = (raw: unknown) => (typeof raw === 'string' ? raw.replace(/^(?:BATCH|JOB)_STATE_/, '') : '');

interface InlinedResponse {
  response?: unknown;
  error?: { code?: number; message?: string; status?: string };
  metadata?: { key?: unknown };
}

/** The inline answers of an ended batch (the REST operation keeps them in metadata.output). */
function inlinedResponses(operation: Record<string, unknown>): InlinedResponse[] {
  const metadata = isPlainObject(operation.metadata) ? operation.metadata : {};
  const output = isPlainObject(metadata.output) ? metadata.output : {};
  const inlined = isPlainObject(output.inlinedResponses) ? output.inlinedResponses.inlinedResponses : undefined;
  return Array.isArray(inlined) ? inlined.filter(isPlainObject) : [];
}

/** What became of one inline request. */
function resultOf(item: InlinedResponse): BatchItemResult {
  if (item.response !== undefined && item.error === undefined) return { kind: 'answer', body: item.response };
  const code = item.error?.code ?? 500;
  const failure = code === 429 ? 'rate_limited' : code >= 500 ? 'server' : 'client';
  return { kind: 'failed', failure, message: `gemini batch: ${item.error?.status ?? 'error'} (${code})` };
}

/** Gemini's Batch Mode at GEMINI_BASE_URL (default https://generativelanguage.googleapis.com). */
export function geminiBatchApi(env: NodeJS.ProcessEnv = process.env): BatchApi {
  const base = () =>
    (env.GEMINI_BASE_URL?.trim() || env.GOOGLE_GEMINI_BASE_URL?.trim() || 'https://generativelanguage.googleapis.com')
      .replace(/\/$/, '')
      .concat('/v1beta');
  const call = async (path: string, init: RequestInit = {}): Promise<Record<string, unknown>> => {
    const key = await apiKeyFor('gemini', env);
    if (!key) throw new ProviderFailure('auth', 'GEMINI_API_KEY is not configured');
    const response = await fetch(`${base()}/${path}`, {
      ...init,
      headers: { 'x-goog-api-key': key, ...(init.headers ?? {}) },
    });
    // The status only: Google's error text may quote the request.
    if (!response.ok) throw new Error(`gemini batch: HTTP ${response.status} on ${init.method ?? 'GET'} ${path}`);
    const body: unknown = await response.json();
    if (!isPlainObject(body)) throw new Error(`gemini batch: ${path} answered something other than an object`);
    return body;
  };
  return {
    id: 'gemini',
    async submit(model, lines) {
      const operation = await call(`models/${encodeURIComponent(model)}:batchGenerateContent`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          batch: {
            displayName: `vision-batch-${lines.length}`,
            inputConfig: {
              requests: { requests: lines.map((l) => ({ request: l.body, metadata: { key: l.customId } })) },
            },
          },
        }),
      });
      if (typeof operation.name !== 'string' || !operation.name.startsWith('batches/')) {
        throw new Error('gemini batch: the created batch has no name');
      }
      return operation.name;
    },
    async poll(ref) {
      const operation = await call(ref);
      const metadata = isPlainObject(operation.metadata) ? operation.metadata : {};
      if (!ENDED.has(stateOf(metadata.state))) return undefined;
      const results = new Map<string, BatchItemResult>();
      for (const item of inlinedResponses(operation)) {
        if (typeof item.metadata?.key === 'string') results.set(item.metadata.key, resultOf(item));
      }
      return results;
    },
  };
}
