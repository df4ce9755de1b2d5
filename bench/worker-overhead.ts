/**
 * Worker overhead, in process against DynamoDB Local and fauxqs: runs created with the create-run core and processed by
 * calling `processRun` directly, with a fake provider whose own time is subtracted; every AWS call is timed.
 * docs/decisions.md#worker-overhead-benchmark describes each figure. Each overhead case also records the CPU time
 * of this process and of DynamoDB Local per run: unlike wall times, other work on the machine barely moves them.
 */
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { PROJECT_ROOT } from '../lib/vision-function.js';
import { createResources, startEmulators } from '../scripts/local/emulators.js';
import { ddb } from '../shared/aws/dynamodb.js';
import { s3 } from '../shared/aws/s3.js';
import { sqs } from '../shared/aws/sqs.js';
import { createRunRequest } from '../shared/contract.js';
import { ENV } from '../shared/infra/env.js';
import { runQueue, tables, uploadsBucket } from '../shared/infra/resources.js';
import { adapters } from '../shared/providers/adapters.js';
import { shutdownLocalProvider } from '../shared/providers/local/local-provider.js';
import type { ProviderAdapter, ProviderInput, ProviderOutput } from '../shared/providers/types.js';
import { createRun } from '../shared/runs/create-run.js';
import { presignUpload } from '../shared/runs/presign.js';
import { getRun } from '../shared/store/runs.js';
import { ensureTenant } from '../shared/store/tenants.js';
import { processRun } from '../shared/worker/process-run.js';
import { type AwsCalls, type CallRecord, perRun, recordAwsCalls } from './aws-recorder.js';
import { descendants, machineBusyCpuMs, processCpuMs } from './procs.js';
import { median, round, type Summary, summarize } from './stats.js';
import { CASES, type FileCase, WORKER_TENANT } from './worker-cases.js';

export type { AwsCalls } from './aws-recorder.js';

export interface OverheadCase {
  file: string;
  /** FileCase.label. */
  label: string;
  /** Pages of the file (1 for an image). */
  pages: number;
  runs: number;
  warmupRuns: number;
  wallMs: Summary;
  providerMs: Summary;
  overheadMs: Summary;
  overheadMedianMs: number;
  /** overheadMedianMs ÷ pages: the worker's own cost per page of a text-layer PDF. */
  overheadPerPageMedianMs: number;
  awsCalls: AwsCalls;
  /**
   * CPU time per measured run: this process's (worker code, AWS SDK, fauxqs's S3 and SQS) median, DynamoDB Local's
   * JVM mean (its /proc figures move in 10 ms ticks), and the rest of the machine's mean (other work competing).
   */
  cpuMs: { processMedian: number; dynamoDbLocalMean: number; otherMean: number };
  /** Runs whose outcome was not `settled` + `completed` (should be none). */
  unexpected: string[];
}

export interface RealProviderCase {
  file: string;
  runs: number;
  /** First run of the process: includes loading the OCR/PDF engine (tesseract worker + model, mupdf WASM). */
  firstRunProviderMs: number;
  /** Median of the later runs. */
  warmProviderMsMedian: number;
  providerMs: number[];
  wallMs: number[];
  billableUnits: number;
  /** Provider time per billable unit (per image, per PDF page), warm median. */
  perUnitMs: number;
  /** How the pages were read, from the run's cost: text layer or OCR. */
  costMicros: number;
  status: string;
}

export interface WorkerOverheadResult {
  emulatorStartMs: number;
  overhead: OverheadCase[];
  realProvider: RealProviderCase[];
  createRunCore: { runs: number; ms: Summary; awsCalls: AwsCalls };
  /** The same core with `concurrency` calls in flight (one Node.js process, DynamoDB Local; nothing else running). */
  createRunCoreConcurrent: {
    concurrency: number;
    runs: number;
    ms: Summary;
    throughputPerSecond: number;
    awsCalls: AwsCalls;
  };
}

interface Options {
  runs: number;
  warmup: number;
  realRuns: number;
  concurrentCreates: number;
  concurrency: number;
  log: (line: string) => void;
}

