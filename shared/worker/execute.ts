/**
 * Executes a plan: tries candidates in order, each with a deadline carved from the Lambda's remaining time, and
 * falls back on any failure. A candidate whose worst-case price would push the run past its cap (the hold, or
 * maxCostUsd when lower) is skipped. Every attempt is recorded with provider, step, outcome and latency.
 */
import type { Attempt } from '../contract.js';
import { log } from '../log.js';
import type { Micros } from '../money.js';
import { priceFor } from '../pricing/pricing.js';
import { catalog } from '../providers/catalog.js';
import type { ProviderAdapter, ProviderInput, ProviderOutput } from '../providers/types.js';
import { ProviderFailure, type ProviderId, type Step } from '../task.js';

export interface ExecuteInput {
  candidates: readonly ProviderId[];
  adapters: Partial<Record<ProviderId, ProviderAdapter>>;
  input: Omit<ProviderInput, 'step'>;
  /** Most the run may be priced at, in micros. */
  capMicros: Micros;
  /** What earlier steps of the run already cost, in micros (counted against the cap; not in the outcome's cost). */
  spentMicros?: Micros;
  /** Cost kept back for later steps of the run, in micros: no candidate whose worst case would eat into it runs. */
  reservedMicros?: Micros;
  /** Epoch ms by which all attempts must be done (leaves time to settle). */
  deadlineMs: number;
  now?: () => number;
  /** The step each provider runs; defaults to one `vision` pass from the file. */
  stepFor?: (provider: ProviderId) => Step;
  /** Worst-case cost of one attempt by a provider, in micros; defaults to the catalog's cost models. */
  costBound?: (provider: ProviderId) => Micros | undefined;
  /**
   * Checks a successful answer; a message makes it a failed attempt (`invalid_output`, its usage counted) and the
   * plan moves on. A chained plan's OCR step uses it to refuse a reading with no text.
   */
  reject?: (output: ProviderOutput) => string | undefined;
  /** The margin prices are computed with (the run's, fixed at creation); defaults to the configured one. */
  marginPct?: number;
  /** A chunk of a run in page chunks: the spend of the run's other chunks, counted at every check. */
  shared?: SharedSpend;
  /** Stop at the first `truncated` attempt (a chunk of several pages is split and asked again instead). */
  stopOnTruncated?: boolean;
}

/**
 * The spend of the rest of a run whose chunks execute concurrently (shared/worker/chunked.ts). JavaScript runs the
 * check and `started` in one turn, so two chunks never both take the same room under the cap.
 */
export interface SharedSpend {
  /** What the run's other chunks have spent, have in flight at their worst case, or keep reserved. */
  othersMicros(): Micros;
  /** An attempt of this plan starts with this worst case. */
  started(boundMicros: Micros): void;
  /** It ended and cost this much. */
  settled(boundMicros: Micros, costMicros: Micros): void;
}

export interface ExecuteOutcome {
  output: ProviderOutput | null;
  provider: ProviderId | null;
  attempts: Attempt[];
  /** Number of provider invocations made (skipped candidates are not requests). */
  requests: number;
  /** Cost of every attempt of this call that reported usage, including failed ones. */
  costMicros: Micros;
  /** Whether an attempt's answer was cut at its output cap (`truncated`). */
  truncated?: boolean;
}

/** The attempt's result, or a timeout once its signal aborts, so an adapter that ignores the signal cannot hold the plan. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new ProviderFailure('timeout', 'attempt deadline passed'));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** Time an attempt needs at least to be worth starting after a Retry-After wait. */
const MIN_ATTEMPT_MS = 5_000;

/** One invocation with its own deadline; never throws (a failure is returned, normalised to a ProviderFailure). */
async function attemptOnce(
  adapter: ProviderAdapter | undefined,
  provider: ProviderId,
  input: ProviderInput,
  deadlineMs: number,
): Promise<{ output: ProviderOutput } | { failure: ProviderFailure }> {
  if (!adapter)
    return { failure: new ProviderFailure('client', `provider ${provider} is not available in this build`) };
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), Math.max(0, deadlineMs - Date.now()));
  try {
    const output = await untilAborted(
      adapter.invoke(input, { signal: controller.signal, deadlineMs }),
      controller.signal,
    );
    return { output };
  } catch (error: unknown) {
    if (error instanceof ProviderFailure) return { failure: error };
    const kind = controller.signal.aborted ? 'timeout' : 'server';
    return {
      failure: new ProviderFailure(kind, error instanceof Error ? error.message : String(error), { cause: error }),
    };
  } finally {
    clearTimeout(timer);
  }
}

