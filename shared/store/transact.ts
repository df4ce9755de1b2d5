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

/**
 * A value with every plain object turned into a Map, at every depth. The document client's marshaller picks a DynamoDB
 * type by `value.constructor.name`, so JSON a client controls — metadata, a correction, a result's field names — with
 * its own key "constructor" was refused (`{"constructor": 1}`: "Unsupported type", a 500, and for a result a
 * settlement that failed on every delivery) or mistaken for another type (`{"constructor": {"name": "Set"}}`). A Map
 * is always marshalled as a map, whatever its keys, and reads back as a plain object.
 */
export function plainObjectsAsMaps(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(plainObjectsAsMaps);
  if (value === null || typeof value !== 'object') return value;
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  return new Map(Object.entries(value).map(([key, item]) => [key, plainObjectsAsMaps(item)]));
}

/** An item's attributes (or an expression's values) with their values made safe to marshal; the top level stays. */
function attributes<T extends Record<string, unknown> | undefined>(values: T): T {
  if (!values) return values;
  return Object.fromEntries(Object.entries(values).map(([name, value]) => [name, plainObjectsAsMaps(value)])) as T;
}

export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

function marshallable(item: TransactItem): TransactItem {
  return {
    ...item,
    ...(item.Put ? { Put: { ...item.Put, Item: attributes(item.Put.Item) } } : {}),
    ...(item.Update
      ? { Update: { ...item.Update, ExpressionAttributeValues: attributes(item.Update.ExpressionAttributeValues) } }
      : {}),
  } as TransactItem;
}

/**
 * A transaction's items by name, sent in the record's key order; a name stands for one item, several (a result's
 * parts) or none (null). DynamoDB reports why a transaction was cancelled by item position: read it by name with
 * `failedConditions`, never by counting.
 */
export type NamedItems<Name extends string> = Record<Name, TransactItem | readonly TransactItem[] | null>;

function entriesOf<Name extends string>(named: NamedItems<Name>): [Name, readonly TransactItem[]][] {
  return (Object.entries(named) as [Name, TransactItem | readonly TransactItem[] | null][]).map(([name, value]) => [
    name,
    value === null ? [] : isItemList(value) ? value : [value],
  ]);
}

function isItemList(value: TransactItem | readonly TransactItem[]): value is readonly TransactItem[] {
  return Array.isArray(value);
}

/** The names of the items whose condition failed, when `error` cancelled the transaction of `named`; else none. */
export function failedConditions<Name extends string>(error: unknown, named: NamedItems<Name>): Set<Name> {
  const failed = new Set<Name>();
  if (!(error instanceof TransactionCanceledException)) return failed;
  const reasons = error.CancellationReasons ?? [];
  let position = 0;
  for (const [name, items] of entriesOf(named)) {
    for (let i = 0; i < items.length; i++, position++) {
      if (reasons[position]?.Code === 'ConditionalCheckFailed') failed.add(name);
    }
  }
  return failed;
}

/** Sends the named items as one transaction (`transactWrite`), in the record's key order. */
export async function transactWriteNamed<Name extends string>(
  named: NamedItems<Name>,
  options: Omit<TransactWriteCommandInput, 'TransactItems'> = {},
): Promise<void> {
  await transactWrite({ ...options, TransactItems: entriesOf(named).flatMap(([, items]) => items) });
}

/**
 * Sends the transaction, retrying conflict-only cancellations with jittered backoff (6 tries within ~1.5 s). A
 * cancelled transaction committed nothing, so each retry gets its own ClientRequestToken (`<token>-<try>`, within
 * DynamoDB's 36 characters): DynamoDB may remember a token for 10 minutes after its request completed, and a
 * cancellation is a completion. The SDK's own retries of one try (a lost response) keep that try's token.
 */
export async function transactWrite(input: TransactWriteCommandInput): Promise<void> {
  const command = { ...input, TransactItems: input.TransactItems?.map(marshallable) };
  const token = input.ClientRequestToken;
  await pRetry(
    (attempt) =>
      ddb.send(
        new TransactWriteCommand(
          token === undefined || attempt === 1 ? command : { ...command, ClientRequestToken: `${token}-${attempt}` },
        ),
      ),
    {
      retries: 5,
      minTimeout: 20,
      maxTimeout: 400,
      factor: 2,
      randomize: true,
      shouldRetry: ({ error }) => isConflictOnly(error),
    },
  );
}
