/**
 * The reconciler (shared/worker/reconcile.ts): no run waits forever with its hold. A run whose message never reached
 * a worker is sent again (a bounded number of times); a run whose message was dead-lettered or can no longer exist is
 * failed and refunded with the worker's own settlement, once, even when a worker settles it at the same moment.
 */
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { handler } from '../../functions/reconcile.js';
import { evaluationSettings, reconcileSettings, runQueue, webhookSettings } from '../../shared/infra/resources.js';
import { queuedShardOf, type RunRecord } from '../../shared/store/runs.js';
import { DEFAULT_RECONCILE_OPTIONS, decide, reconcileRuns } from '../../shared/worker/reconcile.js';
import { conditionalCheckFailed, mapsAsObjects, runItem, tableName, transactionCancelled } from '../support/aws.js';

const ddb = mockClient(DynamoDBDocumentClient);
const sqs = mockClient(SQSClient);

const NOW = new Date('2026-11-25T12:00:00.000Z');
const ago = (seconds: number) => new Date(NOW.getTime() - seconds * 1000).toISOString();
const options = DEFAULT_RECONCILE_OPTIONS;
/** Longer ago than any of the reconciler's waits (the longest: a silent run's, every retry's visibility timeout). */
const LONG_AGO = options.silentAfterSeconds + 3600;

beforeEach(() => {
  ddb.reset();
  sqs.reset();
});

/** What the keys-only `queued` index holds of a run. */
const keysOnly = (run: RunRecord) => ({ jobId: run.jobId, queuedShard: 'q0', createdAt: run.createdAt });

/** The queued index lists `runs` (in shard q0), and each reads back as stored. */
function arrange(...runs: RunRecord[]): void {
  ddb.on(QueryCommand).callsFake((input: { ExpressionAttributeValues?: Record<string, unknown> }) => ({
    Items: input.ExpressionAttributeValues?.[':shard'] === 'q0' ? runs.map(keysOnly) : [],
  }));
  for (const run of runs) {
    ddb.on(GetCommand, { TableName: tableName('runs'), Key: { jobId: run.jobId } }).resolves({ Item: run });
  }
  ddb.on(UpdateCommand).resolves({});
  ddb.on(TransactWriteCommand).resolves({});
  sqs.on(SendMessageCommand).resolves({ MessageId: 'm-1' });
}

