/**
 * `GET /v1/usage` at 10,000 runs on the real local stack. The runs (spread over the last 30 days and five workflows,
 * most completed, some failed or queued, a fifth of the completed ones verified) are batch-written in their final
 * state with the usage counters the service's writer gives them (`usageUpdates` of each run's contribution, summed
 * here): one transaction per run would take minutes on DynamoDB Local, and that the transactions produce exactly these
 * counters is what test/integration/usage-counters.test.ts proves. Then the usage call is timed over HTTP for the
 * default 30-day window (day buckets), a week by hour, and a window whose edges fall inside an hour (the edge hours
 * read runs), beside the floor of any authenticated call (`GET /v1/schemas`). For comparison, the old way, reading
 * every run of the 30 days (projected), is timed in process against the same table.
 *
 * The measurement runs in a child process of its own: the store caches its table names and DynamoDB client at first
 * use, and the worker phase points the bench process at other emulators.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { ddb } from '../shared/aws/dynamodb.js';
import { ENV } from '../shared/infra/env.js';
import { tables } from '../shared/infra/resources.js';
import { listRuns, type RunRecord } from '../shared/store/runs.js';
import { startStack } from '../test/integration/stack.js';
import { counterItems } from '../test/support/usage-store.js';
import { round, type Summary, timed } from './stats.js';

const TENANT = 'bench-usage';
const KEY = 'vk_bench_usage_0123456789abcdef01234';
const WORKFLOWS = ['receipts', 'invoices', 'ids', 'cards', null] as const;
const DAY_MS = 86_400_000;

export interface UsageReadResult {
  runs: number;
  seedMs: number;
  /** `GET /v1/schemas` (authenticated, no table read): what any call costs on this stack. */
  floor: Summary;
  defaultWindow: Summary;
  weekByHour: Summary;
  edgesInsideHours: Summary;
  /** The old read (every run of the 30 days, projected), in process, for comparison. */
  everyRunRead: Summary;
  /** The usage answer's run count for the 30 days (must equal `runs`). */
  counted: number;
}

function record(i: number, now: number): RunRecord {
  const createdAt = new Date(now - 1000 - Math.floor((((i * 7919) % 10_000) / 10_000) * 29 * DAY_MS)).toISOString();
  const workflow = WORKFLOWS[i % WORKFLOWS.length] ?? null;
  return {
    jobId: `run_bench_usage_${i}`,
    tenantId: TENANT,
    status: 'queued',
    stage: 'waiting',
    uploadId: 'upl_bench',
    objectKey: `uploads/${TENANT}/upl_bench`,
    prompt: 'Extract the receipt',
    outputFormat: 'json',
    schemaId: 'receipt',
    task: {
      prompt: 'Extract the receipt',
      outputFormat: 'json',
      fields: null,
      schemaId: 'receipt',
      schemaLabel: 'Receipt',
      promptScaffold: null,
    },
    workflow,
    ...(workflow ? { tenantWorkflow: `${TENANT}#${workflow}` } : {}),
    metadata: {},
    file: { mime: 'image/png', kind: 'image', sizeBytes: 13775, width: 800, height: 834, pages: 1 },
    strategy: 'ocr_then_analyze',
    candidates: ['local'],
    estimateMicros: 260 + (i % 40),
    maxCostMicros: null,
    holdFromCredit: false,
    createdAt,
    expiresAtEpoch: Math.floor(now / 1000) + 90 * 86400,
  };
}

/** The run in its final state: 5 % queued, 10 % failed, the rest completed, a fifth of those verified. */
function finalState(i: number, now: number): RunRecord {
  const run: RunRecord = { ...record(i, now), usageCounted: true };
  if (i % 20 === 0) return run;
  if (i % 10 === 1)
    return { ...run, status: 'failed', stage: 'done', chargedMicros: 0, refundedMicros: run.estimateMicros };
  const charged = 195 + (i % 30);
  return {
    ...run,
    status: 'completed',
    stage: 'done',
    result: { total: i },
    usage: { requests: 1, billableUnits: 1, costMicros: 150, priceMicros: charged },
    chargedMicros: charged,
    refundedMicros: run.estimateMicros - charged,
    confidence: (i % 100) / 100,
    ...(i % 5 === 2
      ? {
          verification: {
            accepted: i % 3 !== 0,
            corrections: {},
            note: null,
            verifiedAt: new Date(now).toISOString(),
            verifiedBy: 'key_bench',
          },
          verificationCount: 1,
        }
      : {}),
  };
}

