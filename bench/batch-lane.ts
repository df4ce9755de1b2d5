/**
 * The batch lane at volume (issue 31): N batch runs on the real local stack against the OpenAI and Anthropic batch fakes
 * (bench/batch-fakes.ts, which also answer the synchronous APIs for the standard baseline). OpenAI's batch API fails
 * about one item in ten (HTTP 500 in its error file), whose runs fall back to Anthropic's batch; a quarter of the runs
 * get a duplicate message while they wait. Counted afterwards, from the stack's ledger and the fake's own log: every
 * run settled once (one hold, one settlement), each run's price against half its standard price to the micro-dollar,
 * requests sent twice, and runs lost.
 * The document is a one-page text PDF: an image's batch run runs evidence OCR on every delivery (also the ones that only
 * park it), which would make this phase measure OCR on a shared machine rather than the lane.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { priceFor, pricing } from '../shared/pricing/pricing.js';
import { startStack } from '../test/integration/stack.js';
import { openaiAnswer } from '../test/support/openai-answers.js';
import { type BatchItem, type ItemOutcome, startBatchFakes } from './batch-fakes.js';

const TENANT = 'bench-batch';
const KEY = 'vk_bench_batch_lane_0123456789abcdef';
const ANSWER = { merchant: 'Globex Ltd', date: '2026-09-30', total: 1578 };
const USAGE = { input: 1234, output: 57 };
const BODY = { prompt: 'Extract the invoice total', schemaId: 'receipt' };
/** Local AWS emulators check no signature; the SDK still wants some. */
const LOCAL_AWS = { region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } };

export interface BatchLaneResult {
  runs: number;
  completed: number;
  failed: number;
  /** Runs not final when the phase gave up waiting. */
  lost: number;
  /** Runs with exactly one hold and one settlement in the ledger. */
  settledOnce: number;
  /** Batch requests (by custom id) the fakes received more than once. */
  sentTwice: number;
  /** Synchronous provider calls made for batch runs (none is expected: both providers have a batch interface). */
  directCalls: number;
  batches: number;
  itemsFailedAtFake: number;
  fellBack: number;
  duplicatesSent: number;
  /** Completed runs whose cost is ceil(standard cost / 2) and whose price is that cost with the margin, exactly. */
  halfPriceExact: number;
  /** Largest |2 × batch price − standard price| over the completed runs, in micro-dollars (rounding of each). */
  maxHalfPriceDeltaMicros: number;
  standardPriceMicros: Record<string, number>;
  wallSeconds: number;
}

/** About one request in ten, chosen by its custom id, so the same request always gets the same outcome. */
const failsAtOpenai = (item: BatchItem) =>
  item.provider === 'openai' &&
  Number.parseInt(createHash('sha1').update(item.customId).digest('hex').slice(0, 8), 16) % 10 === 0;

function anthropicMessage() {
  return {
    id: 'msg_bench',
    type: 'message',
    role: 'assistant',
    model: 'claude-haiku-5-5',
    content: [{ type: 'tool_use', id: 'toolu_bench', name: 'record_result', input: ANSWER }],
    stop_reason: 'tool_use',
    stop_sequence: null,
    usage: { input_tokens: USAGE.input, output_tokens: USAGE.output },
  };
}

