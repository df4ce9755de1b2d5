/**
 * The SDK as its own package (sdk/package.json, `@vision-analysis/sdk`): the committed dist/ is the build of the
 * source; `npm pack` ships only dist/, the README and package.json, with no dependencies, under 100 KB; a TypeScript
 * project with the strictest common flags compiles against the packed types, and plain Node.js runs the packed code
 * (as it runs the service package's own `vision-analysis-service/sdk` export).
 * Each external step (tsc, npm pack) runs once: they take seconds.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { buildSdk, SDK_DIST_DIR } from '../../sdk/build.js';
import { SDK_VERSION } from '../../sdk/index.js';

const run = promisify(execFile);
const ROOT = new URL('../..', import.meta.url).pathname;
const SDK_DIR = join(ROOT, 'sdk');

/** What `npm pack --json` says of one package. */
interface Packed {
  filename: string;
  size: number;
  files: { path: string; size: number }[];
}

// The brief's strictest common flags. The lib files are not checked (skipDefaultLibCheck) but every other declaration
// file is, the SDK's included. DOM's globals stand in for Node's (fetch, Blob, AbortSignal: what the SDK's types
// name) so that no @types/node is checked: seconds less, and the types must not lean on Node-only names.
const STRICT = {
  target: 'ES2022',
  lib: ['ES2023', 'DOM'],
  types: [],
  module: 'NodeNext',
  moduleResolution: 'NodeNext',
  strict: true,
  exactOptionalPropertyTypes: true,
  noPropertyAccessFromIndexSignature: true,
  noUncheckedIndexedAccess: true,
  noImplicitOverride: true,
  noImplicitReturns: true,
  verbatimModuleSyntax: true,
  isolatedModules: true,
  skipLibCheck: false,
  skipDefaultLibCheck: true,
  noEmit: true,
};

// Uses the API as a user's code would; each @ts-expect-error must be an error, so types that were `any` would fail.
const CONSUMER = `
import { type AnalyzeParams, type CompletedRun, type ProgressEvent, type RunResponse, VisionClient, VisionError,
  isSchemaRun } from '@vision-analysis/sdk';

const env: Record<string, string | undefined> = { VISION_SCHEMA: 'receipt' };
const schemaId = env['VISION_SCHEMA'];
const client = new VisionClient({ baseUrl: 'http://127.0.0.1:8787', apiKey: 'vk_x', retry: { retries: undefined } });
const params: AnalyzeParams = { prompt: 'Extract', schemaId, metadata: { source: 'consumer', n: 1 } };

export async function total(): Promise<number> {
  try {
    const run: CompletedRun = await client.analyze('receipt.png', params, {
      timeoutMs: 1000,
      onProgress: (event: ProgressEvent) => console.error(event.stage, event.progress?.pagesDone),
    });
    const value = run.result['total'];
    // @ts-expect-error result values are unknown until the caller checks them
    value.toFixed(2);
    // @ts-expect-error an attempt may be missing (noUncheckedIndexedAccess)
    console.log(run.attempts[0].provider);
    return typeof value === 'number' ? value : run.chargedUsd;
  } catch (error) {
    if (error instanceof VisionError && error.run) return error.run.error.status;
    throw error;
  }
}

// A built-in schema's run is typed: its fields are there, each its type or null.
export async function receiptTotal(): Promise<number | null> {
  const receipt = await client.analyze('receipt.png', { prompt: 'Extract', schemaId: 'receipt' });
  // @ts-expect-error the merchant may be null (not found in the document)
  receipt.result.merchant.toUpperCase();
  // @ts-expect-error a receipt has no such field
  console.log(receipt.result.iban);
  return receipt.result.total;
}

export function invoiceVendor(run: RunResponse): string | null {
  return isSchemaRun(run, 'invoice') ? run.result.vendor : null;
}

export function describe(run: RunResponse): string {
  switch (run.status) {
    case 'queued':
      return \`\${run.stage} \${run.progress ? \`\${run.progress.pagesDone}/\${run.progress.pagesTotal}\` : ''}\`;
    case 'completed':
      return \`\${run.strategy} \${run.file.name ?? ''} \${run.verification?.accepted ?? false}\`;
    case 'failed':
      return run.error.code;
  }
}
`;

