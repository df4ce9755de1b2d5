/**
 * The groups of a fanned-out run (shared/worker/fanout.ts), kept on the run item itself: `fanout` (how it was split,
 * written once), `groups.<n>` (the lease of the delivery running group n, renewed by its heartbeat, and when it was
 * counted done) and `groupsDone`, an atomic counter. Each step is ONE conditional UpdateItem of the run, so it needs
 * no transaction:
 * - a group's claim stands back for an unexpired lease, a group already counted, or a run no longer queued;
 * - a group is counted once: `SET groups.<n>.doneAt ADD groupsDone 1` only while `groups.<n>.doneAt` is absent, so a
 *   redelivered or duplicate group never counts twice, and exactly one count reaches `fanout.groups`.
 * Why on the run and not items of their own: docs/decisions.md#long-documents-run-in-page-chunks.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, UpdateCommand, type UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import pRetry from 'p-retry';
import { applied, ddb } from '../aws/dynamodb.js';
import { log } from '../log.js';
import { type Lease, leaseOf, type RunRecord, runsTable } from './runs.js';

/** What a group's delivery found when it tried to claim the group. */
export type GroupClaim =
  | {
      state: /** Process the group. */
        | 'claimed'
        /** Counted done already, and other groups are not: nothing to do. */
        | 'counted'
        /** Every group is counted and the run is still queued: merge and settle it (a crash after the last count). */
        | 'all-counted'
        /** The run is final. */
        | 'final'
        /** The run has no such group (it was never fanned out that way): a message no retry can mend. */
        | 'unknown';
    }
  /** Another delivery holds an unexpired lease on it: never ask a provider twice. */
  | { state: 'leased'; lease: Lease };

/** What counting a finished group found. `last`: every group is counted and the run is queued: merge and settle it. */
export type GroupCount = 'last' | 'more' | 'final';

/** Whether every group of a fanned-out run is counted done (false for a run that is not fanned out). */
export function allGroupsCounted(run: Pick<RunRecord, 'fanout' | 'groupsDone'>): boolean {
  return run.fanout !== undefined && (run.groupsDone ?? 0) >= run.fanout.groups;
}

/**
 * The groups whose messages the run's message sends: every group neither counted nor held by a live claim. A
 * redelivered run message (a crash while sending, or the reconciler's resend of a silent run) sends again the groups
 * that may have lost theirs; a duplicate of a message still queued only stands back when it arrives.
 */
export function groupsToSend(run: Pick<RunRecord, 'fanout' | 'groups'>, now = Date.now()): number[] {
  const plan = run.fanout;
  if (!plan) return [];
  const send: number[] = [];
  for (let group = 0; group < plan.groups; group++) {
    const entry = run.groups?.[String(group)];
    if (entry?.doneAt !== undefined) continue;
    if (entry?.leaseUntil !== undefined && entry.leaseUntil > now) continue;
    send.push(group);
  }
  return send;
}

/**
 * A single-item write retried while a transaction holds the item (`TransactionConflictException`): the groups'
 * checkpoints update the same run item many times a second, and the SDK does not retry that error itself.
 */
async function send<T>(write: () => Promise<T>): Promise<T> {
  return pRetry(write, {
    retries: 5,
    minTimeout: 20,
    maxTimeout: 400,
    factor: 2,
    randomize: true,
    shouldRetry: ({ error }) => error.name === 'TransactionConflictException',
  });
}

const update = (input: Omit<UpdateCommandInput, 'TableName'>) =>
  send(() => ddb.send(new UpdateCommand({ TableName: runsTable(), ...input })));

async function readRun(jobId: string): Promise<RunRecord | null> {
  const out = await ddb.send(new GetCommand({ TableName: runsTable(), Key: { jobId }, ConsistentRead: true }));
  return (out.Item as RunRecord | undefined) ?? null;
}

/**
 * One delivery of the run's own message that fans it out, in one conditional write: the delivery counted (no claim: it
 * only sends messages), as claimRun counts one, so the reconciler sees the run alive; and with `plan`, the split
 * recorded, with an empty entry per group and the counter at 0, unless it already is (a redelivered or duplicate run
 * message). Returns the run as it now stands (which groups to send: `groupsToSend`), null when it is no longer queued.
 */
