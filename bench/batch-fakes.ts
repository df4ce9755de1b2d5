/**
 * One local HTTP server (test/support/fake-server.ts) standing in for the four providers' batch APIs, in each API's
 * wire format as its reference documents it, for the batch lane (issue 31): submit, status polling, results, partial
 * failures and expiry, each configurable. Beside bench/provider-fakes.ts (the synchronous APIs). Each provider's
 * routes are in ./batch-fakes/ (openai, anthropic, gemini: inline or Files API, bedrock: the control plane over the
 * test's storage, a Map or the local stack's S3 through ./batch-fakes-s3.ts); this file holds the one lifecycle they
 * share, so that polling, partial failure and expiry stay alike across them.
 *
 * What each item answers is the test's `outcome` callback: the answer (wrapped in the provider's response: a tool call
 * when the request defined tools, else text) with token usage, or an error. A batch answers "in progress" to
 * `pollsBeforeEnd` status reads, then ends; with `expire`, it ends expired after `doneBeforeExpiry` items. A cancelled
 * batch (each API's cancel) ends at its next status read, after `doneBeforeExpiry` items too.
 */
import {
  type FakeServer,
  type RecordedRequest,
  type ScriptedResponse,
  startFakeServer,
} from '../test/support/fake-server.js';
import { anthropicBatchFake } from './batch-fakes/anthropic.js';
import { bedrockBatchFake } from './batch-fakes/bedrock.js';
import { geminiBatchFake } from './batch-fakes/gemini.js';
import { openaiBatchFake } from './batch-fakes/openai.js';
import type {
  Batch,
  BatchFakeBehaviour,
  BatchItem,
  BatchProvider,
  FakeContext,
  ObjectStorage,
} from './batch-fakes/state.js';

export type { BatchFakeBehaviour, BatchItem, BatchProvider, ItemOutcome, ObjectStorage } from './batch-fakes/state.js';

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

const DEFAULTS: BatchFakeBehaviour = {
  outcome: () => ({ kind: 'ok', answer: { ok: true } }),
  pollsBeforeEnd: 1,
  expire: false,
  doneBeforeExpiry: 0,
  bedrockMinRecords: 100,
};

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
    if (batch.provider === 'bedrock') await bedrock.ended(batch);
  };
  /** Counts a status read; ends the batch after `pollsBeforeEnd` of them, or at the first after a cancel. */
  const poll = async (batch: Batch): Promise<boolean> => {
    if (batch.results) return true;
    batch.polls += 1;
    if (batch.cancelled) {
      await endBatch(batch, behaviour.doneBeforeExpiry);
      return true;
    }
    if (batch.polls <= behaviour.pollsBeforeEnd) return false;
    await endBatch(batch, behaviour.expire ? behaviour.doneBeforeExpiry : batch.items.length);
    return true;
  };
  const cancel = (batch: Batch): boolean => {
    if (batch.results) return false;
    batch.cancelled = true;
    return true;
  };
  const expired = (batch: Batch) => batch.results?.some((r) => r === 'expired') ?? false;
  const counts = (batch: Batch) => ({
    ok: batch.results?.filter((r) => r !== 'expired' && r.kind === 'ok').length ?? 0,
    failed: batch.results?.filter((r) => r !== 'expired' && r.kind === 'error').length ?? 0,
    expired: batch.results?.filter((r) => r === 'expired').length ?? 0,
  });
  const notFound = (what: string): ScriptedResponse => ({
    status: 404,
    json: { error: { message: `${what} not found` } },
  });

  const ctx: FakeContext = {
    behaviour: () => behaviour,
    storage,
    files,
    batches,
    submit,
    poll,
    cancel,
    endBatch,
    expired,
    counts,
    notFound,
    otherwise: (req) => (options.otherwise ? options.otherwise(req) : notFound(req.path)),
  };
  const openai = openaiBatchFake(ctx);
  const anthropic = anthropicBatchFake(ctx);
  const gemini = geminiBatchFake(ctx);
  const bedrock = bedrockBatchFake(ctx);

  let baseUrl = '';
  const server: FakeServer = await startFakeServer(async (req) => {
    const path = req.path.split('?')[0] ?? '';
    if (path.startsWith('/v1/messages/batches')) return anthropic(req, path, baseUrl);
    if (path.startsWith('/v1/batches') || path.startsWith('/v1/files')) return openai(req, path, baseUrl);
    if (path.startsWith('/upload/v1beta/') || /\/v1beta\/files\/[^/]+:download$/.test(path)) {
      return gemini.files(req, path, baseUrl);
    }
    if (path.startsWith('/v1beta/')) return gemini.batches(req, path, baseUrl);
    if (path.startsWith('/model-invocation-job')) return bedrock.route(req, path, baseUrl);
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
