/**
 * Idempotency records for run creation: the first accepted response under a tenant's `Idempotency-Key`, kept 24 h.
 * Written inside the run-creation transaction (store/ledger.ts), so a replay can never point at a run that was not held.
 */
import { DeleteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { ddb } from '../aws/dynamodb.js';
import { tables } from '../infra/resources.js';
import { resource } from '../resource-name.js';

// Not checked at init: the worker and the reconciler load this module through the ledger (whose creation transaction
// writes the record) but never touch the table; create-run, which does, checks it (shared/runs/create-run.ts).
export const idempotencyTable = resource(tables.idempotency.envVar, { checkAtInit: false });

/** The stored outcome of an idempotent creation. */
export interface IdempotencyRecord {
  idempotencyKey: string;
  requestHash: string;
  jobId: string;
  response: unknown;
  createdAt: string;
  expiresAtEpoch: number;
}

/** Thrown when the same key was committed by a concurrent request. */
export class IdempotencyConflict extends Error {
  constructor() {
    super('idempotency record written concurrently');
    this.name = 'IdempotencyConflict';
  }
}

/** Reads a live (unexpired) idempotency record. DynamoDB TTL deletes lazily, so expiry is checked here too. */
export async function getIdempotencyRecord(idempotencyKey: string): Promise<IdempotencyRecord | null> {
  const out = await ddb.send(
    new GetCommand({ TableName: idempotencyTable(), Key: { idempotencyKey }, ConsistentRead: true }),
  );
  const record = out.Item as IdempotencyRecord | undefined;
  if (!record || record.expiresAtEpoch <= Math.floor(Date.now() / 1000)) return null;
  return record;
}

/**
 * Removes the record of a run that could not be queued (it was failed and refunded), so a retry under the same key
 * creates a new run instead of replaying a `queued` answer for a run that will never be processed.
 */
export async function deleteIdempotencyRecord(idempotencyKey: string, jobId: string): Promise<void> {
  await ddb.send(
    new DeleteCommand({
      TableName: idempotencyTable(),
      Key: { idempotencyKey },
      ConditionExpression: 'jobId = :jobId',
      ExpressionAttributeValues: { ':jobId': jobId },
    }),
  );
}

/** The transaction item that stores a record, only if the key is new (or its old record has expired). */
export function idempotencyPut(record: IdempotencyRecord) {
  return {
    Put: {
      TableName: idempotencyTable(),
      Item: record,
      ConditionExpression: 'attribute_not_exists(idempotencyKey) OR expiresAtEpoch <= :now',
      ExpressionAttributeValues: { ':now': Math.floor(Date.now() / 1000) },
    },
  };
}
