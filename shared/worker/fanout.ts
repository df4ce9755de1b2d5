/**
 * Fan-out of a run larger than one worker invocation should carry (contract v1.1 §2). A chunked PDF run of more than
 * SERVICE_FANOUT_PAGES pages is split into groups of whole chunks (shared/planning/chunks.ts planFanout). The run's
 * own message records the split on the run and sends one message per group to the run queue (`sendGroups`), then
 * returns; a group's message claims the group, runs its chunks with their checkpoints as a whole run would
 * (./chunked.ts, `only` its pages) and counts the group done on the run (shared/store/groups.ts): `deliverGroup`. The
 * count that reaches the number of groups answers `finish`: that delivery then merges every chunk from its checkpoint
 * and settles the run, as the run's own redelivery would (./process-run.ts).
 * Not to undo:
 * - Money is the run's, never a group's: one hold (at creation), one settlement. A group spends within its share of
 *   the run's spend limit (planning/reservations.ts), so the groups together never pass the limit.
 * - The run's own message asks no provider and claims nothing: a duplicate does the same and only sends duplicates.
 *   A group is claimed before a provider is asked and counted once, so a duplicate or redelivered group message asks
 *   nothing twice; a group whose pages fail, or whose last delivery fails, fails the run, and the others then stop.
 *   Its lease is short and renewed by a heartbeat (./heartbeat.ts): a group whose invocation died is taken up again
 *   after one lease, from its checkpoints; one whose lease was taken over stops asking and settles nothing.
 * - A batch run's group parks on its own (./batch-lane.ts): its chunks' calls wait in the batch lane, its lease is
 *   given up, and the batcher sends the group's message back once one of them is resolved.
 * Why and the sequence: docs/decisions.md#long-documents-run-in-page-chunks.
 */

import { enqueueGroups } from '../aws/run-message.js';
import { BatchParked } from '../batching/parked.js';
import { config } from '../config.js';
import { log } from '../log.js';
import { fanoutOf, groupRange, type PageRange } from '../planning/chunks.js';
import { listCheckpoints } from '../store/chunks.js';
import {
  allGroupsCounted,
  claimGroup,
  countFanoutDelivery,
  countGroup,
  groupsToSend,
  isQueued,
  parkGroup,
  releaseGroup,
  renewGroup,
} from '../store/groups.js';
import type { Settlement } from '../store/ledger.js';
import { leaseOf, type RunRecord } from '../store/runs.js';
import { adaptersFor } from './batch-lane.js';
import { addTo, summariseAttempts, totalsOf } from './checkpoints.js';
import { type ChunkedOutcome, runChunksOf } from './chunked.js';
import { afterFailure, held, keepLease, newLease, type ProcessOptions, type ProcessResult } from './delivery.js';
import type { Heartbeat } from './heartbeat.js';
import { chunkedSettlement } from './outcome.js';
import { failRun, settle } from './settle.js';

/**
 * The run's own message for a run split into groups (as recorded on it, or as SERVICE_FANOUT_PAGES splits it): counts
 * the delivery and records the split (once; one write) and sends the groups' messages. Undefined when the run is not
 * split, or every group is counted: the delivery then executes the run, or merges its groups' checkpoints, itself
 * (./process-run.ts). Throws to be redelivered (its last delivery fails the run: ./process-run.ts).
 */
export async function sendGroups(run: RunRecord, receiveCount: number): Promise<ProcessResult | undefined> {
  const plan = fanoutOf(run, config.fanoutPages);
  if (!plan || allGroupsCounted(run)) return undefined;
  // A delivery holds the whole run (one that began before the run was fanned out, or before SERVICE_FANOUT_PAGES was
  // lowered): groups beside it would ask for its pages too. Counted, not split, and handed back, as any leased delivery.
  const whole = run.leaseUntil !== undefined && run.leaseUntil > Date.now();
  const current = await countFanoutDelivery(run.jobId, receiveCount, whole ? undefined : plan);
  if (current?.status !== 'queued') return 'already-final';
  if (whole) return held(leaseOf(run));
  const groups = groupsToSend(current);
  await enqueueGroups(run.jobId, groups);
  log.info('run fanned out', { jobId: run.jobId, groups: current.fanout?.groups, sent: groups.length });
  return 'fanned-out';
}

/** A group looks whether its run is still queued at most this often (after a checkpoint): a failed run stops it. */
const LOOK_EVERY_MS = 2_000;

/** Thrown inside a group's chunks when the run became final meanwhile: the group stops starting chunks. */
class RunFinal extends Error {
  constructor() {
    super('the run is final; the group stops');
    this.name = 'RunFinal';
  }
}

