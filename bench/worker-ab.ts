/**
 * Paired A/B of the worker benchmark's twenty-pages.pdf case between two checkouts (e.g. a base commit's worktree and
 * a branch's), in one process against one DynamoDB Local and fauxqs: runs of A and B alternate (ABBA), so whatever
 * else the machine does falls on both alike. Prints, per side, the medians of processRun's wall time and CPU, DynamoDB
 * Local's CPU, the bytes sent to AWS and, per AWS call in order, the median gap before it and its own time.
 * Not to undo: each side's modules are imported from its own folder, so each has its own AWS clients and module
 * state; comparing a checkout with a second checkout of the same commit gives the method's own noise. The image cases
 * are not offered: their OCR loads a native module (onnxruntime) that cannot be loaded from two folders in one process.
 * Usage: npx tsx bench/worker-ab.ts DIR_A DIR_B [--pairs=40]
 */
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { createResources, startEmulators } from '../scripts/local/emulators.js';
import { ENV } from '../shared/infra/env.js';
import { runQueue, tables, uploadsBucket } from '../shared/infra/resources.js';
import type { ProviderAdapter } from '../shared/providers/types.js';
import { type CallStep, perRun, recordAwsCalls } from './aws-recorder.js';
import { descendants, processCpuMs } from './procs.js';
import { median, round } from './stats.js';
import { CASES } from './worker-cases.js';

const args = process.argv.slice(2);
const option = (name: string, fallback: string) =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const dirs = args.filter((a) => !a.startsWith('--')).map((d) => path.resolve(d));
const pairs = Number(option('pairs', '40'));
const pdf = CASES.find((c) => c.id === 'pdf');
if (dirs.length !== 2 || !pdf || !(pairs > 0)) {
  console.error('usage: npx tsx bench/worker-ab.ts DIR_A DIR_B [--pairs=40]');
  process.exit(2);
}
const c = pdf;

interface Sample {
  wall: number;
  cpu: number;
  jvm: number;
  steps: CallStep[];
}

/** A checkout's worker: its own modules, a run created and processed by them, measured. */
async function side(label: string, dir: string, jvmCpuMs: () => Promise<number>) {
  const load = (module: string) => import(path.join(dir, module));
  const { ddb } = await load('shared/aws/dynamodb.ts');
  const { s3 } = await load('shared/aws/s3.ts');
  const { createRunRequest } = await load('shared/contract.ts');
  const { createRun } = await load('shared/runs/create-run.ts');
  const { presignUpload } = await load('shared/runs/presign.ts');
  const { ensureTenant } = await load('shared/store/tenants.ts');
  const { processRun } = await load('shared/worker/process-run.ts');
  const recorder = recordAwsCalls([ddb, s3()], { keepSteps: true });
  const tenant = `ab-${label}`;
  await ensureTenant(tenant);
  const bytes = await readFile(path.join(dir, 'test', 'fixtures', c.file));
  const upload = await presignUpload(tenant, { fileName: c.file, contentLength: bytes.length });
  const put = await fetch(upload.uploadUrl, { method: 'PUT', body: new Blob([new Uint8Array(bytes)]) });
  if (put.status !== 200) throw new Error(`${label}: the upload of ${c.file} failed with ${put.status}`);
  const fake: ProviderAdapter = { id: 'local', invoke: async () => structuredClone(c.fake) };
  const samples: Sample[] = [];
  const calls: ReturnType<typeof recorder.take>[] = [];
  const once = async (measured: boolean): Promise<void> => {
    const body = createRunRequest.parse({ uploadId: upload.uploadId, ...c.body });
    const { response } = await createRun({ tenantId: tenant, body });
    recorder.take();
    const jvm0 = await jvmCpuMs();
    const cpu0 = process.cpuUsage();
    const started = performance.now();
    recorder.takeSteps(started);
    const options = { remainingMs: 180_000, receiveCount: 1, maxReceiveCount: runQueue.maxReceiveCount };
    const outcome = await processRun(response.jobId, { adapters: { local: fake }, ...options });
    const wall = performance.now() - started;
    const used = process.cpuUsage(cpu0);
    const steps = recorder.takeSteps(started);
    const jvm = (await jvmCpuMs()) - jvm0;
    if (outcome !== 'settled') throw new Error(`${label}: run ${response.jobId} ${outcome}`);
    if (!measured) return;
    calls.push(recorder.take());
    samples.push({ wall, cpu: (used.user + used.system) / 1000, jvm, steps });
  };
  return { label, dir, once, samples, calls };
}

