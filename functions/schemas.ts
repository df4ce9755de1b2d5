/** GET /v1/schemas — the built-in schema registry. */
import { apiHandler } from '../shared/http.js';
import { listSchemas } from '../shared/registry/registry.js';
import { checkEnvironment } from '../shared/resource-name.js';

checkEnvironment();

export const handler = apiHandler('schemas', {}, async () => ({ statusCode: 200, body: listSchemas() }));
