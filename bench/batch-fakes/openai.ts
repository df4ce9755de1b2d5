/**
 * OpenAI Batch in the batch fakes (../batch-fakes.ts): POST /v1/files (multipart, purpose "batch", a JSONL of
 * {custom_id, method, url, body}), POST /v1/batches, GET /v1/batches/{id} (validating → in_progress → completed |
 * expired), GET /v1/files/{id}/content (output JSONL {id, custom_id, response: {status_code, request_id, body}, error};
 * failures in the error file), POST /v1/batches/{id}/cancel (cancelling → cancelled, with the lines answered so far in
 * its output file and the others in neither file, as the reference says: "partial results (if any)"; an ended batch
 * cannot be cancelled: 400).
 */
import { randomUUID } from 'node:crypto';
import type { RecordedRequest, ScriptedResponse } from '../../test/support/fake-server.js';
import {
  type Answered,
  type Batch,
  type BatchItem,
  type FakeContext,
  jsonl,
  type Route,
  seconds,
  text,
  usageOf,
} from './state.js';

function openaiResponse(item: BatchItem, outcome: Answered) {
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

export function openaiBatchFake(ctx: FakeContext): Route {
  const { files, batches, submit, poll, cancel, counts, expired, notFound } = ctx;
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
    const cancelling = /^\/v1\/batches\/([^/]+)\/cancel$/.exec(path);
    if (req.method === 'POST' && cancelling) {
      const batch = batches.get(cancelling[1] ?? '');
      if (!batch) return notFound('batch');
      if (!cancel(batch)) {
        const message = 'Only a batch that has not ended can be cancelled.';
        return { status: 400, json: { error: { message, type: 'invalid_request_error' } } };
      }
      return { json: openaiBatch(batch, '/v1/responses') };
    }
    const content = /^\/v1\/files\/([^/]+)\/content$/.exec(path);
    if (req.method === 'GET' && content) {
      const body = files.get(content[1] ?? '');
      return body === undefined ? notFound('file') : { headers: { 'content-type': 'application/jsonl' }, raw: body };
    }
    return notFound(path);
  }

  function openaiStatus(batch: Batch): string {
    if (batch.results === undefined) {
      if (batch.cancelled) return 'cancelling';
      return batch.polls === 0 ? 'validating' : 'in_progress';
    }
    if (batch.cancelled) return 'cancelled';
    return expired(batch) ? 'expired' : 'completed';
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
        if (result === 'expired' && batch.cancelled) {
          // A cancelled batch's lines never run are in neither file.
        } else if (result === 'expired') {
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
      status: openaiStatus(batch),
      output_file_id: outputFileId,
      error_file_id: errorFileId,
      created_at: seconds(batch.createdAt),
      expires_at: seconds(batch.createdAt) + 86_400,
      request_counts: {
        total: batch.items.length,
        completed: c.ok,
        failed: c.failed + (batch.cancelled ? 0 : c.expired),
      },
      metadata: null,
    };
  }
  return (req, path) => openai(req, path);
}
