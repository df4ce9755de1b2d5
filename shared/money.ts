/**
 * Money is kept as integer micro-dollars (1 USD = 1_000_000 micros) everywhere inside the service, so sums, holds and
 * refunds are exact. The contract exposes dollars rounded to 6 decimals, which is exactly one micro.
 */

/** Integer number of micro-dollars. */
export type Micros = number;

export const MICROS_PER_USD = 1_000_000;

/** Converts a dollar amount to micros, rounding up so an estimate or a price is never understated. */
export function usdToMicrosCeil(usd: number): Micros {
  // The epsilon absorbs binary noise such as 0.1 * 3 = 0.30000000000000004 before rounding up.
  return Math.max(0, Math.ceil(usd * MICROS_PER_USD - 1e-6));
}

/** Converts a dollar amount to micros, rounding to nearest (for amounts the client typed, like maxCostUsd). */
export function usdToMicros(usd: number): Micros {
  return Math.max(0, Math.round(usd * MICROS_PER_USD));
}

/** Converts a dollar amount to micros, rounding down (a client's budget: never more than it allows). */
export function usdToMicrosFloor(usd: number): Micros {
  // The epsilon absorbs binary noise such as 0.000003 * 1e6 = 2.9999999999999996 before rounding down.
  return Math.max(0, Math.floor(usd * MICROS_PER_USD + 1e-6));
}

/** Converts micros to the contract's dollar number (6 decimals, never negative). */
export function microsToUsd(micros: Micros): number {
  return Math.max(0, micros) / MICROS_PER_USD;
}
