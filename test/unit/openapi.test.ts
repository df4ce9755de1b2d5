import { readFileSync } from 'node:fs';
import { routes } from '../../shared/infra/routes.js';
import { buildOpenApi } from '../../shared/openapi.js';

describe('OpenAPI document', () => {
  test('the committed docs/openapi.json matches the contract (run `npm run openapi` after changing it)', () => {
    const committed = JSON.parse(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8'));
    expect(committed).toEqual(JSON.parse(JSON.stringify(buildOpenApi())));
  });

  test('documents every route with its success status and the create-run errors of the contract', () => {
    const doc = buildOpenApi() as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
    for (const route of routes) {
      const operation = doc.paths[route.path]?.[route.method.toLowerCase()];
      // Dashboard pages are HTML for browsers, not API operations.
      if (route.kind === 'page') expect(operation).toBeUndefined();
      else expect(operation).toBeDefined();
    }
    expect(doc.paths['/v1/runs/{jobId}/file']?.get?.responses).toHaveProperty('404');
    const create = doc.paths['/v1/runs']?.post?.responses ?? {};
    expect(Object.keys(create).sort()).toEqual([
      '202',
      '400',
      '401',
      '402',
      '403',
      '404',
      '409',
      '413',
      '415',
      '422',
      '429',
      '500',
    ]);
  });
});
