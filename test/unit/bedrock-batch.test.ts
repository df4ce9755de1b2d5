/**
 * Bedrock batch inference for the batch lane: the codec's record is the adapter's own Converse request in Nova's
 * InvokeModel format (checked against what the adapter sends), its answer is read as the adapter reads one; the batch
 * API writes the JSONL of {recordId, modelInput} to the uploads bucket (S3 through aws-sdk-client-mock), creates and
 * polls a model invocation job on the wire fake (bench/batch-fakes.ts, through the real @aws-sdk/client-bedrock), and
 * reads `*.jsonl.out` back, partial failure and expiry included. Bedrock's minimum of records per job: the estimate
 * promises no discount, and the grouping never submits a job under it.
 */
import { BedrockClient, CreateModelInvocationJobCommand, GetModelInvocationJobCommand } from '@aws-sdk/client-bedrock';
import { BedrockRuntimeClient, ConverseCommand, type ConverseCommandInput } from '@aws-sdk/client-bedrock-runtime';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { type BatchFakes, type ObjectStorage, startBatchFakes } from '../../bench/batch-fakes.js';
import { configuredLimits, decideBatches } from '../../shared/batching/groups.js';
import type { FileFacts } from '../../shared/file-facts.js';
import { predictAttempt } from '../../shared/planning/estimate.js';
import type { BatchItemResult } from '../../shared/providers/batch-codec.js';
import { batchTerms, promisedTerms } from '../../shared/providers/batch-terms.js';
import { createBedrockProvider } from '../../shared/providers/bedrock/adapter.js';
import { bedrockBatchCodec, MAX_PDF_PAGE_IMAGES } from '../../shared/providers/bedrock/batch.js';
import { bedrockBatchApi, jobToken } from '../../shared/providers/bedrock/batch-api.js';
import { configuredModel, tokenCostMicros } from '../../shared/providers/bedrock/profile.js';
import type { ProviderInput } from '../../shared/providers/types.js';
import { buildTask, registry } from '../../shared/registry/registry.js';
import { bucketName, fixture } from '../support/aws.js';

const NOVA_LITE = { BEDROCK_MODEL_ID: 'us.amazon.nova-lite-v1:0', AWS_REGION: 'us-east-1' };
const ROLE = 'arn:aws:iam::000000000000:role/vision-bedrock-batch';
const MODEL = configuredModel(NOVA_LITE);
if (!MODEL) throw new Error('bedrock-pricing.json lacks Nova Lite');

const RECEIPT_TASK = buildTask({
  prompt: 'Extract',
  outputFormat: 'json',
  schemaId: 'receipt',
  schema: registry.get('receipt'),
});
const RECEIPT = fixture('receipt.png');
const FACTS: FileFacts = {
  mime: 'image/png',
  kind: 'image',
  sizeBytes: RECEIPT.length,
  width: 800,
  height: 834,
  pages: 1,
};
const input = (overrides: Partial<ProviderInput> = {}): ProviderInput => ({
  bytes: RECEIPT,
  facts: FACTS,
  task: RECEIPT_TASK,
  step: 'vision',
  ...overrides,
});
const ANSWER = { merchant: 'Corner Shop', date: '2026-11-02', subtotal: 10, tax: 2.5, total: 12.5, currency: 'EUR' };

/** Nova's InvokeModel answer: Converse's shape. */
function novaOutput(content: unknown[], stopReason = 'tool_use', usage = { inputTokens: 1500, outputTokens: 80 }) {
  return { output: { message: { role: 'assistant', content } }, stopReason, usage };
}
const toolAnswer = (value: unknown) =>
  novaOutput([{ toolUse: { toolUseId: 't1', name: 'record_result', input: value } }]);

