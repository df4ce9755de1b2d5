/**
 * The batcher (contract v1.2 §4): one pass over the batch lane, run on a schedule (functions/batcher.ts; the local
 * stack's timer). In order: polls the provider batches in flight and records each line's answer, failure or expiry
 * (a batch still running near its runs' deadline expires their requests, and is cancelled once nobody waits for it);
 * groups the waiting requests (./groups.ts `decideBatches`) and submits each batch, or releases a request to be
 * called normally (a provider without a batch interface, a deadline too close); sends every run whose request was
 * resolved back to the worker, which finishes it on its normal path (shared/worker/batch-lane.ts).
 *
 * Not to undo:
 * - A request is resolved once (store/batch-requests.ts moves are conditional): a duplicate or repeated poll result
 *   changes nothing, so the run is answered once and its settlement (the worker's, once) is never doubled.
 * - A request is marked `submitting` before its batch is sent and `submitted` with the batch's reference after; a batch
 *   API that refuses puts it back to waiting. A crash between the provider's acceptance and the record leaves it
 *   `submitting`; after batchSettings.submitStaleSeconds it waits again and is sent once more (the first batch's
 *   answer is then never read: at most one extra provider bill, the service's; never a second charge to the client).
 * - A run is promised by its `expiresAt`: a request still in a provider batch when its deadline is
 *   directMarginSeconds away is expired here, and its run falls back (docs/decisions.md, "The batch lane").
 * - A running batch is cancelled only when every one of its requests is resolved for good (a resolved request never
 *   moves again, so no line of it can change anything), once (a conditional mark set before the call; a refused
 *   cancel is logged, not retried); it is polled to its end as before, and its lines are then not read at all.
 */
import { randomUUID } from 'node:crypto';
import { batchSettings } from '../infra/resources.js';
import { log } from '../log.js';
import type { BatchApi, BatchItemResult } from '../providers/batch-codec.js';
import {
  type BatchRecord,
  type BatchRequestItem,
  type BatchRequestState,
  closeItem,
  getBatchRequest,
  listOpen,
  markCancelRequested,
  moveRequest,
  putBatchRecord,
} from '../store/batch-requests.js';
import type { ProviderId } from '../task.js';
import { decideBatches, type LimitsFor, serviceLimits } from './groups.js';
import { batchObjectKey, getJson, putJson } from './objects.js';

export interface BatcherOptions {
  apis: Partial<Record<ProviderId, BatchApi>>;
  /** Sends a run's message (a group's, when given) to the worker (shared/aws/run-message.ts enqueueRun). */
  enqueue: (jobId: string, group?: number) => Promise<void>;
  limits?: LimitsFor;
  now?: () => number;
  /** Crash simulation for tests: throwing aborts the pass there. */
  fault?: (point: 'after-submit' | 'after-record') => void;
}

export interface BatcherReport {
  submitted: number;
  direct: number;
  answered: number;
  failed: number;
  expired: number;
  handedBack: number;
  /** Provider batches nobody waited for any more, whose cancel the provider accepted. */
  cancelled: number;
}

const RESOLVED = { openState: 'resolved' } as const;

/** A request in one of these states is resolved for good: no state move leaves them, so no batch line changes it. */
const FINAL: ReadonlySet<BatchRequestState> = new Set(['answered', 'failed', 'expired', 'direct']);

/** One pass of the batcher. */
export async function runBatcher(options: BatcherOptions): Promise<BatcherReport> {
  const now = options.now ?? Date.now;
  const report: BatcherReport = {
    submitted: 0,
    direct: 0,
    answered: 0,
    failed: 0,
    expired: 0,
    handedBack: 0,
    cancelled: 0,
  };
  await poll(options, now, report);
  await recoverStale(now);
  await submit(options, now, report);
  await handBack(options, report);
  return report;
}