describe('decide', () => {
  test('a fresh run, or one a worker is on, waits', () => {
    expect(decide(runItem({ createdAt: ago(60) }), NOW.getTime(), options)).toBe('wait');
    const working = runItem({ createdAt: ago(3600), deliveries: 1, deliveredAt: ago(60) });
    expect(decide(working, NOW.getTime(), options)).toBe('wait');
  });

  test('a run never delivered is resent after resendAfterSeconds since its last message, at most maxResends times', () => {
    expect(decide(runItem({ createdAt: ago(options.resendAfterSeconds) }), NOW.getTime(), options)).toBe('resend');
    const resentRecently = runItem({ createdAt: ago(LONG_AGO), resends: 1, resentAt: ago(10) });
    expect(decide(resentRecently, NOW.getTime(), options)).toBe('wait');
    const exhausted = runItem({ createdAt: ago(LONG_AGO), resends: options.maxResends, resentAt: ago(LONG_AGO) });
    expect(decide(exhausted, NOW.getTime(), options)).toBe('wait');
  });

  test('a run delivered maxReceiveCount times is dead once its last delivery is deadAfterSeconds old', () => {
    const dying = { createdAt: ago(LONG_AGO), deliveries: runQueue.maxReceiveCount };
    expect(decide(runItem({ ...dying, deliveredAt: ago(options.deadAfterSeconds - 1) }), NOW.getTime(), options)).toBe(
      'wait',
    );
    expect(decide(runItem({ ...dying, deliveredAt: ago(options.deadAfterSeconds) }), NOW.getTime(), options)).toBe(
      'fail-dead-lettered',
    );
    // The dead-letter wait outlasts the visibility timeout: SQS has moved the message by then.
    expect(options.deadAfterSeconds).toBeGreaterThan(runQueue.visibilityTimeoutSeconds);
  });

  test("deliveries of several messages (resends, duplicates) are not one message's last delivery", () => {
    const old = { createdAt: ago(LONG_AGO), deliveredAt: ago(options.deadAfterSeconds) };
    // Three deliveries in all, but the latest was its message's first receive: that message comes back; wait.
    const alive = runItem({ ...old, deliveries: runQueue.maxReceiveCount, lastReceiveCount: 1 });
    expect(decide(alive, NOW.getTime(), options)).toBe('wait');
    const dead = runItem({ ...old, deliveries: 5, lastReceiveCount: runQueue.maxReceiveCount });
    expect(decide(dead, NOW.getTime(), options)).toBe('fail-dead-lettered');
  });

  test('a delivered run whose message went silent (later receives never reached it) is resent once every retry is surely over', () => {
    // Receive 1 reached the run and failed; receives 2 and 3 died before reading it (a throttled read, a crashed
    // init), so the message was dead-lettered with lastReceiveCount still 1: without this, the hold waits for the
    // queue retention (4 days).
    const silent = { createdAt: ago(LONG_AGO), deliveries: 1, lastReceiveCount: 1 };
    expect(
      decide(runItem({ ...silent, deliveredAt: ago(options.silentAfterSeconds - 1) }), NOW.getTime(), options),
    ).toBe('wait');
    expect(decide(runItem({ ...silent, deliveredAt: ago(options.silentAfterSeconds) }), NOW.getTime(), options)).toBe(
      'resend',
    );
    // Silent counts from the latest of the delivery and a resend; resends stay bounded.
    const resent = { ...silent, deliveredAt: ago(LONG_AGO), resends: 1, resentAt: ago(60) };
    expect(decide(runItem(resent), NOW.getTime(), options)).toBe('wait');
    const exhausted = { ...silent, deliveredAt: ago(LONG_AGO), resends: options.maxResends };
    expect(decide(runItem(exhausted), NOW.getTime(), options)).toBe('wait');
  });

  test("a run whose lease (its own or a group's) a heartbeat still renews is alive, whatever its receives say", () => {
    const dead = { createdAt: ago(LONG_AGO), deliveries: 5, lastReceiveCount: 5, deliveredAt: ago(LONG_AGO) };
    expect(decide(runItem(dead), NOW.getTime(), options)).toBe('fail-dead-lettered');
    const renewed = NOW.getTime() + 30_000;
    expect(decide(runItem({ ...dead, leaseUntil: renewed }), NOW.getTime(), options)).toBe('wait');
    const group = { fanout: { groups: 2, groupPages: 6 }, groups: { '0': {}, '1': { leaseUntil: renewed } } };
    expect(decide(runItem({ ...dead, ...group }), NOW.getTime(), options)).toBe('wait');
    // A silent run too: a long run on its first receive is not resent while its lease is renewed.
    const working = { createdAt: ago(LONG_AGO), deliveries: 1, lastReceiveCount: 1, deliveredAt: ago(LONG_AGO) };
    expect(decide(runItem(working), NOW.getTime(), options)).toBe('resend');
    expect(decide(runItem({ ...working, leaseUntil: renewed }), NOW.getTime(), options)).toBe('wait');
  });

  test("a dead run's wait counts from the end of its last lease, the last time it was seen alive", () => {
    const dying = { createdAt: ago(LONG_AGO), deliveries: 5, lastReceiveCount: 5, deliveredAt: ago(LONG_AGO) };
    const endedAt = (seconds: number) => NOW.getTime() - seconds * 1000;
    const recently = runItem({ ...dying, leaseUntil: endedAt(options.deadAfterSeconds - 1) });
    expect(decide(recently, NOW.getTime(), options)).toBe('wait');
    const long = runItem({ ...dying, leaseUntil: endedAt(options.deadAfterSeconds) });
    expect(decide(long, NOW.getTime(), options)).toBe('fail-dead-lettered');
  });

  test('a run whose last message is older than the queue retention is failed: no message can exist', () => {
    const run = runItem({ createdAt: ago(runQueue.retentionSeconds), resends: options.maxResends });
    expect(decide(run, NOW.getTime(), options)).toBe('fail-expired');
  });
});

