/**
 * The usage counters against the runs they count, on the local stack: after a load with worker crashes (before and
 * after the settlement), duplicate messages, failed runs and racing verifications, `GET /v1/usage` equals the sums
 * over the runs themselves, read whole-day from the counters and edge-hour from the runs; and the backfill counts
 * runs from before the counters exactly once, however often it runs.
 */
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, DynamoDBDocumentClient, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  call,
  fixture,
  keysCli,
  sendRunMessage,
  stack,
  upload,
  waitForFinal,
  waitForRunQueueDrained,
} from './client.js';

interface Run {
  jobId: string;
  status: string;
  estimatedCostUsd: number;
  chargedUsd?: number;
  refundedUsd?: number;
  confidence?: number;
  verification?: { accepted: boolean } | null;
}

const micros = (usd: number | undefined) => Math.round((usd ?? 0) * 1e6);

/** What the usage row of these runs must say, summed here from the runs as GET returns them. */
function expectedRow(workflow: string, runs: Run[]) {
  const done = runs.filter((r) => r.status !== 'queued');
  const verified = runs.filter((r) => r.verification);
  const confidences = runs.map((r) => r.confidence).filter((c): c is number => typeof c === 'number');
  const sum = (f: (r: Run) => number) => runs.reduce((acc, r) => acc + f(r), 0);
  return {
    workflow,
    runs: runs.length,
    completed: runs.filter((r) => r.status === 'completed').length,
    failed: runs.filter((r) => r.status === 'failed').length,
    queued: runs.length - done.length,
    estimatedUsd: sum((r) => micros(r.estimatedCostUsd)) / 1e6,
    chargedUsd: sum((r) => micros(r.chargedUsd)) / 1e6,
    refundedUsd: sum((r) => micros(r.refundedUsd)) / 1e6,
    verified: verified.length,
    accepted: verified.filter((r) => r.verification?.accepted).length,
    acceptanceRate:
      verified.length > 0 ? verified.filter((r) => r.verification?.accepted).length / verified.length : null,
    meanConfidence:
      confidences.length > 0
        ? Math.round(confidences.reduce((a, b) => a + Math.round(b * 1000), 0) / confidences.length) / 1000
        : null,
  };
}

async function runsOf(workflow: string): Promise<Run[]> {
  const reply = await call<{ items: Run[] }>('GET', `/v1/runs?workflow=${workflow}&limit=100`);
  expect(reply.status).toBe(200);
  return reply.body.items;
}

/** The workflow's usage row over [from, now + 1 h), or undefined when it has none. */
async function usageRow(workflow: string, from: string, interval?: 'hour' | 'day') {
  const to = new Date(Date.now() + 3600_000).toISOString();
  const query = `from=${from}&to=${to}&workflow=${workflow}${interval ? `&interval=${interval}` : ''}`;
  const reply = await call<{ workflows: { workflow: string }[] }>('GET', `/v1/usage?${query}`);
  expect(reply.status).toBe(200);
  return reply.body.workflows.find((w) => w.workflow === workflow);
}

async function create(workflow: string, file: string, localFault?: string): Promise<string> {
  const uploadId = await upload(file, await fixture(file));
  const reply = await call('POST', '/v1/runs', {
    body: {
      uploadId,
      prompt: 'Receipt',
      schemaId: 'receipt',
      workflow,
      ...(localFault ? { metadata: { localFault } } : {}),
    },
  });
  expect(reply.status).toBe(202);
  return String(reply.body.jobId);
}

const verify = (jobId: string, accepted: boolean) =>
  call('POST', `/v1/runs/${jobId}/verify`, { body: { accepted } }).then((r) => expect(r.status).toBe(200));

/** Both forms of the period: from a minute ago (runs read for the partial hours) and from the day's start (counters). */
async function expectUsageEqualsRuns(workflow: string, startedAt: number) {
  const runs = await runsOf(workflow);
  const expected = expectedRow(workflow, runs);
  const dayStart = new Date(Math.floor(startedAt / 86400_000) * 86400_000).toISOString();
  expect(await usageRow(workflow, new Date(startedAt - 60_000).toISOString())).toEqual(expected);
  expect(await usageRow(workflow, dayStart)).toEqual(expected);
  expect(await usageRow(workflow, dayStart, 'hour')).toEqual(expected);
}