/** Polls every batch in flight; an ended one resolves each of its requests once. */
async function poll(options: BatcherOptions, now: () => number, report: BatcherReport): Promise<void> {
  for (const batch of await listOpen<BatchRecord>('polling', batchSettings.pageSize)) {
    const api = options.apis[batch.provider];
    let results: Map<string, BatchItemResult> | undefined;
    try {
      results = api ? await api.poll(batch.ref, batch.requestIds) : undefined;
    } catch (error: unknown) {
      log.warn('could not poll a provider batch; the next pass tries again', { batch: batch.requestId, error });
      continue;
    }
    if (results === undefined) {
      const expiredNow = await expireNearDeadline(batch, now, report);
      if (expiredNow) await cancelUnwanted(batch, api, expiredNow, now, report);
      continue;
    }
    // A batch the batcher cancelled had every request resolved for good: its lines would change nothing.
    if (batch.cancelRequestedAt === undefined) await recordResults(batch, results, now, report);
    await closeItem(batch.requestId, 'polling');
  }
}

/** Resolves each request of an ended batch by its line, once. */
async function recordResults(
  batch: BatchRecord,
  results: Map<string, BatchItemResult>,
  now: () => number,
  report: BatcherReport,
): Promise<void> {
  for (const requestId of batch.requestIds) {
    const result = results.get(requestId) ?? { kind: 'expired' };
    const at = new Date(now());
    if (result.kind === 'answer') {
      const answerKey = batchObjectKey('answers', requestId);
      await putJson(answerKey, result.body);
      if (await moveRequest(requestId, ['submitted'], { state: 'answered', ...RESOLVED, now: at, set: { answerKey } }))
        report.answered += 1;
    } else {
      const failure =
        result.kind === 'failed'
          ? { kind: result.failure, message: result.message }
          : { kind: 'timeout' as const, message: `${batch.provider}: the batch item expired` };
      const state = result.kind === 'failed' ? 'failed' : 'expired';
      if (await moveRequest(requestId, ['submitted'], { state, ...RESOLVED, now: at, set: { failure } }))
        report[state] += 1;
    }
  }
}

/**
 * A batch still running when a request's run must soon be finished: that request expires (its run falls back).
 * Answers the requests it expired now, or undefined when the deadline is not near yet.
 */
async function expireNearDeadline(
  batch: BatchRecord,
  now: () => number,
  report: BatcherReport,
): Promise<Set<string> | undefined> {
  const margin = batchSettings.directMarginSeconds * 1000;
  if (batch.deadlineMs === undefined || now() < batch.deadlineMs - margin) return undefined;
  const expiredNow = new Set<string>();
  for (const requestId of batch.requestIds) {
    const failure = { kind: 'timeout', message: `${batch.provider}: the batch did not end before the run's deadline` };
    const moved = await moveRequest(requestId, ['submitted'], {
      state: 'expired',
      ...RESOLVED,
      now: new Date(now()),
      set: { failure },
    });
    if (moved) {
      report.expired += 1;
      expiredNow.add(requestId);
    }
  }
  return expiredNow;
}

/**
 * Cancels a running batch nobody waits for any more: every one of its requests resolved for good (`expiredNow`, just
 * expired, or read). A request still waiting, submitting or submitted could yet take one of its answers: the batch is
 * then left alone. Once across passes: the mark is a conditional write set before the call, and a cancel the
 * provider refuses (already ended, unknown, HTTP error) is logged, not asked again. Never fails the pass.
 */
async function cancelUnwanted(
  batch: BatchRecord,
  api: BatchApi | undefined,
  expiredNow: ReadonlySet<string>,
  now: () => number,
  report: BatcherReport,
): Promise<void> {
  if (!api || batch.cancelRequestedAt !== undefined) return;
  try {
    for (const requestId of batch.requestIds) {
      if (expiredNow.has(requestId)) continue;
      const request = await getBatchRequest(requestId);
      // A request gone from the table (past its expiry) waits for nothing.
      if (request && !FINAL.has(request.state)) return;
    }
    if (!(await markCancelRequested(batch.requestId, new Date(now())))) return;
  } catch (error: unknown) {
    log.warn('could not decide whether to cancel a provider batch; the next pass tries again', {
      batch: batch.requestId,
      error,
    });
    return;
  }
  try {
    await api.cancel(batch.ref);
    report.cancelled += 1;
    log.info('cancelled a provider batch nobody waits for', { batch: batch.requestId });
  } catch (error: unknown) {
    log.warn('a provider batch nobody waits for could not be cancelled; it runs to its end, not asked again', {
      batch: batch.requestId,
      error,
    });
  }
}

