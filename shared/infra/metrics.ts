/**
 * The service's custom CloudWatch metrics: names, namespace and dimensions, plain constants shared by the worker (which
 * emits them in Embedded Metric Format) and the CDK stack (alarms, dashboard). Every point carries both dimension sets
 * of METRIC_DIMENSION_SETS; docs/decisions.md#worker-metrics-in-embedded-metric-format shows a line.
 */
export const METRICS_NAMESPACE = 'VisionService';

export const METRIC_NAMES = {
  /** One provider attempt ended in a ProviderFailure (any kind). Unit Count, value 1 per failed attempt. */
  providerAttemptFailed: 'ProviderAttemptFailed',
  /** A run moved on from a failed or skipped candidate to the next one. Unit Count, value 1 per fallback. */
  providerFallback: 'ProviderFallback',
  /** Time from the run's creation to its settlement. Unit Milliseconds. */
  runLatencyMs: 'RunLatencyMs',
  /** A run settled failed (every candidate failed, or infrastructure gave up). Unit Count. */
  runFailed: 'RunFailed',
  /** What a completed run's price exceeded its estimate by, which the service absorbs. Unit None, micro-dollars. */
  absorbedMicros: 'AbsorbedMicros',
  /** Pages a completed run OCR'd locally for evidence alone (shared/worker/grounding.ts). Unit Count. */
  evidenceOcrPages: 'EvidenceOcrPages',
} as const;

export const METRIC_DIMENSIONS = {
  /** Deployment stage; the worker gets it in METRICS_STAGE (ENV.metricsStage, ./env.ts). */
  stage: 'Stage',
  /** Provider id of the attempt (ProviderFailed) or of the candidate that failed (ProviderFallback). */
  provider: 'Provider',
} as const;

export const METRIC_DIMENSION_SETS = [[METRIC_DIMENSIONS.stage], [METRIC_DIMENSIONS.stage, METRIC_DIMENSIONS.provider]];
