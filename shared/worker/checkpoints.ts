/**
 * A chunked run's checkpoints as the worker keeps them (stored by shared/store/chunks.ts): what they add up to, which
 * pages they leave, and the writer that stores finished chunks in waves.
 * Not to undo:
 * - One transaction per wave: a chunk that finishes while a write is in flight waits for the next write, with every
 *   other chunk that finished meanwhile. A run whose chunks all answer at once writes two or three transactions, not
 *   one per chunk (each on the same run item, which made them conflict and retry).
 * - A chunk's `afterChunk` (the crash seam; a group's look at its run) runs only after its own checkpoint's write.
 */
import type { Attempt } from '../contract.js';
import type { Micros } from '../money.js';
import type { PageRange } from '../planning/chunks.js';
import { type ChunkCheckpoint, saveCheckpoints } from '../store/chunks.js';

/** At most this many failed or skipped attempts are reported (a summary of a long run's attempts, not a log). */
const MAX_REPORTED_FAILURES = 100;

/** What chunks used: every attempt, request and cost, and the billable units of the answered ones. */
export interface Totals {
  attempts: Attempt[];
  requests: number;
  costMicros: Micros;
  billableUnits: number;
}

/** Nothing used yet. */
export function noTotals(): Totals {
  return { attempts: [], requests: 0, costMicros: 0, billableUnits: 0 };
}

/** Adds `more` to `into` (attempts in order). */
export function addTo(into: Totals, more: Totals): Totals {
  into.attempts.push(...more.attempts);
  into.requests += more.requests;
  into.costMicros += more.costMicros;
  into.billableUnits += more.billableUnits;
  return into;
}

/** What checkpointed chunks used. */
export function totalsOf(checkpoints: readonly ChunkCheckpoint[]): Totals {
  const totals = noTotals();
  for (const c of checkpoints) {
    addTo(totals, {
      attempts: c.attempts,
      requests: c.requests,
      costMicros: c.costMicros,
      billableUnits: c.output.billableUnits,
    });
  }
  return totals;
}

/** Failed and skipped attempts in order (at most MAX_REPORTED_FAILURES), then one success per provider and step. */
export function summariseAttempts(attempts: readonly Attempt[]): Attempt[] {
  const failures = attempts.filter((a) => a.outcome !== 'succeeded').slice(0, MAX_REPORTED_FAILURES);
  const successes = new Map<string, Attempt>();
  for (const a of attempts.filter((x) => x.outcome === 'succeeded')) {
    const key = `${a.provider}/${a.step}`;
    const seen = successes.get(key);
    if (!seen || a.latencyMs > seen.latencyMs) successes.set(key, a);
  }
  return [...failures, ...successes.values()];
}

/** The parts of the planned ranges that no checkpoint covers (a split chunk may be covered in pieces). */
export function pagesLeft(planned: readonly PageRange[], done: readonly PageRange[]): PageRange[] {
  const covered = new Set<number>();
  for (const range of done) for (let page = range.first; page <= range.last; page++) covered.add(page);
  const left: PageRange[] = [];
  for (const range of planned) {
    let first: number | undefined;
    for (let page = range.first; page <= range.last + 1; page++) {
      const open = page <= range.last && !covered.has(page);
      if (open && first === undefined) first = page;
      if (!open && first !== undefined) {
        left.push({ first, last: page - 1 });
        first = undefined;
      }
    }
  }
  return left;
}

/**
 * Writes finished chunks' checkpoints in waves, one write at a time. The first error (a write's, or an `afterChunk`
 * throw) is kept in `stopped`: the run then stops starting chunks, but every chunk that finished is still written (its
 * pages were paid for: a redelivery must not ask them again), as each chunk's own write was before waves.
 */
export class CheckpointWriter {
  private waiting: ChunkCheckpoint[] = [];
  private writing: Promise<void> | undefined;
  /** The first error of a write or of `afterChunk`. */
  stopped: unknown;

  constructor(
    private readonly run: { jobId: string; expiresAtEpoch: number },
    private readonly afterChunk?: () => void | Promise<void>,
  ) {}

  /** Queues a finished chunk's checkpoint: written with the next wave. */
  add(checkpoint: ChunkCheckpoint): void {
    this.waiting.push(checkpoint);
    this.writing ??= this.writeWaves().finally(() => {
      this.writing = undefined;
    });
  }

  /** Resolves once every checkpoint added is written (or its write failed). */
  async done(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private async writeWaves(): Promise<void> {
    while (this.waiting.length > 0) {
      const wave = this.waiting;
      this.waiting = [];
      try {
        await saveCheckpoints(this.run, wave);
      } catch (error: unknown) {
        this.stopped ??= error;
        continue;
      }
      for (const _ of wave) {
        try {
          await this.afterChunk?.();
        } catch (error: unknown) {
          this.stopped ??= error;
        }
      }
    }
  }
}
