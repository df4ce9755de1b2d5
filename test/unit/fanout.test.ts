/**
 * Fan-out of a long document (shared/worker/fanout.ts): how a run is split into groups (pure), and the worker's
 * deliveries of a run's message and of its groups' messages against a small in-memory stand-in for the run item,
 * the checkpoints table and the run queue (DynamoDB, S3 and SQS mocked at the client): the run's message sends its
 * groups and asks nothing; a group asks only its own pages; only the delivery that counts the last group merges and
 * settles; a duplicate or redelivered group asks nothing again.
 * Over 400 lines: every case drives the same in-memory stand-in (`world`); split, each file would repeat it.
 */
import { S3Client } from '@aws-sdk/client-s3';
import { ChangeMessageVisibilityCommand, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { jest } from '@jest/globals';
import { mockClient } from 'aws-sdk-client-mock';
import { createWorkerHandler } from '../../functions/worker.js';
import { groupRange, planFanout } from '../../shared/planning/chunks.js';
import { planRun } from '../../shared/planning/plan.js';
import { groupCapMicros } from '../../shared/planning/reservations.js';
import type { ProviderAdapter, ProviderInput } from '../../shared/providers/types.js';
import { groupsToSend } from '../../shared/store/groups.js';
import type { RunRecord } from '../../shared/store/runs.js';
import { ProviderFailure, type TaskSpec } from '../../shared/task.js';
import { DEFAULT_RECONCILE_OPTIONS, decide } from '../../shared/worker/reconcile.js';
import {
  conditionalCheckFailed,
  fixture,
  mapsAsObjects,
  runItem,
  serveObject,
  tableName,
  transactionCancelled,
} from '../support/aws.js';
import { lambdaContext, sqsEvent } from '../support/events.js';

// Read at first use (shared/config.ts): the 20-page fixture fans out in four groups of 6, 6, 6 and 2 pages.
process.env.SERVICE_FANOUT_PAGES = '6';
process.env.SERVICE_RUN_CONCURRENCY = '3';

const ddb = mockClient(DynamoDBDocumentClient);
const s3 = mockClient(S3Client);
const sqs = mockClient(SQSClient);
const PDF = fixture('twenty-pages.pdf');
const TEXT_TASK: TaskSpec = {
  prompt: 'Transcribe',
  outputFormat: 'text',
  fields: null,
  schemaId: null,
  schemaLabel: null,
  promptScaffold: null,
};
const FACTS = { mime: 'application/pdf' as const, kind: 'pdf' as const, sizeBytes: PDF.byteLength, pages: 20 };

describe('planFanout and groupRange', () => {
  test('a run within the threshold is one invocation; beyond it, groups of whole chunks', () => {
    expect(planFanout(100, 1, 100)).toBeUndefined();
    expect(planFanout(101, 1, 100)).toEqual({ groups: 2, groupPages: 100 });
    expect(planFanout(1000, 1, 100)).toEqual({ groups: 10, groupPages: 100 });
    // JSON chunks of 30 pages: groups of the most whole chunks within 100 pages.
    expect(planFanout(300, 30, 100)).toEqual({ groups: 4, groupPages: 90 });
    // A chunk larger than the threshold is a group of its own; a split into one group is none.
    expect(planFanout(120, 50, 20)).toEqual({ groups: 3, groupPages: 50 });
    expect(planFanout(40, 50, 20)).toBeUndefined();
  });

  test('the groups cover every page once, in order, the last one shorter', () => {
    const plan = { groups: 4, groupPages: 6 };
    const ranges = [0, 1, 2, 3].map((g) => groupRange(20, plan, g));
    expect(ranges).toEqual([
      { first: 1, last: 6 },
      { first: 7, last: 12 },
      { first: 13, last: 18 },
      { first: 19, last: 20 },
    ]);
  });
});

describe('groupsToSend and groupCapMicros', () => {
  test('a redelivered run message sends again only the groups neither counted nor held by a live claim', () => {
    const now = 1_000_000;
    const run = {
      fanout: { groups: 4, groupPages: 6 },
      groups: {
        '0': { doneAt: '2026-11-01T10:00:00.000Z' },
        '1': { leaseUntil: now + 1 },
        '2': { leaseUntil: now },
        '3': {},
      },
    };
    expect(groupsToSend(run, now)).toEqual([2, 3]);
    expect(groupsToSend({ fanout: { groups: 2, groupPages: 6 } }, now)).toEqual([0, 1]);
  });

  test("the groups' shares of the spend limit add up to at most the limit, each in proportion to its pages' cost", () => {
    const plan = planRun(FACTS, TEXT_TASK, ['openai'], { explicitOrder: true });
    const run = fannedRun({ candidates: plan.candidates, estimateMicros: plan.estimateMicros });
    const cap = 2 * plan.estimateMicros;
    const shares = [0, 1, 2, 3].map((g) => groupCapMicros(run, groupRange(20, { groups: 4, groupPages: 6 }, g), cap));
    expect(shares.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(cap);
    expect(shares[0]).toBeGreaterThan(0);
    // One page a chunk, every page alike: a 6-page group gets three times a 2-page group's share.
    expect(Math.abs((shares[0] ?? 0) - 3 * (shares[3] ?? 0))).toBeLessThanOrEqual(3);
  });
});

/** A queued 20-page text run, planned (and held) as creation plans it. */
function fannedRun(overrides: Partial<RunRecord> = {}): RunRecord {
  const plan = planRun(FACTS, TEXT_TASK, ['local'], { explicitOrder: true });
  return runItem({
    outputFormat: 'text',
    task: TEXT_TASK,
    file: FACTS,
    candidates: plan.candidates,
    estimateMicros: plan.estimateMicros,
    chunkPages: 1,
    progress: { pagesTotal: 20, pagesDone: 0 },
    ...overrides,
  });
}

interface Stored {
  jobId: string;
  first: number;
  last: number;
  answer: string;
  [key: string]: unknown;
}

/**
 * The run item, the checkpoints and the run queue as DynamoDB and SQS would keep them, for the writes the worker
 * makes: the fan-out's record, a group's claim, release and count, checkpoints, and the settlement.
 */
function world(initial: RunRecord, checkpoints: Stored[] = []) {
  const state = {
    run: structuredClone(initial) as RunRecord,
    checkpoints: [...checkpoints],
    sent: [] as string[],
    /** The groups' heartbeat renewals, in order. */
    renewals: [] as Array<{ group: number; until: number }>,
    /** What the run queue was told of received messages (ChangeMessageVisibility): seconds hidden from then. */
    hidden: [] as number[],
  };
  const settlements: TransactWriteCommandInput[] = [];
  ddb.reset();
  s3.reset();
  sqs.reset();
  serveObject(s3, PDF, initial.objectKey);
  ddb.on(GetCommand, { TableName: tableName('runs') }).callsFake(() => ({ Item: structuredClone(state.run) }));
  ddb.on(QueryCommand, { TableName: tableName('runChunks') }).callsFake((input: QueryCommandInput) => {
    const values = input.ExpressionAttributeValues ?? {};
    const inside = (c: Stored) =>
      values[':first'] === undefined || (c.first >= Number(values[':first']) && c.first <= Number(values[':last']));
    return { Items: state.checkpoints.filter(inside).sort((a, b) => a.first - b.first) };
  });
  ddb.on(TransactWriteCommand).callsFake((input: TransactWriteCommandInput) => {
    const plain = mapsAsObjects(input);
    const items = plain.TransactItems ?? [];
    // The first item is the one conditional on the run being queued (a checkpoint's chunk, a settlement's run).
    if (state.run.status !== 'queued') throw transactionCancelled(['ConditionalCheckFailed']);
    for (const item of items) {
      if (item.Put?.TableName === tableName('runChunks')) state.checkpoints.push(item.Put.Item as Stored);
      if ((item.Put?.Item as { kind?: string } | undefined)?.kind === 'settle') {
        settlements.push(plain);
        const values = items[0]?.Update?.ExpressionAttributeValues ?? {};
        state.run.status = values[':status'] as RunRecord['status'];
      }
    }
    return {};
  });
  ddb.on(UpdateCommand).callsFake((input: UpdateCommandInput) => {
    const run = state.run;
    const expression = input.UpdateExpression ?? '';
    const group = input.ExpressionAttributeNames?.['#g'];
    const values = input.ExpressionAttributeValues ?? {};
    const entry = group === undefined ? undefined : run.groups?.[group];
    const countDelivery = () => {
      run.deliveredAt = String(values[':now']);
      run.lastReceiveCount = Number(values[':receive']);
      run.deliveries = (run.deliveries ?? 0) + 1;
    };
    const mine = entry?.leaseHolder !== undefined && entry.leaseHolder === values[':holder'];
    if (expression === 'SET #groups.#g.leaseUntil = :lease') {
      // A heartbeat's renewal: only the holder's, while the group is not counted and the run queued.
      if (run.status !== 'queued' || !entry || entry.doneAt !== undefined || !mine) throw conditionalCheckFailed();
      entry.leaseUntil = Number(values[':lease']);
      state.renewals.push({ group: Number(group), until: entry.leaseUntil });
      return {};
    }
    if (expression.includes('#groups.#g.leaseUntil = :lease')) {
      const held = entry?.leaseUntil !== undefined && entry.leaseUntil > Number(values[':nowMs']);
      if (run.status !== 'queued' || !entry || entry.doneAt !== undefined || held) throw conditionalCheckFailed();
      entry.leaseUntil = Number(values[':lease']);
      entry.leaseHolder = String(values[':holder']);
      countDelivery();
      return {};
    }
    if (expression.includes('ADD groupsDone')) {
      if (run.status !== 'queued' || !entry || entry.doneAt !== undefined) throw conditionalCheckFailed();
      entry.doneAt = String(values[':now']);
      delete entry.leaseUntil;
      delete entry.leaseHolder;
      run.groupsDone = (run.groupsDone ?? 0) + 1;
      return { Attributes: structuredClone(run) };
    }
    if (expression.startsWith('REMOVE #groups.#g.leaseUntil')) {
      if (!mine) throw conditionalCheckFailed();
      if (entry) {
        delete entry.leaseUntil;
        delete entry.leaseHolder;
      }
      return {};
    }
    if (run.status !== 'queued') throw conditionalCheckFailed();
    if (expression.includes('ADD deliveries')) countDelivery();
    // The run's own message records its split unless it is recorded (if_not_exists).
    if (expression.includes('fanout = if_not_exists') && !run.fanout) {
      Object.assign(run, { fanout: values[':plan'], groups: structuredClone(values[':groups']), groupsDone: 0 });
    }
    return input.ReturnValues === 'ALL_NEW' ? { Attributes: structuredClone(run) } : {};
  });
  sqs.on(ChangeMessageVisibilityCommand).callsFake((input: { VisibilityTimeout?: number }) => {
    state.hidden.push(Number(input.VisibilityTimeout));
    return {};
  });
  sqs.on(SendMessageBatchCommand).callsFake((input: { Entries?: Array<{ MessageBody?: string }> }) => {
    state.sent.push(...(input.Entries ?? []).map((e) => e.MessageBody ?? ''));
    return { Successful: [], Failed: [] };
  });
  return { state, settlements };
}

/** A checkpoint item of one page, as store/chunks.ts writes it. */
function checkpointOf(jobId: string, page: number): Stored {
  return {
    jobId,
    first: page,
    last: page,
    provider: 'local',
    answer: JSON.stringify({ result: { text: `page ${page}` }, billableUnits: 1 }),
    attempts: [{ provider: 'local', step: 'vision', outcome: 'succeeded', latencyMs: 3 }],
    requests: 1,
    costMicros: 10,
    expiresAtEpoch: 1,
  };
}

/** A `local` adapter answering each page with its number, recording what it was asked. */
function pagesAdapter(fail?: (page: number) => ProviderFailure | undefined, delayMs = 0) {
  const asked: number[] = [];
  const adapter: ProviderAdapter = {
    id: 'local',
    async invoke(input: ProviderInput) {
      const page = input.pages?.first ?? 0;
      asked.push(page);
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      const failure = fail?.(page);
      if (failure) throw failure;
      return { result: { text: `page ${page}` }, usage: { billableUnits: 1, costMicros: 10 } };
    },
  };
  return { adapter, asked };
}

async function deliver(adapter: ProviderAdapter, body: Record<string, unknown>, receiveCount = 1) {
  const handler = createWorkerHandler({ adapters: { local: adapter } });
  const event = sqsEvent([{ body: JSON.stringify(body) }]);
  for (const record of event.Records) record.attributes.ApproximateReceiveCount = String(receiveCount);
  return handler(event, lambdaContext(120_000));
}

const FANOUT = { groups: 4, groupPages: 6 };
const counted = (n: number) =>
  Object.fromEntries(
    [0, 1, 2, 3].map((g) => [String(g), g < n ? { doneAt: '2026-11-01T10:00:00.000Z' } : {}]),
  ) as RunRecord['groups'];

describe('the worker fans a long document out', () => {
  test("the run's message records the split and sends one message per group; no provider is asked", async () => {
    const { state, settlements } = world(fannedRun());
    const fake = pagesAdapter();
    const response = await deliver(fake.adapter, { jobId: 'run_1' });
    expect(response.batchItemFailures).toEqual([]);
    expect(fake.asked).toEqual([]);
    expect(state.run.fanout).toEqual(FANOUT);
    expect(state.sent.map((b) => JSON.parse(b))).toEqual([0, 1, 2, 3].map((group) => ({ jobId: 'run_1', group })));
    // The delivery is counted on the run (the reconciler reads it), without a claim on the run.
    const updates = ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input.UpdateExpression ?? '');
    expect(updates.some((u) => u.includes('ADD deliveries'))).toBe(true);
    expect(updates.some((u) => u.includes('leaseUntil'))).toBe(false);
    expect(settlements).toEqual([]);
  });

  test("a run's message that cannot send its groups is redelivered, and on its last delivery fails the run", async () => {
    const { settlements } = world(fannedRun());
    sqs.reset();
    sqs.on(SendMessageBatchCommand).rejects(new Error('queue unreachable'));
    const fake = pagesAdapter();
    const early = await deliver(fake.adapter, { jobId: 'run_1' }, 1);
    expect(early.batchItemFailures).toEqual([{ itemIdentifier: 'msg-0' }]);
    expect(settlements).toEqual([]);
    await deliver(fake.adapter, { jobId: 'run_1' }, 5);
    expect(settlements).toHaveLength(1);
    const values = settlements[0]?.TransactItems?.[0]?.Update?.ExpressionAttributeValues ?? {};
    expect(values[':status']).toBe('failed');
    expect(values[':error']).toMatchObject({ code: 'INTERNAL_ERROR' });
    expect(values[':charged']).toBe(0);
    expect(fake.asked).toEqual([]);
  });

  test("while a delivery holds the whole run, the run's message sends no group: it comes back later", async () => {
    const { state } = world(fannedRun({ leaseUntil: Date.now() + 60_000 }));
    const fake = pagesAdapter();
    const response = await deliver(fake.adapter, { jobId: 'run_1' });
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'msg-0' }]);
    expect(state.sent).toEqual([]);
    expect(fake.asked).toEqual([]);
  });

  test('a group asks only for its own pages, checkpoints them and is counted; not the last, it settles nothing', async () => {
    const { state, settlements } = world(fannedRun({ fanout: FANOUT, groups: counted(0), groupsDone: 0 }));
    const fake = pagesAdapter();
    const response = await deliver(fake.adapter, { jobId: 'run_1', group: 1 });
    expect(response.batchItemFailures).toEqual([]);
    expect(fake.asked.sort((a, b) => a - b)).toEqual([7, 8, 9, 10, 11, 12]);
    expect(state.checkpoints.map((c) => c.first).sort((a, b) => a - b)).toEqual([7, 8, 9, 10, 11, 12]);
    expect(state.run.groupsDone).toBe(1);
    expect(state.run.groups?.['1']?.doneAt).toBeDefined();
    expect(settlements).toEqual([]);
    expect(state.run.status).toBe('queued');
  });

  test("a group's delivery keeps the run alive for the reconciler, whatever its own message's deliveries were", async () => {
    // The run's own message was delivered five times, the last long ago: alone, the reconciler takes it for dead.
    const ago = (seconds: number) => new Date(Date.now() - seconds * 1000).toISOString();
    const long = ago(DEFAULT_RECONCILE_OPTIONS.deadAfterSeconds + 60);
    const createdAt = ago(DEFAULT_RECONCILE_OPTIONS.deadAfterSeconds + 120);
    const { state } = world(
      fannedRun({
        fanout: FANOUT,
        groups: counted(0),
        groupsDone: 0,
        deliveries: 5,
        lastReceiveCount: 5,
        deliveredAt: long,
        createdAt,
      }),
    );
    expect(decide(state.run, Date.now(), DEFAULT_RECONCILE_OPTIONS)).toBe('fail-dead-lettered');
    await deliver(pagesAdapter().adapter, { jobId: 'run_1', group: 0 });
    expect(state.run.lastReceiveCount).toBe(1);
    expect(decide(state.run, Date.now(), DEFAULT_RECONCILE_OPTIONS)).toBe('wait');
  });

  test('the group whose count is the last merges every page from the checkpoints and settles once', async () => {
    const done = Array.from({ length: 18 }, (_, i) => checkpointOf('run_1', i + 1));
    const { state, settlements } = world(fannedRun({ fanout: FANOUT, groups: counted(3), groupsDone: 3 }), done);
    const fake = pagesAdapter();
    const response = await deliver(fake.adapter, { jobId: 'run_1', group: 3 });
    expect(response.batchItemFailures).toEqual([]);
    expect(fake.asked.sort((a, b) => a - b)).toEqual([19, 20]);
    expect(settlements).toHaveLength(1);
    const values = settlements[0]?.TransactItems?.[0]?.Update?.ExpressionAttributeValues ?? {};
    expect(values[':status']).toBe('completed');
    expect((values[':result'] as { pages: Array<{ page: number }> }).pages.map((p) => p.page)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    // Every page paid once: the checkpoints' 18 requests and this group's 2.
    expect(values[':usage']).toMatchObject({ requests: 20, costMicros: 200 });
    expect(state.run.status).toBe('completed');
  });

  test('a duplicate of a group message while its twin holds the group asks nothing and comes back later', async () => {
    const groups = counted(0);
    if (groups?.['2']) groups['2'].leaseUntil = Date.now() + 60_000;
    const { settlements, state } = world(fannedRun({ fanout: FANOUT, groups, groupsDone: 0 }));
    const fake = pagesAdapter();
    const response = await deliver(fake.adapter, { jobId: 'run_1', group: 2 });
    expect(fake.asked).toEqual([]);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'msg-0' }]);
    expect(state.run.groupsDone).toBe(0);
    expect(settlements).toEqual([]);
  });

  test('a group redelivered after a crash past the last count asks nothing and settles the run once', async () => {
    const done = Array.from({ length: 20 }, (_, i) => checkpointOf('run_1', i + 1));
    const { settlements } = world(fannedRun({ fanout: FANOUT, groups: counted(4), groupsDone: 4 }), done);
    const fake = pagesAdapter();
    await deliver(fake.adapter, { jobId: 'run_1', group: 3 }, 2);
    expect(fake.asked).toEqual([]);
    expect(settlements).toHaveLength(1);
    // Any later copy finds the run final.
    await deliver(fake.adapter, { jobId: 'run_1', group: 1 }, 3);
    await deliver(fake.adapter, { jobId: 'run_1' }, 2);
    expect(fake.asked).toEqual([]);
    expect(settlements).toHaveLength(1);
  });

  test('a page no provider can answer fails the run from its group, refunding the hold, with every group usage', async () => {
    const done = Array.from({ length: 6 }, (_, i) => checkpointOf('run_1', i + 1));
    const { settlements, state } = world(fannedRun({ fanout: FANOUT, groups: counted(1), groupsDone: 1 }), done);
    const fake = pagesAdapter((page) => (page === 9 ? new ProviderFailure('truncated', 'cut at the cap') : undefined));
    await deliver(fake.adapter, { jobId: 'run_1', group: 1 });
    expect(settlements).toHaveLength(1);
    const values = settlements[0]?.TransactItems?.[0]?.Update?.ExpressionAttributeValues ?? {};
    expect(values[':status']).toBe('failed');
    expect(values[':error']).toMatchObject({ code: 'PROVIDER_ERROR', details: { reason: 'truncated', page: 9 } });
    expect(values[':charged']).toBe(0);
    expect(values[':refunded']).toBe(state.run.estimateMicros);
    // Group 0's six checkpointed pages and every request group 1 made count in the run's usage.
    expect((values[':usage'] as { requests: number }).requests).toBe(6 + fake.asked.length);
  });

  test('a group whose run becomes final meanwhile starts no more chunks', async () => {
    const { state } = world(
      fannedRun({ fanout: { groups: 2, groupPages: 10 }, groups: { '0': {}, '1': {} }, groupsDone: 0 }),
    );
    const fake = pagesAdapter((page) => {
      // Another group failed the run while this one's first chunks were with the provider.
      if (page === 1) state.run.status = 'failed';
      return undefined;
    }, 30);
    const response = await deliver(fake.adapter, { jobId: 'run_1', group: 0 });
    expect(response.batchItemFailures).toEqual([]);
    // Three chunks at a time: the first round, and at most the round that took their slots before their checkpoints
    // were refused and the group looked at the run. Never the group's ten pages.
    expect(fake.asked.length).toBeLessThanOrEqual(6);
    expect(state.checkpoints).toEqual([]);
    expect(state.run.groupsDone).toBe(0);
  });

  test("a group that fails on its last delivery fails the run once; the other groups' copies then ask nothing", async () => {
    const { settlements } = world(fannedRun({ fanout: FANOUT, groups: counted(0), groupsDone: 0 }));
    s3.reset();
    s3.rejects(new Error('S3 unreachable'));
    const fake = pagesAdapter();
    const early = await deliver(fake.adapter, { jobId: 'run_1', group: 0 }, 1);
    expect(early.batchItemFailures).toEqual([{ itemIdentifier: 'msg-0' }]);
    expect(settlements).toEqual([]);
    await deliver(fake.adapter, { jobId: 'run_1', group: 0 }, 5);
    expect(settlements).toHaveLength(1);
    const values = settlements[0]?.TransactItems?.[0]?.Update?.ExpressionAttributeValues ?? {};
    expect(values[':status']).toBe('failed');
    expect(values[':error']).toMatchObject({ code: 'INTERNAL_ERROR' });
    serveObject(s3, PDF);
    await deliver(fake.adapter, { jobId: 'run_1', group: 2 }, 1);
    expect(fake.asked).toEqual([]);
    expect(settlements).toHaveLength(1);
  });
});

