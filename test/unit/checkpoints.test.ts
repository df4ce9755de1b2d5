/**
 * A chunked run's checkpoints (shared/worker/checkpoints.ts, stored by shared/store/chunks.ts): finished chunks are
 * written in waves, one transaction each (not one per chunk); a crash seam fires only after its chunk's write; and a
 * run that stops (a crash, a write that failed) still writes every chunk that finished, so no paid-for page is asked
 * again. DynamoDB is mocked at the client.
 */
import { DynamoDBDocumentClient, TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import type { ChunkCheckpoint } from '../../shared/store/chunks.js';
import { CheckpointWriter, pagesLeft, summariseAttempts, totalsOf } from '../../shared/worker/checkpoints.js';
import { transactionCancelled } from '../support/aws.js';

const ddb = mockClient(DynamoDBDocumentClient);
const RUN = { jobId: 'run_checkpoints', expiresAtEpoch: 2_000_000_000 };

function checkpoint(page: number, costMicros = 10): ChunkCheckpoint {
  return {
    first: page,
    last: page,
    provider: 'local',
    output: { result: { text: `page ${page}` }, billableUnits: 1 },
    attempts: [{ provider: 'local', step: 'ocr', outcome: 'succeeded', latencyMs: page }],
    requests: 1,
    costMicros,
  };
}

/** The pages each transaction wrote, in order, and the pages it added to the run's progress. */
function writes() {
  return ddb.commandCalls(TransactWriteCommand).map((call) => {
    const items = (call.args[0].input as TransactWriteCommandInput).TransactItems ?? [];
    const chunks = items.flatMap((i) => (i.Put ? [Number(i.Put.Item?.first)] : []));
    const progress = items.find((i) => i.Update)?.Update?.ExpressionAttributeValues?.[':pages'];
    return { chunks, progress };
  });
}

beforeEach(() => {
  ddb.reset();
});

describe('CheckpointWriter', () => {
  test('chunks that finish while a write is in flight go in the next wave: two transactions, not five', async () => {
    let release: () => void = () => {};
    ddb
      .on(TransactWriteCommand)
      .callsFakeOnce(() => new Promise((resolve) => (release = () => resolve({}))))
      .resolves({});
    const writer = new CheckpointWriter(RUN);
    writer.add(checkpoint(1));
    for (const page of [2, 3, 4, 5]) writer.add(checkpoint(page));
    release();
    await writer.done();
    expect(writes()).toEqual([
      { chunks: [1], progress: 1 },
      { chunks: [2, 3, 4, 5], progress: 4 },
    ]);
  });

  test('a checkpoint that says how many pages it adds to the progress adds that many (a packet document: none)', async () => {
    ddb.on(TransactWriteCommand).resolves({});
    const writer = new CheckpointWriter(RUN);
    writer.add({ ...checkpoint(1), first: -1, last: -3, pagesDone: 0 });
    writer.add(checkpoint(4));
    await writer.done();
    expect(writes()).toEqual([
      { chunks: [-1], progress: 0 },
      { chunks: [4], progress: 1 },
    ]);
  });

  test('the crash seam fires once per chunk, only after its checkpoint is written', async () => {
    const seen: number[] = [];
    ddb.on(TransactWriteCommand).resolves({});
    const writer = new CheckpointWriter(RUN, () => {
      seen.push(ddb.commandCalls(TransactWriteCommand).length);
    });
    writer.add(checkpoint(1));
    writer.add(checkpoint(2));
    await writer.done();
    expect(seen).toEqual([1, 2]);
  });

  test('after a crash in the seam, chunks that finish later are still written; the first error is kept', async () => {
    ddb.on(TransactWriteCommand).resolves({});
    let calls = 0;
    const writer = new CheckpointWriter(RUN, () => {
      calls += 1;
      if (calls <= 2) throw new Error(`simulated crash ${calls}`);
    });
    writer.add(checkpoint(1));
    await writer.done();
    writer.add(checkpoint(2));
    writer.add(checkpoint(3));
    await writer.done();
    expect(writes().flatMap((w) => w.chunks)).toEqual([1, 2, 3]);
    expect(writer.stopped).toEqual(new Error('simulated crash 1'));
  });

  test('a failed write stops the run but not the writing of later waves', async () => {
    ddb.on(TransactWriteCommand).rejectsOnce(new Error('throttled')).resolves({});
    const writer = new CheckpointWriter(RUN);
    writer.add(checkpoint(1));
    await writer.done();
    writer.add(checkpoint(2));
    await writer.done();
    expect(writes().flatMap((w) => w.chunks)).toEqual([1, 2]);
    expect(writer.stopped).toEqual(new Error('throttled'));
  });

  test('a checkpoint already written by another delivery is left out; the rest of its wave is written', async () => {
    // The second wave's items are named `run`, then its chunks in order: the first chunk's condition failed.
    ddb
      .on(TransactWriteCommand)
      .resolvesOnce({})
      .rejectsOnce(transactionCancelled(['None', 'ConditionalCheckFailed', 'None']))
      .resolves({});
    const writer = new CheckpointWriter(RUN);
    writer.add(checkpoint(1));
    writer.add(checkpoint(2));
    writer.add(checkpoint(3));
    await writer.done();
    expect(writes()).toEqual([
      { chunks: [1], progress: 1 },
      { chunks: [2, 3], progress: 2 },
      { chunks: [3], progress: 1 },
    ]);
    expect(writer.stopped).toBeUndefined();
  });
});

describe('what checkpoints add up to', () => {
  test('totals, and a summary of attempts: failures in order, then one success per provider and step', () => {
    const done = [checkpoint(1, 10), checkpoint(2, 15)];
    const totals = totalsOf(done);
    expect({ ...totals, attempts: totals.attempts.length }).toEqual({
      attempts: 2,
      requests: 2,
      costMicros: 25,
      billableUnits: 2,
    });
    expect(summariseAttempts(totals.attempts)).toEqual([
      { provider: 'local', step: 'ocr', outcome: 'succeeded', latencyMs: 2 },
    ]);
  });

  test('pagesLeft: the parts of the planned chunks no checkpoint covers', () => {
    const planned = [
      { first: 1, last: 4 },
      { first: 5, last: 8 },
    ];
    expect(
      pagesLeft(planned, [
        { first: 2, last: 3 },
        { first: 5, last: 8 },
      ]),
    ).toEqual([
      { first: 1, last: 1 },
      { first: 4, last: 4 },
    ]);
  });
});
