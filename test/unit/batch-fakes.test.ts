/**
 * The batch API fakes (bench/batch-fakes.ts) driven by the providers' own SDKs where the service has one today
 * (openai, @anthropic-ai/sdk, @google/genai) and by plain HTTP in the shape of Bedrock's control plane (the service
 * drives it through @aws-sdk/client-bedrock in test/unit/bedrock-batch.test.ts): submit, status polling, results, a failed item, expiry
 * and cancellation, per provider.
 */
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI, { toFile } from 'openai';
import { type BatchFakes, memoryStorage, startBatchFakes } from '../../bench/batch-fakes.js';

/** Per custom id: `ok <answer JSON> <input>/<output tokens>`, `error`, or `expired`. */
type Outcomes = Record<string, string>;
/**
 * Submits, polls until the batch ends and reads its results. With `cancel`, cancels it right after submitting, and
 * once it ended tries to cancel it again (`cancelAgain`: what the API said).
 */
type Driver = (
  fakes: BatchFakes,
  ids: string[],
  options?: { cancel?: boolean },
) => Promise<{ status: string; polls: number; outcomes: Outcomes; cancelAgain?: 'accepted' | 'refused' }>;

/** What a second cancel of an ended batch gets. */
const cancelAgain = (call: () => Promise<unknown>) =>
  call().then(
    () => 'accepted' as const,
    () => 'refused' as const,
  );

const ANSWER = { total: 42.5 };
const USAGE = { input: 1200, output: 30 };

const openaiDriver: Driver = async (fakes, ids, options = {}) => {
  const client = new OpenAI({ apiKey: 'sk-batch-fake', baseURL: `${fakes.url}/v1`, maxRetries: 0 });
  const lines = ids.map((id) => ({
    custom_id: id,
    method: 'POST',
    url: '/v1/responses',
    body: { model: 'gpt-5.4-mini', input: [{ role: 'user', content: 'Extract' }] },
  }));
  const file = await client.files.create({
    file: await toFile(Buffer.from(lines.map((l) => JSON.stringify(l)).join('\n')), 'batch.jsonl'),
    purpose: 'batch',
  });
  let batch = await client.batches.create({
    input_file_id: file.id,
    endpoint: '/v1/responses',
    completion_window: '24h',
  });
  if (options.cancel) batch = await client.batches.cancel(batch.id);
  let polls = 0;
  while (!['completed', 'expired', 'failed', 'cancelled'].includes(batch.status)) {
    polls += 1;
    batch = await client.batches.retrieve(batch.id);
  }
  const outcomes: Outcomes = {};
  const read = async (id: string | null | undefined) =>
    id ? (await (await client.files.content(id)).text()).split('\n').filter(Boolean) : [];
  for (const line of await read(batch.output_file_id)) {
    const r = JSON.parse(line);
    const usage = r.response.body.usage;
    outcomes[r.custom_id] =
      `ok ${r.response.body.output[0].content[0].text} ${usage.input_tokens}/${usage.output_tokens}`;
  }
  for (const line of await read(batch.error_file_id)) {
    const r = JSON.parse(line);
    outcomes[r.custom_id] = r.error?.code === 'batch_expired' ? 'expired' : 'error';
  }
  if (!options.cancel) return { status: batch.status, polls, outcomes };
  const id = batch.id;
  return { status: batch.status, polls, outcomes, cancelAgain: await cancelAgain(() => client.batches.cancel(id)) };
};

const anthropicDriver: Driver = async (fakes, ids, options = {}) => {
  const client = new Anthropic({ apiKey: 'sk-ant-batch-fake', baseURL: fakes.url, maxRetries: 0 });
  let batch = await client.messages.batches.create({
    requests: ids.map((id) => ({
      custom_id: id,
      params: {
        model: 'claude-haiku-5-5',
        max_tokens: 1024,
        messages: [{ role: 'user', content: 'Extract' }],
        tools: [{ name: 'record_result', input_schema: { type: 'object' } }],
        tool_choice: { type: 'tool', name: 'record_result' },
      },
    })),
  });
  if (options.cancel) batch = await client.messages.batches.cancel(batch.id);
  let polls = 0;
  while (batch.processing_status !== 'ended') {
    polls += 1;
    batch = await client.messages.batches.retrieve(batch.id);
  }
  const outcomes: Outcomes = {};
  for await (const r of await client.messages.batches.results(batch.id)) {
    if (r.result.type === 'succeeded') {
      const block = r.result.message.content[0];
      const answer = block?.type === 'tool_use' ? JSON.stringify(block.input) : '';
      const { input_tokens, output_tokens } = r.result.message.usage;
      outcomes[r.custom_id] = `ok ${answer} ${input_tokens}/${output_tokens}`;
    } else outcomes[r.custom_id] = ['expired', 'canceled'].includes(r.result.type) ? r.result.type : 'error';
  }
  const counts = batch.request_counts;
  const status = counts.expired > 0 ? 'ended, some expired' : counts.canceled > 0 ? 'ended, some canceled' : 'ended';
  if (!options.cancel) return { status, polls, outcomes };
  const id = batch.id;
  return { status, polls, outcomes, cancelAgain: await cancelAgain(() => client.messages.batches.cancel(id)) };
};

