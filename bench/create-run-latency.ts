/**
 * create-run latency on the real local stack (`npm start` as a child process, via test/integration/stack.ts): files are
 * uploaded first (presign + PUT of receipt.png, not timed), then only `POST /v1/runs` is timed over HTTP, from the
 * request being sent to the response body being read, at concurrency 1 and 16.
 *
 * The stack's worker is paused (LOCAL_WORKER_CONCURRENCY=0): in AWS it runs in its own Lambdas, while here its OCR
 * would take the API's CPU on the same two cores. Warm-up runs at the measured concurrency, so that DynamoDB Local's
 * JIT and the stack's connection pools are in their steady state when the samples are taken.
 */
import { ENV } from '../shared/infra/env.js';
import { fixture, upload } from '../test/integration/client.js';
import { startStack } from '../test/integration/stack.js';
import { alive, descendants, machineBusyCpuMs, processCpuMs } from './procs.js';
import { round, type Summary, summarize } from './stats.js';

export const BENCH_TENANT = 'bench';
export const BENCH_KEY = 'vk_bench_tenant_0123456789abcdef0123';

export interface LatencyPhase {
  concurrency: number;
  requests: number;
  wallMs: number;
  throughputPerSecond: number;
  latencyMs: Summary;
  /** Responses other than 202, by status. */
  errors: Record<string, number>;
  /**
   * CPU time used per request during the phase, in ms: the stack's Node.js process (gateway, authorizer, handlers,
   * in-process fauxqs), DynamoDB Local's JVM, this load client, and every core of the machine together (all of those
   * plus anything else running). With the machine's cores busy, `cores x 1000 / machineMs` requests per second is
   * the most the machine can serve, whatever the code's latency.
   */
  cpuMsPerRequest: { stack: number; dynamoDbLocal: number; client: number; machine: number };
}

export interface CreateRunLatencyResult {
  stackStartMs: number;
  uploads: number;
  warmupRequests: number;
  phases: LatencyPhase[];
  /** Runs the worker finished (completed or failed) by the end of the measurement, out of all created. */
  workerProgress: { created: number; final: number | null };
  /** warn/error lines the stack printed (JSON logs and others), grouped by message, with counts. */
  stackProblems: { message: string; count: number }[];
  stackStopMs: number;
  /** Java processes (DynamoDB Local) the stack started, and whether any was still alive after the stack stopped. */
  javaPids: number[];
  javaLeftRunning: number[];
}

interface Options {
  uploads: number;
  warmup: number;
  sequential: number;
  concurrentRequests: number;
  concurrency: number;
  log: (line: string) => void;
}

/** Groups the stack's warn/error output by message (a line the stack collapsed counts its `repeated` too). */
function problems(output: readonly string[]): { message: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const line of output) {
    let message: string | null = null;
    let times = 1;
    try {
      const parsed = JSON.parse(line) as {
        level?: string;
        message?: string;
        error?: { message?: string };
        repeated?: number;
      };
      if (typeof parsed.repeated === 'number') times = parsed.repeated;
      if (parsed.level === 'warn' || parsed.level === 'error') {
        message = `${parsed.level}: ${parsed.message ?? ''}${parsed.error?.message ? ` (${parsed.error.message})` : ''}`;
      }
    } catch {
      if (/error|fail|warn/i.test(line) && !line.startsWith('VISION_LOCAL_READY')) message = line.trim();
    }
    if (message) counts.set(message.slice(0, 240), (counts.get(message.slice(0, 240)) ?? 0) + times);
  }
  return [...counts].map(([message, count]) => ({ message, count })).sort((a, b) => b.count - a.count);
}