test('after a load with crashes, duplicates, failures and racing verifications, usage equals the runs', async () => {
  const workflow = `usage-load-${randomUUID().slice(0, 8)}`;
  const startedAt = Date.now();
  const faults = [undefined, 'crash-before-settle', 'crash-after-settle', undefined];
  const completedIds = await Promise.all(
    Array.from({ length: 8 }, (_, i) => create(workflow, 'receipt.png', faults[i % faults.length])),
  );
  const failedIds = await Promise.all([create(workflow, 'damaged.png'), create(workflow, 'damaged.png')]);
  // Duplicate deliveries of the first runs' messages.
  for (const jobId of completedIds.slice(0, 3)) await sendRunMessage(jobId);
  const finals = await Promise.all(
    [...completedIds, ...failedIds].map((id) => waitForFinal(id, { timeoutMs: 120_000 })),
  );
  expect(finals.map((f) => f.body.status)).toEqual([...completedIds.map(() => 'completed'), 'failed', 'failed']);
  await waitForRunQueueDrained(120_000);

  // Verifications: first ones, a replaced answer, the same answer again, and two racing on one run.
  const [a, b, c, d] = completedIds as [string, string, string, string];
  await verify(a, true);
  await verify(b, false);
  await verify(c, false);
  await verify(c, true);
  await verify(a, true);
  await Promise.all([verify(d, true), verify(d, false), verify(d, true)]);

  await expectUsageEqualsRuns(workflow, startedAt);
  const row = (await usageRow(workflow, new Date(startedAt - 60_000).toISOString())) as Record<string, unknown>;
  expect(row).toMatchObject({ runs: 10, completed: 8, failed: 2, queued: 0, verified: 4 });
}, 300_000);

describe('the backfill of runs created before the counters', () => {
  const client = () => DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint: stack().endpoints.dynamodb }));
  const tableOf = (name: string) => stack().resources.tables[name] ?? '';

  /** Puts the workflow's runs back as an older version left them: uncounted, and no counter holds them. */
  async function forgetCounters(workflow: string, jobIds: string[]) {
    for (const jobId of jobIds) {
      await client().send(
        new UpdateCommand({ TableName: tableOf('runs'), Key: { jobId }, UpdateExpression: 'REMOVE usageCounted' }),
      );
    }
    const items = await client().send(
      new QueryCommand({
        TableName: tableOf('usage'),
        KeyConditionExpression: 'tenantId = :t',
        FilterExpression: 'workflow = :w',
        ExpressionAttributeValues: { ':t': 'tenant-a', ':w': workflow },
      }),
    );
    for (const item of items.Items ?? []) {
      await client().send(
        new DeleteCommand({ TableName: tableOf('usage'), Key: { tenantId: item.tenantId, slot: item.slot } }),
      );
    }
  }

  const backfill = () =>
    keysCli(['usage-backfill', '--json', '--tenants-table', tableOf('tenants'), '--keys-table', tableOf('apiKeys')], {
      AWS_ENDPOINT_URL_DYNAMODB: stack().endpoints.dynamodb,
      RUNS_TABLE: tableOf('runs'),
      USAGE_TABLE: tableOf('usage'),
    });

  test('counts each old run once with its whole state; a second run, and a verification meanwhile, count nothing twice', async () => {
    const workflow = `usage-old-${randomUUID().slice(0, 8)}`;
    const startedAt = Date.now();
    const ids = await Promise.all([
      create(workflow, 'receipt.png'),
      create(workflow, 'receipt.png'),
      create(workflow, 'damaged.png'),
    ]);
    await Promise.all(ids.map((id) => waitForFinal(id, { timeoutMs: 120_000 })));
    await verify(ids[0] as string, false);
    await forgetCounters(workflow, ids);
    // Read from the counters alone (whole hours: the period starts at the day's start and ends an hour from now).
    const dayStart = new Date(Math.floor(startedAt / 86400_000) * 86400_000).toISOString();
    expect(await usageRow(workflow, dayStart)).toBeUndefined();

    // A verification of an uncounted run racing the backfill: whichever commits first, the other reads again.
    const [first] = await Promise.all([backfill(), verify(ids[1] as string, true)]);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout).counted).toBeGreaterThanOrEqual(3);
    await expectUsageEqualsRuns(workflow, startedAt);

    const second = await backfill();
    expect(second.code).toBe(0);
    await expectUsageEqualsRuns(workflow, startedAt);
    // Counted runs then move the counters themselves.
    await verify(ids[0] as string, true);
    await expectUsageEqualsRuns(workflow, startedAt);
    expect(await usageRow(workflow, new Date(startedAt - 60_000).toISOString())).toMatchObject({
      runs: 3,
      completed: 2,
      failed: 1,
      verified: 2,
      accepted: 2,
    });
  }, 300_000);
});