export async function countFanoutDelivery(
  jobId: string,
  receiveCount: number,
  plan?: NonNullable<RunRecord['fanout']>,
  now = new Date(),
): Promise<RunRecord | null> {
  const record: { set: string; names: Record<string, string>; values: Record<string, unknown> } = plan
    ? {
        set:
          ', fanout = if_not_exists(fanout, :plan), #groups = if_not_exists(#groups, :groups), ' +
          'groupsDone = if_not_exists(groupsDone, :zero)',
        names: { '#groups': 'groups' },
        values: {
          ':plan': plan,
          ':groups': Object.fromEntries(Array.from({ length: plan.groups }, (_, n) => [String(n), {}])),
          ':zero': 0,
        },
      }
    : { set: '', names: {}, values: {} };
  try {
    const out = await update({
      Key: { jobId },
      UpdateExpression: `SET #stage = :processing, deliveredAt = :now, lastReceiveCount = :receive${record.set} ADD deliveries :one`,
      ConditionExpression: '#status = :queued',
      ExpressionAttributeNames: { '#stage': 'stage', '#status': 'status', ...record.names },
      ExpressionAttributeValues: {
        ':processing': 'processing',
        ':now': now.toISOString(),
        ':receive': receiveCount,
        ':one': 1,
        ':queued': 'queued',
        ...record.values,
      },
      ReturnValues: 'ALL_NEW',
    });
    return (out.Attributes as RunRecord | undefined) ?? null;
  } catch (error: unknown) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    return null;
  }
}

/**
 * Claims group `group` of a fanned-out run for one delivery, `holder`, until `leaseUntil` (renewed by its heartbeat:
 * renewGroup), and counts the delivery on the run (its time and SQS receive count: the reconciler reads them)
 * whatever the answer. A lease that lapsed unrenewed (its holder died) is taken over, as claimRun's.
 */
export async function claimGroup(
  jobId: string,
  group: number,
  {
    leaseUntil,
    holder,
    receiveCount,
    now = new Date(),
  }: { leaseUntil: Date; holder: string; receiveCount: number; now?: Date },
): Promise<GroupClaim> {
  const names = { '#groups': 'groups', '#g': String(group), '#status': 'status' };
  const values = { ':now': now.toISOString(), ':one': 1, ':queued': 'queued', ':receive': receiveCount };
  const claimed = await applied(
    update({
      Key: { jobId },
      UpdateExpression:
        'SET #groups.#g.leaseUntil = :lease, #groups.#g.leaseHolder = :holder, #stage = :processing, ' +
        'deliveredAt = :now, lastReceiveCount = :receive ADD deliveries :one',
      ConditionExpression:
        '#status = :queued AND attribute_exists(#groups.#g) AND attribute_not_exists(#groups.#g.doneAt) AND ' +
        '(attribute_not_exists(#groups.#g.leaseUntil) OR #groups.#g.leaseUntil <= :nowMs)',
      ExpressionAttributeNames: { ...names, '#stage': 'stage' },
      ExpressionAttributeValues: {
        ...values,
        ':processing': 'processing',
        ':lease': leaseUntil.getTime(),
        ':holder': holder,
        ':nowMs': now.getTime(),
      },
    }),
  );
  if (claimed) return { state: 'claimed' };
  let run: RunRecord | undefined;
  try {
    const out = await update({
      Key: { jobId },
      UpdateExpression: 'SET deliveredAt = :now, lastReceiveCount = :receive ADD deliveries :one',
      ConditionExpression: '#status = :queued',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: values,
      ReturnValues: 'ALL_NEW',
    });
    run = out.Attributes as RunRecord | undefined;
  } catch (error: unknown) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    return { state: 'final' };
  }
  const entry = run?.groups?.[String(group)];
  if (!run || !entry) return { state: 'unknown' };
  if (entry.doneAt === undefined) return { state: 'leased', lease: leaseOf(entry) };
  return { state: allGroupsCounted(run) ? 'all-counted' : 'counted' };
}

/**
 * Renews `holder`'s lease on a group to `leaseUntil` (its heartbeat). False when the lease is no longer its own (taken
 * over after it lapsed, the group counted, or the run final): the holder must then stop.
 */
export async function renewGroup(jobId: string, group: number, holder: string, leaseUntil: Date): Promise<boolean> {
  return applied(
    update({
      Key: { jobId },
      UpdateExpression: 'SET #groups.#g.leaseUntil = :lease',
      ConditionExpression:
        '#status = :queued AND #groups.#g.leaseHolder = :holder AND attribute_not_exists(#groups.#g.doneAt)',
      ExpressionAttributeNames: { '#groups': 'groups', '#g': String(group), '#status': 'status' },
      ExpressionAttributeValues: { ':lease': leaseUntil.getTime(), ':holder': holder, ':queued': 'queued' },
    }),
  );
}

