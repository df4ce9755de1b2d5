/**
 * The attempt loop that executes a plan (planned once, at creation: shared/planning/plan.ts): `tryCandidates` tries
 * the candidates in order, each with a deadline carved from the Lambda's remaining time, and falls back on any failure. The spend limit: a candidate whose predicted price would push the run past its limit
 * (SERVICE_MAX_OVERRUN_RATIO x the estimate) runs its cheaper step instead when it has one, else is skipped, and every
 * attempt is told the most it may cost (`maxCostMicros`), from which a language model derives its output caps and
 * skips a repair that could cross it. A dearer fallback runs when it fits. Every attempt is recorded with provider,
 * step, outcome and latency.
 * Not to undo: the attempt the estimate priced (`planned`) is never skipped for the spend limit, and may spend at
 * least its own prediction on what it is really given (`plannedFloor`). Its price is the estimate by construction;
 * only the worker's newer knowledge (calibration learnt since, the real text length) can make it look dearer, and a
 * run must never fail for its own estimate (contract v1.2 §5). Every other attempt keeps to the spend limit.
 */
import { BatchParked } from '../batching/parked.js';
import type { Attempt } from '../contract.js';
import { log } from '../log.js';
import type { Micros } from '../money.js';
import { predictAttempt } from '../planning/estimate.js';
import type { FactorsFor } from '../pricing/calibration.js';
import { costWithin, priceFor } from '../pricing/pricing.js';
import type { ProviderAdapter, ProviderInput, ProviderOutput } from '../providers/types.js';
import { type Priority, ProviderFailure, type ProviderId, type Step } from '../task.js';

export interface AttemptsInput {
  candidates: readonly ProviderId[];
  adapters: Partial<Record<ProviderId, ProviderAdapter>>;
  input: Omit<ProviderInput, 'step'>;
  /** The run's spend limit: the most its price may reach, in micros (SERVICE_MAX_OVERRUN_RATIO x the estimate). */
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
  /**
   * The step a provider runs instead when its own (`stepFor`) would cross the spend limit, if any: the step the
   * estimate priced, when the worker preferred a dearer reading of the file (./steps.ts).
   */
  cheaperStep?: (provider: ProviderId) => Step | undefined;
  /**
   * The attempt the estimate priced: its provider and step. Never skipped for the spend limit while this call has
   * spent nothing (a retry after a billed 429 is checked as any attempt).
   */
  planned?: { provider: ProviderId; step: Step };
  /** Predicted cost of one attempt of a step by a provider, in micros; defaults to the calibrated prediction. */
  costBound?: (provider: ProviderId, step: Step) => Micros | undefined;
  /** Calibration factors for the default prediction (default: the shipped seeds). */
  factors?: FactorsFor;
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
  /** The run's priority: a batch run's attempts are predicted at their batch price, as its estimate was. */
  priority?: Priority;
}

