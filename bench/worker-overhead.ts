/**
 * Worker overhead, in process against DynamoDB Local and fauxqs: runs created with the create-run core and processed by
 * calling `processRun` directly, with a fake provider whose own time is subtracted; every AWS call is timed.
 * docs/decisions.md#worker-overhead-benchmark describes each figure.
 * Over 400 lines: one phase sharing one emulator set-up and one AWS-call recorder across its four measurements
 * (overhead, real provider, create-run core alone and concurrent); split, each would repeat the set-up.
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
import { median, round, type Summary, summarize } from './stats.js';

export const WORKER_TENANT = 'bench';

interface FileCase {
  id: 'image' | 'image-model' | 'pdf';
  file: string;
  /** How the row names the case. */
  label: string;
  /**
   * The words the fake's answer carries: `local` the real local provider's (recorded in the first, unmeasured run:
   * tesseract's boxes, so grounding needs no OCR), `none` a language model's (the worker OCRs the page for evidence).
   */
  words: 'local' | 'none';
  /** Pages of the file (1 for an image): the overhead is also reported per page. */
  pages: number;
  body: Record<string, unknown>;
  fake: ProviderOutput;
}

const RECEIPT_TEXT = [
  'ACME HARDWARE',
  'Date: 2026-11-02',
  'Invoice Number: INV-1042',
  'Subtotal: 38.50',
  'Tax: 4.00',
  'Total: 42.50',
  'Thank you',
].join('\n');

const RECEIPT_ANSWER: ProviderOutput = {
  result: { merchant: 'ACME HARDWARE', date: '2026-11-02', subtotal: 38.5, tax: 4, total: 42.5, currency: null },
  documentText: RECEIPT_TEXT,
  nativeConfidence: 0.9,
  usage: { billableUnits: 1, costMicros: 200 },
};

const CASES: FileCase[] = [
  {
    id: 'image',
    file: 'receipt.png',
    label: "receipt.png, the local provider's answer with its words",
    words: 'local',
    pages: 1,
    body: { prompt: 'Extract the receipt', schemaId: 'receipt' },
    fake: RECEIPT_ANSWER,
  },
  {
    id: 'image-model',
    file: 'receipt.png',
    label: "receipt.png, a language model's answer (no words: the image is OCR'd for evidence)",
    words: 'none',
    pages: 1,
    body: { prompt: 'Extract the receipt', schemaId: 'receipt' },
    fake: RECEIPT_ANSWER,
  },
  {
    id: 'pdf',
    file: 'twenty-pages.pdf',
    label: 'twenty-pages.pdf',
    words: 'none',
    pages: 20,
    body: { prompt: 'Summarise the document', outputFormat: 'text' },
    fake: {
      result: { text: 'Twenty pages, a paragraph each.' },
      documentText: 'Twenty pages, a paragraph each.',
      nativeConfidence: 0.99,
      usage: { billableUnits: 20, costMicros: 200 },
    },
  },
];

export interface AwsCalls {
  /** Calls per command name, summed over the measured runs and divided by the number of runs. */
  perRun: Record<string, { calls: number; ms: number }>;
  totalMsPerRun: number;
}

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
  const realFetch = globalThis.fetch;
  try {
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

    // Times every AWS call made through the shared clients (the document client shares the DynamoDB client's stack),
    // and the S3 requests the API handlers send with fetch through presigned addresses (shared/aws/s3-urls.ts).
    let calls = new Map<string, { calls: number; ms: number }>();
    const record = (name: string, started: number): void => {
      const entry = calls.get(name) ?? { calls: 0, ms: 0 };
      entry.calls += 1;
      entry.ms += performance.now() - started;
      calls.set(name, entry);
    };
    type Next = (args: unknown) => Promise<unknown>;
    type Stack = {
      add(
        middleware: (next: Next, context: { commandName?: string }) => Next,
        options: { step: 'initialize'; name: string; override: boolean },
      ): void;
    };
    for (const client of [ddb, s3(), sqs] as unknown as { middlewareStack: Stack }[]) {
      client.middlewareStack.add(
        (next, context) => async (args) => {
          const started = performance.now();
          try {
            return await next(args);
          } finally {
            record(String(context.commandName ?? 'unknown'), started);
          }
        },
        { step: 'initialize', name: 'benchTiming', override: true },
      );
    }
    const PRESIGNED_NAMES: Record<string, string> = { GET: 'GetObject', HEAD: 'HeadObject', PUT: 'PutObject' };
    globalThis.fetch = async (input, init) => {
      const url = input instanceof Request ? input.url : String(input);
      if (!url.startsWith(emulators.endpoints.s3)) return realFetch(input, init);
      const started = performance.now();
      try {
        return await realFetch(input, init);
      } finally {
        record(`${PRESIGNED_NAMES[init?.method ?? 'GET'] ?? init?.method} (presigned)`, started);
      }
    };
    /** Returns the calls recorded since the last take and starts a new record. */
    const takeCalls = (): Map<string, { calls: number; ms: number }> => {
      const taken = calls;
      calls = new Map();
      return taken;
    };
    const perRun = (records: Map<string, { calls: number; ms: number }>[]): AwsCalls => {
      const sum = new Map<string, { calls: number; ms: number }>();
      for (const record of records) {
        for (const [name, v] of record) {
          const e = sum.get(name) ?? { calls: 0, ms: 0 };
          sum.set(name, { calls: e.calls + v.calls, ms: e.ms + v.ms });
        }
      }
      const n = Math.max(1, records.length);
      const out: AwsCalls['perRun'] = {};
      let total = 0;
      for (const [name, v] of sum) {
        out[name] = { calls: round(v.calls / n, 2), ms: round(v.ms / n, 2) };
        total += v.ms;
      }
      return { perRun: out, totalMsPerRun: round(total / n, 2) };
    };

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
    const createCalls: Map<string, { calls: number; ms: number }>[] = [];
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
      const processCalls: Map<string, { calls: number; ms: number }>[] = [];
      const unexpected: string[] = [];
      for (let i = 0; i < options.warmup + options.runs; i++) {
        const measured = i >= options.warmup;
        // create-run core timings come from the image runs (the PDF's inspection reads more of the file).
        const jobId = await create(c, measured && c.id === 'image');
        providerMs = 0;
        takeCalls();
        const started = performance.now();
        const outcome = await processRun(jobId, { adapters: { local: fake }, ...processOptions });
        const wall = performance.now() - started;
        const record = takeCalls();
        if (!measured) continue;
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
        unexpected,
      });
      options.log(
        `  overhead ${c.file}: median ${round(median(overheads))} ms (${JSON.stringify(summarize(overheads))})`,
      );
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
    const concurrentCalls = perRun([takeCalls()]);
    for (const v of Object.values(concurrentCalls.perRun)) {
      v.calls = round(v.calls / Math.max(1, concurrentSamples.length), 2);
      v.ms = round(v.ms / Math.max(1, concurrentSamples.length), 2);
    }
    concurrentCalls.totalMsPerRun = round(concurrentCalls.totalMsPerRun / Math.max(1, concurrentSamples.length), 2);
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
    globalThis.fetch = realFetch;
    await shutdownProvider?.();
    await emulators.stop();
    for (const key of Object.keys(process.env)) if (!(key in savedEnv)) delete process.env[key];
    Object.assign(process.env, savedEnv);
  }
}
