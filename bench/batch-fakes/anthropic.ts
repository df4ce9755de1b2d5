/**
 * Anthropic Message Batches in the batch fakes (../batch-fakes.ts): POST /v1/messages/batches ({requests: [{custom_id,
 * params}]}, custom_id unique and of [a-zA-Z0-9_-]{1,64}, else 400), GET /v1/messages/batches/{id} (in_progress →
 * ended, request_counts, results_url), GET …/results (JSONL {custom_id, result: {type: succeeded | errored | expired |
 * canceled, …}}, never in the order of the requests), POST …/{id}/cancel (canceling → ended, the requests not yet run
 * `canceled`; an ended batch cannot be canceled: 400).
 */
import { randomUUID } from 'node:crypto';
import type { RecordedRequest, ScriptedResponse } from '../../test/support/fake-server.js';
import {
  type Answered,
  type Batch,
  type BatchItem,
  type FakeContext,
  hasTools,
  jsonl,
  type Route,
  text,
  toolName,
  usageOf,
} from './state.js';

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

function anthropicMessage(item: BatchItem, outcome: Answered) {
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

export function anthropicBatchFake(ctx: FakeContext): Route {
  const { batches, submit, poll, cancel, counts, notFound } = ctx;
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
    const canceling = /^\/v1\/messages\/batches\/([^/]+)\/cancel$/.exec(path);
    if (req.method === 'POST' && canceling) {
      const batch = batches.get(canceling[1] ?? '');
      if (!batch) return notFound('batch');
      if (!cancel(batch)) {
        const message = 'Only a batch that has not ended can be canceled.';
        return { status: 400, json: { type: 'error', error: { type: 'invalid_request_error', message } } };
      }
      return { json: anthropicBatch(batch, base) };
    }
    const results = /^\/v1\/messages\/batches\/([^/]+)\/results$/.exec(path);
    if (req.method === 'GET' && results) {
      const batch = batches.get(results[1] ?? '');
      if (!batch?.results) return notFound('results');
      const lines = batch.items.map((item, i) => {
        const result = batch.results?.[i];
        if (result === 'expired' || result === undefined)
          return { custom_id: item.customId, result: { type: batch.cancelled ? 'canceled' : 'expired' } };
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
      processing_status: ended ? 'ended' : batch.cancelled ? 'canceling' : 'in_progress',
      request_counts: {
        processing: ended ? 0 : batch.items.length,
        succeeded: c.ok,
        errored: c.failed,
        canceled: batch.cancelled ? c.expired : 0,
        expired: batch.cancelled ? 0 : c.expired,
      },
      ended_at: ended ? new Date().toISOString() : null,
      created_at: batch.createdAt.toISOString(),
      expires_at: new Date(batch.createdAt.getTime() + 86_400_000).toISOString(),
      archived_at: null,
      cancel_initiated_at: batch.cancelled ? new Date().toISOString() : null,
      results_url: ended ? `${base}/v1/messages/batches/${batch.id}/results` : null,
    };
  }
  return anthropic;
}
