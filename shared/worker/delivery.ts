/**
 * One delivery of a run queue message, as the worker's cores see it (./process-run.ts for a run's own message,
 * ./fanout.ts for a fanned-out run's group): what it is given, what it answers, the lease it holds on what it claims
 * (renewed by ./heartbeat.ts), and what a delivery that threw comes to.
 */

import { hideMessage } from '../aws/run-message.js';
import { config } from '../config.js';
import { log } from '../log.js';
import type { ProviderAdapter } from '../providers/types.js';
import type { Lease, RunRecord } from '../store/runs.js';
import type { ProviderId } from '../task.js';
import { type Heartbeat, holderId, LeaseLost, startHeartbeat } from './heartbeat.js';

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
   * The receipt handle of the message this delivery holds: hidden for as long as the lease (./heartbeat.ts). Absent
   * (the benchmark, some tests): nothing is hidden.
   */
  receiptHandle?: string;
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
 * What a delivery did. `fanned-out`: the run's message sent its groups' messages. `group-done`: the group is counted
 * done, and other groups are not. `lease-lost`: another delivery took over the lease while this one worked; it stopped
 * and settled nothing. `batched`: a batch run's attempt waits in the batch lane; the run is parked until the batcher
 * sends it back (./batch-lane.ts). A `Held` answer: another delivery holds the run (or the group) now; this one did nothing.
 */
export type ProcessResult =
  | 'settled'
  | 'already-final'
  | 'missing'
  | 'fanned-out'
  | 'group-done'
  | 'lease-lost'
  | 'batched'
  | Held;

/** Another delivery holds the run (or the group): whose lease, and until when (epoch ms), when known. */
export interface Held {
  outcome: 'leased';
  holder: string | undefined;
  until: number | undefined;
}

export const held = (lease: Lease): Held => ({ outcome: 'leased', holder: lease.holder, until: lease.until });

/** A lease about to be claimed: its holder (this delivery) and when it ends. */
export interface NewLease {
  holder: string;
  leaseMs: number;
  until: Date;
  /** The end of the invocation: the lease never runs past it. */
  endMs: number;
}

/** The lease a delivery claims: SERVICE_LEASE_SECONDS from now, within the invocation's time left. */
export function newLease(options: Pick<ProcessOptions, 'remainingMs'>, now = Date.now()): NewLease {
  const leaseMs = config.leaseSeconds * 1000;
  const endMs = now + Math.max(0, options.remainingMs);
  return { holder: holderId(), leaseMs, until: new Date(Math.min(now + leaseMs, endMs)), endMs };
}

/** Starts the heartbeat of a lease just claimed, hiding the delivery's message for as long (./heartbeat.ts). */
export function keepLease(
  lease: NewLease,
  options: Pick<ProcessOptions, 'receiptHandle'>,
  renew: (until: Date) => Promise<boolean>,
  subject: Record<string, unknown>,
): Heartbeat {
  const { receiptHandle } = options;
  return startHeartbeat({
    leaseMs: lease.leaseMs,
    until: lease.until.getTime(),
    endMs: lease.endMs,
    renew,
    ...(receiptHandle !== undefined ? { hide: (seconds: number) => hideMessage(receiptHandle, seconds) } : {}),
    subject,
  });
}

/**
 * What a delivery whose work threw does: one that lost its lease stops (`lease-lost`: its new holder finishes);
 * before the last allowed delivery it hands its claim back (the redelivery, or a duplicate, may take it at once rather
 * than wait out the lease) and rethrows, so SQS redelivers; the last one gives up (`giveUp`: the run failed and
 * refunded, once).
 */
export async function afterFailure(
  error: unknown,
  delivery: {
    heartbeat: Heartbeat | undefined;
    options: Pick<ProcessOptions, 'receiveCount' | 'maxReceiveCount'>;
    /** What the lease is on, for the log (jobId, group). */
    subject: Record<string, unknown>;
    release: () => Promise<void>;
    giveUp: () => Promise<ProcessResult>;
  },
): Promise<ProcessResult> {
  const { heartbeat, options, subject } = delivery;
  await heartbeat?.stop();
  if (error instanceof LeaseLost || heartbeat?.lost) {
    log.warn('lost the lease while working; its new holder finishes', subject);
    return 'lease-lost';
  }
  if (options.receiveCount < options.maxReceiveCount) {
    if (heartbeat) await delivery.release();
    throw error;
  }
  log.error('failed on its last delivery; failing the run and refunding', { ...subject, error });
  return delivery.giveUp();
}
