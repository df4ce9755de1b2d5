/**
 * The worker's core for one run queue message: idempotent by jobId. A run that is already final is left alone
 * (duplicate delivery). A run split into groups has its own message send them, and each group's message runs its
 * group (./fanout.ts); any other delivery claims the run, executes it on the path its plan takes (./execute.ts: a
 * packet, page chunks or one pass), and settles the outcome (./settle.ts). The group whose count
 * is the last goes on here as the run's own delivery: it merges every chunk from its checkpoint and settles.
 * Not to undo: a claimed run is held for a short lease its heartbeat renews (./heartbeat.ts); a delivery that loses
 * it stops and settles nothing. Unexpected infrastructure errors are rethrown so SQS redelivers, except on the last
 * allowed delivery, where the run is failed and refunded instead of being left queued behind a DLQ (./delivery.ts).
 */
import { BatchParked } from '../batching/parked.js';
import { log } from '../log.js';
import type { Settlement } from '../store/ledger.js';
import { claimRun, getRun, parkRun, type RunRecord, releaseClaim, renewClaim } from '../store/runs.js';
import {
  afterFailure,
  held,
  keepLease,
  newLease,
  type ProcessOptions,
  type ProcessResult,
  SETTLE_RESERVE_MS,
} from './delivery.js';
import { executeRun } from './execute.js';
import { deliverGroup, sendGroups } from './fanout.js';
import type { Heartbeat } from './heartbeat.js';
import { failRun, settle } from './settle.js';

export type { Held, ProcessOptions, ProcessResult } from './delivery.js';

export async function processRun(jobId: string, options: ProcessOptions): Promise<ProcessResult> {
  const run = await getRun(jobId);
  if (!run) {
    log.warn('message for unknown run; dropping', { jobId });
    return 'missing';
  }
  if (run.status !== 'queued') return 'already-final';
  if (options.group === undefined) return deliverRun(run, options);
  const started = Date.now();
  const deadlineMs = started + options.remainingMs - SETTLE_RESERVE_MS;
  const outcome = await deliverGroup(run, options.group, { ...options, deadlineMs });
  if (outcome !== 'finish') return outcome;
  // Every group is counted: this delivery merges the checkpoints and settles, as the run's own (re)delivery would.
  const { group: _, ...rest } = options;
  const counted = await getRun(jobId);
  if (counted?.status !== 'queued') return 'already-final';
  return deliverRun(counted, { ...rest, remainingMs: options.remainingMs - (Date.now() - started) });
}

/**
 * A delivery of the run's own message: for a run split into groups, sends them (./fanout.ts) until every group is
 * counted; otherwise the run claimed, executed under its lease's heartbeat, and settled.
 */
async function deliverRun(run: RunRecord, options: ProcessOptions): Promise<ProcessResult> {
  const { jobId } = run;
  const lease = newLease(options);
  let heartbeat: Heartbeat | undefined;
  // What the run came to, once it has: a failure after it (writing the settlement) still reports its attempts.
  let executed: Settlement | undefined;
  try {
    const sent = await sendGroups(run, options.receiveCount);
    if (sent !== undefined) return sent;
    const claim = await claimRun(jobId, {
      leaseUntil: lease.until,
      holder: lease.holder,
      receiveCount: options.receiveCount,
    });
    if (claim.state === 'final') return 'already-final';
    if (claim.state === 'leased') return held(claim.lease);
    heartbeat = keepLease(lease, options, (until) => renewClaim(jobId, lease.holder, until), { jobId });
    try {
      executed = await executeRun(run, { ...options, guard: heartbeat.guard });
    } catch (error: unknown) {
      if (!(error instanceof BatchParked)) throw error;
      await heartbeat.stop();
      await parkRun(jobId, lease.holder);
      return 'batched';
    }
    // Nothing is renewed once the run may be settled; a lease lost meanwhile settles nothing (its new holder does).
    await heartbeat.stop();
    heartbeat.check();
    return await settle(run, executed, options);
  } catch (error: unknown) {
    return await afterFailure(error, {
      heartbeat,
      options,
      subject: { jobId },
      release: () => releaseClaim(jobId, lease.holder),
      giveUp: () => failRun(run, executed?.attempts ?? []),
    });
  }
}