/**
 * The spend of the rest of a run whose chunks execute concurrently (./chunk-spend.ts). JavaScript runs the
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

export interface AttemptsOutcome {
  output: ProviderOutput | null;
  provider: ProviderId | null;
  attempts: Attempt[];
  /** Number of provider invocations made (skipped candidates are not requests). */
  requests: number;
  /** Cost of every attempt of this call that reported usage, including failed ones. */
  costMicros: Micros;
  /** Whether an attempt's answer was cut at its output cap (`truncated`). */
  truncated?: boolean;
  /** The step the successful provider ran (null when none succeeded). */
  step?: Step | null;
  /** True when the successful answer's usage was missing or nonsensical: it was priced at the attempt's limit. */
  usageSuspect?: boolean;
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
  maxCostMicros: Micros,
): Promise<{ output: ProviderOutput } | { failure: ProviderFailure }> {
  if (!adapter)
    return { failure: new ProviderFailure('client', `provider ${provider} is not available in this build`) };
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), Math.max(0, deadlineMs - Date.now()));
  try {
    const output = await untilAborted(
      adapter.invoke(input, { signal: controller.signal, deadlineMs, maxCostMicros }),
      controller.signal,
    );
    return { output };
  } catch (error: unknown) {
    // Not a failure: the attempt waits in the batch lane, and the delivery parks the run (./batch-lane.ts).
    if (error instanceof BatchParked) throw error;
    if (error instanceof ProviderFailure) return { failure: error };
    const kind = controller.signal.aborted ? 'timeout' : 'server';
    return {
      failure: new ProviderFailure(kind, error instanceof Error ? error.message : String(error), { cause: error }),
    };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Usage no answer can have: a cost that is not a finite, non-negative number, or token counts that are negative or
 * not numbers. Such an answer is priced at its attempt's limit and not learnt from (docs/pricing.md). (Each adapter
 * prices a response whose usage block is missing at that request's bound itself.)
 */
export function suspectUsage(usage: ProviderOutput['usage']): boolean {
  if (!Number.isFinite(usage.costMicros) || usage.costMicros < 0) return true;
  const bad = (n: number | undefined) => n !== undefined && !(Number.isFinite(n) && n >= 0);
  return bad(usage.inputTokens) || bad(usage.outputTokens);
}

/**
 * What the estimate's own attempt may spend at least: its prediction on what it is really given (the document's real
 * text, the factors learnt since creation), with room for the adapters' input margin (they count input 1.1x when they
 * size the answer's cap). A document far denser than the typical page the estimate priced then completes, the excess
 * absorbed and learnt by calibration, instead of being refused or cut at a cap the estimate's own guess set. Bounded
 * by each adapter's own text allowance per page. docs/decisions.md, "An accepted estimate never fails its run".
 */
export function plannedFloor(boundMicros: Micros): Micros {
  return Math.ceil(boundMicros * 1.25);
}

export async function tryCandidates(options: AttemptsInput): Promise<AttemptsOutcome> {
  const now = options.now ?? Date.now;
  const { facts, task } = options.input;
  const documentTextChars = options.input.documentText?.length;
  const stepOf = (provider: ProviderId): Step => options.stepFor?.(provider) ?? 'vision';
  const costBound =
    options.costBound ??
    ((provider: ProviderId, step: Step) =>
      predictAttempt(provider, facts, task, step, options.factors, {
        // The text an `analyze` step is given; another step reads the file and is predicted from its facts.
        ...(step === 'analyze' && documentTextChars !== undefined ? { documentTextChars } : {}),
        ...(options.priority ? { priority: options.priority } : {}),
      })?.costMicros);
  const attempts: Attempt[] = [];
  let requests = 0;
  let costMicros = 0;
  let truncated = false;

  const limitCost = costWithin(options.capMicros, options.marginPct);
  // What one more attempt may cost: the spend limit less what the run spent (this call, earlier steps, the other
  // chunks of a chunked run) and what later steps keep in reserve.
  const allowance = () =>
    Math.max(
      0,
      limitCost -
        (options.spentMicros ?? 0) -
        (options.shared?.othersMicros() ?? 0) -
        costMicros -
        (options.reservedMicros ?? 0),
    );

  // Whether one more attempt of a provider's step, at its predicted cost, keeps the run within its limit. What the run
  // has spent only grows, so a candidate that does not fit now never will (other chunks' reservations only turn into
  // spend). The estimate's own attempt always fits while this call has spent nothing (see the top).
  const isPlanned = (provider: ProviderId, step: Step) =>
    costMicros === 0 && options.planned?.provider === provider && options.planned.step === step;
  const fitsNow = (provider: ProviderId, step: Step) =>
    isPlanned(provider, step) ||
    priceFor(
      (options.spentMicros ?? 0) +
        (options.shared?.othersMicros() ?? 0) +
        costMicros +
        (costBound(provider, step) ?? 0) +
        (options.reservedMicros ?? 0),
      options.marginPct,
    ) <= options.capMicros;
  // The step a provider runs now: its own, or its cheaper one when only that fits; undefined when neither does.
  const stepWithin = (provider: ProviderId): Step | undefined => {
    const own = stepOf(provider);
    if (fitsNow(provider, own)) return own;
    const cheaper = options.cheaperStep?.(provider);
    return cheaper !== undefined && cheaper !== own && fitsNow(provider, cheaper) ? cheaper : undefined;
  };

  for (const [index, provider] of options.candidates.entries()) {
    const step = stepWithin(provider);
    if (step === undefined) {
      attempts.push({ provider, step: stepOf(provider), outcome: 'skipped', latencyMs: 0, failure: 'over_budget' });
      continue;
    }
    // Checked again before a retry after 429: the first try may already have been billed.
    const fits = () => fitsNow(provider, step);
    const remaining = options.deadlineMs - now();
    if (remaining <= 0) {
      attempts.push({ provider, step, outcome: 'skipped', latencyMs: 0, failure: 'timeout' });
      continue;
    }
    // Leave later candidates a fair share of the time: the first gets at most all remaining time minus a slice each,
    // counting only those that could still run (one over the cap already will be skipped, whatever happens now).
    const laterCandidates = options.candidates.slice(index + 1).filter((p) => stepWithin(p) !== undefined).length;
    const attemptBudget =
      laterCandidates > 0 ? Math.max(remaining * 0.6, remaining - laterCandidates * 15_000) : remaining;
    const deadlineMs = now() + attemptBudget;

    const adapter = options.adapters[provider];
    // Only an `analyze` step is given the document's text; any other step reads the file.
    const { documentText, ...fileInput } = options.input;
    const input: ProviderInput =
      step === 'analyze' && documentText !== undefined ? { ...fileInput, documentText, step } : { ...fileInput, step };
    // A 429 whose Retry-After still leaves time for a real attempt before this candidate's deadline is waited out
    // once on the same provider; otherwise the plan moves on to the next candidate.
    for (let tries = 0; tries < 2; tries += 1) {
      const started = now();
      const bound = costBound(provider, step) ?? 0;
      const limit = isPlanned(provider, step) ? Math.max(allowance(), plannedFloor(bound)) : allowance();
      options.shared?.started(bound);
      const outcome = await attemptOnce(adapter, provider, input, deadlineMs, limit);
      options.shared?.settled(
        bound,
        'output' in outcome ? outcome.output.usage.costMicros : (outcome.failure.usage?.costMicros ?? 0),
      );
      if (adapter) requests += 1;
      if ('output' in outcome) {
        const usageSuspect = suspectUsage(outcome.output.usage);
        if (usageSuspect) {
          log.warn('provider usage missing or nonsensical; priced at the attempt limit', { provider, step, limit });
          outcome.output.usage = { ...outcome.output.usage, costMicros: limit };
        }
        costMicros += outcome.output.usage.costMicros;
        const problem = options.reject?.(outcome.output);
        if (problem === undefined) {
          attempts.push({ provider, step, outcome: 'succeeded', latencyMs: now() - started });
          return { output: outcome.output, provider, attempts, requests, costMicros, truncated, step, usageSuspect };
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
  return { output: null, provider: null, attempts, requests, costMicros, truncated, step: null };
}
