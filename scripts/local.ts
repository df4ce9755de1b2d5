/**
 * `npm start`: the whole service on this machine. Starts DynamoDB Local and fauxqs (unless AWS endpoints are given),
 * creates the resources from shared/infra/resources.ts, seeds dev API keys, serves the route table on
 * http://127.0.0.1:$PORT through a local API Gateway stand-in, and drives the worker from the queue.
 * Ctrl-C / SIGTERM stops everything it started, the Java process included.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
// Namespace import: zod 4's named `z` object defeats tree-shaking and drags every locale into each bundle.
import * as z from 'zod';
import { ENV } from '../shared/infra/env.js';
import {
  deliverSettings,
  reconcileSettings,
  runQueue,
  tables,
  uploadsBucket,
  webhookQueue,
  webhookSettings,
  workerSettings,
} from '../shared/infra/resources.js';
import { gatewaySettings, routes } from '../shared/infra/routes.js';
import { adapters } from '../shared/providers/adapters.js';
import { shutdownLocalProvider } from '../shared/providers/local/local-provider.js';
import { jobIdOf } from '../shared/runs/run-message.js';
import { claimRun, getRun } from '../shared/store/runs.js';
import { createApiKey, ensureTenant, findActiveKey } from '../shared/store/tenants.js';
import { claimMs } from '../shared/worker/process-run.js';
import { DEFAULT_RECONCILE_OPTIONS, reconcileRuns } from '../shared/worker/reconcile.js';
import { createResources, startEmulators } from './local/emulators.js';
import { createGateway } from './local/gateway.js';
import { startWorkerRunner } from './local/worker-runner.js';

const localEnv = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8787),
  HOST: z.string().default('127.0.0.1'),
  /** Comma-separated tenant:key pairs, seeded with every scope. Unset: one key is generated. */
  VISION_DEV_API_KEYS: z.string().optional(),
  VISION_LOCAL_TABLE_PREFIX: z.string().default('vision-local-'),
  /** Shorter than the deployed value so redelivery can be observed locally (tests use a few seconds). */
  LOCAL_VISIBILITY_TIMEOUT_SECONDS: z.coerce.number().int().positive().optional(),
  /** Parallel worker pollers; 0 runs no worker (runs stay queued: the create-run benchmark measures the API alone). */
  LOCAL_WORKER_CONCURRENCY: z.coerce.number().int().min(0).max(16).default(2),
  LOCAL_RATE_LIMIT_RPS: z.coerce.number().positive().default(gatewaySettings.throttle.ratePerSecond),
  LOCAL_RATE_LIMIT_BURST: z.coerce.number().int().positive().default(gatewaySettings.throttle.burst),
  /** Like the deployed authorizer cache (a revoked key keeps working up to this long). */
  LOCAL_AUTHORIZER_CACHE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(3600)
    .default(gatewaySettings.authorizerCacheSeconds),
  /** Seconds between reconciler sweeps (deployed: every reconcileSettings.everyMinutes); 0 runs none. */
  LOCAL_RECONCILE_INTERVAL_SECONDS: z.coerce.number().min(0).default(60),
  /** Overrides of the reconciler's waits (shared/infra/resources.ts reconcileSettings), shorter for tests. */
  LOCAL_RECONCILE_RESEND_AFTER_SECONDS: z.coerce.number().positive().optional(),
  LOCAL_RECONCILE_DEAD_AFTER_SECONDS: z.coerce.number().positive().optional(),
  /** Parallel pollers of the webhook delivery queue; 0 delivers nothing (events wait in the queue). */
  LOCAL_DELIVER_CONCURRENCY: z.coerce.number().int().min(0).max(16).default(2),
  /** Seconds after which the sweep hands on an event whose dispatch was interrupted (deployed: webhookSettings). */
  LOCAL_EVENTS_SWEEP_AFTER_SECONDS: z.coerce.number().min(0).default(webhookSettings.sweepAfterSeconds),
  /** Enables the crash-simulation seam (metadata.localFault on a run); for tests only. */
  VISION_LOCAL_FAULT_INJECTION: z.enum(['true', 'false']).default('false'),
});

