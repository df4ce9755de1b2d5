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
import {
  type ProviderAdapter,
  ProviderFailure,
  type ProviderId,
  type ProviderInput,
  type ProviderOutput,
  type Step,
} from '../providers/types.js';

export interface ExecuteInput {
  candidates: readonly ProviderId[];
  adapters: Partial<Record<ProviderId, ProviderAdapter>>;
  input: Omit<ProviderInput, 'step'>;
  /** Most the run may be priced at, in micros. */
  capMicros: Micros;
  /** Epoch ms by which all attempts must be done (leaves time to settle). */
  deadlineMs: number;
  now?: () => number;
}

export interface ExecuteOutcome {
  output: ProviderOutput | null;
  provider: ProviderId | null;
  attempts: Attempt[];
  /** Number of provider invocations made (skipped candidates are not requests). */
  requests: number;
  /** Cost of every attempt that reported usage, including failed ones. */
  costMicros: Micros;
}

// Every candidate in this build runs the whole task in one pass from the file (`vision`); separate OCR and analyze
// steps with their own candidates arrive with the cloud providers.
const SINGLE_PASS_STEP: Step = 'vision';

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

export async function executePlan(options: ExecuteInput): Promise<ExecuteOutcome> {
  const now = options.now ?? Date.now;
  const attempts: Attempt[] = [];
  let requests = 0;
  let costMicros = 0;

  for (const [index, provider] of options.candidates.entries()) {
    const step = SINGLE_PASS_STEP;
    const profile = catalog[provider];
    const worstCase = profile
      ? priceFor(costMicros + profile.maxCostMicros(options.input.facts, options.input.task))
      : priceFor(costMicros);
    if (worstCase > options.capMicros) {
      attempts.push({ provider, step, outcome: 'skipped', latencyMs: 0, failure: 'over_budget' });
      continue;
    }
    const remaining = options.deadlineMs - now();
    if (remaining <= 0) {
      attempts.push({ provider, step, outcome: 'skipped', latencyMs: 0, failure: 'timeout' });
      continue;
    }
    // Leave later candidates a fair share of the time: the first gets at most all remaining time minus a slice each.
    const laterCandidates = options.candidates.length - index - 1;
    const attemptBudget =
      laterCandidates > 0 ? Math.max(remaining * 0.6, remaining - laterCandidates * 15_000) : remaining;
    const deadlineMs = now() + attemptBudget;

    const adapter = options.adapters[provider];
    const started = now();
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), Math.max(0, deadlineMs - now()));
    try {
      if (!adapter) throw new ProviderFailure('client', `provider ${provider} is not available in this build`);
      requests += 1;
      const output = await untilAborted(
        adapter.invoke({ ...options.input, step }, { signal: controller.signal, deadlineMs }),
        controller.signal,
      );
      costMicros += output.usage.costMicros;
      attempts.push({ provider, step, outcome: 'succeeded', latencyMs: now() - started });
      return { output, provider, attempts, requests, costMicros };
    } catch (error: unknown) {
      const failure = error instanceof ProviderFailure ? error : null;
      if (failure?.usage) costMicros += failure.usage.costMicros;
      const kind = failure?.kind ?? (controller.signal.aborted ? 'timeout' : 'server');
      log.warn('provider attempt failed', { provider, step, kind, message: failure?.message ?? String(error) });
      attempts.push({ provider, step, outcome: 'failed', latencyMs: now() - started, failure: kind });
    } finally {
      clearTimeout(timer);
    }
  }
  return { output: null, provider: null, attempts, requests, costMicros };
}