const runtime = mockClient(BedrockRuntimeClient);
const s3 = mockClient(S3Client);
const objects = new Map<string, string>();
beforeEach(() => {
  runtime.reset();
  s3.reset();
  objects.clear();
  s3.on(PutObjectCommand).callsFake((i) => {
    objects.set(String(i.Key), String(i.Body));
    return {};
  });
  s3.on(GetObjectCommand).callsFake((i) => {
    const body = objects.get(String(i.Key));
    if (body === undefined) throw Object.assign(new Error('no such key'), { name: 'NoSuchKey' });
    return { Body: { transformToString: async () => body } };
  });
  s3.on(ListObjectsV2Command).callsFake((i) => ({
    Contents: [...objects.keys()].filter((k) => k.startsWith(String(i.Prefix))).map((Key) => ({ Key })),
    IsTruncated: false,
  }));
});

describe('the codec', () => {
  test("a record is the adapter's own request in the InvokeModel format (bytes as base64)", async () => {
    runtime.on(ConverseCommand).resolves({
      output: {
        message: {
          role: 'assistant',
          content: [{ toolUse: { toolUseId: 't', name: 'record_result', input: ANSWER } }],
        },
      },
      stopReason: 'tool_use',
      usage: { inputTokens: 1500, outputTokens: 80, totalTokens: 1580 },
    });
    await createBedrockProvider({ env: NOVA_LITE, client: new BedrockRuntimeClient({ region: 'us-east-1' }) }).invoke(
      input(),
      { signal: new AbortController().signal, deadlineMs: Date.now() + 30_000 },
    );
    const sent = runtime.commandCalls(ConverseCommand)[0]?.args[0].input as ConverseCommandInput;
    const line = await bedrockBatchCodec.line(input(), { env: NOVA_LITE });
    expect(line.model).toBe('us.amazon.nova-lite-v1:0');
    expect(line.body).toMatchObject({
      schemaVersion: 'messages-v1',
      system: sent.system,
      inferenceConfig: sent.inferenceConfig,
    });
    expect(line.body.toolConfig).toEqual(JSON.parse(JSON.stringify(sent.toolConfig)));
    type Block = { text?: string; image?: { format: string; source: { bytes: string } } };
    const [image, text] = (line.body.messages as Array<{ content: Block[] }>)[0]?.content ?? [];
    const [sentImage, sentText] = sent.messages?.[0]?.content ?? [];
    expect(text).toEqual(sentText);
    expect(image?.image?.format).toBe(sentImage?.image?.format);
    expect(image?.image?.source.bytes).toBe(
      Buffer.from(sentImage?.image?.source?.bytes as Uint8Array).toString('base64'),
    );
  });

  test("a PDF read from the file goes as its pages' images (InvokeModel takes no document block)", async () => {
    const pdf = fixture('scanned.pdf');
    const facts: FileFacts = { mime: 'application/pdf', kind: 'pdf', sizeBytes: pdf.length, pages: 1 };
    const line = await bedrockBatchCodec.line(input({ bytes: pdf, facts }), { env: NOVA_LITE });
    const content = (line.body.messages as Array<{ content: Array<Record<string, unknown>> }>)[0]?.content ?? [];
    expect(content.map((block) => Object.keys(block)[0])).toEqual(['image', 'text']);
    const many: FileFacts = { ...facts, pages: MAX_PDF_PAGE_IMAGES + 1 };
    await expect(bedrockBatchCodec.line(input({ bytes: pdf, facts: many }), { env: NOVA_LITE })).rejects.toMatchObject({
      kind: 'client',
    });
  });

  test('an answer is read as the adapter reads one, at the list price', async () => {
    const output = await bedrockBatchCodec.parse(toolAnswer(ANSWER), input(), { env: NOVA_LITE });
    expect(output.result).toMatchObject({ merchant: 'Corner Shop', total: 12.5 });
    expect(output.usage).toEqual({
      billableUnits: 1,
      costMicros: tokenCostMicros(1500, 80, MODEL.price),
      inputTokens: 1500,
      outputTokens: 80,
    });
  });

  test('no repair in a batch: no tool call, a result off the schema, a cut answer each fail with their usage', async () => {
    const parse = (body: unknown) => bedrockBatchCodec.parse(body, input(), { env: NOVA_LITE });
    await expect(parse(novaOutput([{ text: 'here it is' }], 'end_turn'))).rejects.toMatchObject({
      kind: 'invalid_output',
      usage: { inputTokens: 1500 },
    });
    await expect(parse(toolAnswer(['not', 'an', 'object']))).rejects.toMatchObject({ kind: 'invalid_output' });
    await expect(parse(novaOutput([{ text: '{' }], 'max_tokens'))).rejects.toMatchObject({ kind: 'truncated' });
    await expect(parse(novaOutput([], 'content_filtered'))).rejects.toMatchObject({ kind: 'refusal' });
  });

  test('a model without a price is refused unsent, by the adapter and the codec alike', async () => {
    const env = { ...NOVA_LITE, BEDROCK_MODEL_ID: 'us.amazon.nova-unknown-v9:0' };
    const refused = {
      kind: 'client',
      message: 'bedrock: BEDROCK_MODEL_ID us.amazon.nova-unknown-v9:0 has no price in infra/bedrock-pricing.json',
    };
    runtime.reset();
    const adapter = createBedrockProvider({ env, client: new BedrockRuntimeClient({ region: 'us-east-1' }) });
    await expect(
      adapter.invoke(input(), { signal: new AbortController().signal, deadlineMs: Date.now() + 30_000 }),
    ).rejects.toMatchObject(refused);
    await expect(bedrockBatchCodec.line(input(), { env })).rejects.toMatchObject(refused);
    await expect(bedrockBatchCodec.parse(toolAnswer(ANSWER), input(), { env })).rejects.toMatchObject(refused);
    expect(runtime.calls()).toHaveLength(0);
  });
});

