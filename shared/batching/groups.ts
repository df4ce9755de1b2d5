/**
 * The batcher's brain (contract v1.2 §4): given the requests waiting for a provider's batch interface and the time,
 * which batches to submit now, which requests to call normally instead, and when to look again. Pure: no I/O, no
 * clock of its own (the caller passes `nowMs`), so the scheduled batcher and its tests decide the same way.
 *
 * Decisions a reader must not undo:
 * - A request id appears in at most one decision, once: a duplicate (a redelivered message) is dropped, so no request
 *   is sent twice.
 * - Groups are per provider AND model (a batch runs one model), oldest request first; a group is sent when it is full
 *   (the provider's or the service's request or byte limit) or when its oldest request has waited `maxWaitMs`.
 * - A request whose run's deadline is `directMarginMs` away or less is called normally, so the run still finishes when
 *   it was promised (in a batch, the next pass would only expire it and the run fall back later), unless it is needed
 *   to reach the provider's minimum in a batch that goes out now. A group under the minimum (Bedrock's 100 records)
 *   keeps waiting for company until a deadline comes that close.
 */
import { config } from '../config.js';
import { batchSettings } from '../infra/resources.js';
import { type ProviderBatchLimits, providerBatchLimits } from '../providers/batch-terms.js';
import type { ProviderId } from '../task.js';

/** One provider request waiting for a batch. */
export interface WaitingRequest {
  /** Unique per request (a run's attempt, or one page chunk's call): the batch line's custom id. */
  id: string;
  provider: ProviderId;
  model: string;
  /** Size of its line in the batch input (the request body as JSON). */
  bytes: number;
  /** When it started waiting. */
  waitingSinceMs: number;
  /** When its run must be answered (the run's `expiresAt`). */
  deadlineMs: number;
}

/** What limits one group, from the provider's reference and the service's configuration. */
export interface GroupLimits extends ProviderBatchLimits {
  /** A group is sent once its oldest request has waited this long. */
  maxWaitMs: number;
  /** A request that cannot be batched is called normally once its deadline is this close. */
  directMarginMs: number;
}

/** A batch to submit: one provider and model, its requests oldest first. */
export interface BatchToSubmit {
  provider: ProviderId;
  model: string;
  requests: WaitingRequest[];
  /** `full`: a limit was reached; `aged`: its oldest request waited `maxWaitMs`. */
  reason: 'full' | 'aged';
}

/** A request called normally instead of through a batch, and why. */
export interface DirectRequest {
  request: WaitingRequest;
  /**
   * `no-interface`: its provider (or model) has no batch interface: called in this window at the normal price;
   * `too-large`: larger than a whole batch may be; `deadline`: its run's deadline is too close for a batch (a group
   * under the provider's minimum waits for company until then).
   */
  reason: 'no-interface' | 'too-large' | 'deadline';
}

export interface GroupingDecision {
  submit: BatchToSubmit[];
  direct: DirectRequest[];
  /** When the decision next changes without new requests (a group's age limit or a deadline), or null. */
  nextDecisionAtMs: number | null;
}

/** The limits of a provider's groups, or undefined when it has no batch interface. */
export type LimitsFor = (provider: ProviderId, model: string) => GroupLimits | undefined;

/**
 * Limits from each provider's reference (its pricing.json `batch` block) with the service's configured cap on
 * requests per batch and wait.
 */
export function configuredLimits(settings: {
  maxRequests: number;
  maxWaitMs: number;
  directMarginMs: number;
}): LimitsFor {
  return (provider) => {
    const own = providerBatchLimits(provider);
    if (!own) return undefined;
    const maxRequests = Math.max(own.minRequests, Math.min(own.maxRequests, settings.maxRequests));
    return { ...own, maxRequests, maxWaitMs: settings.maxWaitMs, directMarginMs: settings.directMarginMs };
  };
}

/** The deployment's limits: SERVICE_BATCH_MAX_REQUESTS and SERVICE_BATCH_MAX_WAIT_SECONDS over each provider's own. */
export function serviceLimits(): LimitsFor {
  return configuredLimits({
    maxRequests: config.batchMaxRequests,
    maxWaitMs: config.batchMaxWaitSeconds * 1000,
    directMarginMs: batchSettings.directMarginSeconds * 1000,
  });
}

