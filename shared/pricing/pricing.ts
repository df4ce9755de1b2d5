/**
 * The pricing table (pricing.json, kept as data) parsed and validated once. The margin is the table's unless the
 * deployment sets PRICING_MARGIN_PCT (CDK context `marginPct`): the API (estimates) and the worker (prices) read the
 * same variable, so an estimate and the price settled against it always use one margin.
 */
import { config } from '../config.js';
import { type Micros, usdToMicrosCeil } from '../money.js';
// zod/mini like the contract (see contract.ts): the API handlers that estimate load this module.
import * as z from '../zod.js';
import raw from './pricing.json' with { type: 'json' };

const priceSource = { source: z.string().check(z.minLength(1)), date: z.iso.date() };

const pricingTable = z.object({
  $comment: z.optional(z.string()),
  currency: z.literal('USD'),
  marginPct: z.number().check(z.minimum(0)),
  providers: z.object({
    local: z.object({
      ocrPageUsd: z.number().check(z.positive()),
      textLayerPageUsd: z.number().check(z.positive()),
      ...priceSource,
    }),
  }),
});

export type PricingTable = z.infer<typeof pricingTable>;

const table = pricingTable.parse(raw);

/**
 * The validated pricing table; a malformed pricing.json fails at import, not mid-run. The margin is the configured
 * one (read at first use, like all configuration) or the table's.
 */
export const pricing: PricingTable = {
  ...table,
  get marginPct() {
    return config.marginPct ?? table.marginPct;
  },
};

/**
 * The client's price for a cost: cost plus margin, rounded up to the micro. Integer arithmetic (the margin in basis
 * points): a float product such as 42500 x 1.1 = 46750.000000000007 would round up one micro too many, and an
 * estimate could then no longer cover the price of what it was computed for.
 */
export function priceFor(costMicros: Micros, marginPct: number = pricing.marginPct): Micros {
  const basisPoints = 10_000 + Math.round(marginPct * 100);
  return Math.floor((costMicros * basisPoints + 9_999) / 10_000);
}

/** The largest cost whose price (with the margin) stays within `priceMicros`. */
export function costWithin(priceMicros: Micros, marginPct: number = pricing.marginPct): Micros {
  let cost = Math.floor((priceMicros * 10_000) / (10_000 + Math.round(marginPct * 100)));
  while (cost > 0 && priceFor(cost, marginPct) > priceMicros) cost -= 1;
  while (priceFor(cost + 1, marginPct) <= priceMicros) cost += 1;
  return Math.max(0, cost);
}

/** Cost per unit in micros for the local provider. */
export const localCost = {
  ocrPageMicros: usdToMicrosCeil(pricing.providers.local.ocrPageUsd),
  textLayerPageMicros: usdToMicrosCeil(pricing.providers.local.textLayerPageUsd),
};