/**
 * Where a running stack leaves its coordinates for tools (`npm run keys`): `{endpoints, resources, baseUrl, pid}`.
 * VISION_LOCAL_STATE_FILE overrides the path. The first running stack owns the file: a second stack (e.g. the
 * integration suite's) leaves a live owner's file alone, and a stack removes the file on shutdown only if it is its own.
 */
const stateFile = resolve(
  process.env.VISION_LOCAL_STATE_FILE || fileURLToPath(new URL('../.local-data/stack.json', import.meta.url)),
);

function isAlive(pid: unknown): boolean {
  if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error: unknown) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function stateFilePid(): Promise<number | undefined> {
  try {
    const pid = (JSON.parse(await readFile(stateFile, 'utf8')) as { pid?: unknown }).pid;
    return typeof pid === 'number' ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Writes the state file (atomically) unless another live stack owns it; returns whether this stack owns it now. */
async function writeStateFile(state: Record<string, unknown>): Promise<boolean> {
  const owner = await stateFilePid();
  if (owner !== undefined && owner !== process.pid && isAlive(owner)) return false;
  await mkdir(dirname(stateFile), { recursive: true });
  const tmp = `${stateFile}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify({ ...state, pid: process.pid }, null, 2)}\n`, { mode: 0o600 });
  await rename(tmp, stateFile);
  return true;
}

async function removeStateFile(): Promise<void> {
  if ((await stateFilePid()) === process.pid) await rm(stateFile, { force: true });
}

function parseDevKeys(value: string | undefined): { tenantId: string; key: string }[] {
  if (!value) return [{ tenantId: 'dev', key: `vk_dev_${randomBytes(24).toString('base64url')}` }];
  return value.split(',').map((pair) => {
    const [tenantId, key] = pair.split(':').map((s) => s.trim());
    if (!tenantId || !key) throw new Error(`VISION_DEV_API_KEYS: "${pair}" is not tenant:key`);
    return { tenantId, key };
  });
}

async function main(): Promise<void> {
  const env = localEnv.parse(process.env);
  const devKeys = parseDevKeys(env.VISION_DEV_API_KEYS);

  // The SDK needs a region and some credentials even for emulators; real values win when present.
  process.env.AWS_REGION ??= 'us-east-1';
  if (!process.env.AWS_ACCESS_KEY_ID) {
    // Placeholder credentials for the emulators only: they must not make Bedrock/Textract look usable.
    process.env.AWS_ACCESS_KEY_ID = 'local';
    process.env.AWS_SECRET_ACCESS_KEY = 'local';
    process.env.VISION_DISABLE_IAM_PROVIDERS ??= 'true';
  }

  const emulators = await startEmulators();
  const stopEmulators = async () => emulators.stop();
  try {
    process.env.AWS_ENDPOINT_URL_DYNAMODB = emulators.endpoints.dynamodb;
    process.env.AWS_ENDPOINT_URL_S3 = emulators.endpoints.s3;
    process.env.AWS_ENDPOINT_URL_SQS = emulators.endpoints.sqs;
    process.env.S3_FORCE_PATH_STYLE ??= 'true';

    const names = await createResources(emulators.endpoints, env.VISION_LOCAL_TABLE_PREFIX, {
      ...(env.LOCAL_VISIBILITY_TIMEOUT_SECONDS
        ? { visibilityTimeoutSeconds: env.LOCAL_VISIBILITY_TIMEOUT_SECONDS }
        : {}),
    });
    for (const [key, def] of Object.entries(tables)) process.env[def.envVar] = names.tables[key as keyof typeof tables];
    process.env[uploadsBucket.envVar] = names.bucket;
    process.env[runQueue.envVar] = names.queueUrl;
    process.env[webhookQueue.envVar] = names.webhookQueueUrl;
    process.env[webhookQueue.deadLetter.envVar] = names.webhookDeadLetterQueueUrl;
    // Webhook secrets stay in their table here, and receivers on this machine are allowed (contract-v1.1 §4).
    process.env[ENV.webhookSecretStore] ??= 'local-table';
    process.env[ENV.webhookAllowLocalhost] ??= 'true';

    for (const { tenantId, key } of devKeys) {
      await ensureTenant(tenantId);
      if (!(await findActiveKey(key))) await createApiKey(tenantId, { key, label: 'dev' });
    }

    // Every handler the route table names, exactly as the CDK stack creates one function per handler. Loaded only now:
    // each functions/* module checks its environment at load, as a Lambda function does at init.
    const handlerNames = [...new Set(routes.map((r) => r.handler))];
    const handlers = Object.fromEntries(
      await Promise.all(
        handlerNames.map(async (name) => [name, (await import(`../functions/${name}.ts`)).handler] as const),
      ),
    );
    const { authorize } = await import('../functions/authorizer.js');
    const { createWorkerHandler } = await import('../functions/worker.js');
    const { createDeliverHandler } = await import('../functions/deliver.js');
    const { sweepPendingEvents, DEFAULT_SWEEP_OPTIONS } = await import('../shared/events/dispatch.js');

    // Crash simulation for tests: a run whose metadata.localFault is `crash-before-settle` (provider answered,
    // nothing written) or `crash-after-settle` (settled, message not deleted) aborts its first delivery there, and
    // SQS redelivers it after the visibility timeout — exactly what a crashed Lambda invocation leads to.
    const crashed = new Set<string>();
    // The worker's claim on a run never outlives the visibility timeout (the tests shorten it to see redeliveries).
    const visibilitySeconds = env.LOCAL_VISIBILITY_TIMEOUT_SECONDS ?? runQueue.visibilityTimeoutSeconds;
    const processingHandler = createWorkerHandler({
      adapters,
      visibilityTimeoutSeconds: visibilitySeconds,
      ...(env.VISION_LOCAL_FAULT_INJECTION === 'true'
        ? {
            fault: (point, run) => {
              if (run.metadata.localFault === `crash-${point}` && !crashed.has(run.jobId)) {
                crashed.add(run.jobId);
                throw new Error(`simulated crash ${point}`);
              }
            },
          }
        : {}),
    });
    // Two failures the reconciler repairs, played at the delivery as AWS would show them: `lose-message` — the first
    // message of the run vanishes unprocessed (as if create-run never sent it); `crash-hard` — every delivery dies
    // after it began processing (a Lambda timeout or out-of-memory), so the message ends in the DLQ unsettled.
    const workerHandler: typeof processingHandler = async (event, context) => {
      if (env.VISION_LOCAL_FAULT_INJECTION !== 'true') return processingHandler(event, context);
      const failures: { itemIdentifier: string }[] = [];
      const records = [];
      for (const record of event.Records) {
        const jobId = jobIdOf(record.body);
        const fault = jobId === undefined ? undefined : (await getRun(jobId))?.metadata.localFault;
        if (jobId !== undefined && fault === 'lose-message' && !crashed.has(jobId)) {
          crashed.add(jobId);
        } else if (jobId !== undefined && fault === 'crash-hard') {
          const claimFor = claimMs({
            remainingMs: context.getRemainingTimeInMillis(),
            visibilityTimeoutSeconds: visibilitySeconds,
          });
          await claimRun(jobId, {
            leaseUntil: new Date(Date.now() + claimFor),
            receiveCount: Number(record.attributes.ApproximateReceiveCount ?? '1'),
          });
          failures.push({ itemIdentifier: record.messageId });
        } else {
          records.push(record);
        }
      }
      const processed = records.length > 0 ? await processingHandler({ Records: records }, context) : undefined;
      return { batchItemFailures: [...failures, ...(processed?.batchItemFailures ?? [])] };
    };

    const sqs = new SQSClient({ useQueueUrlAsEndpoint: false });
    const queueArn =
      (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: names.queueUrl, AttributeNames: ['QueueArn'] })))
        .Attributes?.QueueArn ?? '';
    sqs.destroy();
    const worker = startWorkerRunner({
      queueUrl: names.queueUrl,
      queueArn,
      handler: workerHandler,
      batchSize: workerSettings.batchSize,
      timeoutSeconds: workerSettings.timeoutSeconds,
      concurrency: env.LOCAL_WORKER_CONCURRENCY,
    });

    // The deliver function, fed by the webhook queue as Lambda's event source mapping would.
    const deliverer = startWorkerRunner({
      queueUrl: names.webhookQueueUrl,
      queueArn: names.webhookQueueUrl,
      handler: createDeliverHandler(),
      batchSize: deliverSettings.batchSize,
      timeoutSeconds: deliverSettings.timeoutSeconds,
      concurrency: env.LOCAL_DELIVER_CONCURRENCY,
    });
    const sweepOptions = { ...DEFAULT_SWEEP_OPTIONS, afterSeconds: env.LOCAL_EVENTS_SWEEP_AFTER_SECONDS };

    // The reconciler on a timer, as EventBridge schedules it when deployed; like the deployed one it also sweeps the
    // run events a crash left undispatched.
    const deadAfter = env.LOCAL_RECONCILE_DEAD_AFTER_SECONDS ?? visibilitySeconds + reconcileSettings.deadMarginSeconds;
    const reconcileOptions = {
      ...DEFAULT_RECONCILE_OPTIONS,
      resendAfterSeconds: env.LOCAL_RECONCILE_RESEND_AFTER_SECONDS ?? DEFAULT_RECONCILE_OPTIONS.resendAfterSeconds,
      deadAfterSeconds: deadAfter,
      silentAfterSeconds: deadAfter + (runQueue.maxReceiveCount - 1) * visibilitySeconds,
    };
    let sweeping = false;
    const reconciler =
      env.LOCAL_RECONCILE_INTERVAL_SECONDS > 0
        ? setInterval(() => {
            if (sweeping) return;
            sweeping = true;
            Promise.allSettled([
              reconcileRuns(reconcileOptions).catch((error: unknown) =>
                process.stderr.write(`reconcile: ${String(error)}\n`),
              ),
              sweepPendingEvents(sweepOptions).catch((error: unknown) =>
                process.stderr.write(`events sweep: ${String(error)}\n`),
              ),
            ]).finally(() => {
              sweeping = false;
            });
          }, env.LOCAL_RECONCILE_INTERVAL_SECONDS * 1000)
        : undefined;

    const server = createGateway({
      handlers,
      authorizer: authorize,
      rateLimit: { ratePerSecond: env.LOCAL_RATE_LIMIT_RPS, burst: env.LOCAL_RATE_LIMIT_BURST },
      authorizerCacheSeconds: env.LOCAL_AUTHORIZER_CACHE_SECONDS,
    });
    await new Promise<void>((resolve) => server.listen(env.PORT, env.HOST, resolve));
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : env.PORT;
    const baseUrl = `http://${env.HOST}:${port}`;

    process.stdout.write(`\nVision Analysis Service running at ${baseUrl}\n`);
    for (const { tenantId, key } of devKeys) process.stdout.write(`  dev API key for tenant "${tenantId}": ${key}\n`);
    process.stdout.write(`  try: curl -s ${baseUrl}/v1/schemas -H "x-api-key: ${devKeys[0]?.key}"\n`);
    process.stdout.write(`  review dashboard: ${baseUrl}/ (paste the key there)\n\n`);
    const ready = { baseUrl, pid: process.pid, endpoints: emulators.endpoints, resources: names };
    const ownsStateFile = await writeStateFile(ready).catch((error: unknown) => {
      process.stderr.write(`could not write ${stateFile}: ${error instanceof Error ? error.message : String(error)}\n`);
      return false;
    });
    if (!ownsStateFile) process.stdout.write(`  (${stateFile} belongs to another running stack; left as is)\n`);
    process.stdout.write(`VISION_LOCAL_READY ${JSON.stringify(ready)}\n`);

    let stopping = false;
    const shutdown = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      process.stdout.write(`\n${signal}: stopping\n`);
      server.close();
      server.closeAllConnections();
      await removeStateFile().catch(() => {});
      clearInterval(reconciler);
      await worker.stop();
      await deliverer.stop();
      await shutdownLocalProvider();
      await stopEmulators();
      process.exit(0);
    };
    process.on('SIGINT', () => void shutdown('SIGINT'));
    process.on('SIGTERM', () => void shutdown('SIGTERM'));
  } catch (error: unknown) {
    await stopEmulators();
    throw error;
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `local stack failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