async function main(): Promise<void> {
  process.env.AWS_REGION ??= 'us-east-1';
  process.env.AWS_ACCESS_KEY_ID ??= 'local';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const emulators = await startEmulators();
  try {
    const { endpoints } = emulators;
    process.env.AWS_ENDPOINT_URL_DYNAMODB = endpoints.dynamodb;
    process.env.AWS_ENDPOINT_URL_S3 = endpoints.s3;
    process.env.AWS_ENDPOINT_URL_SQS = endpoints.sqs;
    process.env.S3_FORCE_PATH_STYLE ??= 'true';
    process.env[ENV.providers] = 'local';
    process.env[ENV.logLevel] = 'warn';
    const names = await createResources(endpoints, 'vision-ab-');
    for (const [key, def] of Object.entries(tables)) process.env[def.envVar] = names.tables[key as keyof typeof tables];
    process.env[uploadsBucket.envVar] = names.bucket;
    process.env[runQueue.envVar] = names.queueUrl;
    const jvmPids = (await descendants(process.pid)).filter((p) => p.comm === 'java').map((p) => p.pid);
    const jvmCpuMs = async () => (await Promise.all(jvmPids.map(processCpuMs))).reduce((a, b) => a + b, 0);

    const sides = [await side('A', dirs[0] as string, jvmCpuMs), await side('B', dirs[1] as string, jvmCpuMs)];
    for (let i = 0; i < 3; i++) for (const s of sides) await s.once(false);
    for (let i = 0; i < pairs; i++) for (const s of i % 2 === 0 ? sides : [...sides].reverse()) await s.once(true);

    console.log(`case ${c.file} (${c.id}), ${pairs} runs each, alternating`);
    for (const s of sides) {
      const aws = perRun(s.calls);
      const sum = (k: 'jvm' | 'cpu') => s.samples.reduce((a, x) => a + x[k], 0);
      console.log(
        `${s.label} ${s.dir}: wall median ${round(median(s.samples.map((x) => x.wall)))} ms; ` +
          `this process's CPU median ${round(median(s.samples.map((x) => x.cpu)))} ms (mean ${round(sum('cpu') / pairs)}); ` +
          `DynamoDB Local CPU mean ${round(sum('jvm') / pairs)} ms; AWS ${aws.totalMsPerRun} ms, ` +
          `${aws.bytesOutPerRun} bytes sent / ${aws.bytesInPerRun} received per run`,
      );
    }
    const [a, b] = sides as [(typeof sides)[0], (typeof sides)[0]];
    console.log('\nAWS call (in order) | A gap before | B gap before | A call | B call   (medians, ms)');
    const stepMedian = (s: typeof a, i: number, k: 'gap' | 'call') =>
      round(
        median(
          s.samples.map(({ steps }) => {
            const step = steps[i];
            if (!step) return Number.NaN;
            return k === 'call' ? step.end - step.start : step.start - (i === 0 ? 0 : (steps[i - 1]?.end ?? 0));
          }),
        ),
      );
    // The first measured run's calls name the rows; a call B makes in another place shows as "A's / B's".
    const [stepsA, stepsB] = [a.samples[0]?.steps ?? [], b.samples[0]?.steps ?? []];
    for (let i = 0; i < Math.max(stepsA.length, stepsB.length); i++) {
      const [nameA, nameB] = [stepsA[i]?.name ?? '-', stepsB[i]?.name ?? '-'].map((n) => n.replace(/Command$/, ''));
      const row = [
        stepMedian(a, i, 'gap'),
        stepMedian(b, i, 'gap'),
        stepMedian(a, i, 'call'),
        stepMedian(b, i, 'call'),
      ];
      console.log(`${i + 1}. ${nameA === nameB ? nameA : `${nameA} / ${nameB}`} | ${row.join(' | ')}`);
    }
  } finally {
    await emulators.stop();
  }
}

await main();
