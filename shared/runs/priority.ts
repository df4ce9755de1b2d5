/**
 * What a run record carries for its priority (contract-v1.2 §4): a batch run is marked and promised an end
 * (`expiresAt`, batchSettings.expiresWithinHours after creation); a standard run carries nothing. Shared by run
 * creation and evaluations (their creation and the reconciler's sweep) so that every batch run is written alike.
 * Not to undo: it imports no store, so the reconciler loads it without the API's tables.
 */
import { batchSettings } from '../infra/resources.js';
import type { Priority } from '../task.js';

export function priorityFields(priority: Priority | undefined, now: Date): { priority?: 'batch'; expiresAt?: string } {
  if (priority !== 'batch') return {};
  const expiresAt = new Date(now.getTime() + batchSettings.expiresWithinHours * 3_600_000).toISOString();
  return { priority: 'batch', expiresAt };
}
