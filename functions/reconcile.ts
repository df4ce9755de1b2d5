/**
 * Scheduled reconciler (EventBridge, every few minutes): sends again the message of a run that never reached a
 * worker or whose message went silent after a delivery, and fails and refunds a run whose message was dead-lettered
 * or expired (shared/worker/reconcile.ts); then hands on the run events whose dispatch a crash interrupted
 * (shared/events/dispatch.ts), and finishes the evaluations a crash left open (shared/evaluations/sweep.ts). Each part
 * runs even when another failed; the invocation fails if any did.
 */

import { type EvaluationSweepReport, sweepEvaluations } from '../shared/evaluations/sweep.js';
import { sweepPendingEvents } from '../shared/events/dispatch.js';
import { checkEnvironment } from '../shared/resource-name.js';
import { type ReconcileReport, reconcileRuns } from '../shared/worker/reconcile.js';

checkEnvironment();

export async function handler(): Promise<
  ReconcileReport & { eventsDispatched: string[]; evaluations: EvaluationSweepReport }
> {
  const [runs, events, evaluations] = await Promise.allSettled([
    reconcileRuns(),
    sweepPendingEvents(),
    sweepEvaluations(),
  ]);
  if (runs.status === 'rejected') throw runs.reason;
  if (events.status === 'rejected') throw events.reason;
  if (evaluations.status === 'rejected') throw evaluations.reason;
  return { ...runs.value, eventsDispatched: events.value, evaluations: evaluations.value };
}