describe('the batch API on the wire fake', () => {
  let fakes: BatchFakes;
  /** The fake reads and writes through the same (mocked) uploads bucket as the batcher. */
  const storage: ObjectStorage = {
    read: async (uri) => {
      const body = objects.get(uri.replace(`s3://${bucketName()}/`, ''));
      if (body === undefined) throw new Error(`no object at ${uri}`);
      return body;
    },
    write: async (uri, body) => {
      objects.set(uri.replace(`s3://${bucketName()}/`, ''), body);
    },
  };
  beforeEach(async () => {
    // A few records a job here; Bedrock's minimum (the fake's default, 100) has its own test.
    fakes = await startBatchFakes({ storage, behaviour: { bedrockMinRecords: 1 } });
  });
  afterEach(() => fakes.close());

  const api = (env: NodeJS.ProcessEnv = { ...NOVA_LITE, BEDROCK_BATCH_ROLE_ARN: ROLE }) =>
    bedrockBatchApi(env, {
      client: new BedrockClient({
        region: 'us-east-1',
        endpoint: fakes.url,
        credentials: { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'test-secret-for-the-fake' },
      }),
    });
  /** Records as the codec writes them: a forced result tool, so the fake answers with a tool call. */
  const lines = (ids: string[]) =>
    ids.map((customId) => ({
      customId,
      body: {
        schemaVersion: 'messages-v1',
        messages: [{ role: 'user', content: [{ text: customId }] }],
        toolConfig: {
          tools: [{ toolSpec: { name: 'record_result' } }],
          toolChoice: { tool: { name: 'record_result' } },
        },
      },
    }));

  test('writes the records and submits a job with the service role; reads each answer back by record id', async () => {
    fakes.configure({
      pollsBeforeEnd: 2,
      outcome: (item) =>
        item.customId === 'R0000000001'
          ? { kind: 'error', status: 400, message: 'bad request' }
          : { kind: 'ok', answer: ANSWER, usage: { input: 1400, output: 70 } },
    });
    const ids = ['run_a#bedrock#vision#all', 'run_b#bedrock#vision#all', 'run_c#bedrock#vision#1-2'];
    const ref = await api().submit('us.amazon.nova-lite-v1:0', lines(ids));
    expect(ref).toMatch(/^arn:aws:bedrock:.*:model-invocation-job\//);

    const create = fakes.requests.find((r) => r.method === 'POST')?.body as Record<string, unknown>;
    const token = jobToken('us.amazon.nova-lite-v1:0', ids);
    expect(create).toMatchObject({
      roleArn: ROLE,
      modelId: 'us.amazon.nova-lite-v1:0',
      modelInvocationType: 'InvokeModel',
      clientRequestToken: token,
      timeoutDurationInHours: 24,
    });
    // The records: alphanumeric ids, each line's body as its modelInput.
    const written = objects.get(`batch/bedrock/${token}/input/records.jsonl`) ?? '';
    const records = written
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(records.map((r) => r.recordId)).toEqual(['R0000000000', 'R0000000001', 'R0000000002']);
    expect(records[2].modelInput).toEqual(lines(ids)[2]?.body);

    expect(await api().poll(ref, ids)).toBeUndefined(); // Submitted
    expect(await api().poll(ref, ids)).toBeUndefined(); // InProgress
    const results = (await api().poll(ref, ids)) as Map<string, BatchItemResult>;
    expect(results.get('run_b#bedrock#vision#all')).toMatchObject({ kind: 'failed', failure: 'client' });
    const answer = results.get('run_c#bedrock#vision#1-2');
    expect(answer?.kind).toBe('answer');
    const body = answer?.kind === 'answer' ? answer.body : undefined;
    const output = await bedrockBatchCodec.parse(body, input(), { env: NOVA_LITE });
    expect(output.result).toMatchObject({ merchant: 'Corner Shop' });
    expect(output.usage.inputTokens).toBe(1400);
  });

  test('the same requests sent again (a crash before the batch was recorded) carry the same job token', async () => {
    const first = await api().submit('us.amazon.nova-lite-v1:0', lines(['a', 'b']));
    const again = await api().submit('us.amazon.nova-lite-v1:0', lines(['b', 'a']));
    const other = await api().submit('us.amazon.nova-lite-v1:0', lines(['a', 'c']));
    const tokens = fakes.requests
      .filter((r) => r.method === 'POST')
      .map((r) => (r.body as { clientRequestToken?: string }).clientRequestToken);
    expect(tokens[0]).toBe(tokens[1]);
    expect(tokens[2]).not.toBe(tokens[0]);
    // Bedrock answers a known token with its job: the requests sent again are not a second job (nor a second bill).
    expect(again).toBe(first);
    expect(other).not.toBe(first);
    expect(fakes.batches).toHaveLength(2);
  });

  test('cancel is StopModelInvocationJob on the job ARN; the job ends Stopped with the records done so far', async () => {
    fakes.configure({ pollsBeforeEnd: 1_000_000, doneBeforeExpiry: 2 });
    const ids = ['one', 'two', 'three'];
    const ref = await api().submit('us.amazon.nova-lite-v1:0', lines(ids));
    expect(await api().poll(ref, ids)).toBeUndefined();
    await api().cancel(ref);
    const stop = fakes.requests.at(-1);
    // The SDK's request: POST /model-invocation-job/{jobIdentifier}/stop, the job's ARN as identifier, signed.
    expect([stop?.method, stop?.path]).toEqual(['POST', `/model-invocation-job/${encodeURIComponent(ref)}/stop`]);
    expect(stop?.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE\/.*\/bedrock\//);
    const control = new BedrockClient({
      region: 'us-east-1',
      endpoint: fakes.url,
      credentials: { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'test-secret-for-the-fake' },
    });
    expect((await control.send(new GetModelInvocationJobCommand({ jobIdentifier: ref }))).status).toBe('Stopped');
    control.destroy();
    const results = (await api().poll(ref, ids)) as Map<string, BatchItemResult>;
    expect([...results.keys()].sort()).toEqual(['one', 'two']);
    // An ended job cannot be stopped again.
    await expect(api().cancel(ref)).rejects.toMatchObject({ name: 'ValidationException' });
  });

  test("a job the reference refuses: a role that is not an IAM role's ARN, a job name off its pattern", async () => {
    await expect(
      api({ ...NOVA_LITE, BEDROCK_BATCH_ROLE_ARN: 'not-a-role' }).submit('us.amazon.nova-lite-v1:0', lines(['a'])),
    ).rejects.toMatchObject({ name: 'ValidationException' });
    const control = new BedrockClient({
      region: 'us-east-1',
      endpoint: fakes.url,
      credentials: { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'test-secret-for-the-fake' },
    });
    await expect(
      control.send(
        new CreateModelInvocationJobCommand({
          jobName: 'has spaces',
          roleArn: ROLE,
          modelId: 'us.amazon.nova-lite-v1:0',
          inputDataConfig: { s3InputDataConfig: { s3Uri: 's3://b/in.jsonl' } },
          outputDataConfig: { s3OutputDataConfig: { s3Uri: 's3://b/out/' } },
        }),
      ),
    ).rejects.toMatchObject({ name: 'ValidationException' });
    control.destroy();
    expect(fakes.batches).toHaveLength(0);
  });

  test('an expired job answers the records done before it expired; the others are left out', async () => {
    fakes.configure({ expire: true, doneBeforeExpiry: 1, pollsBeforeEnd: 0 });
    const ref = await api().submit('us.amazon.nova-lite-v1:0', lines(['one', 'two', 'three']));
    const results = (await api().poll(ref, ['one', 'two', 'three'])) as Map<string, BatchItemResult>;
    expect([...results.keys()]).toEqual(['one']);
  });

  test("a job under Bedrock's minimum of records is refused: the submit throws, so its requests wait again", async () => {
    fakes.configure({ bedrockMinRecords: 100 });
    await expect(api().submit('us.amazon.nova-lite-v1:0', lines(['a', 'b', 'c']))).rejects.toMatchObject({
      name: 'ValidationException',
    });
    expect(fakes.batches).toHaveLength(0);
    const hundred = Array.from({ length: 100 }, (_, i) => `run_${i}#bedrock#vision#all`);
    await expect(api().submit('us.amazon.nova-lite-v1:0', lines(hundred))).resolves.toMatch(/model-invocation-job/);
  });

  test('without the service role nothing is written or submitted', async () => {
    await expect(api(NOVA_LITE).submit('us.amazon.nova-lite-v1:0', lines(['a']))).rejects.toThrow(
      /BEDROCK_BATCH_ROLE_ARN/,
    );
    expect(objects.size).toBe(0);
    expect(fakes.batches).toHaveLength(0);
  });
});

describe("Bedrock's minimum of records per job", () => {
  test('its batch estimate promises no discount (a small group runs normally), while an answer is charged half', () => {
    expect(batchTerms('bedrock', NOVA_LITE)).toEqual({ viaInterface: true, discountPct: 50 });
    expect(promisedTerms('bedrock', NOVA_LITE)).toEqual({ viaInterface: true, discountPct: 0 });
    const standard = predictAttempt('bedrock', FACTS, RECEIPT_TASK, 'vision', undefined, { env: NOVA_LITE });
    const batch = predictAttempt('bedrock', FACTS, RECEIPT_TASK, 'vision', undefined, {
      env: NOVA_LITE,
      priority: 'batch',
    });
    expect(batch?.costMicros).toBe(standard?.costMicros);
    // Gemini and OpenAI batch from one request: their estimates keep the discount.
    expect(promisedTerms('gemini')).toEqual(batchTerms('gemini'));
  });

  test('a group under 100 records is never submitted: it waits for company, then runs normally before its deadline', () => {
    const limits = configuredLimits({ maxRequests: 2000, maxWaitMs: 600_000, directMarginMs: 3_600_000 });
    const now = 1_000_000_000;
    const waiting = (n: number, deadlineMs: number) =>
      Array.from({ length: n }, (_, i) => ({
        id: `run_${i}#bedrock#vision#all`,
        provider: 'bedrock' as const,
        model: 'us.amazon.nova-lite-v1:0',
        bytes: 2_000,
        waitingSinceMs: now - 3_600_000,
        deadlineMs,
      }));
    const early = decideBatches(waiting(99, now + 20 * 3_600_000), limits, now);
    expect(early.submit).toEqual([]);
    expect(early.direct).toEqual([]);
    const late = decideBatches(waiting(99, now + 1_800_000), limits, now);
    expect(late.submit).toEqual([]);
    expect(late.direct.map((d) => d.reason)).toEqual(Array(99).fill('deadline'));
    expect(decideBatches(waiting(100, now + 20 * 3_600_000), limits, now).submit[0]?.requests).toHaveLength(100);
  });
});
