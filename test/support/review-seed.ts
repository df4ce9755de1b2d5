/**
 * Runs settled with per-field evidence and a review, for the integration suites of the review queue and the
 * dashboard. The worker does not compute fields yet (the lead wires grounding into it), so these runs are made the
 * way the service makes them, one layer down: the run and its hold through the store's `createRunWithHold`, then its
 * settlement through `settleRun` with `fields` and `review`, against the running local stack's tables. The file is a
 * real upload (presign + PUT through the API), so the dashboard's preview shows it. No message is sent and the run has
 * no `queuedShard`: neither the worker nor the reconciler ever sees it.
 */
import { randomUUID } from 'node:crypto';
import type { Fields, Review } from '../../shared/fields/types.js';
import type { FileFacts } from '../../shared/file-facts.js';
import { tables, uploadsBucket } from '../../shared/infra/resources.js';
import { SCOPES } from '../../shared/infra/routes.js';
import { createRunWithHold, settleRun } from '../../shared/store/ledger.js';
import type { RunError, RunRecord, RunUsage } from '../../shared/store/runs.js';
import { createApiKey, ensureTenant } from '../../shared/store/tenants.js';
import type { FieldSpec } from '../../shared/task.js';
import { uploadObjectKey } from '../../shared/uploads/object-key.js';
import type { StackInfo } from '../integration/stack.js';

/**
 * Points the stores of this process at the stack (they read table names, and the client its endpoint, at first use).
 * Returns a function that puts the environment back (later test files share the process).
 */
export function useStackTables(info: StackInfo): () => void {
  const names = [...Object.values(tables).map((def) => def.envVar), 'AWS_ENDPOINT_URL_DYNAMODB'];
  const saved = new Map(names.map((name) => [name, process.env[name]]));
  for (const [key, def] of Object.entries(tables)) {
    const name = info.resources.tables[key];
    if (name) process.env[def.envVar] = name;
  }
  process.env.AWS_ENDPOINT_URL_DYNAMODB = info.endpoints.dynamodb;
  return () => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
}

/**
 * Points this process's S3 client (shared/aws/s3.ts, created at first use) at the stack's bucket, so worker code run
 * by a test (page images: shared/worker/page-previews.ts) writes where the stack reads. Returns a function that puts
 * the environment back.
 */
export function useStackBucket(info: StackInfo): () => void {
  const names = [uploadsBucket.envVar, 'AWS_ENDPOINT_URL_S3', 'S3_FORCE_PATH_STYLE'];
  const saved = new Map(names.map((name) => [name, process.env[name]]));
  process.env[uploadsBucket.envVar] = info.resources.bucket;
  process.env.AWS_ENDPOINT_URL_S3 = info.endpoints.s3;
  process.env.S3_FORCE_PATH_STYLE = 'true';
  return () => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
}

/** A tenant of its own, with a key that has every scope: its review queue holds only what the test puts there. */
export async function freshTenant(prefix: string): Promise<{ tenantId: string; key: string }> {
  const tenantId = `${prefix}-${randomUUID().slice(0, 8)}`;
  await ensureTenant(tenantId);
  const { key } = await createApiKey(tenantId, { scopes: [...SCOPES], label: `${prefix} reviewer` });
  return { tenantId, key };
}

export const RECEIPT_FIELDS: FieldSpec[] = [
  { name: 'merchant', type: 'string', required: true },
  { name: 'date', type: 'date', required: true },
  { name: 'subtotal', type: 'number', required: false },
  { name: 'tax', type: 'number', required: false },
  { name: 'total', type: 'number', required: true },
  { name: 'currency', type: 'string', required: false },
];

/** test/fixtures/receipt.png as inspection finds it. */
export const RECEIPT_PNG: FileFacts = {
  mime: 'image/png',
  kind: 'image',
  sizeBytes: 13775,
  width: 800,
  height: 834,
  pages: 1,
};

export interface SeedOptions {
  tenantId: string;
  uploadId: string;
  fileName: string;
  file: FileFacts;
  result: Record<string, unknown>;
  fields?: Fields;
  review?: Review;
  workflow?: string;
  createdAt?: Date;
  /** What it cost and was priced (default 150 and 200 micro-dollars). */
  usage?: RunUsage;
  /** Settles the run failed with this error instead (its result, fields and review are then ignored). */
  failure?: RunError;
}

/** Creates (with its hold) and settles one completed json run of the receipt schema; returns its id. */
export async function seedSettledRun(options: SeedOptions): Promise<string> {
  const jobId = `run_${randomUUID().replaceAll('-', '')}`;
  const createdAt = (options.createdAt ?? new Date()).toISOString();
  const estimateMicros = 260;
  const run: RunRecord = {
    jobId,
    tenantId: options.tenantId,
    status: 'queued',
    stage: 'waiting',
    uploadId: options.uploadId,
    objectKey: uploadObjectKey(options.tenantId, options.uploadId, options.fileName),
    uploadExpiresAtEpoch: Math.floor(Date.now() / 1000) + 86_400,
    prompt: 'Extract the receipt',
    outputFormat: 'json',
    schemaId: 'receipt',
    task: {
      prompt: 'Extract the receipt',
      outputFormat: 'json',
      fields: RECEIPT_FIELDS,
      schemaId: 'receipt',
      schemaLabel: 'Receipt',
      promptScaffold: null,
    },
    workflow: options.workflow ?? null,
    ...(options.workflow ? { tenantWorkflow: `${options.tenantId}#${options.workflow}` } : {}),
    metadata: {},
    file: options.file,
    fileName: options.fileName,
    strategy: 'ocr_then_analyze',
    candidates: ['local'],
    estimateMicros,
    maxCostMicros: null,
    holdFromCredit: false,
    createdAt,
    expiresAtEpoch: Math.floor(Date.now() / 1000) + 90 * 86_400,
  };
  const stored = await createRunWithHold(run, null);
  const usage = options.usage ?? { requests: 1, billableUnits: 1, costMicros: 150, priceMicros: 200 };
  const settled = await settleRun(
    stored,
    options.failure
      ? {
          status: 'failed',
          error: options.failure,
          attempts: [{ provider: 'local', step: 'ocr', outcome: 'failed', latencyMs: 1200, failure: 'server' }],
        }
      : {
          status: 'completed',
          result: options.result,
          usage,
          confidence: 0.75,
          attempts: [{ provider: 'local', step: 'ocr', outcome: 'succeeded', latencyMs: 1200 }],
          ...(options.fields ? { fields: options.fields } : {}),
          ...(options.review ? { review: options.review } : {}),
        },
  );
  if (!settled) throw new Error(`run ${jobId} was not settled`);
  return jobId;
}
