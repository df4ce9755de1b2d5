/**
 * Settling a run, the one way every worker path ends it (a single pass, a chunked run, a fanned-out group that fails
 * it, a last delivery that gives up; the reconciler fails a dead run its own way): the settlement and its money
 * written once (store/ledger.ts), then the run's metrics, what it teaches calibration, its event handed on, and an
 * evaluation's report when it was the last.
 * Not to undo: everything after the write runs only for the delivery whose write settled the run (a duplicate's
 * `already-final` does none of it), and none of it can fail the run: its money is settled.
 */
import { afterItemSettled } from '../evaluations/finish.js';
import { dispatchAfterSettle } from '../events/dispatch.js';
import { METRIC_NAMES } from '../infra/metrics.js';
import { log } from '../log.js';
import { emitMetrics, type MetricPoint } from '../metrics.js';
import { recordSamples } from '../store/calibration.js';
import { eventRecord } from '../store/events.js';
import { PROCESSING_FAILED, type Settlement, settleRun } from '../store/ledger.js';
import type { RunRecord } from '../store/runs.js';
import type { ProcessOptions, ProcessResult } from './delivery.js';

/** Writes the run's settlement (once: settleRun's conditions), then its metrics, calibration, event and report. */
export async function settle(
  run: RunRecord,
  settlement: Settlement,
  options: Pick<ProcessOptions, 'fault'> = {},
): Promise<ProcessResult> {
  options.fault?.('before-settle', run);
  const metrics = runMetrics(run, settlement);
  const settledAt = new Date();
  const settled = await settleRun(run, settlement, settledAt);
  if (settled) emitMetrics(metrics);
  options.fault?.('after-settle', run);
  if (!settled) return 'already-final';
  // The settlement wrote the run's event; hand it on now (a crash before this leaves it to the sweep). Learning runs
  // beside it, so a receiver does not wait for the calibration write.
  await Promise.all([
    dispatchAfterSettle(eventRecord(run, settlement.status, settledAt.toISOString())),
    learn(run, settlement),
    // The last run of an evaluation writes its report (a crash before it leaves it to a read or the reconciler).
    ...(run.evaluation ? [afterItemSettled(run.evaluation.evaluationId)] : []),
  ]);
  return 'settled';
}

/**
 * Fails the run and refunds its hold: a delivery's last allowed try that threw. `attempts`: what the run tried
 * before it gave up, when known. No crash seam fires here: it is the way out of one.
 */
export function failRun(run: RunRecord, attempts: Settlement['attempts'] = []): Promise<ProcessResult> {
  return settle(run, { status: 'failed', error: PROCESSING_FAILED, attempts });
}

/** Feeds a settled run's sample to calibration; never fails the run (its money is already settled). */
async function learn(run: RunRecord, settlement: Settlement): Promise<void> {
  if (settlement.status !== 'completed' || !settlement.calibration) return;
  try {
    await recordSamples(run.tenantId, [settlement.calibration]);
  } catch (error: unknown) {
    log.warn('could not record a calibration sample', { jobId: run.jobId, error });
  }
}

/**
 * Metrics for the dashboard and alarms: failed attempts and fallbacks per provider, failed runs, run latency. An
 * attempt failed by the client's own file (unreadable_file) says nothing about the provider: it is not counted, so a
 * batch of damaged uploads does not trip the provider alarm.
 */
function runMetrics(run: RunRecord, settlement: Settlement): MetricPoint[] {
  const attempts = settlement.attempts.filter((a) => a.failure !== 'unreadable_file');
  const count = (name: string, provider?: string) => ({
    name,
    value: 1,
    unit: 'Count' as const,
    ...(provider !== undefined ? { provider } : {}),
  });
  return [
    ...attempts.filter((a) => a.outcome === 'failed').map((a) => count(METRIC_NAMES.providerAttemptFailed, a.provider)),
    // A fallback: the plan moved on from a failed or skipped candidate to a later one.
    ...attempts
      .slice(0, -1)
      .filter((a) => a.outcome !== 'succeeded')
      .map((a) => count(METRIC_NAMES.providerFallback, a.provider)),
    ...(settlement.status === 'failed' ? [count(METRIC_NAMES.runFailed)] : []),
    // The service's share of the run (price over estimate), summed by operators; 0 for most runs.
    ...(settlement.status === 'completed'
      ? [
          {
            name: METRIC_NAMES.absorbedMicros,
            value: Math.max(0, settlement.usage.priceMicros - run.estimateMicros),
            unit: 'None' as const,
          },
        ]
      : []),
    { name: METRIC_NAMES.runLatencyMs, value: Date.now() - Date.parse(run.createdAt), unit: 'Milliseconds' },
  ];
}