export async function measureBatchLane(options: {
  runs: number;
  log: (line: string) => void;
}): Promise<BatchLaneResult> {
  let openaiSyncFails = false;
  let directCalls = 0;
  let counting = false;
  let itemsFailedAtFake = 0;
  const fakes = await startBatchFakes({
    behaviour: {
      pollsBeforeEnd: 1,
      outcome: (item): ItemOutcome => {
        if (failsAtOpenai(item)) {
          itemsFailedAtFake += 1;
          return { kind: 'error', status: 500, message: 'internal' };
        }
        return { kind: 'ok', answer: ANSWER, usage: USAGE };
      },
    },
    otherwise: (req) => {
      if (counting) directCalls += 1;
      if (req.path === '/v1/responses')
        return openaiSyncFails
          ? { status: 500, json: { error: { message: 'down', type: 'server_error' } } }
          : openaiAnswer(ANSWER, USAGE, { model: 'gpt-5.4-mini-2026-03-17' });
      if (req.path === '/v1/messages') return { json: anthropicMessage() };
      return { status: 404, json: { error: { message: `unexpected ${req.method} ${req.path}` } } };
    },
  });
  const stack = await startStack({
    VISION_DEV_API_KEYS: `${TENANT}:${KEY}`,
    VISION_PROVIDERS: 'openai,anthropic,local',
    OPENAI_API_KEY: 'sk-bench-batch-0123456789',
    OPENAI_BASE_URL: `${fakes.url}/v1`,
    ANTHROPIC_API_KEY: 'sk-ant-bench-batch-0123456789',
    ANTHROPIC_BASE_URL: fakes.url,
    LOCAL_BATCH_INTERVAL_SECONDS: '1',
    SERVICE_BATCH_MAX_WAIT_SECONDS: '2',
    // Several provider batches out of the runs, not one.
    SERVICE_BATCH_MAX_REQUESTS: '50',
    LOCAL_RATE_LIMIT_RPS: '100000',
    LOCAL_RATE_LIMIT_BURST: '100000',
    LOG_LEVEL: 'warn',
  });
  const ddb = DynamoDBDocumentClient.from(
    new DynamoDBClient({ endpoint: stack.info.endpoints.dynamodb, ...LOCAL_AWS }),
  );
  const sqs = new SQSClient({ endpoint: stack.info.endpoints.sqs, useQueueUrlAsEndpoint: false, ...LOCAL_AWS });
  try {
    const api = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${stack.info.baseUrl}${path}`, {
        method,
        headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      return (await response.json()) as Record<string, unknown> & {
        jobId: string;
        status: string;
        attempts?: Array<{ provider: string; outcome: string }>;
        usage?: { costUsd: number; priceUsd: number };
      };
    };
    const bytes = await readFile(new URL('../test/fixtures/invoice.pdf', import.meta.url));
    const presign = await api('POST', '/v1/uploads/presign', { fileName: 'invoice.pdf', contentLength: bytes.length });
    await fetch(String(presign.uploadUrl), { method: 'PUT', body: new Blob([bytes]) });
    const body = { ...BODY, uploadId: presign.uploadId };
    const micros = (usd: unknown) => Math.round(Number(usd) * 1e6);
    const final = async (jobId: string, deadline: number) => {
      for (;;) {
        const run = await api('GET', `/v1/runs/${jobId}`);
        if (run.status === 'completed' || run.status === 'failed' || Date.now() > deadline) return run;
        await new Promise((r) => setTimeout(r, 500));
      }
    };

    // The standard baseline: the same answer and tokens from each provider's synchronous API.
    const standardCost: Record<string, number> = {};
    const standardPrice: Record<string, number> = {};
    for (const [provider, fails] of [
      ['openai', false],
      ['anthropic', true],
    ] as const) {
      openaiSyncFails = fails;
      const run = await final((await api('POST', '/v1/runs', body)).jobId, Date.now() + 120_000);
      const answered = run.attempts?.find((a) => a.outcome === 'succeeded')?.provider;
      if (run.status !== 'completed' || answered !== provider)
        throw new Error(`standard baseline for ${provider}: ${JSON.stringify(run)}`);
      standardCost[provider] = micros(run.usage?.costUsd);
      standardPrice[provider] = micros(run.usage?.priceUsd);
    }
    openaiSyncFails = false;
    options.log(`  standard: openai ${standardPrice.openai} µ$, anthropic ${standardPrice.anthropic} µ$ a run`);

    // The batch runs, created eight at a time; a quarter get a duplicate message (a redelivery) as they wait.
    counting = true;
    const started = Date.now();
    const jobIds: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < options.runs) {
          next += 1;
          const created = await api('POST', '/v1/runs', { ...body, priority: 'batch' });
          if (typeof created.jobId !== 'string') throw new Error(`batch run refused: ${JSON.stringify(created)}`);
          jobIds.push(created.jobId);
        }
      }),
    );
    const duplicated = jobIds.filter((_, i) => i % 4 === 0);
    for (const jobId of duplicated) {
      await sqs.send(
        new SendMessageCommand({ QueueUrl: stack.info.resources.queueUrl, MessageBody: JSON.stringify({ jobId }) }),
      );
    }
    options.log(`  ${jobIds.length} batch runs created, ${duplicated.length} sent twice; waiting for them…`);
    const deadline = Date.now() + 20 * 60_000;
    const runs = [];
    for (const jobId of jobIds) runs.push(await final(jobId, deadline));
    const wallSeconds = Math.round((Date.now() - started) / 100) / 10;
    counting = false;

    // The ledger: one hold and one settlement per run.
    const kinds = new Map<string, string[]>();
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await ddb.send(
        new QueryCommand({
          TableName: stack.info.resources.tables.ledger,
          KeyConditionExpression: 'tenantId = :t',
          ExpressionAttributeValues: { ':t': TENANT },
          ConsistentRead: true,
          ...(startKey ? { ExclusiveStartKey: startKey } : {}),
        }),
      );
      for (const entry of page.Items ?? []) {
        const jobId = String(entry.entryId).split('#')[0] as string;
        kinds.set(jobId, [...(kinds.get(jobId) ?? []), String(entry.kind)]);
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    const settledOnce = jobIds.filter((id) => (kinds.get(id) ?? []).sort().join() === 'hold,settle').length;

    // The fake's log: every request of every batch, by custom id.
    const sent = new Map<string, number>();
    for (const item of fakes.batches.flatMap((b) => b.items))
      sent.set(item.customId, (sent.get(item.customId) ?? 0) + 1);
    const sentTwice = [...sent.values()].filter((n) => n > 1).length;

    let halfPriceExact = 0;
    let maxDelta = 0;
    let fellBack = 0;
    const completed = runs.filter((r) => r.status === 'completed');
    for (const run of completed) {
      const answered = run.attempts?.find((a) => a.outcome === 'succeeded')?.provider ?? '';
      if (run.attempts?.some((a) => a.provider === 'openai' && a.outcome === 'failed')) fellBack += 1;
      const std = standardCost[answered];
      if (std === undefined) continue;
      const cost = micros(run.usage?.costUsd);
      const price = micros(run.usage?.priceUsd);
      if (cost === Math.ceil(std / 2) && price === priceFor(cost, pricing.marginPct)) halfPriceExact += 1;
      maxDelta = Math.max(maxDelta, Math.abs(2 * price - (standardPrice[answered] ?? 0)));
    }
    const result: BatchLaneResult = {
      runs: jobIds.length,
      completed: completed.length,
      failed: runs.filter((r) => r.status === 'failed').length,
      lost: runs.filter((r) => r.status !== 'completed' && r.status !== 'failed').length,
      settledOnce,
      sentTwice,
      directCalls,
      batches: fakes.batches.length,
      itemsFailedAtFake,
      fellBack,
      duplicatesSent: duplicated.length,
      halfPriceExact,
      maxHalfPriceDeltaMicros: maxDelta,
      standardPriceMicros: standardPrice,
      wallSeconds,
    };
    options.log(
      `  ${result.completed}/${result.runs} completed, ${result.lost} lost, ${result.settledOnce} settled once, ` +
        `${result.sentTwice} sent twice, ${result.halfPriceExact} at exactly half, ${result.fellBack} fell back ` +
        `(${result.itemsFailedAtFake} items failed at the fake), ${result.batches} batches, ${result.wallSeconds} s`,
    );
    return result;
  } finally {
    sqs.destroy();
    ddb.destroy();
    await stack.stop();
    await fakes.close();
  }
}

interface Row {
  metric: string;
  value: string;
  target: string;
  result: 'PASS' | 'MISS' | 'info' | 'ERROR' | 'n/a';
}

/** The phase's rows of the bench table: the four targets, then what the run was made of. */
export function batchLaneRows(r: BatchLaneResult): Row[] {
  const pass = (ok: boolean): Row['result'] => (ok ? 'PASS' : 'MISS');
  return [
    {
      metric: `batch lane, ${r.runs} runs on the fakes (${r.duplicatesSent} redelivered): settled once`,
      value: `${r.settledOnce} of ${r.runs}`,
      target: 'every run',
      result: pass(r.settledOnce === r.runs),
    },
    {
      metric: 'batch price = half the standard price, to the micro-dollar (50 % providers)',
      value: `${r.halfPriceExact} of ${r.completed} exact; largest gap between 2 × batch and standard ${r.maxHalfPriceDeltaMicros} µ$`,
      target: 'every completed run',
      result: pass(r.completed > 0 && r.halfPriceExact === r.completed),
    },
    {
      metric: 'batch requests sent twice (counted at the fake)',
      value: `${r.sentTwice} (and ${r.directCalls} synchronous calls)`,
      target: '0',
      result: pass(r.sentTwice === 0 && r.directCalls === 0),
    },
    {
      metric: `runs lost when the batch API fails part of a batch (${r.itemsFailedAtFake} items failed, ${r.fellBack} runs fell back)`,
      value: `${r.lost} lost, ${r.failed} failed`,
      target: '0',
      result: pass(r.lost === 0 && r.failed === 0),
    },
    {
      metric: `batch lane wall time, create → all final (${r.batches} provider batches, a batcher pass a second)`,
      value: `${r.wallSeconds} s`,
      target: '—',
      result: 'info',
    },
  ];
}
