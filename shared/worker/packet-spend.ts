/**
 * The spend of a packet run (contract-v1.2 §3) across its concurrent calls: every page's classification and every
 * document's extraction is an attempt of ONE run, checked against ONE spend limit (./attempts.ts `SharedSpend`).
 * Not to undo: each call's `SharedSpend` reports the OTHER calls' spend and worst cases, so two calls never both take
 * the same room under the cap (JavaScript runs the check and `started` in one turn).
 */
import type { Micros } from '../money.js';
import type { SharedSpend } from './attempts.js';

export class PacketSpend {
  private spentMicros: Micros;
  private inFlightMicros: Micros = 0;

  /** `spentBefore`: what earlier deliveries of the run spent (its checkpoints' cost), already under the limit. */
  constructor(spentBefore: Micros = 0) {
    this.spentMicros = spentBefore;
  }

  /** What every call of the run has spent so far. */
  get spent(): Micros {
    return this.spentMicros;
  }

  /** The view one call gets of the rest of the run. */
  call(): SharedSpend {
    let mineSpent = 0;
    let mineInFlight = 0;
    return {
      othersMicros: () => this.spentMicros + this.inFlightMicros - mineSpent - mineInFlight,
      started: (bound) => {
        mineInFlight += bound;
        this.inFlightMicros += bound;
      },
      settled: (bound, cost) => {
        mineInFlight -= bound;
        this.inFlightMicros -= bound;
        mineSpent += cost;
        this.spentMicros += cost;
      },
    };
  }
}
