/**
 * TransactWriteItems with the one retry DynamoDB needs from us: a transaction cancelled only because another
 * transaction touched one of its items at the same moment (`TransactionConflict`) — routine on a busy tenant record,
 * which every hold and settlement updates. Any other cancellation (a failed condition) is an answer, not a fault, and
 * is rethrown at once. The SDK already retries throttling and network errors.
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import pRetry from 'p-retry';
import { ddb } from '../aws/dynamodb.js';

/** True when every item that failed did so only because of a concurrent transaction. */
export function isConflictOnly(error: unknown): boolean {
  if (!(error instanceof TransactionCanceledException)) return false;
  const codes = (error.CancellationReasons ?? []).map((r) => r.Code).filter((c) => c !== undefined && c !== 'None');
  return codes.length > 0 && codes.every((c) => c === 'TransactionConflict');
}

/** Sends the transaction, retrying conflict-only cancellations with jittered backoff (6 tries within ~1.5 s). */
export async function transactWrite(input: TransactWriteCommandInput): Promise<void> {
  await pRetry(() => ddb.send(new TransactWriteCommand(input)), {
    retries: 5,
    minTimeout: 20,
    maxTimeout: 400,
    factor: 2,
    randomize: true,
    shouldRetry: ({ error }) => isConflictOnly(error),
  });
}
