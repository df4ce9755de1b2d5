/**
 * `npm start`: the whole service on this machine. Starts DynamoDB Local and fauxqs (unless AWS endpoints are given),
 * creates the resources from shared/infra/resources.ts, seeds dev API keys, serves the route table on
 * http://127.0.0.1:$PORT through a local API Gateway stand-in, and drives the worker from the queue. Data is kept in
 * a data folder across restarts (scripts/local/data-dir.ts); `npm start -- --fresh` starts empty, `-- --in-memory`
 * keeps nothing.
 * Not to undo: the signal handlers are installed before anything starts and the port is checked before the emulators
 * start, so Ctrl-C / SIGTERM at any moment, the end of the process that started it, a busy port or DynamoDB Local
 * dying ends everything this process started (the Java process included) within 5 s, with one line saying why
 * (scripts/local/stopping.ts). The service's own modules (scripts/local/service.ts) are imported only once the port
 * is checked, and load while DynamoDB Local's JVM starts.
 * Over 400 lines: the local stack's start-up is one sequence (emulators, resources, keys, handlers, runners, shutdown)
 * whose order matters; its pieces live in scripts/local/.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
// Namespace import: zod 4's named `z` object defeats tree-shaking and drags every locale into each bundle.
import * as z from 'zod';
import { config } from '../shared/config.js';
import { ENV } from '../shared/infra/env.js';
import {
  bedrockBatch,
  deliverSettings,
  evaluationSettings,
  reconcileSettings,
  runQueue,
  tables,
  uploadsBucket,
  webhookQueue,
  webhookSettings,
  workerSettings,
} from '../shared/infra/resources.js';
import { gatewaySettings, routes } from '../shared/infra/routes.js';
import { log, setLogSink } from '../shared/log.js';
import { banner, shownDir } from './local/banner.js';
import { captureForeignOutput, createConsoleSink, logFormat, type Writers } from './local/console.js';
import {
  type DataDir,
  DataDirInUse,
  DEFAULT_DATA_DIR,
  freshSummary,
  generatedDevKey,
  openDataDir,
} from './local/data-dir.js';
import { createResources, endpointsConfigured, startEmulators } from './local/emulators.js';
import { createGateway } from './local/gateway.js';
import { removeStateFile, stateFile, writeStateFile } from './local/state-file.js';
import { createStopping } from './local/stopping.js';
import { startWorkerRunner } from './local/worker-runner.js';

/** The Bedrock batch service role on the local stack: the fake takes any role of the reference's form. */
const LOCAL_BEDROCK_BATCH_ROLE = 'arn:aws:iam::000000000000:role/vision-local-bedrock-batch';

const localEnv = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8787),
  HOST: z.string().default('127.0.0.1'),
  /** Comma-separated tenant:key pairs, seeded with every scope. Unset: one key is generated (and kept). */
  VISION_DEV_API_KEYS: z.string().optional(),
  /** Where tables and uploaded files are kept across restarts (default `.local-data/`). */
  VISION_LOCAL_DATA_DIR: z.string().optional(),
  /** `pretty` or `json` log lines; default pretty on a terminal, JSON otherwise. */
  VISION_LOCAL_LOG_FORMAT: z.enum(['pretty', 'json']).optional(),
  /** Print the machine-read `VISION_LOCAL_READY {json}` line even on a terminal (always printed otherwise). */
  VISION_LOCAL_READY_LINE: z.enum(['true', 'false']).optional(),
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
  /**
   * Seconds between batcher passes (deployed: every batchSettings.everyMinutes); 0 runs none. Short, so that a batch run
   * on the local stack finishes in seconds against the providers' batch fakes (or their real batch APIs).
   */
  LOCAL_BATCH_INTERVAL_SECONDS: z.coerce.number().min(0).default(5),
  /** Overrides of the reconciler's waits (shared/infra/resources.ts reconcileSettings), shorter for tests. */
  LOCAL_RECONCILE_RESEND_AFTER_SECONDS: z.coerce.number().positive().optional(),
  LOCAL_RECONCILE_DEAD_AFTER_SECONDS: z.coerce.number().positive().optional(),
  /**
   * Parallel pollers of the webhook delivery queue, as many as the deployed function's concurrency by default: an idle
   * poller costs nothing, a busy one makes the next event wait. 0 delivers nothing (events wait in the queue).
   */
  LOCAL_DELIVER_CONCURRENCY: z.coerce.number().int().min(0).max(16).default(deliverSettings.maxConcurrency),
  /** Seconds after which the sweep hands on an event whose dispatch was interrupted (deployed: webhookSettings). */
  LOCAL_EVENTS_SWEEP_AFTER_SECONDS: z.coerce.number().min(0).default(webhookSettings.sweepAfterSeconds),
  /** Seconds after its creation the sweep finishes an evaluation a crash left open (deployed: evaluationSettings). */
  LOCAL_EVALUATIONS_SWEEP_AFTER_SECONDS: z.coerce.number().min(0).default(evaluationSettings.sweepAfterSeconds),
  /** Enables the crash-simulation seam (metadata.localFault on a run); for tests only. */
  VISION_LOCAL_FAULT_INJECTION: z.enum(['true', 'false']).default('false'),
});