const groupKey = (r: WaitingRequest) => `${r.provider}\u0000${r.model}`;
const oldestFirst = (a: WaitingRequest, b: WaitingRequest) =>
  a.waitingSinceMs - b.waitingSinceMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Splits a group (oldest first) into runs of requests within the request and byte limits. */
function pack(
  requests: readonly WaitingRequest[],
  limits: GroupLimits,
): { chunks: WaitingRequest[][]; tooLarge: WaitingRequest[] } {
  const chunks: WaitingRequest[][] = [];
  const tooLarge: WaitingRequest[] = [];
  let current: WaitingRequest[] = [];
  let bytes = 0;
  for (const request of requests) {
    if (request.bytes > limits.maxBytes) {
      tooLarge.push(request);
      continue;
    }
    if (current.length === limits.maxRequests || bytes + request.bytes > limits.maxBytes) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(request);
    bytes += request.bytes;
  }
  if (current.length > 0) chunks.push(current);
  return { chunks, tooLarge };
}

/** Decides, at `nowMs`, what to do with the waiting requests. */
export function decideBatches(
  waiting: readonly WaitingRequest[],
  limitsFor: LimitsFor,
  nowMs: number,
): GroupingDecision {
  const seen = new Set<string>();
  const groups = new Map<string, WaitingRequest[]>();
  for (const request of waiting) {
    if (seen.has(request.id)) continue;
    seen.add(request.id);
    const key = groupKey(request);
    groups.set(key, [...(groups.get(key) ?? []), request]);
  }

  const decision: GroupingDecision = { submit: [], direct: [], nextDecisionAtMs: null };
  const wakeAt = (ms: number) => {
    decision.nextDecisionAtMs = decision.nextDecisionAtMs === null ? ms : Math.min(decision.nextDecisionAtMs, ms);
  };

  for (const requests of groups.values()) {
    const { provider, model } = requests[0] as WaitingRequest;
    const limits = limitsFor(provider, model);
    if (!limits) {
      for (const request of requests) decision.direct.push({ request, reason: 'no-interface' });
      continue;
    }
    const late = (r: WaitingRequest) => nowMs >= r.deadlineMs - limits.directMarginMs;
    const { chunks, tooLarge } = pack([...requests].sort(oldestFirst), limits);
    for (const request of tooLarge) decision.direct.push({ request, reason: 'too-large' });
    for (const [index, chunk] of chunks.entries()) {
      const closed = index < chunks.length - 1;
      const oldest = (chunk[0] as WaitingRequest).waitingSinceMs;
      const aged = nowMs >= oldest + limits.maxWaitMs;
      if (chunk.length >= limits.minRequests && (closed || aged)) {
        // A late request is called now rather than expired from the batch by the next pass, unless the batch needs
        // it to reach the provider's minimum (Bedrock's): then it goes too, and the others get the batch price.
        const onTime = chunk.filter((r) => !late(r));
        const batched = onTime.length === 0 ? [] : onTime.length >= limits.minRequests ? onTime : chunk;
        for (const request of chunk) {
          if (!batched.includes(request)) decision.direct.push({ request, reason: 'deadline' });
        }
        if (batched.length > 0) {
          decision.submit.push({ provider, model, requests: batched, reason: closed ? 'full' : 'aged' });
        }
        continue;
      }
      // Still waiting: for its age limit, or (under the minimum) for company until a deadline comes too close.
      const stay: WaitingRequest[] = [];
      for (const request of chunk) {
        if (chunk.length < limits.minRequests && late(request)) decision.direct.push({ request, reason: 'deadline' });
        else stay.push(request);
      }
      if (stay.length === 0) continue;
      if (stay.length >= limits.minRequests) wakeAt(oldest + limits.maxWaitMs);
      else wakeAt(Math.min(...stay.map((r) => r.deadlineMs - limits.directMarginMs)));
    }
  }
  return decision;
}
