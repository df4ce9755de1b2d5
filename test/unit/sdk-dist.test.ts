/** The SDK as plain JavaScript (sdk/dist/index.mjs, built by `npm run sdk`): current, and importable without a TypeScript loader. */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { buildSdk, SDK_OUTFILE } from '../../sdk/build.js';

const run = promisify(execFile);

test('the committed sdk/dist/index.mjs is the build of sdk/index.ts (run `npm run sdk` after changing the SDK)', async () => {
  expect(readFileSync(SDK_OUTFILE, 'utf8')).toBe(await buildSdk());
});

test("plain Node.js imports 'vision-analysis-service/sdk' (no TypeScript loader) and the client works", async () => {
  // A bare `node` (jest's NODE_OPTIONS carry no loader either, but be explicit), resolving the package's own name.
  const script = `
    import { VisionClient, VisionError } from 'vision-analysis-service/sdk';
    const client = new VisionClient({ baseUrl: 'http://svc.test', apiKey: 'k',
      fetch: async () => new Response(JSON.stringify({ status: 'ok' }), { status: 200 }) });
    const health = await client.health();
    const refused = await client.getRun('x', { signal: AbortSignal.abort() }).catch((e) => e);
    console.log(JSON.stringify({ health, aborted: refused instanceof VisionError && refused.code }));
  `;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
    cwd: new URL('../..', import.meta.url).pathname,
    env: { PATH: process.env.PATH ?? '' },
  });
  expect(JSON.parse(stdout)).toEqual({ health: { status: 'ok' }, aborted: 'ABORTED' });
});
