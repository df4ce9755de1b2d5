/**
 * Builds the SDK package's dist/ (`npm run build`, or `npm run build:sdk`): sdk/index.ts bundled by esbuild into one ES
 * module whose only imports are Node built-ins (dist/index.mjs), and its declarations by `tsc -p sdk/tsconfig.json`
 * (dist/index.d.ts, dist/types.d.ts), which also checks the SDK under the strictest common compiler flags.
 * Not to undo: dist/ is committed, so `npm install <repo>/sdk` works from a clone without the service's dependencies;
 * test/unit/sdk-package.test.ts fails when it no longer matches the source.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';

const run = promisify(execFile);
const SDK_DIR = new URL('.', import.meta.url).pathname;
export const SDK_DIST_DIR = join(SDK_DIR, 'dist');
/** The `tsc` of the repository's TypeScript, run as a program (no compiler API: TypeScript 7's is a native binary). */
const TSC = new URL('../node_modules/.bin/tsc', import.meta.url).pathname;

/** Every file of dist/ (name → text), built without touching dist/. */
export async function buildSdk(): Promise<Map<string, string>> {
  const bundle = await build({
    entryPoints: [join(SDK_DIR, 'index.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    legalComments: 'none',
    write: false,
    banner: { js: '// Generated from sdk/index.ts by `npm run build`: do not edit.' },
  });
  const files = new Map([['index.mjs', bundle.outputFiles[0]?.text ?? '']]);
  const scratch = mkdtempSync(join(tmpdir(), 'vision-sdk-dts-'));
  try {
    await run(TSC, ['-p', join(SDK_DIR, 'tsconfig.json'), '--outDir', scratch]);
    for (const name of readdirSync(scratch).sort()) files.set(name, readFileSync(join(scratch, name), 'utf8'));
  } catch (error) {
    // tsc prints its diagnostics on stdout.
    const out = (error as { stdout?: string }).stdout ?? '';
    throw new Error(`tsc -p sdk/tsconfig.json failed:\n${out || (error as Error).message}`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return files;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const files = await buildSdk();
  rmSync(SDK_DIST_DIR, { recursive: true, force: true });
  mkdirSync(SDK_DIST_DIR);
  for (const [name, text] of files) writeFileSync(join(SDK_DIST_DIR, name), text);
  process.stdout.write(`wrote ${[...files.keys()].map((n) => `sdk/dist/${n}`).join(', ')}\n`);
}
