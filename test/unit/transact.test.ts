import { DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { isConflictOnly, transactWrite } from '../../shared/store/transact.js';
import { transactionCancelled } from '../support/aws.js';

const ddb = mockClient(DynamoDBDocumentClient);
const input = { TransactItems: [{ Put: { TableName: 't', Item: { id: '1' } } }] };

beforeEach(() => ddb.reset());

describe('transactWrite', () => {
  test('retries a transaction cancelled only by a concurrent transaction on a busy item, then succeeds', async () => {
    ddb
      .on(TransactWriteCommand)
      .rejectsOnce(transactionCancelled(['None', 'TransactionConflict']))
      .rejectsOnce(transactionCancelled(['TransactionConflict', 'None']))
      .resolves({});
    await expect(transactWrite(input)).resolves.toBeUndefined();
    expect(ddb).toHaveReceivedCommandTimes(TransactWriteCommand, 3);
  });

  test('a failed condition is an answer: rethrown at once, never retried', async () => {
    ddb.on(TransactWriteCommand).rejects(transactionCancelled(['ConditionalCheckFailed', 'TransactionConflict']));
    await expect(transactWrite(input)).rejects.toMatchObject({ name: 'TransactionCanceledException' });
    expect(ddb).toHaveReceivedCommandTimes(TransactWriteCommand, 1);
  });

  test('gives up after six conflicts and surfaces the error', async () => {
    ddb.on(TransactWriteCommand).rejects(transactionCancelled(['TransactionConflict']));
    await expect(transactWrite(input)).rejects.toMatchObject({ name: 'TransactionCanceledException' });
    expect(ddb).toHaveReceivedCommandTimes(TransactWriteCommand, 6);
  });

  test('isConflictOnly is false for other errors', () => {
    expect(isConflictOnly(new Error('boom'))).toBe(false);
    expect(isConflictOnly(transactionCancelled(['None', 'None']))).toBe(false);
  });
});
