/**
 * The SDK as plain JavaScript (`npm run sdk`): sdk/index.ts bundled by esbuild into one ES module with no imports but
 * Node built-ins (its only other imports are types), so that `import … from 'vision-analysis-service/sdk'` runs in
 * plain Node.js 20+, without a TypeScript loader. TypeScript users get the types from sdk/index.ts (package.json
 * `exports`). The output is committed; test/unit/sdk-dist.test.ts fails when it no longer matches the source.
 */
import { writeFileSync } from 'node:fs';
import { build } from 'esbuild';

export const SDK_OUTFILE = new URL('./dist/index.mjs', import.meta.url);

/** The bundle's text, built in memory. */
export async function buildSdk(): Promise<string> {
  const result = await build({
    entryPoints: [new URL('./index.ts', import.meta.url).pathname],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    legalComments: 'none',
    write: false,
    banner: { js: '// Generated from sdk/index.ts by `npm run sdk`: do not edit.' },
  });
  return result.outputFiles[0]?.text ?? '';
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(SDK_OUTFILE, await buildSdk());
  process.stdout.write(`wrote ${SDK_OUTFILE.pathname}\n`);
}
