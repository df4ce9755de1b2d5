/** A small HTTP client for the integration tests: real requests against the local stack, plus direct table reads. */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { bundledProgram } from '../support/node-bundle.js';
import { type RunningStack, type StackInfo, startStack } from './stack.js';

export const KEYS = { a: 'vk_test_tenant_a_0123456789abcdef', b: 'vk_test_tenant_b_0123456789abcdef' };

/**
 * The local stack this test file runs against: its jest worker's own (globalSetup starts one per worker), or the one
 * INTEGRATION_STACK names (the benchmark's).
 */
export function stack(): StackInfo {
  const all = process.env.INTEGRATION_STACKS;
  if (all) {
    const worker = Number(process.env.JEST_WORKER_ID ?? '1');
    const info = (JSON.parse(all) as StackInfo[])[worker - 1];
    if (!info) throw new Error(`no local stack for jest worker ${worker}: globalSetup started fewer`);
    return info;
  }
  const raw = process.env.INTEGRATION_STACK;
  if (!raw) throw new Error('INTEGRATION_STACKS is not set: run through jest globalSetup');
  return JSON.parse(raw) as StackInfo;
}

/**
 * Starts a local stack of the test file's own (its providers, fakes or settings: VISION_PROVIDERS and the like hold
 * for a whole stack) on its worker's suite emulators: its tables, bucket and queues get a name prefix of their own in
 * the suite stack's DynamoDB Local and fauxqs, and it starts no JVM (about 3 s and 3 CPU-seconds of the 8 a stack's
 * start costs). A file that tests the emulators or a data folder (kept data, restarts) starts its own with startStack.
 */
export function startStackOnSuiteEmulators(env: Record<string, string>, timeoutMs?: number): Promise<RunningStack> {
  const { dynamodb, s3, sqs } = stack().endpoints;
  return startStack(
    {
      AWS_ENDPOINT_URL_DYNAMODB: dynamodb,
      AWS_ENDPOINT_URL_S3: s3,
      AWS_ENDPOINT_URL_SQS: sqs,
      VISION_LOCAL_TABLE_PREFIX: `vision-${randomUUID().slice(0, 8)}-`,
      ...env,
    },
    timeoutMs,
  );
}

export interface Reply<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
}

