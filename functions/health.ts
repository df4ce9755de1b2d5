/** GET /health — no key; 200 when the service can reach its store (a cheap read), else 500. */
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { ddb } from '../shared/aws/dynamodb.js';
import { apiHandler } from '../shared/http.js';
import { tables } from '../shared/infra/resources.js';
import { checkEnvironment, resource } from '../shared/resource-name.js';

const tenantsTable = resource(tables.tenants.envVar);
checkEnvironment();

export const handler = apiHandler('health', {}, async () => {
  await ddb.send(new DescribeTableCommand({ TableName: tenantsTable() }));
  return { statusCode: 200, body: { status: 'ok' } };
});
