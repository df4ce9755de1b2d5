/**
 * Fan-out of a run larger than one worker invocation should carry (contract v1.1 §2). A chunked PDF run of more than
 * SERVICE_FANOUT_PAGES pages is split into groups of whole chunks (shared/planning/chunks.ts planFanout). The run's
 * own message records the split on the run and sends one message per group to the run queue, then returns; any
 * worker invocation runs a group's chunks (./chunked.ts, `only` its pages) with their checkpoints as a whole run
 * would, and counts the group done on the run (shared/store/groups.ts). The count that reaches the number of groups
 * hands the run back to ./process-run.ts, which merges every chunk from its checkpoint and settles, as a redelivered
 * run does.
 * Not to undo:
 * - Money is the run's, never a group's: one hold (at creation), one settlement. A group spends within its share of
 *   the run's spend limit (its chunks' reservations over the run's), so the groups together never pass the limit.
 * - A group is claimed before a provider is asked and counted once, so a duplicate or redelivered group message asks
 *   nothing twice; a group whose pages fail, or whose last delivery fails, fails the run, and the others then stop.
 *   Its lease is short and renewed by a heartbeat (./heartbeat.ts): a group whose invocation died is taken up again
 *   after one lease, from its checkpoints; one whose lease was taken over stops asking and settles nothing.
 * Why and the sequence: docs/decisions.md#long-documents-run-in-page-chunks.
 */
import { config } from '../config.js';
import { log } from '../log.js';
import type { Micros } from '../money.js';
import { chunkRanges, type FanoutPlan, groupRange, type PageRange, planFanout } from '../planning/chunks.js';
import { enqueueGroups } from '../runs/run-message.js';
import { type ChunkCheckpoint, listCheckpoints } from '../store/chunks.js';
import {
  allGroupsCounted,
  claimGroup,
  countDelivery,
  countGroup,
  isQueued,
  recordFanout,
  releaseGroup,
  renewGroup,
} from '../store/groups.js';
import { PROCESSING_FAILED, type Settlement } from '../store/ledger.js';
import { leaseOf, type RunRecord } from '../store/runs.js';
import {
  type ChunkedOutcome,
  chunkedSettlement,
  chunkReservation,
  executeChunked,
  summariseAttempts,
} from './chunked.js';
import { held, keepLease, newLease, type ProcessOptions, type ProcessResult } from './delivery.js';
import { type Heartbeat, LeaseLost } from './heartbeat.js';
import { pooledAdapters } from './pool.js';
import { objectUnavailable, readObject } from './read-object.js';

/** A group looks whether its run is still queued at most this often (after a checkpoint): a failed run stops it. */
const LOOK_EVERY_MS = 2_000;

/** Thrown inside a group's chunks when the run became final meanwhile: the group stops starting chunks. */
class RunFinal extends Error {
  constructor() {
    super('the run is final; the group stops');
    this.name = 'RunFinal';
  }
}

/** The run's fan-out: as recorded, else as SERVICE_FANOUT_PAGES splits a chunked PDF run; undefined: one invocation. */
export function fanoutOf(run: RunRecord, fanoutPages: number = config.fanoutPages): FanoutPlan | undefined {
  if (run.fanout) return run.fanout;
  if (run.chunkPages === undefined || run.file.kind !== 'pdf') return undefined;
  return planFanout(run.file.pages, run.chunkPages, fanoutPages);
}

/** Whether the run's own message fans the run out (true until every group is counted; then it merges and settles). */
export function fansOut(run: RunRecord): boolean {
  return fanoutOf(run) !== undefined && !allGroupsCounted(run);
}

/**
 * The groups whose messages the run's message sends: every group neither counted nor held by a live claim. A
 * redelivered run message (a crash while sending, or the reconciler's resend of a silent run) sends again the groups
 * that may have lost theirs; a duplicate of a message still queued only stands back when it arrives.
 */
export function groupsToSend(run: Pick<RunRecord, 'fanout' | 'groups'>, now = Date.now()): number[] {
  const plan = run.fanout;
  if (!plan) return [];
  const send: number[] = [];
  for (let group = 0; group < plan.groups; group++) {
    const entry = run.groups?.[String(group)];
    if (entry?.doneAt !== undefined) continue;
    if (entry?.leaseUntil !== undefined && entry.leaseUntil > now) continue;
    send.push(group);
  }
  return send;
}

/**
 * A group's share of the run's spend limit: `capMicros` in the proportion of its chunks' reservations (their primary
 * paths) to the whole run's, by pages when nothing is reserved. The shares never add up to more than the limit.
 */
export function groupCapMicros(run: RunRecord, range: PageRange, capMicros: Micros): Micros {
  const chunks = chunkRanges(run.file.pages, run.chunkPages ?? run.file.pages);
  let all = 0;
  let mine = 0;
  for (const chunk of chunks) {
    const reserved = chunkReservation(run, chunk);
    all += reserved;
    if (chunk.first >= range.first && chunk.last <= range.last) mine += reserved;
  }
  if (all <= 0) return Math.floor((capMicros * (range.last - range.first + 1)) / Math.max(1, run.file.pages));
  return Math.floor((capMicros * mine) / all);
}

/**
 * The run's own message for a run that fans out: counts the delivery, records the split (once) and sends the groups'
 * messages. Asks no provider and claims nothing: a duplicate does the same and only sends duplicates.
 */
