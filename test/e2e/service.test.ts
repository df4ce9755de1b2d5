/**
 * Black-box end-to-end suite: the service's whole public interface over HTTP only, against whatever E2E_BASE_URL
 * points at — the local stack (started by globalSetup when nothing is given), a LocalStack deployment or a real AWS
 * deployment. Nothing here reads tables, queues or buckets, and nothing assumes which AI provider answered, except
 * where the run itself says it was the `local` provider (then the receipt's total is known exactly).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { e2eConfig, requestTestTimeout } from './config.js';
import { createClient, fetchWithRetry, pollUntil, type Reply } from './http.js';

const config = e2eConfig();
const { call } = createClient(config);
const REQUEST_TIMEOUT = requestTestTimeout(config);
const RUN_TIMEOUT = config.runTimeoutMs + REQUEST_TIMEOUT;

/** A workflow label unique to this suite run, so list and usage can find exactly our runs in a shared deployment. */
const WORKFLOW = `e2e-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
const METADATA = { suite: 'e2e', workflow: WORKFLOW };
const REGISTRY_IDS = ['receipt', 'invoice', 'id_document', 'business_card', 'bank_statement'];

const fixture = (name: string) => readFile(new URL(`../fixtures/${name}`, import.meta.url));

interface ErrorBody {
  error: { code: string; message: string; status: number; retryable: boolean; requestId?: string; details?: unknown };
}

interface Presign {
  uploadId: string;
  uploadUrl: string;
  expiresAt: string;
  method: string;
  headers: Record<string, string>;
  maxBytes: number;
}

interface Usage {
  requests: number;
  billableUnits: number;
  costUsd: number;
  priceUsd: number;
}

interface Run {
  jobId: string;
  status: 'queued' | 'completed' | 'failed';
  uploadId: string;
  prompt: string;
  outputFormat: string;
  schemaId: string | null;
  estimatedCostUsd: number;
  metadata: Record<string, unknown>;
  workflow?: string | null;
  createdAt?: string;
  protocolVersion?: string;
  requests?: number;
  result?: Record<string, unknown>;
  usage?: Usage;
  chargedUsd?: number;
  refundedUsd?: number;
  confidence?: number;
  strategy?: string;
  attempts?: { provider: string; step: string; outcome: string; latencyMs: number }[];
  error?: ErrorBody['error'];
  verification?: { accepted: boolean };
}

function describeReply(reply: Reply<unknown>): string {
  return `HTTP ${reply.status}: ${reply.text.slice(0, 1000)}`;
}

/** Asserts a status with the body in the failure message (a bare `expect(status)` hides why). */
function expectStatus(reply: Reply<unknown>, status: number): void {
  if (reply.status !== status) throw new Error(`expected HTTP ${status}, got ${describeReply(reply)}`);
}

/** The contract's error body; the HTTP status equals error.status, and requestId matches x-request-id when sent. */
function expectError(reply: Reply<unknown>, code: string, status: number): ErrorBody['error'] {
  expectStatus(reply, status);
  const body = reply.body as ErrorBody;
  expect(body).toMatchObject({
    error: { code, status, retryable: expect.any(Boolean), message: expect.any(String) },
  });
  expect(body.error.requestId).toEqual(expect.any(String));
  const header = reply.headers.get('x-request-id');
  if (header) expect(body.error.requestId).toBe(header);
  return body.error;
}

function expectUsd(value: unknown): void {
  expect(value).toEqual(expect.any(Number));
  expect(value as number).toBeGreaterThanOrEqual(0);
  // Money is rounded to 6 decimals.
  expect(Math.abs((value as number) * 1e6 - Math.round((value as number) * 1e6))).toBeLessThan(1e-6);
}

async function presign(fileName: string, contentLength: number): Promise<Presign> {
  const reply = await call<Presign>('POST', '/v1/uploads/presign', { body: { fileName, contentLength } });
  expectStatus(reply, 200);
  return reply.body;
}

/** PUTs bytes to a presigned URL with the headers presign asked for (and no API key). */
async function put(slot: Presign, bytes: Uint8Array): Promise<Response> {
  const headers = Object.keys(slot.headers ?? {}).length
    ? slot.headers
    : { 'Content-Type': 'application/octet-stream' };
  const response = await fetchWithRetry(config, slot.uploadUrl, {
    method: slot.method || 'PUT',
    headers,
    body: new Blob([new Uint8Array(bytes)]),
  });
  await response.arrayBuffer();
  return response;
}

async function getRun(jobId: string): Promise<Run> {
  const reply = await call<Run>('GET', `/v1/runs/${encodeURIComponent(jobId)}`);
  expectStatus(reply, 200);
  return reply.body;
}

/** State shared by the flow's steps, which run in order; a step whose predecessor failed says so. */
const flow: {
  receiptFields?: string[];
  bytes?: Uint8Array;
  slot?: Presign;
  created?: Run;
  final?: Run;
} = {};

function need<T>(value: T | undefined, step: string): T {
  if (value === undefined) throw new Error(`skipped: the "${step}" step did not succeed`);
  return value;
}

beforeAll(() => {
  process.stdout.write(`e2e target: ${config.baseUrl} (${config.target}), workflow ${WORKFLOW}\n`);
});

describe('service basics', () => {
  test(
    'GET /health answers 200 {"status":"ok"} without a key',
    async () => {
      const reply = await call('GET', '/health', { key: null });
      expectStatus(reply, 200);
      expect(reply.body).toEqual({ status: 'ok' });
    },
    REQUEST_TIMEOUT,
  );

  test(
    'GET /v1/schemas lists the five built-in schemas with their fields',
    async () => {
      const reply = await call<{ items: { id: string; label: string; expectedFields: { name: string }[] }[] }>(
        'GET',
        '/v1/schemas',
      );
      expectStatus(reply, 200);
      const ids = reply.body.items.map((s) => s.id);
      expect(ids).toEqual(expect.arrayContaining(REGISTRY_IDS));
      expect(new Set(ids).size).toBe(ids.length);
      for (const schema of reply.body.items) {
        expect(schema).toMatchObject({ id: expect.any(String), label: expect.any(String) });
        expect(schema.expectedFields.length).toBeGreaterThan(0);
        for (const field of schema.expectedFields) expect(field.name).toEqual(expect.any(String));
      }
      const receipt = reply.body.items.find((s) => s.id === 'receipt');
      flow.receiptFields = receipt?.expectedFields.map((f) => f.name).sort();
    },
    REQUEST_TIMEOUT,
  );

  test(
    'GET /v1/whoami names the calling key (id, label, tenant, scopes) and never echoes the key',
    async () => {
      const reply = await call<{ keyId: string; label: string; tenantId: string; scopes: string[] }>(
        'GET',
        '/v1/whoami',
      );
      expectStatus(reply, 200);
      expect(reply.body).toEqual({
        keyId: expect.stringMatching(/^key_/),
        label: expect.any(String),
        tenantId: expect.any(String),
        scopes: expect.arrayContaining([expect.stringMatching(/^(runs:read|admin)$/)]),
      });
      expect(JSON.stringify(reply.body)).not.toContain(config.apiKey);
      expectStatus(await call('GET', '/v1/whoami', { key: null }), 401);
    },
    REQUEST_TIMEOUT,
  );
});

describe('the client flow: presign → PUT → create → poll → verify → list → usage', () => {
  test(
    'presign returns a time-limited PUT slot',
    async () => {
      const bytes = await fixture('receipt.png');
      flow.bytes = bytes;
      const slot = await presign('receipt.png', bytes.length);
      expect(slot).toMatchObject({
        uploadId: expect.any(String),
        uploadUrl: expect.any(String),
        expiresAt: expect.any(String),
        method: 'PUT',
        headers: { 'Content-Type': 'application/octet-stream' },
        maxBytes: expect.any(Number),
      });
      expect(() => new URL(slot.uploadUrl)).not.toThrow();
      expect(Number.isNaN(Date.parse(slot.expiresAt))).toBe(false);
      expect(slot.maxBytes).toBeGreaterThanOrEqual(bytes.length);
      flow.slot = slot;
    },
    REQUEST_TIMEOUT,
  );

  test(
    'the bytes PUT to the presigned URL are accepted by storage (no API key)',
    async () => {
      const slot = need(flow.slot, 'presign');
      const response = await put(slot, need(flow.bytes, 'presign'));
      expect(response.status).toBe(200);
    },
    REQUEST_TIMEOUT,
  );

  test(
    'POST /v1/runs answers 202 with the queued creation envelope',
    async () => {
      const slot = need(flow.slot, 'presign');
      const request = {
        uploadId: slot.uploadId,
        prompt: 'Extract the receipt',
        schemaId: 'receipt',
        workflow: WORKFLOW,
        metadata: METADATA,
      };
      // An Idempotency-Key makes the client's retries (e.g. after a gateway timeout) safe: no second run, no second hold.
      const reply = await call<Run>('POST', '/v1/runs', {
        body: request,
        headers: { 'Idempotency-Key': randomUUID() },
      });
      expectStatus(reply, 202);
      expect(reply.body).toMatchObject({
        jobId: expect.any(String),
        status: 'queued',
        uploadId: slot.uploadId,
        prompt: request.prompt,
        outputFormat: 'json',
        schemaId: 'receipt',
        metadata: METADATA,
        workflow: WORKFLOW,
        createdAt: expect.any(String),
      });
      expectUsd(reply.body.estimatedCostUsd);
      flow.created = reply.body;
    },
    REQUEST_TIMEOUT,
  );

  test(
    'the run completes with a result in the receipt schema and money settled consistently',
    async () => {
      const created = need(flow.created, 'create');
      const final = await pollUntil(
        `run ${created.jobId} final`,
        () => getRun(created.jobId),
        (run) => {
          expect(['queued', 'completed', 'failed']).toContain(run.status);
          return run.status !== 'queued';
        },
        config.runTimeoutMs,
      );
      if (final.status !== 'completed') throw new Error(`run ended ${final.status}: ${JSON.stringify(final)}`);
      flow.final = final;

      expect(final).toMatchObject({
        jobId: created.jobId,
        status: 'completed',
        schemaId: 'receipt',
        outputFormat: 'json',
        protocolVersion: '0.1.0',
        requests: expect.any(Number),
        result: expect.any(Object),
        usage: {
          requests: expect.any(Number),
          billableUnits: expect.any(Number),
          costUsd: expect.any(Number),
          priceUsd: expect.any(Number),
        },
        confidence: expect.any(Number),
        metadata: METADATA,
        attempts: expect.any(Array),
      });
      expect(final.confidence).toBeGreaterThanOrEqual(0);
      expect(final.confidence).toBeLessThanOrEqual(1);
      // With a schema, the result's keys are exactly the schema's field names (missing values are null).
      if (flow.receiptFields) expect(Object.keys(final.result ?? {}).sort()).toEqual(flow.receiptFields);

      // Money: the estimate does not move, the charge never exceeds it and the rest is refunded.
      const estimate = final.estimatedCostUsd;
      const charged = need(final.chargedUsd, 'chargedUsd on the completed run');
      const refunded = need(final.refundedUsd, 'refundedUsd on the completed run');
      const usage = need(final.usage, 'usage on the completed run');
      expect(estimate).toBe(created.estimatedCostUsd);
      for (const amount of [estimate, charged, refunded, usage.costUsd, usage.priceUsd]) expectUsd(amount);
      expect(charged).toBeLessThanOrEqual(estimate);
      expect(refunded).toBeCloseTo(estimate - charged, 6);
      expect(charged).toBeCloseTo(Math.min(usage.priceUsd, estimate), 6);

      // Which provider answered depends on the deployment; the run says which one succeeded.
      const succeeded = (final.attempts ?? []).filter((a) => a.outcome === 'succeeded');
      expect(succeeded.length).toBeGreaterThanOrEqual(1);
      if (succeeded.at(-1)?.provider === 'local') {
        // The local OCR provider reads the fixture deterministically.
        expect(final.result?.total).toBe(42.5);
      }
    },
    RUN_TIMEOUT,
  );

  test(
    'verify answers 200 with the verification and leaves the status completed',
    async () => {
      const final = need(flow.final, 'poll');
      const reply = await call<{ jobId: string; status: string; verification: Record<string, unknown> }>(
        'POST',
        `/v1/runs/${encodeURIComponent(final.jobId)}/verify`,
        { body: { accepted: true, note: 'e2e suite' } },
      );
      expectStatus(reply, 200);
      expect(reply.body).toMatchObject({
        jobId: final.jobId,
        status: 'completed',
        verification: { accepted: true, note: 'e2e suite', verifiedAt: expect.any(String) },
      });
      const after = await getRun(final.jobId);
      expect(after.status).toBe('completed');
      expect(after.chargedUsd).toBe(final.chargedUsd);
      expect(after.verification).toMatchObject({ accepted: true });
    },
    REQUEST_TIMEOUT,
  );

  test(
    'GET /v1/runs lists the run under its workflow',
    async () => {
      const final = need(flow.final, 'poll');
      type Page = { items: Run[]; nextCursor: string | null };
      // The list reads an index, which may lag a write on a real deployment.
      const page = await pollUntil(
        `run ${final.jobId} in the list`,
        async () => {
          const reply = await call<Page>('GET', `/v1/runs?workflow=${encodeURIComponent(WORKFLOW)}&limit=100`);
          expectStatus(reply, 200);
          return reply.body;
        },
        (body) => body.items.some((r) => r.jobId === final.jobId && r.status === 'completed'),
        config.runTimeoutMs,
      );
      expect(page.nextCursor === null || typeof page.nextCursor === 'string').toBe(true);
      for (const item of page.items) expect(item.workflow).toBe(WORKFLOW);
    },
    RUN_TIMEOUT,
  );

  test(
    'GET /v1/usage reports the workflow with its run and money totals',
    async () => {
      need(flow.final, 'poll');
      type UsageRow = Record<string, unknown> & { workflow: string | null; runs: number; verified: number };
      type UsageBody = { from: string; to: string; workflows: UsageRow[]; totals: UsageRow };
      const usage = await pollUntil(
        `workflow ${WORKFLOW} in usage`,
        async () => {
          const reply = await call<UsageBody>('GET', '/v1/usage');
          expectStatus(reply, 200);
          return reply.body;
        },
        (body) => body.workflows.some((w) => w.workflow === WORKFLOW && w.runs >= 1 && w.verified >= 1),
        config.runTimeoutMs,
      );
      expect(Number.isNaN(Date.parse(usage.from))).toBe(false);
      expect(Number.isNaN(Date.parse(usage.to))).toBe(false);
      const rowShape = {
        runs: expect.any(Number),
        completed: expect.any(Number),
        failed: expect.any(Number),
        queued: expect.any(Number),
        estimatedUsd: expect.any(Number),
        chargedUsd: expect.any(Number),
        refundedUsd: expect.any(Number),
        verified: expect.any(Number),
        accepted: expect.any(Number),
      };
      expect(usage.totals).toMatchObject(rowShape);
      const row = usage.workflows.find((w) => w.workflow === WORKFLOW);
      expect(row).toMatchObject({ ...rowShape, runs: 1, completed: 1, verified: 1, accepted: 1, acceptanceRate: 1 });
      expect(usage.totals.runs).toBeGreaterThanOrEqual(1);
    },
    RUN_TIMEOUT,
  );
});

describe('errors in the contract shape', () => {
  test(
    'no x-api-key → 401 UNAUTHORIZED',
    async () => {
      expectError(await call('GET', '/v1/schemas', { key: null }), 'UNAUTHORIZED', 401);
      expectError(
        await call('POST', '/v1/runs', { key: null, body: { uploadId: 'u', prompt: 'p' } }),
        'UNAUTHORIZED',
        401,
      );
    },
    REQUEST_TIMEOUT,
  );

  test(
    'an unknown job → 404 NOT_FOUND',
    async () => {
      expectError(await call('GET', `/v1/runs/run_e2e_${randomBytes(8).toString('hex')}`), 'NOT_FOUND', 404);
    },
    REQUEST_TIMEOUT,
  );

  test(
    'an unknown request field → 400 INVALID_REQUEST naming it',
    async () => {
      const reply = await call('POST', '/v1/runs', { body: { uploadId: 'u', prompt: 'p', outputFormats: 'json' } });
      expectError(reply, 'INVALID_REQUEST', 400);
      expect(reply.text).toContain('outputFormats');
    },
    REQUEST_TIMEOUT,
  );

  test(
    'a non-JSON content-type → 415 UNSUPPORTED_MEDIA_TYPE',
    async () => {
      expectError(
        await call('POST', '/v1/runs', { rawBody: 'uploadId=x&prompt=p', headers: { 'content-type': 'text/plain' } }),
        'UNSUPPORTED_MEDIA_TYPE',
        415,
      );
    },
    REQUEST_TIMEOUT,
  );

  test(
    'presigning a .gif → 415 UNSUPPORTED_FILE_TYPE',
    async () => {
      expectError(
        await call('POST', '/v1/uploads/presign', { body: { fileName: 'animation.gif', contentLength: 10 } }),
        'UNSUPPORTED_FILE_TYPE',
        415,
      );
    },
    REQUEST_TIMEOUT,
  );

  test(
    'a run on an upload that was never PUT → 409 UPLOAD_INCOMPLETE (retryable)',
    async () => {
      const slot = await presign('never-uploaded.png', 1234);
      const error = expectError(
        await call('POST', '/v1/runs', { body: { uploadId: slot.uploadId, prompt: 'p', workflow: WORKFLOW } }),
        'UPLOAD_INCOMPLETE',
        409,
      );
      expect(error.retryable).toBe(true);
    },
    REQUEST_TIMEOUT,
  );

  test(
    'bytes that differ from the presigned length → rejected by storage, or 422 UPLOAD_SIZE_MISMATCH at creation',
    async () => {
      const bytes = await fixture('receipt.png');
      const slot = await presign('receipt.png', bytes.length + 10);
      const response = await put(slot, bytes);
      if (response.status >= 400 && response.status < 500) {
        // S3 (and LocalStack with signature validation) enforces the signed Content-Length at the PUT itself.
        return;
      }
      expect(response.status).toBe(200);
      // Storage that does not check signatures (the local emulator, LocalStack by default): the service must.
      const error = expectError(
        await call('POST', '/v1/runs', { body: { uploadId: slot.uploadId, prompt: 'p', workflow: WORKFLOW } }),
        'UPLOAD_SIZE_MISMATCH',
        422,
      );
      expect(error.details).toMatchObject({ declaredBytes: bytes.length + 10, actualBytes: bytes.length });
    },
    REQUEST_TIMEOUT,
  );
});
