/**
 * One delivery of a run queue message, as the worker's cores see it (./process-run.ts for a run's own message,
 * ./fanout.ts for a fanned-out run's group): what it is given, what it answers, and how long it may hold what it
 * claims.
 */
import type { ProviderAdapter } from '../providers/types.js';
import type { RunRecord } from '../store/runs.js';
import type { ProviderId } from '../task.js';

/** Time kept back from the Lambda deadline to write the settlement. */
export const SETTLE_RESERVE_MS = 5_000;

/**
 * Where the local stack's crash simulation may abort a delivery: before or after the settlement, after a chunk's
 * checkpoint, after a fanned-out group's chunks are done (before it is counted), and after the last group's count
 * (before the merge).
 */
export type FaultPoint = 'before-settle' | 'after-settle' | 'after-chunk' | 'after-group' | 'after-last-group';

export interface ProcessOptions {
  adapters: Partial<Record<ProviderId, ProviderAdapter>>;
  /** Milliseconds the invocation has left (Lambda context). */
  remainingMs: number;
  /** SQS ApproximateReceiveCount of this delivery, and the queue's maxReceiveCount. */
  receiveCount: number;
  maxReceiveCount: number;
  /**
   * The queue's visibility timeout. The claim on the run lasts until the invocation's deadline, but never longer than
   * this: past it SQS itself treats the delivery as abandoned and hands the message out again.
   */
  visibilityTimeoutSeconds: number;
  /** The group a fanned-out run's group message names (./fanout.ts); absent for the run's own message. */
  group?: number;
  /**
   * Crash simulation (the local stack, with fault injection on): throwing aborts the delivery as a crash would. It
   * stays a seam here because only the worker's cores can place a crash between the providers' answer and the
   * settlement.
   */
  fault?: (point: FaultPoint, run: RunRecord) => void;
}

/**
 * `leased`: another delivery is processing the run (or the group) right now; this one did nothing. `fanned-out`: the
 * run's message sent its groups' messages. `group-done`: the group is counted done, and other groups are not.
 */
export type ProcessResult = 'settled' | 'already-final' | 'missing' | 'leased' | 'fanned-out' | 'group-done';

/**
 * How long a delivery may hold its run: its invocation's time left, capped by the visibility timeout less a second
 * (SQS started that clock when it handed the message out, a little before the claim). Deployed, the function's
 * timeout is far below the visibility timeout, so the claim lasts the whole invocation; a local stack with a visibility
 * timeout shorter than its runs (the tests' 3 s) lets a redelivery take over a run that is still being processed.
 */
export function claimMs(options: Pick<ProcessOptions, 'remainingMs' | 'visibilityTimeoutSeconds'>): number {
  return Math.max(0, Math.min(options.remainingMs, options.visibilityTimeoutSeconds * 1000 - 1000));
}
