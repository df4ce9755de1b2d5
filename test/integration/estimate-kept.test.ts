/**
 * Issue #26, point 2, as a user met it on a fresh deployment (contract v1.2 §5): one provider at a time, its API
 * answered by the multi-provider fake that bills by the provider's published counting rules (bench/provider-fakes.ts),
 * issue #26's two-page invoice (short-page.pdf: a text layer on both pages, the second only "Terms net 30" and
 * "Page 2") with `schemaId: "invoice"`. It was created with its estimate and then failed `502 PROVIDER_ERROR`, openai
 * skipped `over_budget` (the worker read the pages as images, 3x what the estimate priced), and anthropic's price came
 * to 1.31x the estimate. Now each completes with one `analyze` attempt, charged its price, within the estimate.
 * One stack per provider (VISION_PROVIDERS is global).
 */
import { readFile } from 'node:fs/promises';
import { type FakeCase, type ProviderFakes, startProviderFakes } from '../../bench/provider-fakes.js';
import { startStackOnSuiteEmulators } from './client.js';
import type { RunningStack } from './stack.js';

const KEY = 'vk_estimate_kept_tenant_0123456789ab';
const FILE = 'short-page.pdf';

const CASE: FakeCase = {
  answer: {
    invoiceNumber: 'INV-2041',
    invoiceDate: '2026-10-31',
    dueDate: null,
    vendor: 'ACME SUPPLY CO',
    totalDue: 1250,
    currency: 'USD',
  },
  textOutput: false,
  pages: 2,
  pageLines: [
    ['ACME SUPPLY CO', 'INVOICE INV-2041', 'Invoice date 2026-10-31', 'Amount due 1250.00 USD'],
    ['Terms net 30', 'Page 2'],
  ],
  expense: [],
};

interface Run {
  jobId: string;
  status: string;
  estimatedCostUsd: number;
  chargedUsd?: number;
  refundedUsd?: number;
  usage?: { priceUsd: number; requests: number };
  attempts?: Array<{ provider: string; step: string; outcome: string; failure?: string }>;
  error?: unknown;
}

async function analyse(stack: RunningStack): Promise<Run> {
  const bytes = await readFile(new URL(`../fixtures/${FILE}`, import.meta.url));
  const api = (path: string, init?: RequestInit) =>
    fetch(`${stack.info.baseUrl}${path}`, {
      ...init,
      headers: { 'x-api-key': KEY, 'content-type': 'application/json', ...init?.headers },
    });
  const presign = (await (
    await api('/v1/uploads/presign', {
      method: 'POST',
      body: JSON.stringify({ fileName: FILE, contentLength: bytes.length }),
    })
  ).json()) as { uploadId: string; uploadUrl: string };
  await fetch(presign.uploadUrl, {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream' },
    body: new Blob([bytes]),
  });
  const created = (await (
    await api('/v1/runs', {
      method: 'POST',
      body: JSON.stringify({ uploadId: presign.uploadId, prompt: 'Extract the invoice', schemaId: 'invoice' }),
    })
  ).json()) as { jobId?: string };
  if (!created.jobId) throw new Error(`run not created: ${JSON.stringify(created)}`);
  const deadline = Date.now() + 90_000;
  for (;;) {
    const run = (await (await api(`/v1/runs/${created.jobId}`)).json()) as Run;
    if (run.status === 'completed' || run.status === 'failed') return run;
    if (Date.now() > deadline) throw new Error(`run ${created.jobId} not final`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("issue #26's invoice on a fresh deployment, one provider at a time", () => {
  let fakes: ProviderFakes;
  beforeAll(async () => {
    fakes = await startProviderFakes();
    fakes.use(CASE);
  });
  afterAll(async () => fakes.close());

  const providers: Array<[string, (url: string) => Record<string, string>]> = [
    ['openai', (url) => ({ OPENAI_API_KEY: 'sk-estimate-kept-fake', OPENAI_BASE_URL: `${url}/v1` })],
    ['anthropic', (url) => ({ ANTHROPIC_API_KEY: 'sk-ant-estimate-kept-fake', ANTHROPIC_BASE_URL: url })],
  ];

  test.each(providers)(
    '%s: completed with one analyze attempt, charged its price within the estimate',
    async (provider, env) => {
      const stack = await startStackOnSuiteEmulators({
        VISION_DEV_API_KEYS: `estimate-kept:${KEY}`,
        VISION_PROVIDERS: provider,
        ...env(fakes.url),
      });
      try {
        fakes.take();
        const run = await analyse(stack);
        expect({ status: run.status, error: run.error }).toEqual({ status: 'completed', error: undefined });
        expect(run.attempts).toEqual([expect.objectContaining({ provider, step: 'analyze', outcome: 'succeeded' })]);
        expect(fakes.take().requests).toBe(1);
        const price = run.usage?.priceUsd ?? Number.NaN;
        expect(price).toBeLessThanOrEqual(run.estimatedCostUsd);
        expect(run.chargedUsd).toBe(price);
        expect((run.chargedUsd ?? 0) + (run.refundedUsd ?? 0)).toBeCloseTo(run.estimatedCostUsd, 6);
      } finally {
        await stack.stop();
      }
    },
  );
});
