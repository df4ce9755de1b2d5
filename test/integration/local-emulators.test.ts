/**
 * The local stack's emulators when two stacks start at once (the integration suite starts one per jest worker, and a
 * developer may run two): DynamoDB Local's port is picked free, then bound by a JVM seconds later, so another stack's
 * database can take it in between and answer in its place. The stack must notice and move, never share a database.
 */
import { CreateTableCommand, DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { freePort, type RunningEmulators, startEmulators } from '../../scripts/local/emulators.js';

const started: RunningEmulators[] = [];
const ENDPOINT_VARS = ['AWS_ENDPOINT_URL', 'AWS_ENDPOINT_URL_DYNAMODB'] as const;
const saved = ENDPOINT_VARS.map((name) => [name, process.env[name]] as const);
const tablesOf = async (endpoint: string) => {
  const client = new DynamoDBClient({ endpoint });
  try {
    return (await client.send(new ListTablesCommand({}))).TableNames ?? [];
  } finally {
    client.destroy();
  }
};

afterAll(async () => {
  await Promise.all(started.map((emulators) => emulators.stop()));
  for (const [name, value] of saved) if (value !== undefined) process.env[name] = value;
});

test('a DynamoDB Local port already answered by another database is left for a port of its own', async () => {
  // Configured endpoints make startEmulators start nothing: this test starts real ones.
  for (const name of ENDPOINT_VARS) delete process.env[name];
  const first = await startEmulators();
  started.push(first);
  const client = new DynamoDBClient({ endpoint: first.endpoints.dynamodb });
  await client.send(
    new CreateTableCommand({
      TableName: 'first-stack-runs',
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'jobId', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'jobId', KeyType: 'HASH' }],
    }),
  );
  client.destroy();

  // The second stack is handed the first one's port, as a race between freePort and the JVM's bind would.
  const taken = Number(new URL(first.endpoints.dynamodb).port);
  const offered: number[] = [];
  const second = await startEmulators({
    pickPort: async () => {
      const port = offered.length === 0 ? taken : await freePort();
      offered.push(port);
      return port;
    },
  });
  started.push(second);

  expect(offered[0]).toBe(taken);
  expect(offered.length).toBeGreaterThanOrEqual(2);
  expect(second.endpoints.dynamodb).not.toBe(first.endpoints.dynamodb);
  // Its own, empty database; the first stack's keeps its table.
  expect(await tablesOf(second.endpoints.dynamodb)).toEqual([]);
  expect(await tablesOf(first.endpoints.dynamodb)).toEqual(['first-stack-runs']);
});
