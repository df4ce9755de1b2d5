/**
 * The spend of a run whose chunks execute concurrently, against its spend limit: what ended chunks cost, each
 * running chunk's reservation (its primary path's predicted cost, planning/reservations.ts) or, once it went past it,
 * what it spent and has in flight, and the reservation of every chunk not started yet.
 * Not to undo: every attempt of a chunk is checked with all of that (`SharedSpend`, ./attempts.ts), so the hold taken
 * at creation is never exceeded however the chunks interleave; a chunk that ends keeps only what it spent.
 */
import type { Micros } from '../money.js';
import type { PageRange } from '../planning/chunks.js';
import { type ChunkedRunPlan, chunkReservation } from '../planning/reservations.js';
import type { FactorsFor } from '../pricing/calibration.js';
import { priceFor } from '../pricing/pricing.js';
import type { SharedSpend } from './attempts.js';

/** One running chunk's part of the run's spend. */
export interface ChunkSpend {
  readonly reserved: Micros;
  spent: Micros;
  inFlight: Micros;
  /** What the chunk's attempts are told of the rest of the run (./attempts.ts). */
  readonly shared: SharedSpend;
}

export class RunSpend {
  private ended: Micros;
  private queued: Micros = 0;
  private readonly active = new Set<ChunkSpend>();

  /**
   * `endedMicros`: what chunks checkpointed before this delivery cost. `factors`: the tenant's calibration, which the
   * reservations are predicted with (default: the shipped seeds).
   */
  constructor(
    private readonly run: ChunkedRunPlan & { marginPct?: number },
    private readonly capMicros: Micros,
    endedMicros: Micros,
    private readonly factors?: FactorsFor,
  ) {
    this.ended = endedMicros;
  }

  /** What chunks of these pages keep reserved until they end. */
  reservation(...ranges: PageRange[]): Micros {
    return ranges.reduce((sum, range) => sum + chunkReservation(this.run, range, this.factors), 0);
  }

  /** Chunks queued (or queued again) keep their reservation until they start. */
  reserve(...ranges: PageRange[]): void {
    this.queued += this.reservation(...ranges);
  }

  /** A queued chunk starts: its reservation moves from the queue to the chunk. */
  start(range: PageRange): ChunkSpend {
    const reserved = this.reservation(range);
    this.queued -= reserved;
    const chunk: ChunkSpend = {
      reserved,
      spent: 0,
      inFlight: 0,
      shared: {
        othersMicros: () => this.total() - committed(chunk),
        started: (bound) => {
          chunk.inFlight += bound;
        },
        settled: (bound, cost) => {
          chunk.inFlight -= bound;
          chunk.spent += cost;
        },
      },
    };
    this.active.add(chunk);
    return chunk;
  }

  /** The chunk ended: what it spent stays spent, its reservation is released. */
  end(chunk: ChunkSpend): void {
    if (!this.active.delete(chunk)) return;
    this.ended += chunk.spent;
  }

  /** Whether the run stays within its limit if these chunks replaced a running one (what it spent stays spent). */
  fitsInstead(chunk: ChunkSpend, ranges: PageRange[]): boolean {
    const total = this.total() - committed(chunk) + chunk.spent + this.reservation(...ranges);
    return priceFor(total, this.run.marginPct) <= this.capMicros;
  }

  private total(): Micros {
    let sum = this.ended + this.queued;
    for (const chunk of this.active) sum += committed(chunk);
    return sum;
  }
}

/** What a running chunk holds of the run's limit: its reservation, or more once it spent and has in flight more. */
function committed(chunk: ChunkSpend): Micros {
  return Math.max(chunk.reserved, chunk.spent + chunk.inFlight);
}
