/**
 * An evaluation whose creating request died after its hold, before its runs were written: the reconciler's sweep
 * writes and queues them, and the evaluation finishes with every item and its money exact. The request is played in
 * this process (the service's own `createEvaluation`) against the local stack's tables, with the Runs table pointed
 * at one that does not exist, so that writing the runs fails exactly where a crash would stop it.
 */
import { createEvaluation } from '../../shared/evaluations/create.js';
import { ENV } from '../../shared/infra/env.js';
import { runQueue, tables, uploadsBucket } from '../../shared/infra/resources.js';
import { call, fixture, ledgerEntries, stack, tenantRecord, upload } from './client.js';

beforeAll(() => {
  const info = stack();
  for (const [name, def] of Object.entries(tables)) {
    const table = info.resources.tables[name];
    if (table) process.env[def.envVar] = table;
  }
  // Where the creating request stops: its runs cannot be written.
  process.env[tables.runs.envVar] = 'no-such-table';
  process.env[uploadsBucket.envVar] = info.resources.bucket;
  process.env[runQueue.envVar] = info.resources.queueUrl;
  process.env.AWS_ENDPOINT_URL_DYNAMODB = info.endpoints.dynamodb;
  process.env.AWS_ENDPOINT_URL_S3 = info.endpoints.s3;
  process.env.AWS_ENDPOINT_URL_SQS = info.endpoints.sqs;
  process.env.S3_FORCE_PATH_STYLE = 'true';
  process.env[ENV.providers] = 'local';
});

test('a creation that dies after the hold is finished by the sweep: runs written, queued, settled once', async () => {
  const [png, jpg] = await Promise.all([
    upload('receipt.png', await fixture('receipt.png')),
    upload('receipt.jpg', await fixture('receipt.jpg')),
  ]);
  const heldBefore = Number((await tenantRecord('tenant-a')).heldMicros ?? 0);
  const { response } = await createEvaluation({
    tenantId: 'tenant-a',
    body: {
      name: 'died after the hold',
      schemaId: 'receipt',
      confirmCost: true,
      items: [
        { uploadId: png, expected: { total: 42.5 } },
        { uploadId: jpg, expected: { total: 42.5 } },
      ],
    },
  });
  const evaluationId = response.evaluationId;
  // The hold is taken and the evaluation exists, but its runs do not (yet).
  expect(await ledgerEntries('tenant-a', evaluationId)).toEqual([expect.objectContaining({ kind: 'hold' })]);
  const first = await call<{ items: { jobId: string }[] }>('GET', `/v1/evaluations/${evaluationId}`);
  const jobId = String(first.body.items[0]?.jobId);

  // The stack's sweep (3 s after creation here) writes and queues them; then they run as any.
  const deadline = Date.now() + 120_000;
  let evaluation: Record<string, unknown> = {};
  for (;;) {
    evaluation = (await call('GET', `/v1/evaluations/${evaluationId}?itemsLimit=10`)).body;
    if (evaluation.status !== 'queued') break;
    if (Date.now() > deadline) throw new Error(`still queued: ${JSON.stringify(evaluation.progress)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  expect(evaluation).toMatchObject({ status: 'completed', progress: { itemsTotal: 2, itemsDone: 2 } });
  expect((await call('GET', `/v1/runs/${jobId}`)).body).toMatchObject({ status: 'completed', evaluationId });
  const hold = Math.round(Number(evaluation.estimatedCostUsd) * 1e6);
  expect(Math.round(Number(evaluation.chargedUsd) * 1e6) + Math.round(Number(evaluation.refundedUsd) * 1e6)).toBe(hold);
  expect(Number((await tenantRecord('tenant-a')).heldMicros ?? 0)).toBe(heldBefore);
});