const geminiDriver: Driver = async (fakes, ids, options = {}) => {
  // The global fetch, as the adapter passes it (the SDK's own dispatcher is not there under jest's VM modules).
  const ai = new GoogleGenAI({ apiKey: 'gemini-batch-fake', httpOptions: { baseUrl: fakes.url, fetch } });
  let job = await ai.batches.create({
    model: 'gemini-3.8-flash',
    src: ids.map((id) => ({ contents: [{ role: 'user', parts: [{ text: 'Extract' }] }], metadata: { key: id } })),
    config: { displayName: 'vision-batch' },
  });
  const name = String(job.name);
  if (options.cancel) await ai.batches.cancel({ name });
  let polls = 0;
  const final = ['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_CANCELLED', 'JOB_STATE_EXPIRED'];
  while (!final.includes(String(job.state))) {
    polls += 1;
    job = await ai.batches.get({ name: String(job.name) });
  }
  const outcomes: Outcomes = Object.fromEntries(ids.map((id) => [id, 'expired']));
  for (const r of job.dest?.inlinedResponses ?? []) {
    const key = String((r.metadata as { key?: string } | undefined)?.key);
    if (r.error) outcomes[key] = 'error';
    else {
      const usage = r.response?.usageMetadata;
      // A batch's inlined response is the plain object (no `.text` getter of a GenerateContentResponse).
      const answer = r.response?.candidates?.[0]?.content?.parts?.[0]?.text;
      outcomes[key] = `ok ${answer} ${usage?.promptTokenCount}/${usage?.candidatesTokenCount}`;
    }
  }
  if (!options.cancel) return { status: String(job.state), polls, outcomes };
  return {
    status: String(job.state),
    polls,
    outcomes,
    cancelAgain: await cancelAgain(() => ai.batches.cancel({ name })),
  };
};

const storage = memoryStorage();
const bedrockDriver: Driver = async (fakes, ids, options = {}) => {
  const input = 's3://vision-batch/input/run-batch.jsonl';
  await storage.write(
    input,
    ids
      .map((id) =>
        JSON.stringify({
          recordId: id,
          modelInput: {
            messages: [{ role: 'user', content: [{ text: 'Extract' }] }],
            toolConfig: { tools: [{ toolSpec: { name: 'record_result' } }] },
          },
        }),
      )
      .join('\n'),
  );
  const created = await fetch(`${fakes.url}/model-invocation-job`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      jobName: 'vision-batch-1',
      roleArn: 'arn:aws:iam::000000000000:role/vision-batch',
      modelId: 'amazon.nova-lite-v1:0',
      inputDataConfig: { s3InputDataConfig: { s3Uri: input, s3InputFormat: 'JSONL' } },
      outputDataConfig: { s3OutputDataConfig: { s3Uri: 's3://vision-batch/output/' } },
      timeoutDurationInHours: 24,
    }),
  });
  const { jobArn } = (await created.json()) as { jobArn: string };
  const stop = async () => {
    const stopped = await fetch(`${fakes.url}/model-invocation-job/${encodeURIComponent(jobArn)}/stop`, {
      method: 'POST',
    });
    if (!stopped.ok) throw new Error(`StopModelInvocationJob: HTTP ${stopped.status}`);
  };
  if (options.cancel) await stop();
  let job: { status: string; outputDataConfig: { s3OutputDataConfig: { s3Uri: string } } };
  let polls = 0;
  do {
    polls += 1;
    job = await (await fetch(`${fakes.url}/model-invocation-job/${encodeURIComponent(jobArn)}`)).json();
  } while (job.status === 'Submitted' || job.status === 'InProgress');
  polls -= 1;
  const outcomes: Outcomes = Object.fromEntries(ids.map((id) => [id, 'expired']));
  const jobId = jobArn.slice(jobArn.lastIndexOf('/') + 1);
  const out = await storage.read(`${job.outputDataConfig.s3OutputDataConfig.s3Uri}${jobId}/run-batch.jsonl.out`);
  for (const line of out.split('\n').filter(Boolean)) {
    const r = JSON.parse(line);
    if (r.error) outcomes[r.recordId] = 'error';
    else {
      const usage = r.modelOutput.usage;
      const answer = JSON.stringify(r.modelOutput.output.message.content[0].toolUse.input);
      outcomes[r.recordId] = `ok ${answer} ${usage.inputTokens}/${usage.outputTokens}`;
    }
  }
  if (!options.cancel) return { status: job.status, polls, outcomes };
  return { status: job.status, polls, outcomes, cancelAgain: await cancelAgain(stop) };
};