describe("a group's lease (SERVICE_LEASE_SECONDS, 60 s by default) and its heartbeat", () => {
  afterEach(() => {
    jest.useRealTimers();
  });

  /** A `local` adapter answering each page after `delayMs` (on the test's clock), recording what it was asked. */
  function slowPages(delayMs: (page: number) => number) {
    const asked: number[] = [];
    const adapter: ProviderAdapter = {
      id: 'local',
      async invoke(input: ProviderInput) {
        const page = input.pages?.first ?? 0;
        asked.push(page);
        await new Promise((resolve) => setTimeout(resolve, delayMs(page)));
        return { result: { text: `page ${page}` }, usage: { billableUnits: 1, costMicros: 10 } };
      },
    };
    return { adapter, asked };
  }

  test('a group whose invocation died is taken up once its lease lapsed, from its checkpoints: no page is paid twice', async () => {
    const groups = counted(0);
    // The dead invocation checkpointed pages 7-9, and its lease ended a moment ago, unrenewed.
    if (groups?.['1']) Object.assign(groups['1'], { leaseUntil: Date.now() - 1, leaseHolder: 'pid 9 on gone #00' });
    const done = [7, 8, 9].map((page) => checkpointOf('run_1', page));
    const { state, settlements } = world(fannedRun({ fanout: FANOUT, groups, groupsDone: 0 }), done);
    const fake = pagesAdapter();
    const response = await deliver(fake.adapter, { jobId: 'run_1', group: 1 }, 2);
    expect(response.batchItemFailures).toEqual([]);
    expect(fake.asked.sort((a, b) => a - b)).toEqual([10, 11, 12]);
    expect(state.run.groupsDone).toBe(1);
    expect(settlements).toEqual([]);
    // Its claim was a short lease of its own, not the invocation's 120 s.
    const claim = ddb
      .commandCalls(UpdateCommand)
      .map((c) => c.args[0].input)
      .find((input) =>
        input.UpdateExpression?.startsWith('SET #groups.#g.leaseUntil = :lease, #groups.#g.leaseHolder'),
      );
    const values = claim?.ExpressionAttributeValues ?? {};
    expect(Number(values[':lease']) - Number(values[':nowMs'])).toBeLessThanOrEqual(60_000);
    expect(values[':holder']).not.toBe('pid 9 on gone #00');
  });

  test("while a slow provider works, the heartbeat renews the group's lease and keeps its message hidden as long", async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const { state, settlements } = world(fannedRun({ fanout: FANOUT, groups: counted(0), groupsDone: 0 }));
    // Page 7 takes 70 s, longer than the lease: without renewals another delivery would take the group over.
    const slow = slowPages((page) => (page === 7 ? 70_000 : 0));
    const pending = deliver(slow.adapter, { jobId: 'run_1', group: 1 });
    await jest.advanceTimersByTimeAsync(71_000);
    const response = await pending;
    expect(response.batchItemFailures).toEqual([]);
    expect(slow.asked.sort((a, b) => a - b)).toEqual([7, 8, 9, 10, 11, 12]);
    expect(state.renewals.map((r) => r.group)).toEqual([1, 1, 1]);
    // Hidden for the lease when claimed, then again at each of the three beats.
    expect(state.hidden).toEqual([60, 60, 60, 60]);
    expect(state.run.groupsDone).toBe(1);
    expect(state.run.groups?.['1']).toEqual({ doneAt: expect.any(String) });
    expect(settlements).toEqual([]);
  });

  test('a group whose lease another delivery took over meanwhile asks no provider again and counts nothing', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const { state, settlements } = world(fannedRun({ fanout: FANOUT, groups: counted(0), groupsDone: 0 }));
    // Three pages at a time, each taking 30 s: pages 7-9 are with the provider when the lease is lost.
    const slow = slowPages(() => 30_000);
    const pending = deliver(slow.adapter, { jobId: 'run_1', group: 1 });
    await jest.advanceTimersByTimeAsync(10_000);
    expect(slow.asked.sort((a, b) => a - b)).toEqual([7, 8, 9]);
    // This invocation stalled past its lease (a long pause): another delivery took the group over.
    const entry = state.run.groups?.['1'];
    if (entry) Object.assign(entry, { leaseHolder: 'pid 2 on other #ff', leaseUntil: Date.now() + 60_000 });
    await jest.advanceTimersByTimeAsync(60_000);
    const response = await pending;
    // Its next renewal was refused: pages 10-12 are left to the new holder, and nothing is counted or settled.
    expect(slow.asked.sort((a, b) => a - b)).toEqual([7, 8, 9]);
    expect(state.run.groupsDone).toBe(0);
    expect(settlements).toEqual([]);
    expect(state.run.groups?.['1']).toMatchObject({ leaseHolder: 'pid 2 on other #ff' });
    // Its message is handed back (it comes again within a lease), as any delivery that stood back.
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'msg-0' }]);
  });
});