// Plain Node.js, no TypeScript loader: the packed code runs and the client works (against a scripted fetch).
const RUNTIME = `
import { VisionClient, VisionError, SDK_VERSION } from '@vision-analysis/sdk';
const client = new VisionClient({ baseUrl: 'http://svc.test', apiKey: 'k',
  fetch: async () => new Response(JSON.stringify({ status: 'ok' }), { status: 200 }) });
const health = await client.health();
const refused = await client.getRun('x', { signal: AbortSignal.abort() }).catch((e) => e);
console.log(JSON.stringify({ health, aborted: refused instanceof VisionError && refused.code, version: SDK_VERSION }));
`;

describe('the SDK package', () => {
  let scratch: string;
  let packed: Packed;

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'vision-sdk-consumer-'));
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: SDK_DIR });
    packed = (JSON.parse(stdout) as Packed[])[0] as Packed;
    // Installed as npm would: the tarball's package/ folder under node_modules/<name>.
    const scope = join(scratch, 'node_modules', '@vision-analysis');
    mkdirSync(scope, { recursive: true });
    await run('tar', ['-xzf', join(scratch, packed.filename), '-C', scope]);
    renameSync(join(scope, 'package'), join(scope, 'sdk'));
    writeFileSync(join(scratch, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module', private: true }));
  });
  afterAll(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  test('the committed sdk/dist is the build of the source (run `npm run build` after changing the SDK)', async () => {
    const built = await buildSdk();
    expect(readdirSync(SDK_DIST_DIR).sort()).toEqual([...built.keys()].sort());
    for (const [name, text] of built)
      expect({ name, text: readFileSync(join(SDK_DIST_DIR, name), 'utf8') }).toEqual({ name, text });
  });

  test('npm pack ships dist, the README and package.json only: no dependencies, under 100 KB', () => {
    expect(packed.files.map((f) => f.path).sort()).toEqual([
      'README.md',
      'dist/index.d.ts',
      'dist/index.mjs',
      'dist/schemas.d.ts',
      'dist/types.d.ts',
      'package.json',
    ]);
    expect(packed.size).toBeLessThan(100 * 1024);
    const manifest = JSON.parse(readFileSync(join(SDK_DIR, 'package.json'), 'utf8'));
    expect(manifest.name).toMatch(/^@[a-z0-9-]+\/[a-z0-9-]+$/);
    expect(manifest.private).toBeUndefined();
    for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies']) {
      expect({ field, value: manifest[field] }).toEqual({ field, value: undefined });
    }
    expect(manifest.version).toBe(SDK_VERSION);
    // The code imports nothing but Node built-ins.
    const code = readFileSync(join(SDK_DIST_DIR, 'index.mjs'), 'utf8');
    const imports = [...code.matchAll(/^import .* from ["']([^"']+)["'];?$/gm)].map((m) => m[1]);
    expect(imports.length).toBeGreaterThan(0);
    expect(imports.filter((spec) => !spec?.startsWith('node:'))).toEqual([]);
  });

  test('a project compiled with the strictest common flags type-checks against the packed types', async () => {
    writeFileSync(join(scratch, 'consumer.ts'), CONSUMER);
    writeFileSync(
      join(scratch, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: STRICT, files: ['consumer.ts'] }, null, 2),
    );
    const tsc = join(ROOT, 'node_modules', '.bin', 'tsc');
    const result = await run(tsc, ['-p', join(scratch, 'tsconfig.json')]).catch((error: { stdout?: string }) => ({
      stdout: error.stdout ?? String(error),
    }));
    expect(result.stdout).toBe('');
  });

  test('plain Node.js runs the packed code, and the service package still exports it as ./sdk', async () => {
    writeFileSync(join(scratch, 'runtime.mjs'), RUNTIME);
    const env = { PATH: process.env.PATH ?? '' };
    const packedRun = await run(process.execPath, [join(scratch, 'runtime.mjs')], { cwd: scratch, env });
    const expected = { health: { status: 'ok' }, aborted: 'ABORTED', version: SDK_VERSION };
    expect(JSON.parse(packedRun.stdout)).toEqual(expected);

    const own = RUNTIME.replace("'@vision-analysis/sdk'", "'vision-analysis-service/sdk'");
    const ownRun = await run(process.execPath, ['--input-type=module', '-e', own], { cwd: ROOT, env });
    expect(JSON.parse(ownRun.stdout)).toEqual(expected);
  });
});