/**
 * Each provider's end states, and how a cancelled batch's requests never run come back (`notRun`): OpenAI leaves them
 * out of both files, Anthropic reports them `canceled`, Gemini and Bedrock leave them out (the drivers' `expired`).
 */
type States = { done: string; partial: string; expired: string; cancelled: string; notRun?: string };
const drivers: Array<[string, Driver, States]> = [
  ['openai', openaiDriver, { done: 'completed', partial: 'completed', expired: 'expired', cancelled: 'cancelled' }],
  [
    'anthropic',
    anthropicDriver,
    {
      done: 'ended',
      partial: 'ended',
      expired: 'ended, some expired',
      cancelled: 'ended, some canceled',
      notRun: 'canceled',
    },
  ],
  [
    'gemini',
    geminiDriver,
    {
      done: 'JOB_STATE_SUCCEEDED',
      partial: 'JOB_STATE_SUCCEEDED',
      expired: 'JOB_STATE_EXPIRED',
      cancelled: 'JOB_STATE_CANCELLED',
      notRun: 'expired',
    },
  ],
  [
    'bedrock',
    bedrockDriver,
    { done: 'Completed', partial: 'PartiallyCompleted', expired: 'Expired', cancelled: 'Stopped', notRun: 'expired' },
  ],
];

let fakes: BatchFakes;
beforeAll(async () => {
  // Three records a batch here: Bedrock's minimum per job (100 by default) is tested on its own below.
  fakes = await startBatchFakes({ storage, behaviour: { bedrockMinRecords: 1 } });
});
afterAll(async () => fakes.close());

const ok = `ok ${JSON.stringify(ANSWER)} ${USAGE.input}/${USAGE.output}`;

describe.each(drivers)('%s batch fake', (provider, drive, states) => {
  test('submit, poll until it ends, read every answer with its usage', async () => {
    fakes.configure({
      outcome: () => ({ kind: 'ok', answer: ANSWER, usage: USAGE }),
      pollsBeforeEnd: 2,
      expire: false,
    });
    const result = await drive(fakes, ['run_a-1', 'run_b-1', 'run_c-1']);
    expect(result).toEqual({
      status: states.done,
      polls: 2 + (provider === 'bedrock' ? 0 : 1),
      outcomes: { 'run_a-1': ok, 'run_b-1': ok, 'run_c-1': ok },
    });
    const submitted = fakes.batches.at(-1);
    expect(submitted?.provider).toBe(provider);
    expect(submitted?.items.map((i) => i.customId)).toEqual(['run_a-1', 'run_b-1', 'run_c-1']);
  });

  test('a partial failure: the failed item is reported as failed, the others answered', async () => {
    fakes.configure({
      outcome: (item) =>
        item.customId === 'run_b-1'
          ? { kind: 'error', status: 500, message: 'internal error' }
          : { kind: 'ok', answer: ANSWER, usage: USAGE },
      pollsBeforeEnd: 0,
      expire: false,
    });
    const result = await drive(fakes, ['run_a-1', 'run_b-1', 'run_c-1']);
    expect(result.status).toBe(states.partial);
    expect(result.outcomes).toEqual({ 'run_a-1': ok, 'run_b-1': 'error', 'run_c-1': ok });
  });

  test('expiry: the items not done within the window come back expired', async () => {
    fakes.configure({
      outcome: () => ({ kind: 'ok', answer: ANSWER, usage: USAGE }),
      pollsBeforeEnd: 0,
      expire: true,
      doneBeforeExpiry: 1,
    });
    const result = await drive(fakes, ['run_a-1', 'run_b-1', 'run_c-1']);
    expect(result.status).toBe(states.expired);
    expect(result.outcomes).toEqual({ 'run_a-1': ok, 'run_b-1': 'expired', 'run_c-1': 'expired' });
  });
  test('cancel: the batch ends at once, its lines answered so far still answered (and billed), the others never run; an ended batch cannot be cancelled', async () => {
    fakes.configure({
      outcome: () => ({ kind: 'ok', answer: ANSWER, usage: USAGE }),
      pollsBeforeEnd: 1_000,
      expire: false,
      doneBeforeExpiry: 1,
    });
    const result = await drive(fakes, ['run_a-1', 'run_b-1', 'run_c-1'], { cancel: true });
    expect(result).toEqual({
      status: states.cancelled,
      // Its next status read (the first after the cancel) finds it ended: it would otherwise run 1,000 reads.
      polls: provider === 'bedrock' ? 0 : 1,
      outcomes: { 'run_a-1': ok, 'run_b-1': states.notRun, 'run_c-1': states.notRun },
      cancelAgain: 'refused',
    });
  });
});
