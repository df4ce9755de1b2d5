/**
 * Scheduled reconciler (EventBridge, every few minutes): sends again the message of a run that never reached a
 * worker or whose message went silent after a delivery, and fails and refunds a run whose message was dead-lettered
 * or expired (shared/worker/reconcile.ts).
 */

import { checkEnvironment } from '../shared/resource-name.js';
import { type ReconcileReport, reconcileRuns } from '../shared/worker/reconcile.js';

checkEnvironment();

export async function handler(): Promise<ReconcileReport> {
  return reconcileRuns();
}