export async function fanOut(run: RunRecord, receiveCount: number): Promise<ProcessResult> {
  const plan = fanoutOf(run);
  if (!plan) throw new Error(`run ${run.jobId} does not fan out`);
  if (!(await countDelivery(run.jobId, receiveCount))) return 'already-final';
  // A delivery holds the whole run (one that began before the run was fanned out, or before SERVICE_FANOUT_PAGES was
  // lowered): groups beside it would ask for its pages too. Handed back, as any leased delivery is.
  if (run.leaseUntil !== undefined && run.leaseUntil > Date.now()) return held(leaseOf(run));
  const current = run.fanout ? run : await recordFanout(run.jobId, plan);
  if (current?.status !== 'queued') return 'already-final';
  const groups = groupsToSend(current);
  await enqueueGroups(run.jobId, groups);
  log.info('run fanned out', { jobId: run.jobId, groups: current.fanout?.groups, sent: groups.length });
  return 'fanned-out';
}

export interface GroupOptions extends ProcessOptions {
  /** When the group must stop starting chunks (the invocation's deadline less the settlement's reserve). */
  deadlineMs: number;
  /** Writes a settlement the way a whole run's is written (./process-run.ts): a group that fails the run uses it. */
  settle: (run: RunRecord, settlement: Settlement) => Promise<ProcessResult>;
}

/**
 * One delivery of a group message. `finish`: every group is counted and the run is still queued, so this delivery
 * merges and settles it (./process-run.ts); anything else is this delivery's answer. Throws to be redelivered, except
 * on the last allowed delivery, which fails the run. The group is held for a lease its heartbeat renews, as a run is.
 */
export async function processGroup(
  run: RunRecord,
  group: number,
  options: GroupOptions,
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
  const heartbeat = keepLease(lease, options, (until) => renewGroup(jobId, group, lease.holder, until), {
    jobId,
    group,
  });
  try {
    return await runGroup(
      run,
      run.fanout,
      group,
      { ...options, adapters: heartbeat.guard(options.adapters) },
      heartbeat,
    );
  } catch (error: unknown) {
    await heartbeat.stop();
    if (error instanceof RunFinal) return 'already-final';
    if (error instanceof LeaseLost || heartbeat.lost) {
      log.warn('lost the lease on a group while working; its new holder finishes it', { jobId, group });
      return 'lease-lost';
    }
    if (options.receiveCount < options.maxReceiveCount) {
      await releaseGroup(jobId, group, lease.holder);
      throw error;
    }
    // As a whole run's last delivery: failed and refunded, once (the settlement's conditions), whatever the others do.
    log.error('a group failed on its last delivery; failing the run and refunding', { jobId, group, error });
    return options.settle(run, { status: 'failed', error: PROCESSING_FAILED, attempts: [] });
  } finally {
    await heartbeat.stop();
  }
}

async function runGroup(
  run: RunRecord,
  plan: FanoutPlan,
  group: number,
  options: GroupOptions,
  heartbeat: Heartbeat,
): Promise<ProcessResult | 'finish'> {
  const range = groupRange(run.file.pages, plan, group);
  const bytes = await readObject(run);
  if (typeof bytes === 'string') return settleHeld(heartbeat, () => options.settle(run, objectUnavailable(bytes)));
  // The first checkpoint looks, then at most every LOOK_EVERY_MS.
  let lookedAt = 0;
  const outcome = await executeChunked({
    run,
    bytes,
    adapters: pooledAdapters(options.adapters, config.providerConcurrency),
    capMicros: groupCapMicros(run, range, Math.floor(run.estimateMicros * config.maxOverrunRatio)),
    deadlineMs: options.deadlineMs,
    concurrency: config.runConcurrency,
    only: range,
    afterChunk: async () => {
      options.fault?.('after-chunk', run);
      heartbeat.check();
      if (Date.now() - lookedAt < LOOK_EVERY_MS) return;
      lookedAt = Date.now();
      if (!(await isQueued(run.jobId))) throw new RunFinal();
    },
  });
  if (outcome.status === 'failed') {
    // A page no provider could answer fails the run, as in one invocation: settled now, its usage every group's.
    log.warn('a group failed the run', { jobId: run.jobId, group, reason: outcome.reason, page: outcome.page });
    const others = (await listCheckpoints(run.jobId)).filter((c) => c.first < range.first || c.first > range.last);
    return settleHeld(heartbeat, () => options.settle(run, chunkedSettlement(run, withCheckpoints(outcome, others))));
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
async function settleHeld(heartbeat: Heartbeat, settle: () => Promise<ProcessResult>): Promise<ProcessResult> {
  await heartbeat.stop();
  heartbeat.check();
  return settle();
}

/** A group's outcome with the usage and attempts of other groups' checkpoints (a failed run reports all it used). */
function withCheckpoints(outcome: ChunkedOutcome, checkpoints: readonly ChunkCheckpoint[]): ChunkedOutcome {
  return {
    ...outcome,
    attempts: summariseAttempts([...outcome.attempts, ...checkpoints.flatMap((c) => c.attempts)]),
    requests: outcome.requests + checkpoints.reduce((sum, c) => sum + c.requests, 0),
    costMicros: outcome.costMicros + checkpoints.reduce((sum, c) => sum + c.costMicros, 0),
    billableUnits: outcome.billableUnits + checkpoints.reduce((sum, c) => sum + c.output.billableUnits, 0),
  };
}
