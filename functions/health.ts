/** GET /health — no key; 200 when the service can reach its store (a cheap read), else 500. */
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { ddb } from '../shared/aws/dynamodb.js';
import { apiHandler } from '../shared/http.js';
import { checkAtInit, checkEnvironment } from '../shared/resource-name.js';
import { tenantsTable } from '../shared/store/tenants.js';

checkAtInit(tenantsTable);
checkEnvironment();

export const handler = apiHandler('health', {}, async () => {
  await ddb.send(new DescribeTableCommand({ TableName: tenantsTable() }));
  return { statusCode: 200, body: { status: 'ok' } };
});
