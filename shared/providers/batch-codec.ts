/**
 * What a provider's batch interface needs beside its synchronous adapter (contract v1.2 §4): a codec that turns one
 * attempt into a batch line and a line's answer back into the adapter's output (each provider's `batch.ts`, built on
 * its adapter's own request and answer code), and the batch API itself (submit, poll, cancel). The batch lane
 * (shared/batching/, shared/worker/batch-lane.ts) is written against these alone.
 * Not to undo: `parse` prices the answer at the provider's list price, as the adapter does; the batch discount is
 * applied once, by the lane (batch-terms.ts `discounted`), so that estimate and settlement apply it the same way.
 */
import { type FailureKind, ProviderFailure, type ProviderId } from '../task.js';
import type { ProviderInput, ProviderOutput } from './types.js';

/** One request of a batch: the model it is for and the body the provider's batch line carries. */
export interface BatchLine {
  model: string;
  body: Record<string, unknown>;
}

export interface BatchCodec {
  readonly id: ProviderId;
  /** The request one attempt sends, as a batch line (throws ProviderFailure when the input is refused unsent). */
  line(input: ProviderInput, options: { maxCostMicros?: number; env?: NodeJS.ProcessEnv }): Promise<BatchLine>;
  /** A line's answer (the provider's response body) as the adapter's output, at list price; throws ProviderFailure. */
  parse(body: unknown, input: ProviderInput, options?: { env?: NodeJS.ProcessEnv }): Promise<ProviderOutput>;
}

/** What became of one line of a batch that ended. */
export type BatchItemResult =
  | { kind: 'answer'; body: unknown }
  | { kind: 'failed'; failure: FailureKind; message: string }
  | { kind: 'expired' };

/** A provider's batch API. */
export interface BatchApi {
  readonly id: ProviderId;
  /** Submits the lines as one batch of `model`; answers the provider's reference to poll. */
  submit(model: string, lines: ReadonlyArray<{ customId: string; body: Record<string, unknown> }>): Promise<string>;
  /**
   * The batch's results by request id once it ended (a line missing from them expired), or undefined while it runs.
   * `requestIds` are the ids the batch was submitted with, for an API whose own ids cannot carry them (Anthropic's).
   */
  poll(ref: string, requestIds: readonly string[]): Promise<Map<string, BatchItemResult> | undefined>;
  /**
   * Asks the provider to stop a running batch: its lines not yet run are never run (nor billed); the ones already
   * answered still are. Resolves once the provider accepted; the batch then ends on its own and is polled as before.
   * Throws when refused (the batch already ended, is unknown, an HTTP error).
   */
  cancel(ref: string): Promise<void>;
}

/** A model's prices for a batch line or answer: a model with none cannot be priced, so its attempt fails (client). */
export function batchPrices<P>(provider: ProviderId, model: string, prices: P | undefined): P {
  if (!prices)
    throw new ProviderFailure('client', `${provider}: model "${model}" has no prices in ${provider}/pricing.json`);
  return prices;
}