/** Thrown for a start that cannot go on: its message is the one line the operator sees. */
class StartFailure extends Error {}

function parseDevKeys(value: string): { tenantId: string; key: string }[] {
  return value.split(',').map((pair) => {
    const [tenantId, key] = pair.split(':').map((s) => s.trim());
    if (!tenantId || !key) throw new StartFailure(`VISION_DEV_API_KEYS: "${pair.split(':')[0]}…" is not tenant:key`);
    return { tenantId, key };
  });
}

const OPTIONS = ['--fresh', '--in-memory'];

function parseArgs(argv: string[]): { fresh: boolean; inMemory: boolean } {
  const unknown = argv.filter((arg) => !OPTIONS.includes(arg));
  if (unknown.length > 0) {
    throw new StartFailure(
      `unknown option ${unknown[0]}; the options are --fresh (start with an empty data folder) and --in-memory ` +
        '(keep nothing: no data folder)',
    );
  }
  return { fresh: argv.includes('--fresh'), inMemory: argv.includes('--in-memory') };
}

/** Whether `port` can be listened on at `host` now (EADDRINUSE: no; any other failure is thrown). */
async function portIsFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'EADDRINUSE' ? resolve(false) : reject(error),
    );
    probe.listen(port, host, () => probe.close(() => resolve(true)));
  });
}

const portInUse = (port: number) => `port ${port} is in use; set PORT=… (PORT=0 picks a free one)`;

let stopConsole = () => {};
/** Everything the stack started, undone in reverse order; signals, the parent's end and fatal errors end here. */
const stopping = createStopping(() => stopConsole());
/** Worker invocations in flight get this long to finish when the stack stops; the rest are taken up at the next start. */
const WORKER_GRACE_MS = 1500;
/** This process's own stdout and stderr (everything else written there becomes log entries). */
let writers: Writers = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
};

