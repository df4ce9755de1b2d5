/**
 * Anthropic's Message Batches API for the batcher (shared/batching/batcher.ts): POST /v1/messages/batches with
 * `requests[{custom_id, params}]`, GET /v1/messages/batches/{id} until `processing_status` is `ended`, then the results
 * (JSONL, one `{custom_id, result: {type: succeeded | errored | canceled | expired}}` per request, in any order);
 * POST /v1/messages/batches/{id}/cancel (`canceling`, then `ended`: the requests not yet run come back `canceled`).
 * Plain fetch and the key alone: the batcher's bundle carries no SDK and no media code.
 * Not to undo:
 * - A custom_id must match ^[a-zA-Z0-9_-]{1,64}$, which the lane's request ids (`run#provider#step#pages`) do not:
 *   each is sent as a hash of the request id (`customIdOf`), and read back through the ids the batch holds.
 * - The results are read from GET /v1/messages/batches/{id}/results on the configured base URL, never from whatever
 *   `results_url` a response names: the key is sent to the API's own origin only.
 */
import { createHash } from 'node:crypto';
import type { FailureKind } from '../../task.js';
import type { BatchApi, BatchItemResult } from '../batch-codec.js';
import { apiKeyFor, requiredApiKey } from '../credentials.js';

/** The API version the requests name (the Messages API's, as documented for the batch endpoints). */
const API_VERSION = '2023-06-01';

/** A request id as a custom_id the API accepts: base64url of its SHA-256 (43 characters of [A-Za-z0-9_-]). */
export function customIdOf(requestId: string): string {
  return createHash('sha256').update(requestId).digest('base64url');
}

/** The failure kind of an errored request, by the error type the API reports. */
function failureOf(type: string | undefined): FailureKind {
  switch (type) {
    case 'rate_limit_error':
      return 'rate_limited';
    case 'authentication_error':
    case 'permission_error':
    case 'billing_error':
      return 'auth';
    case 'timeout_error':
      return 'timeout';
    case 'invalid_request_error':
    case 'not_found_error':
    case 'request_too_large':
      return 'client';
    default:
      return 'server';
  }
}

type ResultLine = {
  custom_id?: string;
  result?: { type?: string; message?: unknown; error?: { error?: { type?: string; message?: string } } };
};

function itemResult(result: ResultLine['result']): BatchItemResult {
  switch (result?.type) {
    case 'succeeded':
      return { kind: 'answer', body: result.message };
    case 'expired':
      return { kind: 'expired' };
    case 'canceled':
      // Not answered. The batcher cancels only a batch whose requests are all resolved (it never reads its lines):
      // a canceled request read here was canceled by someone else.
      return { kind: 'failed', failure: 'server', message: 'anthropic batch: the request was canceled' };
    default: {
      const type = result?.error?.error?.type;
      return { kind: 'failed', failure: failureOf(type), message: `anthropic batch: ${type ?? 'errored'}` };
    }
  }
}

/** Anthropic's Message Batches API at ANTHROPIC_BASE_URL (default https://api.anthropic.com). */
export function anthropicBatchApi(env: NodeJS.ProcessEnv = process.env): BatchApi {
  const base = () => (env.ANTHROPIC_BASE_URL?.trim() || 'https://api.anthropic.com').replace(/\/$/, '');
  const call = async (path: string, init: RequestInit = {}): Promise<Response> => {
    const key = await requiredApiKey('anthropic', () => apiKeyFor('anthropic', env));
    const response = await fetch(`${base()}${path}`, {
      ...init,
      headers: { 'x-api-key': key, 'anthropic-version': API_VERSION, ...(init.headers ?? {}) },
    });
    if (!response.ok) throw new Error(`anthropic batch: HTTP ${response.status} on ${init.method ?? 'GET'} ${path}`);
    return response;
  };
  return {
    id: 'anthropic',
    async submit(_model, lines) {
      const requests = lines.map((l) => ({ custom_id: customIdOf(l.customId), params: l.body }));
      const batch = (await (
        await call('/v1/messages/batches', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ requests }),
        })
      ).json()) as { id: string };
      return batch.id;
    },
    async poll(ref, requestIds) {
      const batch = (await (await call(`/v1/messages/batches/${encodeURIComponent(ref)}`)).json()) as {
        processing_status?: string;
      };
      if (batch.processing_status !== 'ended') return undefined;
      const byCustomId = new Map(requestIds.map((id) => [customIdOf(id), id]));
      const text = await (await call(`/v1/messages/batches/${encodeURIComponent(ref)}/results`)).text();
      const results = new Map<string, BatchItemResult>();
      for (const raw of text.split('\n')) {
        if (raw.trim() === '') continue;
        const line = JSON.parse(raw) as ResultLine;
        const requestId = byCustomId.get(String(line.custom_id));
        if (requestId !== undefined) results.set(requestId, itemResult(line.result));
      }
      return results;
    },
    async cancel(ref) {
      await call(`/v1/messages/batches/${encodeURIComponent(ref)}/cancel`, { method: 'POST' });
    },
  };
}
