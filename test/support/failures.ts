/** What a provider or media call failed with: its ProviderFailure, or the test fails (it succeeded, or threw another error). */
import { ProviderFailure } from '../../shared/task.js';

export async function failureOf(work: Promise<unknown>): Promise<ProviderFailure> {
  const outcome = await work.then(
    (value) => new Error(`expected a ProviderFailure, got ${JSON.stringify(value)?.slice(0, 200)}`),
    (error: unknown) => error,
  );
  if (!(outcome instanceof ProviderFailure)) throw outcome;
  return outcome;
}
