/**
 * The heartbeat of a delivery's lease (contract v1.2 §5). A worker holds the run (or the group) it claimed for a short
 * lease, SERVICE_LEASE_SECONDS, and renews it every third of that while it works, hiding its queue message for as long;
 * a worker that dies stops renewing, so its run is taken up again within one lease and one receive.
 * Not to undo:
 * - A lease found taken by another delivery, or let lapse unrenewed, is lost for good: the delivery then asks no
 *   provider again (`guard`) and settles nothing (`check`); the lease's new holder does the rest. Money stays
 *   exactly-once without this (the settlement's conditions), but the providers would be paid twice.
 * - `stop` waits for a renewal in flight, and none starts after it: nothing is written once the run is settled.
 * Why and the timings: docs/decisions.md#a-lease-per-delivery-renewed-by-a-heartbeat
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { log } from '../log.js';
import type { ProviderAdapter } from '../providers/types.js';
import { ProviderFailure, type ProviderId } from '../task.js';

/** Thrown where a delivery finds it no longer holds its lease: it stops, and settles nothing. */
export class LeaseLost extends Error {
  constructor() {
    super('another delivery holds the lease now; this one stops and settles nothing');
    this.name = 'LeaseLost';
  }
}

/**
 * A delivery's own id, stored as the lease's holder: where it runs (the Lambda log stream to read, or the process) and
 * a random part, so that two deliveries in one process never share a lease.
 */
export function holderId(): string {
  // Set by the Lambda runtime (not service configuration): names the log stream the holder writes to.
  const stream = process.env.AWS_LAMBDA_LOG_STREAM_NAME;
  const where = stream === undefined ? `pid ${process.pid} on ${hostname()}` : `log stream ${stream}`;
  return `${where} #${randomBytes(4).toString('hex')}`;
}

export interface HeartbeatOptions {
  /** How long the lease lasts from each renewal. */
  leaseMs: number;
  /** When the lease the claim took ends (epoch ms). */
  until: number;
  /** The lease never runs past this (epoch ms): the end of the invocation, after which nothing holds it. */
  endMs: number;
  /** Renews the lease to `until`; false when it is no longer this delivery's (taken over, or the run final). */
  renew: (until: Date) => Promise<boolean>;
  /** Hides the delivery's queue message for `seconds` from now (best effort: the lease is what counts). */
  hide?: (seconds: number) => Promise<void>;
  /** What the lease is on, for the log (jobId, group). */
  subject: Record<string, unknown>;
  now?: () => number;
}

export interface Heartbeat {
  /** True once the lease is no longer provably this delivery's: renewal refused, or lapsed unrenewed. */
  readonly lost: boolean;
  /** Throws LeaseLost when the lease is lost. */
  check(): void;
  /** The adapters, each call refused (a failed attempt, no provider asked) once the lease is lost. */
  guard(adapters: Partial<Record<ProviderId, ProviderAdapter>>): Partial<Record<ProviderId, ProviderAdapter>>;
  /** Stops renewing; resolves once no renewal is in flight. */
  stop(): Promise<void>;
}

/** Starts renewing a lease just claimed: its message is hidden at once for the lease, then every third of it. */
export function startHeartbeat(options: HeartbeatOptions): Heartbeat {
  const now = options.now ?? Date.now;
  const everyMs = Math.max(1, Math.floor(options.leaseMs / 3));
  let heldUntil = options.until;
  let taken = false;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const hide = async () => {
    if (!options.hide) return;
    try {
      await options.hide(Math.max(0, Math.ceil((heldUntil - now()) / 1000)));
    } catch (error: unknown) {
      log.warn('could not keep the run message hidden for the lease; it may be delivered again meanwhile', {
        ...options.subject,
        error,
      });
    }
  };

  const beat = async () => {
    const until = Math.min(now() + options.leaseMs, options.endMs);
    try {
      if (!(await options.renew(new Date(until)))) {
        taken = true;
        log.warn('the lease was taken by another delivery: this one stops and settles nothing', options.subject);
        return;
      }
      heldUntil = until;
    } catch (error: unknown) {
      // The lease still runs until heldUntil; past it, `lost` stops the delivery.
      log.warn('could not renew the lease; trying again at the next beat', { ...options.subject, error });
    }
    await hide();
  };

  let inFlight: Promise<void> = hide();
  const schedule = () => {
    if (stopped || taken) return;
    timer = setTimeout(() => {
      inFlight = beat().finally(schedule);
    }, everyMs);
    timer.unref?.();
  };
  schedule();

  const heartbeat: Heartbeat = {
    get lost() {
      return taken || now() >= heldUntil;
    },
    check() {
      if (heartbeat.lost) throw new LeaseLost();
    },
    guard(adapters) {
      const guarded: Partial<Record<ProviderId, ProviderAdapter>> = {};
      for (const [id, adapter] of Object.entries(adapters) as [ProviderId, ProviderAdapter][]) {
        guarded[id] = {
          id,
          invoke: async (input, invokeOptions) => {
            if (heartbeat.lost)
              throw new ProviderFailure('client', 'the lease on the run was lost: no provider is asked');
            return adapter.invoke(input, invokeOptions);
          },
        };
      }
      return guarded;
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await inFlight;
    },
  };
  return heartbeat;
}