/**
 * One delivery of a group message. `finish`: every group is counted and the run is still queued, so this delivery
 * merges and settles it (./process-run.ts); anything else is this delivery's answer. Throws to be redelivered, except
 * on the last allowed delivery, which fails the run. `deadlineMs`: when the group must stop starting chunks.
 */
export async function deliverGroup(
  run: RunRecord,
  group: number,
  options: ProcessOptions & { deadlineMs: number },
): Promise<ProcessResult | 'finish'> {
  const { jobId } = run;
  const lease = newLease(options);
  const claim = await claimGroup(jobId, group, {
    leaseUntil: lease.until,
    holder: lease.holder,
    receiveCount: options.receiveCount,
  });
  if (claim.state === 'final') return 'already-final';
  if (claim.state === 'leased') return held(claim.lease);
  if (claim.state === 'counted') return 'group-done';
  if (claim.state === 'all-counted') return 'finish';
  if (claim.state === 'unknown' || !run.fanout) {
    log.error('message for a group the run does not have; dropping', { jobId, group });
    return 'missing';
  }
  const subject = { jobId, group };
  const heartbeat = keepLease(lease, options, (until) => renewGroup(jobId, group, lease.holder, until), subject);
  const range = groupRange(run.file.pages, run.fanout, group);
  const adapters = heartbeat.guard(adaptersFor(run, options.adapters, group));
  try {
    return await runGroup(run, group, range, { ...options, adapters }, heartbeat);
  } catch (error: unknown) {
    if (error instanceof RunFinal) return 'already-final';
    if (error instanceof BatchParked) {
      await heartbeat.stop();
      await parkGroup(jobId, group, lease.holder);
      return 'batched';
    }
    // As a whole run's last delivery: failed and refunded, once (the settlement's conditions), whatever the others do.
    return await afterFailure(error, {
      heartbeat,
      options,
      subject,
      release: () => releaseGroup(jobId, group, lease.holder),
      giveUp: () => failRun(run),
    });
  } finally {
    await heartbeat.stop();
  }
}

async function runGroup(
  run: RunRecord,
  group: number,
  range: PageRange,
  options: ProcessOptions & { deadlineMs: number },
  heartbeat: Heartbeat,
): Promise<ProcessResult | 'finish'> {
  // The first checkpoint looks, then at most every LOOK_EVERY_MS.
  let lookedAt = 0;
  const ran = await runChunksOf(run, {
    adapters: options.adapters,
    deadlineMs: options.deadlineMs,
    only: range,
    afterChunk: async () => {
      options.fault?.('after-chunk', run);
      heartbeat.check();
      if (Date.now() - lookedAt < LOOK_EVERY_MS) return;
      lookedAt = Date.now();
      if (!(await isQueued(run.jobId))) throw new RunFinal();
    },
  });
  if ('unavailable' in ran) return settleHeld(heartbeat, run, ran.unavailable, options);
  const { outcome } = ran;
  if (outcome.status === 'failed') {
    // A page no provider could answer fails the run, as in one invocation: settled now, its usage every group's.
    log.warn('a group failed the run', { jobId: run.jobId, group, reason: outcome.reason, page: outcome.page });
    const others = (await listCheckpoints(run.jobId)).filter((c) => c.first < range.first || c.first > range.last);
    return settleHeld(heartbeat, run, chunkedSettlement(run, withOthers(outcome, others)), options);
  }
  options.fault?.('after-group', run);
  // The count ends the group's lease: nothing renews it after.
  await heartbeat.stop();
  heartbeat.check();
  const count = await countGroup(run.jobId, group);
  if (count === 'final') return 'already-final';
  if (count === 'more') return 'group-done';
  options.fault?.('after-last-group', run);
  return 'finish';
}

/** Settles only while the lease is still this delivery's (no renewal after it): one that lost it settles nothing. */
async function settleHeld(
  heartbeat: Heartbeat,
  run: RunRecord,
  settlement: Settlement,
  options: ProcessOptions,
): Promise<ProcessResult> {
  await heartbeat.stop();
  heartbeat.check();
  return settle(run, settlement, options);
}

/** A group's outcome with the usage and attempts of other groups' checkpoints (a failed run reports all it used). */
function withOthers(outcome: ChunkedOutcome, others: Parameters<typeof totalsOf>[0]): ChunkedOutcome {
  const all = addTo(addTo(totalsOf([]), outcome), totalsOf(others));
  return { ...outcome, ...all, attempts: summariseAttempts(all.attempts) };
}
