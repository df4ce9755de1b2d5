/**
 * The service's custom CloudWatch metrics: names, namespace and dimensions. The worker emits them in CloudWatch
 * Embedded Metric Format (a JSON log line with an `_aws` block); the stateless stack alarms on them and draws them on
 * the dashboard (lib/monitoring.ts). Plain constants shared by the worker and the CDK stack.
 *
 * Every data point is emitted with BOTH dimension sets of METRIC_DIMENSION_SETS: `[Stage]` (what the alarms watch)
 * and `[Stage, Provider]` (per-provider breakdown on the dashboard). An EMF line for one failed attempt:
 *
 *   {"_aws":{"Timestamp":1767225600000,"CloudWatchMetrics":[{"Namespace":"VisionService",
 *     "Dimensions":[["Stage"],["Stage","Provider"]],"Metrics":[{"Name":"ProviderAttemptFailed","Unit":"Count"}]}]},
 *    "Stage":"dev","Provider":"openai","ProviderAttemptFailed":1}
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
} as const;

export const METRIC_DIMENSIONS = {
  /** Deployment stage; the worker gets it in METRICS_STAGE (ENV.metricsStage, ./env.ts). */
  stage: 'Stage',
  /** Provider id of the attempt (ProviderFailed) or of the candidate that failed (ProviderFallback). */
  provider: 'Provider',
} as const;

export const METRIC_DIMENSION_SETS = [[METRIC_DIMENSIONS.stage], [METRIC_DIMENSIONS.stage, METRIC_DIMENSIONS.provider]];
