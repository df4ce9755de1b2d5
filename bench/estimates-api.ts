/**
 * `POST /v1/estimates` on the real local stack (issue 31: p50 ≤ 50 ms): both prices of a receipt's run, for an upload
 * (inspected through ranged reads, as creation inspects it) and for a declared file (no read), beside the floor of any
 * authenticated call (`GET /v1/schemas`). OpenAI is a candidate (a fake key; an estimate never calls a provider) so
 * that the plan prices tokens and the batch price differs; no worker runs.
 */
import { readFile } from 'node:fs/promises';
import { ENV } from '../shared/infra/env.js';
import { startStack } from '../test/integration/stack.js';
import { type Summary, timed } from './stats.js';

const TENANT = 'bench-estimates';
const KEY = 'vk_bench_estimates_0123456789abcdef0';
const BODY = { prompt: 'Extract the receipt', schemaId: 'receipt' };
const DECLARED = { type: 'image/png', sizeBytes: 13_775, width: 800, height: 834 };

export interface EstimatesApiResult {
  /** `GET /v1/schemas` (authenticated, no table read): what any call costs on this stack. */
  floor: Summary;
  upload: Summary;
  declared: Summary;
  /** One answer, to show the prices measured. */
  sample: { standardUsd: number; batchUsd: number };
}

export async function measureEstimatesApi(options: {
  samples: number;
  warmup: number;
  log: (line: string) => void;
}): Promise<EstimatesApiResult> {
  const stack = await startStack({
    VISION_DEV_API_KEYS: `${TENANT}:${KEY}`,
    [ENV.providers]: 'openai,local',
    OPENAI_API_KEY: 'sk-bench-estimates-never-called',
    LOCAL_RATE_LIMIT_RPS: '100000',
    LOCAL_RATE_LIMIT_BURST: '100000',
    LOCAL_WORKER_CONCURRENCY: '0',
    [ENV.logLevel]: 'warn',
  });
  try {
    const api = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${stack.info.baseUrl}${path}`, {
        method,
        headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const answer = (await response.json()) as Record<string, unknown>;
      if (response.status !== 200) throw new Error(`${path} answered ${response.status}: ${JSON.stringify(answer)}`);
      return answer;
    };
    const bytes = await readFile(new URL('../test/fixtures/receipt.png', import.meta.url));
    const presign = await api('POST', '/v1/uploads/presign', { fileName: 'receipt.png', contentLength: bytes.length });
    await fetch(String(presign.uploadUrl), {
      method: 'PUT',
      headers: { 'content-type': 'application/octet-stream' },
      body: new Blob([bytes]),
    });
    const withUpload = { ...BODY, uploadId: presign.uploadId };
    const withFile = { ...BODY, file: DECLARED };
    for (let i = 0; i < options.warmup; i++) {
      await api('POST', '/v1/estimates', withUpload);
      await api('POST', '/v1/estimates', withFile);
    }
    const answer = (await api('POST', '/v1/estimates', withUpload)) as {
      standard: { estimatedCostUsd: number };
      batch: { estimatedCostUsd: number };
    };
    const floor = await timed(options.samples, () => api('GET', '/v1/schemas'));
    const upload = await timed(options.samples, () => api('POST', '/v1/estimates', withUpload));
    const declared = await timed(options.samples, () => api('POST', '/v1/estimates', withFile));
    options.log(`  estimates: upload p50 ${upload.p50} ms, declared p50 ${declared.p50} ms, floor p50 ${floor.p50} ms`);
    return {
      floor,
      upload,
      declared,
      sample: { standardUsd: answer.standard.estimatedCostUsd, batchUsd: answer.batch.estimatedCostUsd },
    };
  } finally {
    await stack.stop();
  }
}
