/**
 * The DynamoDB document client, created once per process. One module per AWS client so a handler bundles only the
 * clients it uses; endpoints come from the SDK's own `AWS_ENDPOINT_URL[_DYNAMODB]` variables.
 */
import { ConditionalCheckFailedException, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** Whether a single-item write was refused by its ConditionExpression (an answer, not a fault). */
function isConditionFailed(error: unknown): boolean {
  return error instanceof ConditionalCheckFailedException;
}

/**
 * Awaits a conditional single-item write: true when it was applied, false when its ConditionExpression refused it
 * (nothing written). Any other error is thrown.
 */
export async function applied(write: Promise<unknown>): Promise<boolean> {
  try {
    await write;
    return true;
  } catch (error: unknown) {
    if (isConditionFailed(error)) return false;
    throw error;
  }
}

const client = new DynamoDBClient({});

/** `undefined` attributes are dropped rather than rejected. */
export const ddb = DynamoDBDocumentClient.from(client, {
  marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
});

/**
 * The same client for reads of numbers beyond 2^53 (the accuracy counters pack two counts in one number): such a
 * number is read as a bigint, any other as a number.
 */
export const ddbBigNumbers = DynamoDBDocumentClient.from(client, {
  marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  unmarshallOptions: {
    wrapNumbers: (value: string) =>
      /^-?\d+$/.test(value) && !Number.isSafeInteger(Number(value)) ? BigInt(value) : Number(value),
  },
});
