import { DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import {
  failedConditions,
  isConflictOnly,
  plainObjectsAsMaps,
  transactWrite,
  transactWriteNamed,
} from '../../shared/store/transact.js';
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

  test('each retry after a conflict is a new transaction with its own ClientRequestToken (at most 36 characters)', async () => {
    const token = '0123456789abcdef0123456789abcdefr';
    ddb
      .on(TransactWriteCommand)
      .rejectsOnce(transactionCancelled(['TransactionConflict']))
      .rejectsOnce(transactionCancelled(['TransactionConflict']))
      .resolves({});
    await transactWrite({ ...input, ClientRequestToken: token });
    const tokens = ddb.commandCalls(TransactWriteCommand).map((c) => c.args[0].input.ClientRequestToken);
    expect(tokens).toEqual([token, `${token}-2`, `${token}-3`]);
    for (const sent of tokens) expect(sent?.length).toBeLessThanOrEqual(36);
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

  test('client JSON whose keys are JavaScript built-ins reaches DynamoDB as the maps it is', async () => {
    const metadata = {
      constructor: 1,
      nested: { constructor: { name: 'Set' } },
      list: [{ constructor: { name: 'String' } }],
    };
    // The marshaller picks a type by value.constructor.name: as plain objects these are refused or mistyped.
    expect(() => marshall({ metadata })).toThrow(/Unsupported type/);
    expect(() => marshall({ nested: metadata.nested })).toThrow();
    ddb.on(TransactWriteCommand).resolves({});
    await transactWrite({
      TransactItems: [
        { Put: { TableName: 't', Item: { id: '1', metadata } } },
        {
          Update: {
            TableName: 't',
            Key: { id: '2' },
            UpdateExpression: 'SET m = :m',
            ExpressionAttributeValues: { ':m': metadata },
          },
        },
      ],
    });
    const [put, update] = ddb.commandCalls(TransactWriteCommand)[0]?.args[0].input.TransactItems ?? [];
    const expected = {
      M: {
        constructor: { N: '1' },
        nested: { M: { constructor: { M: { name: { S: 'Set' } } } } },
        list: { L: [{ M: { constructor: { M: { name: { S: 'String' } } } } }] },
      },
    };
    expect(marshall(put?.Put?.Item ?? {})).toEqual({ id: { S: '1' }, metadata: expected });
    expect(marshall(update?.Update?.ExpressionAttributeValues ?? {})).toEqual({ ':m': expected });
    expect(update?.Update?.Key).toEqual({ id: '2' });
  });

  test('only plain objects become maps: arrays, primitives and null stay', () => {
    expect(plainObjectsAsMaps([1, 'a', null, true])).toEqual([1, 'a', null, true]);
    expect(plainObjectsAsMaps({ a: { b: 2 } })).toEqual(new Map([['a', new Map([['b', 2]])]]));
  });

  test('isConflictOnly is false for other errors', () => {
    expect(isConflictOnly(new Error('boom'))).toBe(false);
    expect(isConflictOnly(transactionCancelled(['None', 'None']))).toBe(false);
  });
});

describe('named transaction items', () => {
  const put = (id: string) => ({ Put: { TableName: 't', Item: { id } } });
  const named = { run: put('run'), parts: [put('p0'), put('p1')], none: null, ledger: put('ledger') };

  test('are sent in the order of their names, a list as its items and null as none', async () => {
    ddb.on(TransactWriteCommand).resolves({});
    await transactWriteNamed(named, { ClientRequestToken: 'tok' });
    const sent = ddb.commandCalls(TransactWriteCommand)[0]?.args[0].input;
    expect(sent?.TransactItems?.map((item) => item.Put?.Item?.id)).toEqual(['run', 'p0', 'p1', 'ledger']);
    expect(sent?.ClientRequestToken).toBe('tok');
  });

  test('a cancellation names the items whose condition failed, whatever their position', () => {
    const cancelled = transactionCancelled(['None', 'None', 'ConditionalCheckFailed', 'ConditionalCheckFailed']);
    expect(failedConditions(cancelled, named)).toEqual(new Set(['parts', 'ledger']));
    expect(failedConditions(transactionCancelled(['TransactionConflict']), named)).toEqual(new Set());
    expect(failedConditions(new Error('network'), named)).toEqual(new Set());
  });
});