describe('reconcileRuns', () => {
  test('resends a lost message once: counted on the run (conditionally), then sent naming the jobId', async () => {
    const lost = runItem({ jobId: 'run_lost', createdAt: ago(900) });
    arrange(lost);
    const report = await reconcileRuns(options, NOW);
    expect(report).toEqual({ resent: ['run_lost'], failed: [] });
    const update = ddb.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(update?.Key).toEqual({ jobId: 'run_lost' });
    expect(update?.ConditionExpression).toContain('attribute_not_exists(deliveredAt)');
    expect(update?.ExpressionAttributeValues?.[':max']).toBe(options.maxResends);
    expect(sqs).toHaveReceivedCommandTimes(SendMessageCommand, 1);
    expect(JSON.parse(String(sqs.commandCalls(SendMessageCommand)[0]?.args[0].input.MessageBody))).toEqual({
      jobId: 'run_lost',
    });
    expect(ddb).not.toHaveReceivedCommand(TransactWriteCommand);
  });

  test('a silent delivered run is resent on condition that no delivery happened since it was read', async () => {
    const deliveredAt = ago(options.silentAfterSeconds + 1);
    arrange(
      runItem({ jobId: 'run_silent', createdAt: ago(LONG_AGO), deliveries: 1, lastReceiveCount: 1, deliveredAt }),
    );
    expect(await reconcileRuns(options, NOW)).toEqual({ resent: ['run_silent'], failed: [] });
    const update = ddb.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(update?.ConditionExpression).toContain('deliveredAt = :delivered');
    expect(update?.ExpressionAttributeValues?.[':delivered']).toBe(deliveredAt);
    expect(sqs).toHaveReceivedCommandTimes(SendMessageCommand, 1);
    expect(ddb).not.toHaveReceivedCommand(TransactWriteCommand);
  });

  test("holders gone (the local stack at start): the previous process's leases are released, then the runs are sent at once", async () => {
    const lease = NOW.getTime() + 50_000;
    const held = runItem({
      jobId: 'run_held',
      createdAt: ago(30),
      deliveries: 1,
      lastReceiveCount: 1,
      deliveredAt: ago(10),
      leaseUntil: lease,
      leaseHolder: 'pid 41 on here #a',
      resends: options.maxResends,
    });
    const fanned = runItem({
      jobId: 'run_groups',
      createdAt: ago(30),
      deliveries: 3,
      lastReceiveCount: 1,
      deliveredAt: ago(5),
      fanout: { groups: 2, groupPages: 6 },
      groups: { '0': { doneAt: ago(20) }, '1': { leaseUntil: lease, leaseHolder: 'pid 41 on here #b' } },
    });
    arrange(held, fanned);
    // As DynamoDB then holds them: without their leases.
    const released = new Map<string, RunRecord>();
    ddb.on(UpdateCommand).callsFake((input: { Key: { jobId: string }; UpdateExpression: string }) => {
      if (input.UpdateExpression.startsWith('REMOVE')) {
        const run = input.Key.jobId === 'run_held' ? held : fanned;
        const { leaseUntil: _, leaseHolder: __, ...rest } = run;
        released.set(run.jobId, { ...rest, groups: { '0': { doneAt: ago(20) }, '1': {} } } as RunRecord);
      }
      return {};
    });
    ddb.on(GetCommand).callsFake((input: { Key: { jobId: string } }) => ({
      Item: released.get(input.Key.jobId) ?? (input.Key.jobId === 'run_held' ? held : fanned),
    }));
    const atStart = { ...options, resendAfterSeconds: 0, silentAfterSeconds: 0, maxResends: Number.MAX_SAFE_INTEGER };
    // Without it, both wait for their leases (50 s more), as a deployed sweep must.
    expect(await reconcileRuns(atStart, NOW)).toEqual({ resent: [], failed: [] });

    const report = await reconcileRuns({ ...atStart, holdersGone: true }, NOW);
    expect(report).toEqual({ resent: ['run_held', 'run_groups'], failed: [], released: ['run_held', 'run_groups'] });
    const removals = ddb
      .commandCalls(UpdateCommand)
      .map((c) => c.args[0].input)
      .filter((input) => input.UpdateExpression?.startsWith('REMOVE'));
    expect(removals.map((r) => [r.Key?.jobId, r.UpdateExpression, r.ConditionExpression])).toEqual([
      ['run_held', 'REMOVE leaseUntil, leaseHolder', '#status = :queued AND leaseHolder = :holder'],
      [
        'run_groups',
        'REMOVE #groups.#g0.leaseUntil, #groups.#g0.leaseHolder',
        '#status = :queued AND #groups.#g0.leaseHolder = :holder0',
      ],
    ]);
    // Each lease is removed only while it is still the gone holder's.
    expect(removals[0]?.ExpressionAttributeValues?.[':holder']).toBe('pid 41 on here #a');
    expect(removals[1]?.ExpressionAttributeNames?.['#g0']).toBe('1');
    expect(removals[1]?.ExpressionAttributeValues?.[':holder0']).toBe('pid 41 on here #b');
    expect(sqs).toHaveReceivedCommandTimes(SendMessageCommand, 2);
  });

  test("one run's error does not stop the sweep: the others are handled, then the invocation fails", async () => {
    const first = runItem({ jobId: 'run_a', createdAt: ago(900) });
    const second = runItem({ jobId: 'run_b', createdAt: ago(900) });
    arrange(first, second);
    sqs.on(SendMessageCommand).rejectsOnce(new Error('SQS unavailable')).resolves({ MessageId: 'm-2' });
    await expect(reconcileRuns(options, NOW)).rejects.toThrow(/1 run\(s\) could not be reconciled \(first: run_a\)/);
    expect(sqs).toHaveReceivedCommandTimes(SendMessageCommand, 2);
    expect(JSON.parse(String(sqs.commandCalls(SendMessageCommand)[1]?.args[0].input.MessageBody))).toEqual({
      jobId: 'run_b',
    });
  });

  test('a run a worker picked up between the listing and the resend is not sent again', async () => {
    arrange(runItem({ jobId: 'run_lost', createdAt: ago(900) }));
    ddb.on(UpdateCommand).rejects(conditionalCheckFailed());
    expect(await reconcileRuns(options, NOW)).toEqual({ resent: [], failed: [] });
    expect(sqs).not.toHaveReceivedCommand(SendMessageCommand);
  });

  test('fails a dead-lettered run with the whole hold refunded, and takes it out of the queued index', async () => {
    const dead = runItem({
      jobId: 'run_dead',
      createdAt: ago(LONG_AGO),
      deliveries: runQueue.maxReceiveCount,
      deliveredAt: ago(options.deadAfterSeconds + 1),
    });
    arrange(dead);
    expect(await reconcileRuns(options, NOW)).toEqual({ resent: [], failed: ['run_dead'] });
    const [settlement] = ddb.commandCalls(TransactWriteCommand).map((c) => mapsAsObjects(c.args[0].input));
    const run = settlement?.TransactItems?.[0]?.Update;
    expect(run?.ConditionExpression).toBe('#status = :queued AND usageCounted = :counted');
    expect(run?.UpdateExpression).toContain('REMOVE queuedShard');
    expect(run?.ExpressionAttributeValues).toMatchObject({
      ':status': 'failed',
      ':charged': 0,
      ':refunded': dead.estimateMicros,
      ':error': { code: 'INTERNAL_ERROR', status: 500, retryable: true },
    });
    expect(sqs).not.toHaveReceivedCommand(SendMessageCommand);
  });

  test('a run a worker settles at the same moment is left to it: the money moves once', async () => {
    arrange(
      runItem({
        jobId: 'run_dead',
        createdAt: ago(LONG_AGO),
        deliveries: runQueue.maxReceiveCount,
        deliveredAt: ago(7000),
      }),
    );
    ddb.on(TransactWriteCommand).rejects(transactionCancelled(['ConditionalCheckFailed', 'None', 'None']));
    expect(await reconcileRuns(options, NOW)).toEqual({ resent: [], failed: [] });
  });

  test('a run the index still lists but the table has settled is left alone', async () => {
    const listed = runItem({
      jobId: 'run_done',
      createdAt: ago(LONG_AGO),
      deliveries: runQueue.maxReceiveCount,
      deliveredAt: ago(7000),
    });
    arrange(listed);
    ddb
      .on(GetCommand, { TableName: tableName('runs'), Key: { jobId: 'run_done' } })
      .resolves({ Item: { ...listed, status: 'completed' } });
    expect(await reconcileRuns(options, NOW)).toEqual({ resent: [], failed: [] });
    expect(ddb).not.toHaveReceivedCommand(TransactWriteCommand);
  });

  test('reads a shard page by page: runs that only wait do not hide a lost one behind them', async () => {
    const waiting = runItem({ jobId: 'run_waiting', createdAt: ago(LONG_AGO), resends: 3, resentAt: ago(LONG_AGO) });
    const lost = runItem({ jobId: 'run_lost', createdAt: ago(900) });
    arrange(waiting, lost);
    ddb
      .on(QueryCommand)
      .callsFake((input: { ExpressionAttributeValues?: Record<string, unknown>; ExclusiveStartKey?: unknown }) => {
        if (input.ExpressionAttributeValues?.[':shard'] !== 'q0') return { Items: [] };
        return input.ExclusiveStartKey === undefined
          ? { Items: [keysOnly(waiting)], LastEvaluatedKey: { jobId: 'run_waiting' } }
          : { Items: [keysOnly(lost)] };
      });
    expect(await reconcileRuns(options, NOW)).toEqual({ resent: ['run_lost'], failed: [] });
    const q0 = ddb
      .commandCalls(QueryCommand)
      .filter((c) => c.args[0].input.ExpressionAttributeValues?.[':shard'] === 'q0');
    expect(q0.map((c) => c.args[0].input.ExclusiveStartKey)).toEqual([undefined, { jobId: 'run_waiting' }]);
  });

  test('queries every shard for runs older than the shortest wait, a page at a time', async () => {
    arrange();
    await reconcileRuns(options, NOW);
    const queries = ddb.commandCalls(QueryCommand).map((c) => c.args[0].input);
    expect(queries.map((q) => q.ExpressionAttributeValues?.[':shard'])).toEqual(['q0', 'q1', 'q2', 'q3']);
    for (const query of queries) {
      expect(query).toMatchObject({ IndexName: 'queued', Limit: reconcileSettings.pageSize });
      expect(query.ExpressionAttributeValues?.[':before']).toBe(ago(options.resendAfterSeconds));
    }
  });

  test('the scheduled handler runs a sweep with the deployed settings', async () => {
    arrange();
    await expect(handler()).resolves.toEqual({
      resent: [],
      failed: [],
      eventsDispatched: [],
      evaluations: { materialized: [], finished: [] },
    });
    // The queued runs' index, the pending events' index and the open evaluations' index, shard by shard.
    expect(ddb).toHaveReceivedCommandTimes(
      QueryCommand,
      reconcileSettings.shards + webhookSettings.shards + evaluationSettings.shards,
    );
  });
});

test('runs spread over the shards of the queued index', () => {
  const shards = new Set(
    Array.from({ length: 64 }, (_, i) => queuedShardOf(`run_${i.toString(16).padStart(32, '0')}`)),
  );
  expect(shards).toEqual(new Set(['q0', 'q1', 'q2', 'q3']));
});
