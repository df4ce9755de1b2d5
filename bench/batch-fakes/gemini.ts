/**
 * Gemini Batch Mode in the batch fakes (../batch-fakes.ts): POST /v1beta/models/{model}:batchGenerateContent (inline
 * requests {request, metadata: {key}}, or `inputConfig.fileName`: a JSONL of {key, request} uploaded through the Files
 * API's resumable protocol at POST /upload/v1beta/files), GET /v1beta/batches/{id} (an operation: metadata.state
 * BATCH_STATE_PENDING → RUNNING → SUCCEEDED | EXPIRED; an inline batch's answers in
 * metadata.output.inlinedResponses.inlinedResponses [{response | error, metadata}], a file batch's in
 * metadata.output.responsesFile, a JSONL of {key, response | error} served at GET
 * /download/v1beta/files/{id}:download?alt=media), POST /v1beta/batches/{id}:cancel (`{}`; the batch ends
 * BATCH_STATE_CANCELLED with the answers it had; an ended one: 400 FAILED_PRECONDITION). Other /v1beta/ paths
 * (generateContent) are the test's.
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
  text,
  usageOf,
} from './state.js';

function geminiResponse(item: BatchItem, outcome: Answered) {
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

export function geminiBatchFake(ctx: FakeContext): { files: Route; batches: Route } {
  const { files, batches, submit, poll, cancel, counts, expired, notFound, otherwise } = ctx;
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
    const cancelling = /^\/v1beta\/(batches\/[^/:]+):cancel$/.exec(path);
    if (req.method === 'POST' && cancelling) {
      const batch = batches.get(cancelling[1] ?? '');
      if (!batch) return geminiError(404, 'NOT_FOUND', 'not found');
      if (!cancel(batch)) return geminiError(400, 'FAILED_PRECONDITION', 'the batch has already ended');
      return { json: {} };
    }
    // Gemini's synchronous API shares the /v1beta/ prefix: it is the test's to answer.
    return otherwise(req);
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
      : batch.cancelled
        ? 'BATCH_STATE_CANCELLED'
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
  return { files: geminiFiles, batches: (req, path) => gemini(req, path) };
}
