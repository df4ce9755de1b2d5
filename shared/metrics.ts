/**
 * Emits the worker's metrics as CloudWatch Embedded Metric Format lines on stdout, which Lambda's log pipeline turns
 * into metrics without an API call. Names, namespace and dimensions come from shared/infra/metrics.ts, which the CDK
 * stack's alarms and dashboard read too.
 */
import { ENV } from './infra/env.js';
import { METRIC_DIMENSIONS, METRICS_NAMESPACE } from './infra/metrics.js';

export interface MetricPoint {
  name: string;
  value: number;
  unit: 'Count' | 'Milliseconds' | 'None';
  /** The provider the point is about, when it is about one. */
  provider?: string;
}

/**
 * Writes one EMF document per point with the dimension sets `[Stage]` (what the alarms watch) and, for per-provider
 * points, `[Stage, Provider]` (the dashboard's breakdown). Only where a stage is configured (the deployed worker):
 * elsewhere nobody turns the lines into metrics and they would only clutter the logs. Silent when LOG_LEVEL=silent.
 */
export function emitMetrics(points: MetricPoint[], now = Date.now()): void {
  const stage = process.env[ENV.metricsStage];
  if (stage === undefined || stage === '' || process.env[ENV.logLevel] === 'silent') return;
  for (const point of points) {
    const dimensionSets: string[][] = [[METRIC_DIMENSIONS.stage]];
    if (point.provider !== undefined) dimensionSets.push([METRIC_DIMENSIONS.stage, METRIC_DIMENSIONS.provider]);
    const document = {
      _aws: {
        Timestamp: now,
        CloudWatchMetrics: [
          {
            Namespace: METRICS_NAMESPACE,
            Dimensions: dimensionSets,
            Metrics: [{ Name: point.name, Unit: point.unit }],
          },
        ],
      },
      [METRIC_DIMENSIONS.stage]: stage,
      ...(point.provider !== undefined ? { [METRIC_DIMENSIONS.provider]: point.provider } : {}),
      [point.name]: point.value,
    };
    process.stdout.write(`${JSON.stringify(document)}\n`);
  }
}
