/** Emits CloudWatch Embedded Metric Format lines (stdout), which Lambda's log pipeline turns into metrics. */
import { METRICS_NAMESPACE } from './infra/metrics.js';

export interface MetricPoint {
  name: string;
  value: number;
  unit: 'Count' | 'Milliseconds';
  dimensions?: Record<string, string>;
}

/** Writes one EMF document per point (each with its own dimensions). Silent when LOG_LEVEL=silent. */
export function emitMetrics(points: MetricPoint[], now = Date.now()): void {
  if (process.env.LOG_LEVEL === 'silent') return;
  for (const point of points) {
    const dimensions = point.dimensions ?? {};
    const document = {
      _aws: {
        Timestamp: now,
        CloudWatchMetrics: [
          {
            Namespace: METRICS_NAMESPACE,
            Dimensions: [Object.keys(dimensions)],
            Metrics: [{ Name: point.name, Unit: point.unit }],
          },
        ],
      },
      ...dimensions,
      [point.name]: point.value,
    };
    process.stdout.write(`${JSON.stringify(document)}\n`);
  }
}
