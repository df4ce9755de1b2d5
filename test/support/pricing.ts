/**
 * Expected amounts computed from the pricing table (shared/pricing/pricing.json) with the contract's arithmetic, not
 * with the service's own functions: the client's price is cost x (1 + marginPct/100), rounded up to the micro-dollar.
 * Tests use these instead of literals so a price change in the data does not need a test change.
 */
import raw from '../../shared/pricing/pricing.json' with { type: 'json' };

/** What one OCR'd page costs the service, in micro-dollars. */
export const OCR_PAGE_COST_MICROS = Math.round(raw.providers.local.ocrPageUsd * 1_000_000);

/** The client's price for a cost in micros. */
export function priceMicros(costMicros: number): number {
  return Math.ceil(costMicros * (1 + raw.marginPct / 100) - 1e-9);
}

/** The estimate (hold) for a file of `pages` pages planned on local OCR, in micros. */
export function estimateMicros(pages: number): number {
  return priceMicros(pages * OCR_PAGE_COST_MICROS);
}

/** The same in US dollars, as the API shows it. */
export function estimateUsd(pages: number): number {
  return estimateMicros(pages) / 1_000_000;
}

/** What local reads of one text-layer page cost the service, in micro-dollars. */
export const TEXT_LAYER_PAGE_COST_MICROS = Math.round(raw.providers.local.textLayerPageUsd * 1_000_000);

/** The estimate (hold) for a PDF of `pages` pages that most likely has a text layer, planned on local, in micros. */
export function textLayerEstimateMicros(pages: number): number {
  return priceMicros(pages * TEXT_LAYER_PAGE_COST_MICROS);
}

/** The same in US dollars, as the API shows it. */
export function textLayerEstimateUsd(pages: number): number {
  return textLayerEstimateMicros(pages) / 1_000_000;
}