async function main(): Promise<void> {
  const parsed = localEnv.safeParse(process.env);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new StartFailure(`the environment is not usable: ${issues.join('; ')}`);
  }
  const env = parsed.data;
  const format = logFormat(env.VISION_LOCAL_LOG_FORMAT, Boolean(process.stdout.isTTY));
  writers = captureForeignOutput((stream, output) =>
    (stream === 'stderr' ? log.warn : log.info)('library output', { stream, output }),
  );
  const out = writers;
  const console = createConsoleSink({
    format,
    out: (line, level) => (level === 'warn' || level === 'error' ? out.stderr : out.stdout)(`${line}\n`),
    withStacks: process.env.LOG_LEVEL === 'debug',
  });
  setLogSink((entry) => {
    if (stopping.shows(entry)) console.sink(entry);
  });
  stopConsole = () => console.stop();
  stopping.watchSignalsAndParent();

  const { fresh, inMemory } = parseArgs(process.argv.slice(2));
  if (env.PORT !== 0 && !(await portIsFree(env.HOST, env.PORT))) throw new StartFailure(portInUse(env.PORT));

  let dataDir: DataDir | null = null;
  // --in-memory (the tests and the benchmark): DynamoDB Local in memory, several times faster at writing than on disk.
  if (!endpointsConfigured() && !inMemory) {
    const dir = env.VISION_LOCAL_DATA_DIR || DEFAULT_DATA_DIR;
    dataDir = await openDataDir(dir, { fresh }).catch((error: unknown) => {
      if (error instanceof DataDirInUse) {
        throw new StartFailure(`${error.message}; stop it, or set VISION_LOCAL_DATA_DIR to another folder`);
      }
      throw error;
    });
    const opened = dataDir;
    stopping.onStop(() => opened.release());
    if (opened.removed) writers.stdout(`${freshSummary(shownDir(opened.path), opened.removed)}\n`);
  }
  const supplied = env.VISION_DEV_API_KEYS ? parseDevKeys(env.VISION_DEV_API_KEYS) : undefined;
  const generated =
    supplied === undefined
      ? {
          tenantId: 'dev',
          key: dataDir ? await generatedDevKey(dataDir) : `vk_dev_${randomBytes(24).toString('base64url')}`,
        }
      : undefined;
  const devKeys = supplied ?? (generated ? [generated] : []);

  // The SDK needs a region and some credentials even for emulators; real values win when present.
  process.env.AWS_REGION ??= 'us-east-1';
  if (!process.env.AWS_ACCESS_KEY_ID) {
    // Placeholder credentials for the emulators only: they must not make Bedrock/Textract look usable.
    process.env.AWS_ACCESS_KEY_ID = 'local';
    process.env.AWS_SECRET_ACCESS_KEY = 'local';
    process.env.VISION_DISABLE_IAM_PROVIDERS ??= 'true';
  }

  // The service's own modules load while the emulators start (scripts/local/service.ts says why); a failure to load
  // them is thrown where they are awaited.
  const loadingService = import('./local/service.js');
  loadingService.catch(() => {});
  const emulators = await startEmulators({
    ...(dataDir ? { data: { dynamodb: dataDir.dynamodb, s3: dataDir.s3 } } : {}),
    onUnexpectedExit: (how) => {
      // Once a stop was asked for, DynamoDB Local ending is part of it, whoever ended it first.
      if (stopping.stopping) return;
      log.error(`DynamoDB Local stopped (${how}); the local stack cannot work without it and stops too`);
      void stopping.stop(1);
    },
  });
  stopping.onStop(() => emulators.stop());
  process.env.AWS_ENDPOINT_URL_DYNAMODB = emulators.endpoints.dynamodb;
  process.env.AWS_ENDPOINT_URL_S3 = emulators.endpoints.s3;
  process.env.AWS_ENDPOINT_URL_SQS = emulators.endpoints.sqs;
  process.env.S3_FORCE_PATH_STYLE ??= 'true';

  const names = await createResources(emulators.endpoints, env.VISION_LOCAL_TABLE_PREFIX, {
    ...(env.LOCAL_VISIBILITY_TIMEOUT_SECONDS ? { visibilityTimeoutSeconds: env.LOCAL_VISIBILITY_TIMEOUT_SECONDS } : {}),
  });
  for (const [key, def] of Object.entries(tables)) process.env[def.envVar] = names.tables[key as keyof typeof tables];
  process.env[uploadsBucket.envVar] = names.bucket;
  process.env[runQueue.envVar] = names.queueUrl;
  process.env[webhookQueue.envVar] = names.webhookQueueUrl;
  process.env[webhookQueue.deadLetter.envVar] = names.webhookDeadLetterQueueUrl;
  // Webhook secrets stay in their table here, and receivers on this machine are allowed (contract-v1.1 §4).
  process.env[ENV.webhookSecretStore] ??= 'local-table';
  process.env[ENV.webhookAllowLocalhost] ??= 'true';
  // A short batch window: a batch run on the local stack is grouped for seconds, not the deployed ten minutes.
  process.env[ENV.batchMaxWaitSeconds] ??= '5';
  // Bedrock batch inference against a control-plane fake (AWS_ENDPOINT_URL_BEDROCK, e.g. bench/batch-fakes.ts): it
  // reads and writes this stack's S3 itself, so the role Bedrock would assume is a name only, never used with AWS.
  if (process.env.AWS_ENDPOINT_URL_BEDROCK) process.env[bedrockBatch.roleEnvVar] ??= LOCAL_BEDROCK_BATCH_ROLE;

  const {
    adapters,
    batchApis,
    claimRun,
    createApiKey,
    DEFAULT_RECONCILE_OPTIONS,
    enqueueRun,
    ensureTenant,
    findActiveKey,
    getRun,
    hideMessage,
    holderId,
    jobIdOf,
    reconcileRuns,
    runBatcher,
    shutdownLocalProvider,
  } = await loadingService;
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
  const { sweepEvaluations } = await import('../shared/evaluations/sweep.js');

  // Crash simulation for tests: a run whose metadata.localFault is `crash-before-settle` (provider answered,
  // nothing written), `crash-after-settle` (settled, message not deleted), `crash-after-chunk` (a chunk
  // checkpointed), `crash-after-group` (a fanned-out group's chunks done, not yet counted) or `crash-after-last-group`
  // (the last group counted, not yet merged) aborts the first delivery that reaches that point, and SQS redelivers it
  // after the visibility timeout — exactly what a crashed Lambda invocation leads to.
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
  // Failures played at the delivery as AWS would show them: `lose-message` — the first message of the run vanishes
  // unprocessed (as if create-run never sent it; the reconciler resends it); `crash-hard` — every delivery dies after
  // it began processing (a Lambda timeout or out-of-memory), so the message ends in the DLQ unsettled (the reconciler
  // fails it); `crash-hard-once` — the first delivery dies so, its message hidden for the lease as the worker hides it:
  // the lease lapses and the next receive takes the run over.
  const workerHandler: typeof processingHandler = async (event, context) => {
    if (env.VISION_LOCAL_FAULT_INJECTION !== 'true') return processingHandler(event, context);
    const failures: { itemIdentifier: string }[] = [];
    const records = [];
    for (const record of event.Records) {
      const jobId = jobIdOf(record.body);
      const fault = jobId === undefined ? undefined : (await getRun(jobId))?.metadata.localFault;
      if (jobId !== undefined && fault === 'lose-message' && !crashed.has(jobId)) {
        crashed.add(jobId);
      } else if (
        jobId !== undefined &&
        (fault === 'crash-hard' || (fault === 'crash-hard-once' && !crashed.has(jobId)))
      ) {
        crashed.add(jobId);
        // Claimed as the worker claims, then dead: no heartbeat renews the lease, which lapses by itself.
        await claimRun(jobId, {
          leaseUntil: new Date(Date.now() + config.leaseSeconds * 1000),
          holder: holderId(),
          receiveCount: Number(record.attributes.ApproximateReceiveCount ?? '1'),
        });
        if (fault === 'crash-hard-once') await hideMessage(record.receiptHandle, config.leaseSeconds);
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
  stopping.onStop(async () => {
    const left = (await Promise.all([worker.stop(WORKER_GRACE_MS), deliverer.stop(WORKER_GRACE_MS)])).reduce(
      (a, b) => a + b,
    );
    if (left === 0) {
      await shutdownLocalProvider();
      return;
    }
    log.info(`stopped with ${left} run(s) or deliveries in progress: the next start takes them up at once`);
    // The OCR engine is left to end with the process: stopped under a run, it would throw from its own callbacks.
    stopping.abandon();
  });
  const sweepOptions = { ...DEFAULT_SWEEP_OPTIONS, afterSeconds: env.LOCAL_EVENTS_SWEEP_AFTER_SECONDS };

  // The reconciler on a timer, as EventBridge schedules it when deployed.
  const deadAfter = env.LOCAL_RECONCILE_DEAD_AFTER_SECONDS ?? visibilitySeconds + reconcileSettings.deadMarginSeconds;
  const reconcileOptions = {
    ...DEFAULT_RECONCILE_OPTIONS,
    resendAfterSeconds: env.LOCAL_RECONCILE_RESEND_AFTER_SECONDS ?? DEFAULT_RECONCILE_OPTIONS.resendAfterSeconds,
    deadAfterSeconds: deadAfter,
    silentAfterSeconds: deadAfter + (runQueue.maxReceiveCount - 1) * visibilitySeconds,
  };
  if (dataDir?.hadData) {
    // The queue is not kept across restarts (fauxqs has no persistence): every run still queued is sent again now,
    // as the reconciler would after its waits, whatever resends it already had. The runs the previous process held
    // are taken up at once: their leases are released (it is gone: one stack per data folder). The worker is
    // idempotent by jobId.
    const { resent, released } = await reconcileRuns({
      ...reconcileOptions,
      resendAfterSeconds: 0,
      silentAfterSeconds: 0,
      maxResends: Number.MAX_SAFE_INTEGER,
      holdersGone: true,
    });
    if (resent.length > 0) {
      log.info('queued runs from the last run sent to the worker again', {
        runs: resent.length,
        heldByTheLastRun: released?.length ?? 0,
      });
    }
  }
  let sweeping = false;
  const reconciler =
    env.LOCAL_RECONCILE_INTERVAL_SECONDS > 0
      ? setInterval(() => {
          if (sweeping) return;
          sweeping = true;
          // Like the deployed reconciler, it also sweeps the run events a crash left undispatched.
          Promise.allSettled([
            reconcileRuns(reconcileOptions).catch((error: unknown) => log.error('reconciler sweep failed', { error })),
            sweepPendingEvents(sweepOptions).catch((error: unknown) => log.error('events sweep failed', { error })),
            sweepEvaluations({ afterSeconds: env.LOCAL_EVALUATIONS_SWEEP_AFTER_SECONDS }).catch((error: unknown) =>
              log.error('evaluations sweep failed', { error }),
            ),
          ]).finally(() => {
            sweeping = false;
          });
        }, env.LOCAL_RECONCILE_INTERVAL_SECONDS * 1000)
      : undefined;
  stopping.onStop(async () => clearInterval(reconciler));

  // The batcher on a timer, as EventBridge schedules it when deployed (shared/batching/batcher.ts).
  let batching = false;
  const batcher =
    env.LOCAL_BATCH_INTERVAL_SECONDS > 0
      ? setInterval(() => {
          if (batching) return;
          batching = true;
          runBatcher({ apis: batchApis(), enqueue: enqueueRun })
            .catch((error: unknown) => log.error('batcher pass failed', { error }))
            .finally(() => {
              batching = false;
            });
        }, env.LOCAL_BATCH_INTERVAL_SECONDS * 1000)
      : undefined;
  stopping.onStop(async () => clearInterval(batcher));

  const server = createGateway({
    handlers,
    authorizer: authorize,
    rateLimit: { ratePerSecond: env.LOCAL_RATE_LIMIT_RPS, burst: env.LOCAL_RATE_LIMIT_BURST },
    authorizerCacheSeconds: env.LOCAL_AUTHORIZER_CACHE_SECONDS,
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(env.PORT, env.HOST, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((error: unknown) => {
    // Taken between the check at start and now.
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new StartFailure(portInUse(env.PORT));
    throw error;
  });
  stopping.onStop(async () => {
    server.close();
    server.closeAllConnections();
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : env.PORT;
  const baseUrl = `http://${env.HOST}:${port}`;

  writers.stdout(
    banner({
      baseUrl,
      ...(generated ? { generated } : {}),
      suppliedTenants: supplied?.map((k) => k.tenantId) ?? [],
      dataDir: dataDir?.path ?? null,
      reused: dataDir?.hadData ?? false,
      inMemory,
    }),
  );
  const ready = { baseUrl, pid: process.pid, endpoints: emulators.endpoints, resources: names };
  const ownsStateFile = await writeStateFile(ready).catch((error: unknown) => {
    log.warn(`could not write ${stateFile}`, { error });
    return false;
  });
  if (ownsStateFile) stopping.onStop(() => removeStateFile());
  else log.info(`${stateFile} belongs to another running stack; left as is`);
  if (!process.stdout.isTTY || env.VISION_LOCAL_READY_LINE === 'true') {
    writers.stdout(`VISION_LOCAL_READY ${JSON.stringify(ready)}\n`);
  }
}

main().catch(async (error: unknown) => {
  writers.stderr(
    error instanceof StartFailure
      ? `${error.message}\n`
      : `local stack failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  await stopping.stop(1);
});