export async function executePlan(options: ExecuteInput): Promise<ExecuteOutcome> {
  const now = options.now ?? Date.now;
  const costBound =
    options.costBound ??
    ((provider: ProviderId) => catalog[provider]?.maxCostMicros(options.input.facts, options.input.task));
  const attempts: Attempt[] = [];
  let requests = 0;
  let costMicros = 0;
  let truncated = false;

  // Whether one more attempt of a provider, at its worst case, keeps the run within its cap. What the run has spent
  // only grows, so a candidate that does not fit now never will (other chunks' reservations only turn into spend).
  const fitsNow = (provider: ProviderId) =>
    priceFor(
      (options.spentMicros ?? 0) +
        (options.shared?.othersMicros() ?? 0) +
        costMicros +
        (costBound(provider) ?? 0) +
        (options.reservedMicros ?? 0),
      options.marginPct,
    ) <= options.capMicros;

  for (const [index, provider] of options.candidates.entries()) {
    const step = options.stepFor?.(provider) ?? 'vision';
    // Checked again before a retry after 429: the first try may already have been billed.
    const fits = () => fitsNow(provider);
    if (!fits()) {
      attempts.push({ provider, step, outcome: 'skipped', latencyMs: 0, failure: 'over_budget' });
      continue;
    }
    const remaining = options.deadlineMs - now();
    if (remaining <= 0) {
      attempts.push({ provider, step, outcome: 'skipped', latencyMs: 0, failure: 'timeout' });
      continue;
    }
    // Leave later candidates a fair share of the time: the first gets at most all remaining time minus a slice each,
    // counting only those that could still run (one over the cap already will be skipped, whatever happens now).
    const laterCandidates = options.candidates.slice(index + 1).filter(fitsNow).length;
    const attemptBudget =
      laterCandidates > 0 ? Math.max(remaining * 0.6, remaining - laterCandidates * 15_000) : remaining;
    const deadlineMs = now() + attemptBudget;

    const adapter = options.adapters[provider];
    // A 429 whose Retry-After still leaves time for a real attempt before this candidate's deadline is waited out
    // once on the same provider; otherwise the plan moves on to the next candidate.
    for (let tries = 0; tries < 2; tries += 1) {
      const started = now();
      const bound = costBound(provider) ?? 0;
      options.shared?.started(bound);
      const outcome = await attemptOnce(adapter, provider, { ...options.input, step }, deadlineMs);
      options.shared?.settled(
        bound,
        'output' in outcome ? outcome.output.usage.costMicros : (outcome.failure.usage?.costMicros ?? 0),
      );
      if (adapter) requests += 1;
      if ('output' in outcome) {
        costMicros += outcome.output.usage.costMicros;
        const problem = options.reject?.(outcome.output);
        if (problem === undefined) {
          attempts.push({ provider, step, outcome: 'succeeded', latencyMs: now() - started });
          return { output: outcome.output, provider, attempts, requests, costMicros, truncated };
        }
        log.warn('provider answer rejected', { provider, step, message: problem });
        attempts.push({ provider, step, outcome: 'failed', latencyMs: now() - started, failure: 'invalid_output' });
        break;
      }
      const { failure } = outcome;
      if (failure.usage) costMicros += failure.usage.costMicros;
      log.warn('provider attempt failed', { provider, step, kind: failure.kind, message: failure.message });
      attempts.push({ provider, step, outcome: 'failed', latencyMs: now() - started, failure: failure.kind });
      if (failure.kind === 'truncated') {
        truncated = true;
        if (options.stopOnTruncated) return { output: null, provider: null, attempts, requests, costMicros, truncated };
      }
      const wait = failure.kind === 'rate_limited' ? failure.retryAfterMs : undefined;
      if (tries > 0 || wait === undefined || now() + wait + MIN_ATTEMPT_MS > deadlineMs || !fits()) break;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
  return { output: null, provider: null, attempts, requests, costMicros, truncated };
}
