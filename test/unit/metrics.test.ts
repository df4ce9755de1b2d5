import { jest } from '@jest/globals';
import { METRICS_NAMESPACE } from '../../shared/infra/metrics.js';
import { emitMetrics } from '../../shared/metrics.js';

describe('emitMetrics (CloudWatch Embedded Metric Format)', () => {
  const previous = process.env.LOG_LEVEL;
  afterEach(() => {
    process.env.LOG_LEVEL = previous;
    jest.restoreAllMocks();
  });

  test('writes one EMF document per point, with its dimensions as top-level members', () => {
    process.env.LOG_LEVEL = 'info';
    const lines: string[] = [];
    jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    emitMetrics(
      [
        { name: 'ProviderAttemptFailed', value: 1, unit: 'Count', dimensions: { Provider: 'openai' } },
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
            Dimensions: [['Provider']],
            Metrics: [{ Name: 'ProviderAttemptFailed', Unit: 'Count' }],
          },
        ],
      },
      Provider: 'openai',
      ProviderAttemptFailed: 1,
    });
    expect(docs[1]._aws.CloudWatchMetrics[0].Dimensions).toEqual([[]]);
    expect(docs[1].RunLatencyMs).toBe(1234);
  });

  test('stays silent when logging is silenced', () => {
    process.env.LOG_LEVEL = 'silent';
    const write = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
    emitMetrics([{ name: 'RunFailed', value: 1, unit: 'Count' }]);
    expect(write).not.toHaveBeenCalled();
  });
});
