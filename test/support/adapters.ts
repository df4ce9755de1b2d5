/** Scripted provider adapters: small fakes that succeed, fail or hang as a test says, and record how they were called. */
import type { InvokeOptions, ProviderAdapter, ProviderInput, ProviderOutput } from '../../shared/providers/types.js';
import { type FailureKind, ProviderFailure, type ProviderId, type ProviderUsage } from '../../shared/task.js';

export interface ScriptedAdapter extends ProviderAdapter {
  calls: { input: ProviderInput; options: InvokeOptions }[];
}

function scripted(id: ProviderId, run: (options: InvokeOptions) => Promise<ProviderOutput>): ScriptedAdapter {
  const calls: ScriptedAdapter['calls'] = [];
  return {
    id,
    calls,
    invoke(input, options) {
      calls.push({ input, options });
      return run(options);
    },
  };
}

/** Succeeds with `output` (defaults: an empty result, one billable unit costing 80 micros). */
export function succeeding(id: ProviderId, output: Partial<ProviderOutput> = {}): ScriptedAdapter {
  return scripted(id, async () => ({
    result: {},
    usage: { billableUnits: 1, costMicros: 80 },
    ...output,
  }));
}

/** Fails with a ProviderFailure of `kind`, optionally reporting usage the failed attempt consumed. */
export function failing(id: ProviderId, kind: FailureKind = 'server', usage?: ProviderUsage): ScriptedAdapter {
  return scripted(id, async () => {
    throw new ProviderFailure(kind, `${id} scripted ${kind} failure`, usage ? { usage } : undefined);
  });
}

/** Throws something that is not a ProviderFailure (an adapter bug, an SDK error). */
export function throwing(id: ProviderId, error: unknown): ScriptedAdapter {
  return scripted(id, async () => {
    throw error;
  });
}

/** Never answers and ignores the abort signal: a provider that hangs. */
export function hanging(id: ProviderId): ScriptedAdapter {
  return scripted(id, () => new Promise<ProviderOutput>(() => {}));
}

/** Never answers on its own but rejects when its signal aborts, as a well-behaved SDK call does. */
export function abortable(id: ProviderId): ScriptedAdapter {
  return scripted(
    id,
    (options) =>
      new Promise<ProviderOutput>((_resolve, reject) => {
        options.signal.addEventListener('abort', () => reject(new Error('The operation was aborted')), { once: true });
      }),
  );
}

/**
 * Answers 429 with `retryAfterMs` the first `times` calls, then succeeds. `billed`: the usage each 429 reports (a
 * repair request rate-limited after the first request was billed).
 */
export function rateLimitedThenSucceeding(
  id: ProviderId,
  retryAfterMs: number,
  times = 1,
  billed?: ProviderUsage,
): ScriptedAdapter {
  let calls = 0;
  return scripted(id, async () => {
    calls += 1;
    if (calls <= times) {
      throw new ProviderFailure('rate_limited', `${id} scripted 429`, {
        retryAfterMs,
        ...(billed ? { usage: billed } : {}),
      });
    }
    return { result: { ok: true }, usage: { billableUnits: 1, costMicros: 80 } };
  });
}
