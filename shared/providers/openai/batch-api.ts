/**
 * OpenAI's Batch API for the batcher (shared/batching/batcher.ts): POST /v1/files (purpose `batch`, the JSONL of
 * lines), POST /v1/batches (window 24h), GET /v1/batches/{id}, and the output and error files; POST
 * /v1/batches/{id}/cancel (`cancelling` for up to 10 minutes, then `cancelled` with the lines answered so far in its
 * output file). Plain fetch and the key alone: the batcher's bundle carries no SDK and no media code
 * (test/infra/bundle-contents.test.ts).
 */
import type { BatchApi, BatchItemResult } from '../batch-codec.js';
import { apiKeyFor, requiredApiKey } from '../credentials.js';

/** OpenAI's Batch API at OPENAI_BASE_URL (default https://api.openai.com/v1). */
export function openaiBatchApi(env: NodeJS.ProcessEnv = process.env): BatchApi {
  const base = () => (env.OPENAI_BASE_URL || 'https://api.openai.com/v1').replace(/\/$/, '');
  const call = async (path: string, init: RequestInit = {}): Promise<Response> => {
    const key = await requiredApiKey('openai', () => apiKeyFor('openai', env));
    const response = await fetch(`${base()}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${key}`, ...(init.headers ?? {}) },
    });
    if (!response.ok) throw new Error(`openai batch: HTTP ${response.status} on ${init.method ?? 'GET'} ${path}`);
    return response;
  };
  const readFile = async (id: string | null | undefined): Promise<unknown[]> => {
    if (!id) return [];
    const text = await (await call(`/files/${id}/content`)).text();
    return text
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as unknown);
  };
  return {
    id: 'openai',
    async submit(_model, lines) {
      const jsonl = lines
        .map((l) => JSON.stringify({ custom_id: l.customId, method: 'POST', url: '/v1/responses', body: l.body }))
        .join('\n');
      const form = new FormData();
      form.set('purpose', 'batch');
      form.set('file', new Blob([jsonl], { type: 'application/jsonl' }), 'batch.jsonl');
      const file = (await (await call('/files', { method: 'POST', body: form })).json()) as { id: string };
      const batch = (await (
        await call('/batches', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/responses', completion_window: '24h' }),
        })
      ).json()) as { id: string };
      return batch.id;
    },
    async poll(ref) {
      const batch = (await (await call(`/batches/${ref}`)).json()) as {
        status: string;
        output_file_id?: string | null;
        error_file_id?: string | null;
      };
      if (!['completed', 'expired', 'failed', 'cancelled'].includes(batch.status)) return undefined;
      const results = new Map<string, BatchItemResult>();
      type Line = {
        custom_id: string;
        response: { status_code: number; body: unknown } | null;
        error: { code?: string; message?: string } | null;
      };
      for (const line of [
        ...(await readFile(batch.output_file_id)),
        ...(await readFile(batch.error_file_id)),
      ] as Line[]) {
        if (line.error?.code === 'batch_expired') results.set(line.custom_id, { kind: 'expired' });
        else if (line.response?.status_code === 200)
          results.set(line.custom_id, { kind: 'answer', body: line.response.body });
        else {
          const status = line.response?.status_code ?? 500;
          const failure = status === 429 ? 'rate_limited' : status >= 500 ? 'server' : 'client';
          results.set(line.custom_id, { kind: 'failed', failure, message: `openai batch: HTTP ${status}` });
        }
      }
      return results;
    },
    async cancel(ref) {
      await call(`/batches/${encodeURIComponent(ref)}/cancel`, { method: 'POST' });
    },
  };
}
