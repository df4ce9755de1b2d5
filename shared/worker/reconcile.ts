/**
 * The reconciler: a scheduled sweep over the runs still queued, so that no run waits forever with the client's money
 * held. It sends again the message of a run that never reached a worker or went silent, and fails and refunds a run
 * whose message died. Failing goes through the worker's own settlement, conditional on the run still being queued, so
 * the money moves once whoever wins. The four gaps it closes: docs/decisions.md#the-reconciler.
 */

import { enqueueRun } from '../aws/run-message.js';
import { dispatchAfterSettle } from '../events/dispatch.js';
import { reconcileSettings, runQueue } from '../infra/resources.js';
import { log } from '../log.js';
import { eventRecord } from '../store/events.js';
import { releaseLeasesOf } from '../store/groups.js';
import { PROCESSING_FAILED, settleRun } from '../store/ledger.js';
import { getRun, listQueuedBefore, markResent, type RunRecord } from '../store/runs.js';

export interface ReconcileOptions {
  /** Seconds after its last message before a never-delivered run is sent again. */
  resendAfterSeconds: number;
  maxResends: number;
  /** Seconds after its last delivery began before a run delivered `maxReceiveCount` times is dead. */
  deadAfterSeconds: number;
  /**
   * Seconds after its last delivery (or resend) before a delivered run whose message may have had retries left is
   * sent again: every retry's visibility timeout plus the dead-letter margin, so its message is surely gone.
   */
  silentAfterSeconds: number;
  /** The queue's maxReceiveCount and message retention. */
  maxReceiveCount: number;
  retentionSeconds: number;
  shards: number;
  pageSize: number;
  /** Most pages read per shard and sweep (the next sweep starts again from the oldest). */
  maxPages: number;
  /**
   * Every lease on a queued run belongs to a process that is gone (the local stack at start: its previous process held
   * them): each is released before the run is looked at, so that the run is sent again and taken up at once.
   */
  holdersGone?: boolean;
}

/** The deployed settings (shared/infra/resources.ts). */
export const DEFAULT_RECONCILE_OPTIONS: ReconcileOptions = {
  resendAfterSeconds: reconcileSettings.resendAfterSeconds,
  maxResends: reconcileSettings.maxResends,
  deadAfterSeconds: runQueue.visibilityTimeoutSeconds + reconcileSettings.deadMarginSeconds,
  silentAfterSeconds:
    runQueue.maxReceiveCount * runQueue.visibilityTimeoutSeconds + reconcileSettings.deadMarginSeconds,
  maxReceiveCount: runQueue.maxReceiveCount,
  retentionSeconds: runQueue.retentionSeconds,
  shards: reconcileSettings.shards,
  pageSize: reconcileSettings.pageSize,
  maxPages: reconcileSettings.maxPages,
};

export type ReconcileAction = 'resend' | 'fail-dead-lettered' | 'fail-expired' | 'wait';

/** When the latest lease on the run (its own, or a group's) ends, epoch ms; undefined when it has none. */
export function latestLeaseEnd(run: Pick<RunRecord, 'leaseUntil' | 'groups'>): number | undefined {
  const ends = [run.leaseUntil, ...Object.values(run.groups ?? {}).map((g) => g.leaseUntil)].filter(
    (end): end is number => end !== undefined,
  );
  return ends.length > 0 ? Math.max(...ends) : undefined;
}

/** What to do with a queued run now (pure: the decision, separately testable from the writes). */
export function decide(run: RunRecord, now: number, options: ReconcileOptions): ReconcileAction {
  const secondsSince = (ms: number | undefined) => (ms === undefined ? 0 : (now - ms) / 1000);
  const at = (iso: string | undefined) => (iso === undefined ? undefined : Date.parse(iso));
  // A delivery holds the run (or one of its groups) and its heartbeat renews the lease: it is alive, whatever its
  // message's receives say. A lease that lapsed unrenewed is a delivery that died.
  const leaseEnd = latestLeaseEnd(run);
  if (leaseEnd !== undefined && leaseEnd > now) return 'wait';
  // A batch run parked in the batch lane is the batcher's until its promised end (it sends the run back); after it,
  // the run is looked at as any other.
  if (run.stage === 'batched' && run.expiresAt !== undefined && now < Date.parse(run.expiresAt)) return 'wait';
  const lastSent = run.resentAt ?? run.createdAt;
  const deliveries = run.deliveries ?? 0;
  // The latest delivery's own receive count: `deliveries` sums every message of the run (resends, duplicates), so it
  // can reach maxReceiveCount while the message that will be redelivered has retries left.
  const lastReceive = run.lastReceiveCount ?? deliveries;
  // The last sign of life: the latest delivery's start, or the end of the latest lease (renewed while it worked).
  const lastAlive = Math.max(at(run.deliveredAt) ?? 0, leaseEnd ?? 0) || undefined;
  if (lastReceive >= options.maxReceiveCount && secondsSince(lastAlive) >= options.deadAfterSeconds) {
    return 'fail-dead-lettered';
  }
  if (secondsSince(at(lastSent)) >= options.retentionSeconds) return 'fail-expired';
  if ((run.resends ?? 0) >= options.maxResends) return 'wait';
  if (deliveries === 0) return secondsSince(at(lastSent)) >= options.resendAfterSeconds ? 'resend' : 'wait';
  const lastHeard = Math.max(at(run.createdAt) ?? 0, at(run.resentAt) ?? 0, lastAlive ?? 0);
  return secondsSince(lastHeard) >= options.silentAfterSeconds ? 'resend' : 'wait';
}

