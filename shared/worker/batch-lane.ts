/**
 * The worker's side of the batch lane (contract v1.2 §4): a batch run executes on its normal path (single pass, chain,
 * chunks, a packet) with its adapters wrapped here, so that each provider call becomes a request of the lane,
 * remembered by its id (run, provider, step, pages; a packet's also names its task). A call with no request yet writes its line and a waiting request and parks the run
 * (BatchParked: the delivery ends, `stage: batched`); the batcher (shared/batching/batcher.ts) submits it, polls, and
 * sends the run back. On that delivery the same call finds its request resolved: an answer is read with the provider's
 * own parser and priced at its batch discount; a failure or an expiry is a failed attempt, and the plan falls back as
 * for any other; a request the batcher released (`direct`) is called normally, at the normal price.
 * A fanned-out run's group (./fanout.ts) parks its own requests, marked with the group, so that the batcher sends that
 * group's message back, not the run's.
 * Not to undo: the request id is a pure function of the attempt, so every delivery of the run, however many, finds the
 * same request, and a resolved answer is never asked for again.
 */

import { batchObjectKey, getJson, putJson } from '../batching/objects.js';
import { BatchParked } from '../batching/parked.js';
import { batchCodecs } from '../batching/providers.js';
import type { BatchCodec } from '../providers/batch-codec.js';
import { batchTerms, discounted } from '../providers/batch-terms.js';
import type { ProviderAdapter, ProviderInput } from '../providers/types.js';
import { getBatchRequest, putWaitingRequest, requestIdOf } from '../store/batch-requests.js';
import type { RunRecord } from '../store/runs.js';
import { ProviderFailure, type ProviderId } from '../task.js';

type Adapters = Partial<Record<ProviderId, ProviderAdapter>>;

/** The adapters a delivery of the run calls: through the batch lane for a batch run, as they are otherwise. */
export function adaptersFor(run: RunRecord, adapters: Adapters, group?: number): Adapters {
  return run.priority === 'batch' ? batchLaneAdapters(run, adapters, group !== undefined ? { group } : {}) : adapters;
}

/** The run's adapters, each call going through the batch lane (a batch run only); `group`: a fanned-out group's. */
export function batchLaneAdapters(
  run: RunRecord,
  adapters: Adapters,
  options: { group?: number; codecs?: Partial<Record<ProviderId, BatchCodec>> } = {},
): Adapters {
  const codecs = options.codecs ?? batchCodecs;
  const wrapped: Adapters = {};
  for (const [id, adapter] of Object.entries(adapters) as Array<[ProviderId, ProviderAdapter]>) {
    const lane = { run, adapter, codec: codecs[id], group: options.group };
    wrapped[id] = { id, invoke: (input, invokeOptions) => viaLane(lane, input, invokeOptions) };
  }
  return wrapped;
}

interface Lane {
  run: RunRecord;
  adapter: ProviderAdapter;
  codec: BatchCodec | undefined;
  group: number | undefined;
}

async function viaLane(lane: Lane, input: ProviderInput, options: Parameters<ProviderAdapter['invoke']>[1]) {
  const { run, adapter, codec } = lane;
  const provider = adapter.id;
  // A packet asks the same pages twice (a page's classification, then its document's extraction): its ids name the task.
  const task = run.packet ? (input.task.schemaId ?? 'classify') : undefined;
  const requestId = requestIdOf(run.jobId, provider, input.step, input.pages, task);
  const request = await getBatchRequest(requestId);
  if (!request) {
    await park(lane, input, options.maxCostMicros, requestId);
    throw new BatchParked(requestId);
  }
  switch (request.state) {
    case 'waiting':
    case 'submitting':
    case 'submitted':
      throw new BatchParked(requestId);
    case 'direct':
      return adapter.invoke(input, options);
    case 'answered': {
      if (!codec || !request.answerKey)
        throw new ProviderFailure('server', `${provider}: no batch codec for its answer`);
      const output = await codec.parse(await getJson(request.answerKey), input);
      const costMicros = Math.ceil(discounted(output.usage.costMicros, batchTerms(provider)) - 1e-6);
      return { ...output, usage: { ...output.usage, costMicros } };
    }
    default:
      throw new ProviderFailure(
        request.failure?.kind ?? 'server',
        request.failure?.message ?? `${provider}: batch item failed`,
      );
  }
}

/** Writes the call's line (when its provider has a batch interface here) and its waiting request. */
async function park(lane: Lane, input: ProviderInput, maxCostMicros: number | undefined, requestId: string) {
  const { run, codec } = lane;
  const provider = lane.adapter.id;
  const viaInterface = codec !== undefined && batchTerms(provider).viaInterface;
  let model: string = provider;
  let bytes = 0;
  let lineKey: string | undefined;
  if (viaInterface) {
    const line = await codec.line(input, maxCostMicros !== undefined ? { maxCostMicros } : {});
    lineKey = batchObjectKey('lines', requestId);
    bytes = await putJson(lineKey, line.body);
    model = line.model;
  }
  const now = new Date();
  const deadlineMs = run.expiresAt !== undefined ? Date.parse(run.expiresAt) : now.getTime() + 86_400_000;
  await putWaitingRequest({
    requestId,
    jobId: run.jobId,
    provider,
    model,
    step: input.step,
    viaInterface,
    state: 'waiting',
    openState: 'waiting',
    since: now.toISOString(),
    waitingSinceMs: now.getTime(),
    deadlineMs,
    bytes,
    ...(lineKey !== undefined ? { lineKey } : {}),
    ...(lane.group !== undefined ? { group: lane.group } : {}),
    expiresAtEpoch: run.expiresAtEpoch,
  });
}
