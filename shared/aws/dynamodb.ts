/**
 * The DynamoDB document client, created once per process. One module per AWS client so a handler bundles only the
 * clients it uses; endpoints come from the SDK's own `AWS_ENDPOINT_URL[_DYNAMODB]` variables.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** `undefined` attributes are dropped rather than rejected. */
export const ddb = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
  marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
});