/** Gives up `holder`'s lease on a group (a delivery that failed); best effort, as releaseClaim. */
export async function releaseGroup(jobId: string, group: number, holder: string): Promise<void> {
  try {
    await applied(
      update({
        Key: { jobId },
        UpdateExpression: 'REMOVE #groups.#g.leaseUntil, #groups.#g.leaseHolder',
        ConditionExpression: '#groups.#g.leaseHolder = :holder',
        ExpressionAttributeNames: { '#groups': 'groups', '#g': String(group) },
        ExpressionAttributeValues: { ':holder': holder },
      }),
    );
  } catch (error: unknown) {
    log.warn('could not release the lease on a group', { jobId, group, error });
  }
}

/**
 * Parks a batch run's group whose calls wait in the batch lane (shared/worker/batch-lane.ts): the run's stage says
 * `batched`, and `holder`'s lease on the group is given up, so the group message the batcher sends back claims it at
 * once. False when the lease is no longer its own.
 */
export async function parkGroup(jobId: string, group: number, holder: string): Promise<boolean> {
  return applied(
    update({
      Key: { jobId },
      UpdateExpression: 'SET #stage = :batched REMOVE #groups.#g.leaseUntil, #groups.#g.leaseHolder',
      ConditionExpression: '#status = :queued AND #groups.#g.leaseHolder = :holder',
      ExpressionAttributeNames: { '#groups': 'groups', '#g': String(group), '#stage': 'stage', '#status': 'status' },
      ExpressionAttributeValues: { ':batched': 'batched', ':queued': 'queued', ':holder': holder },
    }),
  );
}

/**
 * Removes every lease a queued run carries, its own and its groups', as they are in `run` (each one only if it is
 * still the same holder's). For the local stack at start, whose previous process held them and is gone: its runs are
 * taken up at once instead of after their leases. Returns whether any lease was removed.
 */
export async function releaseLeasesOf(run: RunRecord): Promise<boolean> {
  const names: Record<string, string> = { '#status': 'status' };
  const values: Record<string, unknown> = { ':queued': 'queued' };
  const removed: string[] = [];
  const conditions = ['#status = :queued'];
  if (run.leaseHolder !== undefined) {
    removed.push('leaseUntil', 'leaseHolder');
    conditions.push('leaseHolder = :holder');
    values[':holder'] = run.leaseHolder;
  }
  for (const [group, entry] of Object.entries(run.groups ?? {})) {
    if (entry.leaseHolder === undefined) continue;
    const n = removed.length;
    names['#groups'] = 'groups';
    names[`#g${n}`] = group;
    removed.push(`#groups.#g${n}.leaseUntil`, `#groups.#g${n}.leaseHolder`);
    conditions.push(`#groups.#g${n}.leaseHolder = :holder${n}`);
    values[`:holder${n}`] = entry.leaseHolder;
  }
  if (removed.length === 0) return false;
  return applied(
    update({
      Key: { jobId: run.jobId },
      UpdateExpression: `REMOVE ${removed.join(', ')}`,
      ConditionExpression: conditions.join(' AND '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    }),
  );
}

/**
 * Counts group `group` done, once, and says whether it was the last: the count that reaches `fanout.groups` answers
 * `last`. A group counted before (a redelivery after a crash past its count) answers `last` too while every group is
 * counted and the run is still queued, so a crash between the last count and the settlement is finished by the
 * redelivery; the settlement is exactly-once by its own conditions, and the merge asks no provider for a checkpoint.
 */
export async function countGroup(jobId: string, group: number, now = new Date()): Promise<GroupCount> {
  let run: RunRecord | null | undefined;
  try {
    const out = await update({
      Key: { jobId },
      UpdateExpression:
        'SET #groups.#g.doneAt = :now REMOVE #groups.#g.leaseUntil, #groups.#g.leaseHolder ADD groupsDone :one',
      ConditionExpression:
        '#status = :queued AND attribute_exists(#groups.#g) AND attribute_not_exists(#groups.#g.doneAt)',
      ExpressionAttributeNames: { '#groups': 'groups', '#g': String(group), '#status': 'status' },
      ExpressionAttributeValues: { ':now': now.toISOString(), ':one': 1, ':queued': 'queued' },
      ReturnValues: 'ALL_NEW',
    });
    run = out.Attributes as RunRecord | undefined;
  } catch (error: unknown) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    run = await readRun(jobId);
  }
  if (run?.status !== 'queued') return 'final';
  return allGroupsCounted(run) ? 'last' : 'more';
}

/** Whether the run is still queued (a consistent read of its status only): a group stops once it is final. */
export async function isQueued(jobId: string): Promise<boolean> {
  const out = await ddb.send(
    new GetCommand({
      TableName: runsTable(),
      Key: { jobId },
      ConsistentRead: true,
      ProjectionExpression: '#status',
      ExpressionAttributeNames: { '#status': 'status' },
    }),
  );
  return out.Item?.status === 'queued';
}