export async function measureWorkerOverhead(options: Options): Promise<WorkerOverheadResult> {
  // The environment is set for the shared modules and restored at the end (a later phase may start its own stack).
  const savedEnv = { ...process.env };
  process.env.AWS_REGION ??= 'us-east-1';
  process.env.AWS_ACCESS_KEY_ID ??= 'local';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
  const t0 = performance.now();
  const emulators = await startEmulators();
  const emulatorStartMs = round(performance.now() - t0);
  options.log(`  emulators up in ${emulatorStartMs} ms`);
  let shutdownProvider: (() => Promise<void>) | undefined;
  let recorder: ReturnType<typeof recordAwsCalls> | undefined;
  try {
    // This phase's DynamoDB Local: the JVM among this process's children (the latency phase's stack has stopped).
    const jvmPids = (await descendants(process.pid)).filter((p) => p.comm === 'java').map((p) => p.pid);
    const dynamoDbLocalCpuMs = async () => (await Promise.all(jvmPids.map(processCpuMs))).reduce((a, b) => a + b, 0);
    process.env.AWS_ENDPOINT_URL_DYNAMODB = emulators.endpoints.dynamodb;
    process.env.AWS_ENDPOINT_URL_S3 = emulators.endpoints.s3;
    process.env.AWS_ENDPOINT_URL_SQS = emulators.endpoints.sqs;
    process.env.S3_FORCE_PATH_STYLE ??= 'true';
    process.env[ENV.providers] = 'local';
    process.env[ENV.logLevel] ??= 'warn';
    const names = await createResources(emulators.endpoints, 'vision-bench-');
    for (const [key, def] of Object.entries(tables)) process.env[def.envVar] = names.tables[key as keyof typeof tables];
    process.env[uploadsBucket.envVar] = names.bucket;
    process.env[runQueue.envVar] = names.queueUrl;
    shutdownProvider = shutdownLocalProvider;

    // Every AWS call made through the shared clients (the document client shares the DynamoDB client's stack), and
    // the S3 requests the API handlers send with fetch through presigned addresses (shared/aws/s3-urls.ts).
    recorder = recordAwsCalls([ddb, s3(), sqs], { s3Endpoint: emulators.endpoints.s3 });
    const takeCalls = recorder.take;

    await ensureTenant(WORKER_TENANT);
    const uploads = new Map<string, string>();
    for (const c of CASES) {
      const bytes = await readFile(path.join(PROJECT_ROOT, 'test', 'fixtures', c.file));
      const presigned = await presignUpload(WORKER_TENANT, { fileName: c.file, contentLength: bytes.length });
      const put = await fetch(presigned.uploadUrl, {
        method: 'PUT',
        headers: { 'content-type': 'application/octet-stream' },
        body: new Blob([new Uint8Array(bytes)]),
      });
      if (put.status !== 200) throw new Error(`PUT of ${c.file} failed with ${put.status}`);
      uploads.set(c.file, presigned.uploadId);
    }

    const createTimes: number[] = [];
    const createCalls: CallRecord[] = [];
    const create = async (c: FileCase, timed: boolean): Promise<string> => {
      const body = createRunRequest.parse({ uploadId: uploads.get(c.file), ...c.body });
      takeCalls();
      const started = performance.now();
      const { response } = await createRun({ tenantId: WORKER_TENANT, body });
      if (timed) {
        createTimes.push(performance.now() - started);
        createCalls.push(takeCalls());
      }
      return response.jobId;
    };
    const processOptions = {
      remainingMs: 180_000,
      receiveCount: 1,
      maxReceiveCount: runQueue.maxReceiveCount,
    };

    // --- Overhead with a provider that answers at once -------------------------------------------------------
    const overhead: OverheadCase[] = [];
    const realLocal = adapters.local;
    if (!realLocal) throw new Error('no local adapter in shared/providers/adapters.ts');
    for (const c of CASES) {
      let providerMs = 0;
      let words: ProviderOutput['words'];
      const fake: ProviderAdapter = {
        id: 'local',
        invoke: async (input: ProviderInput, invokeOptions) => {
          // The real local provider's words, once (a warm-up run, not measured).
          if (c.words === 'local' && words === undefined) words = (await realLocal.invoke(input, invokeOptions)).words;
          const started = performance.now();
          const output = { ...structuredClone(c.fake), ...(words ? { words: structuredClone(words) } : {}) };
          providerMs += performance.now() - started;
          return output;
        },
      };
      const walls: number[] = [];
      const providers: number[] = [];
      const processCalls: CallRecord[] = [];
      const cpu = { process: [] as number[], dynamoDbLocal: 0, machine: 0 };
      const unexpected: string[] = [];
      for (let i = 0; i < options.warmup + options.runs; i++) {
        const measured = i >= options.warmup;
        // create-run core timings come from the image runs (the PDF's inspection reads more of the file).
        const jobId = await create(c, measured && c.id === 'image');
        providerMs = 0;
        takeCalls();
        const [jvm0, machine0] = [await dynamoDbLocalCpuMs(), await machineBusyCpuMs()];
        const cpu0 = process.cpuUsage();
        const started = performance.now();
        const outcome = await processRun(jobId, { adapters: { local: fake }, ...processOptions });
        const wall = performance.now() - started;
        const used = process.cpuUsage(cpu0);
        const [jvm1, machine1] = [await dynamoDbLocalCpuMs(), await machineBusyCpuMs()];
        const record = takeCalls();
        if (!measured) continue;
        cpu.process.push((used.user + used.system) / 1000);
        cpu.dynamoDbLocal += jvm1 - jvm0;
        cpu.machine += machine1 - machine0;
        walls.push(wall);
        providers.push(providerMs);
        processCalls.push(record);
        const status = (await getRun(jobId))?.status;
        if (outcome !== 'settled' || status !== 'completed') unexpected.push(`${jobId}: ${outcome}/${status}`);
      }
      const overheads = walls.map((w, i) => w - (providers[i] ?? 0));
      overhead.push({
        file: c.file,
        label: c.label,
        pages: c.pages,
        runs: options.runs,
        warmupRuns: options.warmup,
        wallMs: summarize(walls),
        providerMs: summarize(providers.map((p) => round(p, 3))),
        overheadMs: summarize(overheads),
        overheadMedianMs: round(median(overheads)),
        overheadPerPageMedianMs: round(median(overheads) / c.pages, 2),
        awsCalls: perRun(processCalls),
        cpuMs: {
          processMedian: round(median(cpu.process)),
          dynamoDbLocalMean: round(cpu.dynamoDbLocal / options.runs),
          otherMean: round((cpu.machine - cpu.dynamoDbLocal - cpu.process.reduce((a, b) => a + b, 0)) / options.runs),
        },
        unexpected,
      });
      options.log(
        `  overhead ${c.file}: median ${round(median(overheads))} ms (${JSON.stringify(summarize(overheads))})`,
      );
      const done = overhead.at(-1);
      options.log(`  CPU per run ${c.file}: ${JSON.stringify(done?.cpuMs)}`);
    }

    // --- create-run core at concurrency, nothing else running (information) -----------------------------------
    const concurrentSamples: number[] = [];
    let remaining = options.concurrentCreates;
    const imageCase = CASES[0] as FileCase;
    const concurrentStarted = performance.now();
    await Promise.all(
      Array.from({ length: options.concurrency }, async () => {
        while (remaining > 0) {
          remaining -= 1;
          const body = createRunRequest.parse({ uploadId: uploads.get(imageCase.file), ...imageCase.body });
          const started = performance.now();
          await createRun({ tenantId: WORKER_TENANT, body });
          concurrentSamples.push(performance.now() - started);
        }
      }),
    );
    const concurrentWallMs = performance.now() - concurrentStarted;
    const concurrentCalls = perRun([takeCalls()], concurrentSamples.length);
    const createRunCoreConcurrent = {
      concurrency: options.concurrency,
      runs: concurrentSamples.length,
      ms: summarize(concurrentSamples),
      throughputPerSecond: round((concurrentSamples.length / concurrentWallMs) * 1000),
      awsCalls: concurrentCalls,
    };
    options.log(
      `  createRun core at concurrency ${options.concurrency}: ${JSON.stringify(createRunCoreConcurrent.ms)}`,
    );

    // --- The real local provider (information) ----------------------------------------------------------------
    const realProvider: RealProviderCase[] = [];
    const real = adapters.local;
    if (!real) throw new Error('no local adapter in shared/providers/adapters.ts');
    for (const c of CASES.filter((k) => k.id !== 'image-model')) {
      let providerMs = 0;
      let billableUnits = 0;
      let costMicros = 0;
      const timed: ProviderAdapter = {
        id: 'local',
        invoke: async (input, invokeOptions) => {
          const started = performance.now();
          try {
            const output = await real.invoke(input, invokeOptions);
            billableUnits = output.usage.billableUnits;
            costMicros = output.usage.costMicros;
            return output;
          } finally {
            providerMs += performance.now() - started;
          }
        },
      };
      const providers: number[] = [];
      const walls: number[] = [];
      let status = '';
      for (let i = 0; i < options.realRuns; i++) {
        const jobId = await create(c, false);
        providerMs = 0;
        const started = performance.now();
        await processRun(jobId, { adapters: { local: timed }, ...processOptions });
        walls.push(round(performance.now() - started));
        providers.push(round(providerMs));
        status = (await getRun(jobId))?.status ?? 'missing';
      }
      const warm = providers.slice(1);
      const warmMedian = round(median(warm.length > 0 ? warm : providers));
      realProvider.push({
        file: c.file,
        runs: options.realRuns,
        firstRunProviderMs: providers[0] ?? Number.NaN,
        warmProviderMsMedian: warmMedian,
        providerMs: providers,
        wallMs: walls,
        billableUnits,
        perUnitMs: round(warmMedian / Math.max(1, billableUnits), 2),
        costMicros,
        status,
      });
      options.log(
        `  real provider ${c.file}: first ${providers[0]} ms, warm median ${warmMedian} ms, ${billableUnits} unit(s), status ${status}`,
      );
    }
    return {
      emulatorStartMs,
      overhead,
      realProvider,
      createRunCore: { runs: createTimes.length, ms: summarize(createTimes), awsCalls: perRun(createCalls) },
      createRunCoreConcurrent,
    };
  } finally {
    recorder?.stop();
    await shutdownProvider?.();
    await emulators.stop();
    for (const key of Object.keys(process.env)) if (!(key in savedEnv)) delete process.env[key];
    Object.assign(process.env, savedEnv);
  }
}