/** Requests a crashed pass left `submitting` (no batch recorded) wait again. */
async function recoverStale(now: () => number): Promise<void> {
  const staleBefore = new Date(now() - batchSettings.submitStaleSeconds * 1000).toISOString();
  for (const item of await listOpen('submitting', batchSettings.pageSize)) {
    if (item.since > staleBefore) continue;
    log.warn('a request marked submitting was never recorded in a batch; it waits again', { id: item.requestId });
    await moveRequest(item.requestId, ['submitting'], { state: 'waiting', openState: 'waiting', now: new Date(now()) });
  }
}

/** Groups the waiting requests: submits each batch due, releases each request to be called normally. */
async function submit(options: BatcherOptions, now: () => number, report: BatcherReport): Promise<void> {
  const waiting = await listOpen('waiting', batchSettings.pageSize);
  const byId = new Map(waiting.map((item) => [item.requestId, item]));
  const limits = options.limits ?? serviceLimits();
  // A request whose provider has no batch interface (or no batch API in this build) is released: called normally.
  const limitsFor: LimitsFor = (provider, model) =>
    options.apis[provider] && !model.endsWith(':direct') ? limits(provider, model) : undefined;
  const decision = decideBatches(
    waiting.map((item) => ({
      id: item.requestId,
      provider: item.provider,
      model: item.viaInterface ? item.model : `${item.provider}:direct`,
      bytes: item.bytes,
      waitingSinceMs: item.waitingSinceMs,
      deadlineMs: item.deadlineMs,
    })),
    limitsFor,
    now(),
  );
  for (const { request } of decision.direct) {
    const moved = await moveRequest(request.id, ['waiting'], { state: 'direct', ...RESOLVED, now: new Date(now()) });
    if (moved) report.direct += 1;
  }
  for (const batch of decision.submit) {
    const api = options.apis[batch.provider];
    if (!api) continue;
    const batchKey = randomUUID();
    const mine: BatchRequestItem[] = [];
    for (const request of batch.requests) {
      const at = new Date(now());
      if (
        await moveRequest(request.id, ['waiting'], {
          state: 'submitting',
          openState: 'submitting',
          now: at,
          set: { batchId: batchKey },
        })
      )
        mine.push(byId.get(request.id) as BatchRequestItem);
    }
    if (mine.length === 0) continue;
    let ref: string;
    try {
      const lines = await Promise.all(
        mine.map(async (item) => ({
          customId: item.requestId,
          body: await getJson<Record<string, unknown>>(item.lineKey as string),
        })),
      );
      ref = await api.submit(batch.model, lines);
    } catch (error: unknown) {
      log.warn('a provider batch could not be submitted; its requests wait again', { provider: batch.provider, error });
      for (const item of mine)
        await moveRequest(item.requestId, ['submitting'], {
          state: 'waiting',
          openState: 'waiting',
          now: new Date(now()),
        });
      continue;
    }
    options.fault?.('after-submit');
    const record: BatchRecord = {
      requestId: `batch#${batch.provider}#${batchKey}`,
      provider: batch.provider,
      model: batch.model,
      ref,
      requestIds: mine.map((item) => item.requestId),
      openState: 'polling',
      since: new Date(now()).toISOString(),
      deadlineMs: Math.min(...mine.map((item) => item.deadlineMs)),
      expiresAtEpoch: Math.max(...mine.map((item) => item.expiresAtEpoch)),
    };
    await putBatchRecord(record);
    options.fault?.('after-record');
    for (const item of mine) {
      await moveRequest(item.requestId, ['submitting'], {
        state: 'submitted',
        openState: 'submitted',
        now: new Date(now()),
        set: { batchId: record.requestId },
      });
    }
    report.submitted += mine.length;
  }
}

/**
 * Sends each run with a resolved request back to the worker (once per run, or per fanned-out group, and pass), then
 * closes the requests.
 */
async function handBack(options: BatcherOptions, report: BatcherReport): Promise<void> {
  const resolved = await listOpen('resolved', batchSettings.pageSize);
  const messages = new Map(resolved.map((item) => [`${item.jobId}#${item.group ?? ''}`, item]));
  for (const { jobId, group } of messages.values()) await options.enqueue(jobId, group);
  const jobIds = new Set(resolved.map((item) => item.jobId));
  // Closed after the send: a crash between them sends the run again next pass (the worker is idempotent by run).
  for (const item of resolved) await closeItem(item.requestId, 'resolved');
  report.handedBack = jobIds.size;
}
