/**
 * Cancelling a provider batch: each batch API's cancel as its reference has it (method, path, key header) on the wire
 * fakes (bench/batch-fakes.ts; Bedrock's StopModelInvocationJob is in bedrock-batch.test.ts).
 */

import { type BatchFakes, startBatchFakes } from '../../bench/batch-fakes.js';
import { anthropicBatchApi } from '../../shared/providers/anthropic/batch-api.js';
import { geminiBatchApi } from '../../shared/providers/gemini/batch-api.js';
import { openaiBatchApi } from '../../shared/providers/openai/batch-api.js';

let fakes: BatchFakes;
beforeEach(async () => {
  fakes = await startBatchFakes({
    behaviour: {
      outcome: () => ({
        kind: 'ok',
        answer: { merchant: 'Corner Shop', total: 12.5 },
        usage: { input: 900, output: 30 },
      }),
      // Running until cancelled; a cancelled batch ends with its first line answered.
      pollsBeforeEnd: 1_000,
      doneBeforeExpiry: 1,
    },
  });
});
afterEach(() => fakes.close());

describe.each([
  {
    provider: 'openai',
    api: (url: string) => openaiBatchApi({ OPENAI_API_KEY: 'sk-cancel-key', OPENAI_BASE_URL: `${url}/v1` }),
    path: (ref: string) => `/v1/batches/${ref}/cancel`,
    key: ['authorization', 'Bearer sk-cancel-key'],
  },
  {
    provider: 'anthropic',
    api: (url: string) => anthropicBatchApi({ ANTHROPIC_API_KEY: 'sk-ant-cancel-key', ANTHROPIC_BASE_URL: url }),
    path: (ref: string) => `/v1/messages/batches/${ref}/cancel`,
    key: ['x-api-key', 'sk-ant-cancel-key'],
  },
  {
    provider: 'gemini',
    api: (url: string) => geminiBatchApi({ GEMINI_API_KEY: 'gemini-cancel-key', GEMINI_BASE_URL: url }),
    // The reference: POST /v1beta/{name=batches/*}:cancel; the batch's reference is its name.
    path: (ref: string) => `/v1beta/${ref}:cancel`,
    key: ['x-goog-api-key', 'gemini-cancel-key'],
  },
])('$provider batch API: cancel', ({ api, path, key }) => {
  test('POSTs the cancel with the key; the batch then ends with the lines done so far; an ended one is refused', async () => {
    const batches = api(fakes.url);
    const ids = ['run_a#x#vision#all', 'run_b#x#vision#all'];
    const ref = await batches.submit(
      'model-1',
      ids.map((customId) => ({ customId, body: { model: 'model-1', input: customId } })),
    );
    expect(await batches.poll(ref, ids)).toBeUndefined();

    await batches.cancel(ref);
    const sent = fakes.requests.at(-1);
    expect([sent?.method, sent?.path]).toEqual(['POST', path(ref)]);
    expect(sent?.headers[key[0] as string]).toBe(key[1]);

    // Polled as before: it ended; the line answered before the cancel is still answered (and billed), the other not.
    const results = await batches.poll(ref, ids);
    expect(results?.get(ids[0] as string)?.kind).toBe('answer');
    expect(results?.get(ids[1] as string)?.kind).not.toBe('answer');

    const refused = await batches.cancel(ref).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(/HTTP 400/);
    expect((refused as Error).message).not.toContain(key[1]);
  });
});
