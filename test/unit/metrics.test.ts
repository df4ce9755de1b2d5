import { jest } from '@jest/globals';
import { METRICS_NAMESPACE } from '../../shared/infra/metrics.js';
import { emitMetrics } from '../../shared/metrics.js';

describe('emitMetrics (CloudWatch Embedded Metric Format)', () => {
  const previous = { level: process.env.LOG_LEVEL, stage: process.env.METRICS_STAGE };
  afterEach(() => {
    process.env.LOG_LEVEL = previous.level;
    if (previous.stage === undefined) delete process.env.METRICS_STAGE;
    else process.env.METRICS_STAGE = previous.stage;
    jest.restoreAllMocks();
  });

  function capture(): string[] {
    const lines: string[] = [];
    jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    return lines;
  }

  test('per-provider points carry [Stage] (for alarms) and [Stage, Provider] (for the dashboard)', () => {
    process.env.LOG_LEVEL = 'info';
    process.env.METRICS_STAGE = 'test-stage';
    const lines = capture();
    emitMetrics(
      [
        { name: 'ProviderAttemptFailed', value: 1, unit: 'Count', provider: 'openai' },
        { name: 'RunLatencyMs', value: 1234, unit: 'Milliseconds' },
      ],
      1_700_000_000_000,
    );
    const docs = lines.map((l) => JSON.parse(l));
    expect(docs).toHaveLength(2);
    expect(docs[0]).toEqual({
      _aws: {
        Timestamp: 1_700_000_000_000,
        CloudWatchMetrics: [
          {
            Namespace: METRICS_NAMESPACE,
            Dimensions: [['Stage'], ['Stage', 'Provider']],
            Metrics: [{ Name: 'ProviderAttemptFailed', Unit: 'Count' }],
          },
        ],
      },
      Stage: 'test-stage',
      Provider: 'openai',
      ProviderAttemptFailed: 1,
    });
    expect(docs[1]._aws.CloudWatchMetrics[0].Dimensions).toEqual([['Stage']]);
    expect(docs[1]).toMatchObject({ Stage: 'test-stage', RunLatencyMs: 1234 });
  });

  test('stays silent where no stage is configured (outside the deployed worker)', () => {
    process.env.LOG_LEVEL = 'info';
    delete process.env.METRICS_STAGE;
    const lines = capture();
    emitMetrics([{ name: 'RunFailed', value: 1, unit: 'Count' }]);
    expect(lines).toHaveLength(0);
  });

  test('stays silent when logging is silenced', () => {
    process.env.METRICS_STAGE = 'test-stage';
    process.env.LOG_LEVEL = 'silent';
    const lines = capture();
    emitMetrics([{ name: 'RunFailed', value: 1, unit: 'Count' }]);
    expect(lines).toHaveLength(0);
  });
});
