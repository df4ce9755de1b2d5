/**
 * Child process of the first-run estimates phase (bench/first-run.ts): `node --import tsx bench/first-run-child.ts`
 * with VISION_PROVIDERS set to one provider (the service reads it once per process, so each provider gets a process)
 * and the emulators' endpoints in AWS_ENDPOINT_URL_*. It creates its own tables, bucket and queues, then for each
 * first-run fixture: empties the Calibration table, uploads the file, creates the run with the create-run core (the
 * estimate a fresh deployment holds) and processes it with the worker's core (`processRun`), the cloud adapters
 * pointed at the provider fakes. Prints one JSON line: a row per fixture.
 */
import { DeleteCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { createResources } from '../scripts/local/emulators.js';
import { ddb } from '../shared/aws/dynamodb.js';
import { config } from '../shared/config.js';
import { createRunRequest } from '../shared/contract.js';
import { ENV } from '../shared/infra/env.js';
import { runQueue, tables, uploadsBucket, webhookQueue } from '../shared/infra/resources.js';
import { inspectUpload } from '../shared/inspect/index.js';
import { shutdownLocalProvider } from '../shared/providers/local/local-provider.js';
import { createRun } from '../shared/runs/create-run.js';
import { presignUpload } from '../shared/runs/presign.js';
import { getRun } from '../shared/store/runs.js';
import { ensureTenant } from '../shared/store/tenants.js';
import { processRun } from '../shared/worker/process-run.js';
import { benchAdapters, FIRST_RUN_FIXTURES, fakeCaseOf, fixtureBytes, pageTextsOf } from './estimate-fixtures.js';
import { startProviderFakes } from './provider-fakes.js';

/** One fixture's first run. */
export interface FirstRunRow {
  provider: string;
  file: string;
  label: string;
  prompt: string;
  status: string;
  estimateMicros: number;
  priceMicros: number;
  /** estimate ÷ price. */
  ratio: number;
  /** The attempts as `provider/step/outcome`. */
  attempts: string[];
  requests: number;
  error?: string;
}

const TENANT = 'bench-first-run';

async function emptyCalibration(): Promise<void> {
  const table = process.env[tables.calibration.envVar] as string;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await ddb.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start }));
    for (const item of page.Items ?? [])
      await ddb.send(new DeleteCommand({ TableName: table, Key: { key: item.key } }));
    start = page.LastEvaluatedKey;
  } while (start);
}

async function main(): Promise<void> {
  const provider = process.env[ENV.providers] ?? '';
  // Its own resources on the parent's emulators: a fresh Calibration table among them.
  const names = await createResources(
    {
      dynamodb: process.env.AWS_ENDPOINT_URL_DYNAMODB ?? '',
      s3: process.env.AWS_ENDPOINT_URL_S3 ?? '',
      sqs: process.env.AWS_ENDPOINT_URL_SQS ?? '',
    },
    `vision-first-${provider}-`,
  );
  for (const [key, def] of Object.entries(tables)) process.env[def.envVar] = names.tables[key as keyof typeof tables];
  process.env[uploadsBucket.envVar] = names.bucket;
  process.env[runQueue.envVar] = names.queueUrl;
  process.env[webhookQueue.envVar] = names.webhookQueueUrl;
  const fakes = await startProviderFakes();
  const adapters = benchAdapters(fakes.url);
  const rows: FirstRunRow[] = [];
  try {
    await ensureTenant(TENANT);
    for (const fixture of FIRST_RUN_FIXTURES) {
      await emptyCalibration();
      const bytes = await fixtureBytes(fixture.file);
      const facts = await inspectUpload(
        async (start, end) => bytes.subarray(start, end + 1),
        bytes.byteLength,
        config.limits,
      );
      const presigned = await presignUpload(TENANT, { fileName: fixture.file, contentLength: bytes.length });
      const put = await fetch(presigned.uploadUrl, {
        method: 'PUT',
        headers: { 'content-type': 'application/octet-stream' },
        body: new Blob([new Uint8Array(bytes)]),
      });
      if (put.status !== 200) throw new Error(`PUT of ${fixture.file} failed with ${put.status}`);
      fakes.use(fakeCaseOf(fixture, facts.pages, await pageTextsOf(bytes, facts.kind === 'pdf')));
      fakes.take();
      const body = createRunRequest.parse({ uploadId: presigned.uploadId, ...fixture.request, confirmCost: true });
      const { response } = await createRun({ tenantId: TENANT, body });
      await processRun(response.jobId, {
        adapters,
        remainingMs: 180_000,
        receiveCount: 1,
        maxReceiveCount: runQueue.maxReceiveCount,
      });
      const run = await getRun(response.jobId);
      const priceMicros = run?.usage?.priceMicros ?? Number.NaN;
      const estimateMicros = run?.estimateMicros ?? Number.NaN;
      rows.push({
        provider,
        file: fixture.file,
        label: fixture.label,
        prompt: fixture.request.prompt,
        status: run?.status ?? 'missing',
        estimateMicros,
        priceMicros,
        ratio: Math.round((estimateMicros / priceMicros) * 100) / 100,
        attempts: (run?.attempts ?? []).map(
          (a) => `${a.provider}/${a.step}/${a.outcome}${a.failure ? `:${a.failure}` : ''}`,
        ),
        requests: fakes.take().requests,
        ...(run?.status === 'failed' ? { error: JSON.stringify(run.error).slice(0, 300) } : {}),
      });
    }
  } finally {
    await fakes.close();
    await shutdownLocalProvider();
  }
  process.stdout.write(`${JSON.stringify(rows)}\n`);
}

await main();
