/**
 * Custom metrics the worker emits (CloudWatch Embedded Metric Format: a structured log line CloudWatch turns into
 * metrics, no API call). The CDK stack's alarms and dashboard read the same names from here.
 */
export const METRICS_NAMESPACE = 'VisionService';

export const metricNames = {
  /** One per failed provider attempt (dimension: Provider). */
  providerAttemptFailed: 'ProviderAttemptFailed',
  /** One per run that needed more than one candidate to finish. */
  providerFallback: 'ProviderFallback',
  /** Time from creation to the final state, per run. */
  runLatencyMs: 'RunLatencyMs',
  /** One per run settled failed. */
  runFailed: 'RunFailed',
} as const;