async function batchPut(table: string, items: readonly object[]): Promise<void> {
  const batches: object[][] = [];
  for (let i = 0; i < items.length; i += 25) batches.push(items.slice(i, i + 25));
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < batches.length) {
        let pending = (batches[next++] ?? []).map((Item) => ({
          PutRequest: { Item: Item as Record<string, unknown> },
        }));
        while (pending.length > 0) {
          const out = await ddb.send(new BatchWriteCommand({ RequestItems: { [table]: pending } }));
          pending = (out.UnprocessedItems?.[table] ?? []) as typeof pending;
        }
      }
    }),
  );
}

interface Options {
  runs: number;
  samples: number;
  log: (line: string) => void;
}

const RESULT_PREFIX = 'USAGE_READ_RESULT ';

/** Runs the measurement in a child process; its progress lines go to `log`. */
export async function measureUsageRead(options: Options): Promise<UsageReadResult> {
  const self = fileURLToPath(import.meta.url);
  const child = spawn(process.execPath, ['--import', 'tsx', self, String(options.runs), String(options.samples)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let result: UsageReadResult | undefined;
  createInterface({ input: child.stdout }).on('line', (line) => {
    if (line.startsWith(RESULT_PREFIX)) result = JSON.parse(line.slice(RESULT_PREFIX.length)) as UsageReadResult;
    else options.log(line);
  });
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  if (code !== 0 || !result) throw new Error(`usage-read child exited with ${code}`);
  return result;
}

async function measure(options: Options): Promise<UsageReadResult> {
  const stack = await startStack({
    VISION_DEV_API_KEYS: `${TENANT}:${KEY}`,
    [ENV.providers]: 'local',
    LOCAL_RATE_LIMIT_RPS: '100000',
    LOCAL_RATE_LIMIT_BURST: '100000',
    LOCAL_WORKER_CONCURRENCY: '0',
    [ENV.logLevel]: 'warn',
  });
  try {
    // The store reads its table names and endpoint from the environment at first use.
    for (const [name, def] of Object.entries(tables)) {
      const table = stack.info.resources.tables[name];
      if (table) process.env[def.envVar] = table;
    }
    process.env.AWS_ENDPOINT_URL_DYNAMODB = stack.info.endpoints.dynamodb;
    process.env.AWS_REGION ??= 'us-east-1';
    process.env.AWS_ACCESS_KEY_ID ??= 'local';
    process.env.AWS_SECRET_ACCESS_KEY ??= 'local';

    const now = Date.now();
    const t0 = performance.now();
    const runs = Array.from({ length: options.runs }, (_, i) => finalState(i, now));
    await batchPut(stack.info.resources.tables.runs ?? '', runs);
    await batchPut(stack.info.resources.tables.usage ?? '', counterItems(runs));
    const seedMs = round(performance.now() - t0);
    options.log(`  stored ${options.runs} runs and their usage counters in ${seedMs} ms`);

    const usage = async (query: string) => {
      const response = await fetch(`${stack.info.baseUrl}/v1/usage${query}`, { headers: { 'x-api-key': KEY } });
      const body = (await response.json()) as { totals?: { runs: number } };
      if (response.status !== 200) throw new Error(`usage answered ${response.status}: ${JSON.stringify(body)}`);
      return body;
    };
    const counted = (await usage('')).totals?.runs ?? -1;
    const weekAgo = new Date(now - 7 * DAY_MS).toISOString();
    const edges = `?from=${new Date(now - 20 * DAY_MS - 1_234_567).toISOString()}&to=${new Date(now - 60_000).toISOString()}`;
    const floor = await timed(options.samples, async () => {
      const response = await fetch(`${stack.info.baseUrl}/v1/schemas`, { headers: { 'x-api-key': KEY } });
      await response.arrayBuffer();
    });
    const defaultWindow = await timed(options.samples, () => usage('').then(() => undefined));
    const weekByHour = await timed(options.samples, () =>
      usage(`?from=${weekAgo}&interval=hour`).then(() => undefined),
    );
    const edgesInsideHours = await timed(options.samples, () => usage(edges).then(() => undefined));
    const everyRunRead = await timed(3, async () => {
      let startKey: Record<string, unknown> | undefined;
      do {
        const page = await listRuns({
          tenantId: TENANT,
          limit: 500,
          attributes: ['workflow', 'status', 'estimateMicros', 'chargedMicros', 'refundedMicros', 'confidence'],
          createdFrom: new Date(now - 30 * DAY_MS).toISOString(),
          createdTo: new Date(now).toISOString(),
          ...(startKey ? { startKey } : {}),
        });
        startKey = page.lastKey;
      } while (startKey);
    });
    return { runs: options.runs, seedMs, floor, defaultWindow, weekByHour, edgesInsideHours, everyRunRead, counted };
  } finally {
    await stack.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [runs, samples] = process.argv.slice(2).map(Number);
  const result = await measure({
    runs: runs ?? 10_000,
    samples: samples ?? 20,
    log: (line) => process.stdout.write(`${line}\n`),
  });
  process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`);
}