export interface ReconcileReport {
  resent: string[];
  failed: string[];
  /** With `holdersGone`: the runs whose leases were released. */
  released?: string[];
}

/** One sweep over every shard of the `queued` index. */
export async function reconcileRuns(
  options: ReconcileOptions = DEFAULT_RECONCILE_OPTIONS,
  now = new Date(),
): Promise<ReconcileReport> {
  const report: ReconcileReport = { resent: [], failed: [], ...(options.holdersGone ? { released: [] } : {}) };
  /** Runs whose handling threw: left for the next sweep, while this one goes on with the others. */
  const errors: string[] = [];
  // Only runs older than the shortest wait can need anything.
  const horizon = Math.min(options.resendAfterSeconds, options.deadAfterSeconds, options.retentionSeconds);
  const before = new Date(now.getTime() - horizon * 1000).toISOString();
  for (let shard = 0; shard < options.shards; shard++) {
    // Page by page through the whole shard (up to maxPages): runs that only wait (resends used up, a backlog) must
    // not hide newer ones behind them.
    let startKey: Record<string, unknown> | undefined;
    for (let page = 0; page < options.maxPages; page++) {
      const { jobIds, nextKey } = await listQueuedBefore(`q${shard}`, before, options.pageSize, startKey);
      for (const jobId of jobIds) {
        // One run's error (a throttled read, a failed send) must not leave every later run and shard to wait.
        try {
          await reconcileOne(jobId, options, now, report);
        } catch (error: unknown) {
          log.error('reconciling a run failed; the next sweep tries again', { jobId, error });
          errors.push(jobId);
        }
      }
      if (nextKey === undefined) break;
      startKey = nextKey;
    }
  }
  if (report.resent.length > 0 || report.failed.length > 0) log.warn('runs reconciled', { ...report });
  // The invocation fails (the reconcileErrors alarm, lib/monitoring.ts; a scheduled invocation is retried) once
  // every other run has had its turn.
  if (errors.length > 0) {
    const named = errors.slice(0, 10).join(', ');
    throw new Error(`reconcile: ${errors.length} run(s) could not be reconciled (first: ${named})`);
  }
  return report;
}

async function reconcileOne(jobId: string, options: ReconcileOptions, now: Date, report: ReconcileReport) {
  // The index has keys only, and may lag a settlement: the table has the run as it is.
  let run = await getRun(jobId);
  if (run?.status !== 'queued') return;
  if (options.holdersGone && (await releaseLeasesOf(run))) {
    report.released?.push(jobId);
    run = await getRun(jobId);
    if (run?.status !== 'queued') return;
  }
  const action = decide(run, now.getTime(), options);
  if (action === 'resend') {
    if (await resend(run, options, now)) report.resent.push(run.jobId);
  } else if (action !== 'wait') {
    if (await fail(run, action)) report.failed.push(run.jobId);
  }
}

async function resend(run: RunRecord, options: ReconcileOptions, now: Date): Promise<boolean> {
  // Counted first: a crash after the count loses one resend, never sends without limit. Conditional on no delivery
  // since the run was read: a worker that picks the run up meanwhile cancels the resend.
  if (!(await markResent(run.jobId, options.maxResends, now, run.deliveredAt))) return false;
  await enqueueRun(run.jobId);
  return true;
}

/**
 * Fails the run and refunds its hold and hands on its event, as a delivery's last try does, but not through
 * ./settle.ts: that loads calibration learning, whose table the reconciler's function neither has nor may write
 * (test/infra/handler-env.test.ts). A run that never ran teaches nothing; an evaluation it belongs to is finished by
 * the reconciler's own evaluation sweep.
 */
async function fail(run: RunRecord, action: 'fail-dead-lettered' | 'fail-expired'): Promise<boolean> {
  log.error('run stuck in the queue; failing it and refunding the hold', { jobId: run.jobId, reason: action });
  const settledAt = new Date();
  // A queued run has no attempts on record (they are written at settlement, which never happened).
  const settled = await settleRun(run, { status: 'failed', error: PROCESSING_FAILED, attempts: [] }, settledAt);
  if (settled) await dispatchAfterSettle(eventRecord(run, 'failed', settledAt.toISOString()));
  return settled;
}