export async function call<T = Record<string, unknown>>(
  method: string,
  path: string,
  options: { key?: string | null; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<Reply<T>> {
  const headers: Record<string, string> = { ...options.headers };
  const key = options.key === undefined ? KEYS.a : options.key;
  if (key !== null) headers['x-api-key'] = key;
  let body: string | undefined;
  if (options.rawBody !== undefined) body = options.rawBody;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(`${stack().baseUrl}${path}`, {
    method,
    headers,
    ...(body !== undefined ? { body } : {}),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : {}) as T };
}

export const fixture = (name: string) => readFile(new URL(`../fixtures/${name}`, import.meta.url));

/** Presigns and PUTs bytes; returns the uploadId. `declaredLength` lets a test lie about the size. */
export async function upload(
  fileName: string,
  bytes: Uint8Array,
  options: { key?: string; declaredLength?: number } = {},
) {
  const presign = await call<{ uploadId: string; uploadUrl: string }>('POST', '/v1/uploads/presign', {
    key: options.key ?? KEYS.a,
    body: { fileName, contentLength: options.declaredLength ?? bytes.length },
  });
  if (presign.status !== 200) throw new Error(`presign failed: ${JSON.stringify(presign.body)}`);
  const put = await fetch(presign.body.uploadUrl, {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream' },
    body: new Blob([new Uint8Array(bytes)]),
  });
  if (put.status !== 200) throw new Error(`PUT failed with ${put.status}`);
  return presign.body.uploadId;
}

/** Polls a run until it is final or the deadline passes. */
export async function waitForFinal(jobId: string, options: { key?: string; timeoutMs?: number } = {}) {
  const deadline = Date.now() + (options.timeoutMs ?? 90_000);
  for (;;) {
    const reply = await call('GET', `/v1/runs/${jobId}`, { key: options.key ?? KEYS.a });
    if (reply.body.status === 'completed' || reply.body.status === 'failed') return reply;
    if (Date.now() > deadline) throw new Error(`run ${jobId} still ${String(reply.body.status)} at the deadline`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function documentClient(): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint: stack().endpoints.dynamodb }));
}

/** The run as stored (internal fields included: deliveries, resends). */
export async function runRecord(jobId: string): Promise<Record<string, unknown>> {
  const out = await documentClient().send(
    new GetCommand({ TableName: stack().resources.tables.runs, Key: { jobId }, ConsistentRead: true }),
  );
  return (out.Item ?? {}) as Record<string, unknown>;
}

/** Writes a run item as is (a bare record no message or tenant listing points to, for store-level tests). */
export async function putRunRecord(item: Record<string, unknown>): Promise<void> {
  await documentClient().send(new PutCommand({ TableName: stack().resources.tables.runs, Item: item }));
}

/** Writes evaluation items as they are (finished evaluations to list: no run, no hold behind them). */
export async function putEvaluationRecords(items: Record<string, unknown>[]): Promise<void> {
  for (const item of items) {
    await documentClient().send(new PutCommand({ TableName: stack().resources.tables.evaluations, Item: item }));
  }
}

export async function tenantRecord(tenantId: string): Promise<Record<string, number | string>> {
  const out = await documentClient().send(
    new GetCommand({ TableName: stack().resources.tables.tenants, Key: { tenantId }, ConsistentRead: true }),
  );
  return (out.Item ?? {}) as Record<string, number | string>;
}

export async function ledgerEntries(tenantId: string, jobId?: string): Promise<Record<string, unknown>[]> {
  const out = await documentClient().send(
    new QueryCommand({
      TableName: stack().resources.tables.ledger,
      KeyConditionExpression: jobId ? 'tenantId = :t AND begins_with(entryId, :j)' : 'tenantId = :t',
      ExpressionAttributeValues: jobId ? { ':t': tenantId, ':j': `${jobId}#` } : { ':t': tenantId },
      ConsistentRead: true,
    }),
  );
  return out.Items ?? [];
}

export async function runCount(tenantId: string): Promise<number> {
  const out = await documentClient().send(
    new QueryCommand({
      TableName: stack().resources.tables.runs,
      IndexName: 'byTenant',
      KeyConditionExpression: 'tenantId = :t',
      ExpressionAttributeValues: { ':t': tenantId },
      Select: 'COUNT',
    }),
  );
  return out.Count ?? 0;
}

/** Sets a tenant's available credit (makes it a limited tenant). */
export async function setCredit(tenantId: string, micros: number): Promise<void> {
  await documentClient().send(
    new UpdateCommand({
      TableName: stack().resources.tables.tenants,
      Key: { tenantId },
      UpdateExpression: 'SET availableMicros = :m',
      ExpressionAttributeValues: { ':m': micros },
    }),
  );
}

function sqsClient(info: StackInfo = stack()): SQSClient {
  return new SQSClient({ endpoint: info.endpoints.sqs, useQueueUrlAsEndpoint: false });
}

/** Sends a raw message to the run queue (to simulate SQS delivering a duplicate). */
export async function sendRunMessage(jobId: string): Promise<void> {
  await sqsClient().send(
    new SendMessageCommand({ QueueUrl: stack().resources.queueUrl, MessageBody: JSON.stringify({ jobId }) }),
  );
}

/**
 * Waits until the run queue holds no message, visible or in flight: every delivery (duplicates and redeliveries
 * included) has been handled and deleted. Polls with a deadline instead of sleeping for a guessed time. `info`: a
 * stack of the test's own (default: its worker's).
 */
export async function waitForRunQueueDrained(timeoutMs = 60_000, info: StackInfo = stack()): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { Attributes } = await sqsClient(info).send(
      new GetQueueAttributesCommand({
        QueueUrl: info.resources.queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    const waiting =
      Number(Attributes?.ApproximateNumberOfMessages ?? 0) +
      Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
    if (waiting === 0) return;
    if (Date.now() > deadline) throw new Error(`the run queue still holds ${waiting} message(s) at the deadline`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs node with `args` in the repository's folder; resolves with its exit code and everything it wrote. */
export function runNode(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: new URL('../..', import.meta.url).pathname,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * The `vision` CLI as a user runs it (not a TTY), against the shared stack as tenant A; `env` overrides variables (an
 * undefined value removes one).
 */
export function visionCli(args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_NO_WARNINGS: '1',
    VISION_BASE_URL: stack().baseUrl,
    VISION_API_KEY: KEYS.a,
    ...env,
  };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete childEnv[k];
  return runNode(['cli/vision.mjs', ...args], childEnv);
}

/**
 * Runs `npm run keys` (scripts/keys.ts) as a child process with a clean target environment: no table or endpoint
 * variables inherited from the test process, and a state file that cannot exist, so no test picks up a developer's
 * running `npm start` by accident. `env` adds variables (a table target through the environment). The program is
 * bundled (test/support/node-bundle.ts).
 */
export async function keysCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, NODE_NO_WARNINGS: '1' };
  for (const name of ['TENANTS_TABLE', 'API_KEYS_TABLE', 'RUNS_TABLE', 'USAGE_TABLE', 'AWS_ENDPOINT_URL']) {
    delete childEnv[name];
  }
  delete childEnv.AWS_ENDPOINT_URL_DYNAMODB;
  childEnv.VISION_LOCAL_STATE_FILE = join(tmpdir(), `no-such-stack-${randomUUID()}.json`);
  return runNode([...(await bundledProgram('scripts/keys.ts')), ...args], { ...childEnv, ...env });
}