export async function measureCreateRunLatency(options: Options): Promise<CreateRunLatencyResult> {
  const started = performance.now();
  const stack = await startStack({
    VISION_DEV_API_KEYS: `${BENCH_TENANT}:${BENCH_KEY}`,
    [ENV.providers]: 'local',
    LOCAL_RATE_LIMIT_RPS: '100000',
    LOCAL_RATE_LIMIT_BURST: '100000',
    // Runs stay queued: the worker's OCR would otherwise share the API's two cores (not so in AWS).
    LOCAL_WORKER_CONCURRENCY: '0',
    // Info logs ("run processed") would be written for every run; warnings and errors are what we look for.
    [ENV.logLevel]: 'warn',
  });
  const stackStartMs = round(performance.now() - started);
  const javaPids = (await descendants(stack.process.pid ?? -1)).filter((p) => p.comm === 'java').map((p) => p.pid);
  options.log(
    `  stack up in ${stackStartMs} ms at ${stack.info.baseUrl} (java pids: ${javaPids.join(', ') || 'none'})`,
  );

  let result: Omit<CreateRunLatencyResult, 'stackStopMs' | 'javaLeftRunning' | 'stackProblems'> | undefined;
  try {
    // client.ts reads the stack's coordinates from the environment (at each call), as under jest.
    process.env.INTEGRATION_STACK = JSON.stringify(stack.info);
    const bytes = await fixture('receipt.png');
    const uploadIds: string[] = [];
    for (let i = 0; i < options.uploads; i++) uploadIds.push(await upload('receipt.png', bytes, { key: BENCH_KEY }));

    const url = `${stack.info.baseUrl}/v1/runs`;
    const jobIds: string[] = [];
    let counter = 0;
    const createOne = async (): Promise<{ ms: number; status: number }> => {
      const uploadId = uploadIds[counter++ % uploadIds.length];
      const body = JSON.stringify({ uploadId, prompt: 'Extract the receipt', schemaId: 'receipt' });
      const t0 = performance.now();
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'x-api-key': BENCH_KEY, 'content-type': 'application/json' },
        body,
      });
      const text = await response.text();
      const ms = performance.now() - t0;
      if (response.status === 202) jobIds.push((JSON.parse(text) as { jobId: string }).jobId);
      return { ms, status: response.status };
    };

    const cpuNow = async () => ({
      stack: await processCpuMs(stack.process.pid ?? -1),
      dynamoDbLocal: (await Promise.all(javaPids.map(processCpuMs))).reduce((a, b) => a + b, 0),
      client: (process.cpuUsage().user + process.cpuUsage().system) / 1000,
      machine: await machineBusyCpuMs(),
    });

    const runPhase = async (concurrency: number, requests: number): Promise<LatencyPhase> => {
      const samples: number[] = [];
      const errors: Record<string, number> = {};
      let remaining = requests;
      const cpuBefore = await cpuNow();
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (remaining > 0) {
            remaining -= 1;
            const { ms, status } = await createOne();
            samples.push(ms);
            if (status !== 202) errors[String(status)] = (errors[String(status)] ?? 0) + 1;
          }
        }),
      );
      const wallMs = performance.now() - t0;
      const cpuAfter = await cpuNow();
      const perRequest = (k: keyof typeof cpuAfter) => round((cpuAfter[k] - cpuBefore[k]) / requests);
      return {
        concurrency,
        requests,
        wallMs: round(wallMs),
        throughputPerSecond: round((requests / wallMs) * 1000),
        latencyMs: summarize(samples),
        errors,
        cpuMsPerRequest: {
          stack: perRequest('stack'),
          dynamoDbLocal: perRequest('dynamoDbLocal'),
          client: perRequest('client'),
          machine: perRequest('machine'),
        },
      };
    };

    await runPhase(options.concurrency, options.warmup);
    const phases = [await runPhase(1, options.sequential)];
    options.log(`  concurrency 1: ${JSON.stringify(phases[0]?.latencyMs)}`);
    phases.push(await runPhase(options.concurrency, options.concurrentRequests));
    options.log(`  concurrency ${options.concurrency}: ${JSON.stringify(phases[1]?.latencyMs)}`);

    result = {
      stackStartMs,
      uploads: uploadIds.length,
      warmupRequests: options.warmup,
      phases,
      workerProgress: { created: jobIds.length, final: await countFinal(stack.info, jobIds) },
      javaPids,
    };
  } finally {
    const stopStarted = performance.now();
    await stack.stop();
    const stackStopMs = round(performance.now() - stopStarted);
    // Give the OS a moment to reap, then check that DynamoDB Local did not outlive the stack.
    await new Promise((r) => setTimeout(r, 500));
    const javaLeftRunning = javaPids.filter(alive);
    for (const pid of javaLeftRunning) {
      options.log(`  java ${pid} outlived the stack: killing it`);
      process.kill(pid, 'SIGKILL');
    }
    options.log(`  stack stopped in ${stackStopMs} ms; java left running: ${javaLeftRunning.length}`);
    if (result) Object.assign(result, { stackStopMs, javaLeftRunning, stackProblems: problems(stack.output) });
    else options.log(`  stack output:\n${stack.output.slice(-30).join('\n')}`);
  }
  return result as CreateRunLatencyResult;
}

/** How many of the created runs are final, read from the Runs table (one consistent read each, batched by 16). */
async function countFinal(
  info: { endpoints: { dynamodb: string }; resources: { tables: Record<string, string> } },
  jobIds: string[],
) {
  try {
    const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
    const { DynamoDBDocumentClient, GetCommand } = await import('@aws-sdk/lib-dynamodb');
    const client = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint: info.endpoints.dynamodb,
        region: 'us-east-1',
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      }),
    );
    let final = 0;
    for (let i = 0; i < jobIds.length; i += 16) {
      const items = await Promise.all(
        jobIds
          .slice(i, i + 16)
          .map((jobId) =>
            client.send(
              new GetCommand({ TableName: info.resources.tables.runs, Key: { jobId }, ConsistentRead: true }),
            ),
          ),
      );
      final += items.filter((o) => o.Item?.status === 'completed' || o.Item?.status === 'failed').length;
    }
    client.destroy();
    return final;
  } catch {
    return null;
  }
}
