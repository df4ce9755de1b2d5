/**
 * Handler bundles: every functions/*.ts bundled with the esbuild options the CDK stack uses (imported from
 * lib/vision-function.ts), its minified size, and its cold import time in a fresh `node` process.
 *
 * Variants:
 * - `deployed`: what `cdk synth` ships. Zip functions with ZIP_EXTERNAL_MODULES (the AWS SDK is bundled except the
 *   credential providers its default chain only loads lazily, SDK_LAZY_CREDENTIAL_MODULES); the worker with its
 *   native modules external (WORKER_NATIVE_MODULES), as its image packaging does.
 * - `sdk-bundled`: nothing external but the worker's native modules: the whole SDK, credential chain included.
 * - `sdk-external`: `deployed` plus `@aws-sdk/*` and `@smithy/*` external, as NodejsFunction does by default on
 *   Node.js 18+ runtimes. For the cold import the SDK is resolved from this project's node_modules (the bundles are
 *   written inside the repository), standing in for the SDK the Lambda runtime ships.
 *
 * A `deployed` bundle that imports one of ZIP_EXTERNAL_MODULES other than through `import()` is reported as an error:
 * that module would then load from the runtime's SDK at every cold start instead of being bundled.
 */
import { execFile } from 'node:child_process';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { build, type Metafile } from 'esbuild';
import {
  esbuildOptions,
  PROJECT_ROOT,
  SDK_LAZY_CREDENTIAL_MODULES,
  WORKER_NATIVE_MODULES,
  ZIP_EXTERNAL_MODULES,
} from '../lib/vision-function.js';
import { ENV } from '../shared/infra/env.js';
import { eventBus, runQueue, tables, uploadsBucket, webhookQueue } from '../shared/infra/resources.js';
import { allHandlers, type HandlerName, handlerAccess } from '../shared/infra/routes.js';
import { median, round } from './stats.js';

const run = promisify(execFile);

export const SDK_EXTERNALS = ['@aws-sdk/*', '@smithy/*'] as const;

export const VARIANTS = [
  { id: 'deployed', sdk: 'deployed' },
  { id: 'sdk-bundled', sdk: 'bundled' },
  { id: 'sdk-external', sdk: 'external' },
] as const;
export type BundleVariant = (typeof VARIANTS)[number]['id'];
/** `scheduled`: the reconciler, no API handler (the API targets do not apply to it). */
export type HandlerKind = 'api' | 'authorizer' | 'worker' | 'scheduled';

export interface BundleMeasurement {
  handler: string;
  kind: HandlerKind;
  variant: BundleVariant;
  externals: string[];
  /** Minified bundle (index.mjs), without its source map. */
  bytes: number;
  kb: number;
  mapBytes: number;
  /** Biggest contributors to the bundle, by package (bytes in the output). */
  topInputs: { input: string; bytes: number }[];
  coldImportMs: number[];
  coldImportMedianMs: number;
  error?: string;
}

export interface BundlesResult {
  esbuildOptions: Record<string, unknown>;
  /** Environment of every cold-import process besides the handler's resource variables. */
  importEnvironment: Record<string, string>;
  runsPerBundle: number;
  handlersWithoutFunction: string[];
  measurements: BundleMeasurement[];
}

/** Same defaults as the VisionFunction construct (NODE_OPTIONS) plus what the Lambda runtime always sets. */
const BASE_ENV: Record<string, string> = {
  NODE_OPTIONS: '--enable-source-maps',
  // Node.js 20 here, 22 on Lambda: silences the SDK's "upgrade to Node 22" warning, which Lambda never prints.
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'bench',
  AWS_SECRET_ACCESS_KEY: 'bench',
};

/** The resource variables `bindAccess` (lib/bind.ts) gives a handler, with placeholder values. */
function resourceEnvironment(handler: HandlerName): Record<string, string> {
  const access = handlerAccess[handler];
  const env: Record<string, string> = {};
  for (const name of Object.keys(access.tables ?? {}) as (keyof typeof tables)[]) {
    env[tables[name].envVar] = `bench-placeholder-${tables[name].id}`;
  }
  if (access.bucket) {
    env[uploadsBucket.envVar] = 'bench-placeholder-bucket';
    env[uploadsBucket.domainEnvVar] = 'bench-placeholder-bucket.s3.us-east-1.amazonaws.com';
  }
  // The dashboard names the bucket's host in its CSP, without access to it (lib/bind.ts).
  if (access.storageAddress) env[uploadsBucket.domainEnvVar] = 'bench-placeholder-bucket.s3.us-east-1.amazonaws.com';
  if (access.queue) env[runQueue.envVar] = 'https://sqs.us-east-1.amazonaws.com/000000000000/bench-placeholder';
  if (access.webhookQueue) {
    env[webhookQueue.envVar] = 'https://sqs.us-east-1.amazonaws.com/000000000000/bench-placeholder-webhooks';
    env[webhookQueue.deadLetter.envVar] = 'https://sqs.us-east-1.amazonaws.com/000000000000/bench-placeholder-dlq';
  }
  if (access.webhookSecrets) {
    env[ENV.webhookSecretStore] = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:bench-placeholder';
  }
  if (access.eventBus) env[eventBus.feedQueue.envVar] = 'https://sqs.us-east-1.amazonaws.com/000000000000/bench-feed';
  return env;
}

function topInputs(metafile: Metafile, outfile: string): { input: string; bytes: number }[] {
  const output = Object.entries(metafile.outputs).find(([file]) => path.resolve(PROJECT_ROOT, file) === outfile)?.[1];
  const byPackage = new Map<string, number>();
  for (const [file, info] of Object.entries(output?.inputs ?? {})) {
    const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.[1];
    const key = pkg ?? file.split('/').slice(0, 2).join('/');
    byPackage.set(key, (byPackage.get(key) ?? 0) + info.bytesInOutput);
  }
  return [...byPackage]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 6)
    .map(([input, bytes]) => ({ input, bytes }));
}

/**
 * Imports of `modules` (external in this bundle) other than a dynamic `import()`: such a module is loaded at every cold
 * start from wherever it resolves (in Lambda, the runtime's SDK), so it must not be external.
 */
export function nonLazyExternalImports(metafile: Metafile, modules: readonly string[]): string[] {
  const found = new Set<string>();
  for (const [file, info] of Object.entries(metafile.inputs)) {
    for (const imported of info.imports) {
      if (!imported.external || imported.kind === 'dynamic-import') continue;
      if (modules.some((m) => imported.path === m || imported.path.startsWith(`${m}/`))) {
        found.add(`${imported.path} (${imported.kind} in ${file})`);
      }
    }
  }
  return [...found];
}

/** Imports the bundle in a fresh node process; returns the milliseconds of the dynamic import alone. */
async function coldImport(file: string, env: Record<string, string>): Promise<number> {
  const code = [
    `const t0 = performance.now();`,
    `const m = await import(${JSON.stringify(pathToFileURL(file).href)});`,
    `const ms = performance.now() - t0;`,
    `if (typeof m.handler !== 'function') throw new Error('no handler export');`,
    `process.stdout.write(JSON.stringify({ ms }));`,
  ].join(' ');
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', code], {
    cwd: path.dirname(file),
    env: { PATH: process.env.PATH ?? '', ...env },
    timeout: 60_000,
  });
  return (JSON.parse(stdout) as { ms: number }).ms;
}

function shortError(error: unknown): string {
  const stderr = (error as { stderr?: string }).stderr;
  const text = stderr && stderr.length > 0 ? stderr : error instanceof Error ? error.message : String(error);
  const line = /^\w*Error[^\n]*$/m.exec(text)?.[0] ?? text;
  return line.slice(0, 300);
}

export async function measureBundles(options: {
  outDir: string;
  runs: number;
  log: (line: string) => void;
}): Promise<BundlesResult> {
  const files = (await readdir(path.join(PROJECT_ROOT, 'functions'))).filter((f) => f.endsWith('.ts')).sort();
  // The stack's functions: one per routed handler, plus UNROUTED_HANDLERS (lib/stateless-stack.ts).
  const stackHandlers = new Set<string>(allHandlers());
  const handlers = files.map((f) => f.slice(0, -3));
  const handlersWithoutFunction = handlers.filter((h) => !stackHandlers.has(h));

  await rm(options.outDir, { recursive: true, force: true });
  const measurements: BundleMeasurement[] = [];
  const imports = new Map<BundleMeasurement, { outfile: string; env: Record<string, string> }>();

  for (const { id: variant, sdk } of VARIANTS) {
    for (const handler of handlers) {
      const kind: HandlerKind =
        handler === 'worker'
          ? 'worker'
          : handler === 'authorizer'
            ? 'authorizer'
            : handler === 'reconcile'
              ? 'scheduled'
              : 'api';
      const lazy: readonly string[] = SDK_LAZY_CREDENTIAL_MODULES;
      const zip = sdk === 'bundled' ? ZIP_EXTERNAL_MODULES.filter((m) => !lazy.includes(m)) : ZIP_EXTERNAL_MODULES;
      const base = kind === 'worker' ? WORKER_NATIVE_MODULES : zip;
      const externals = sdk === 'external' ? [...new Set([...base, ...SDK_EXTERNALS])] : [...base];
      const outfile = path.join(options.outDir, variant, handler, 'index.mjs');
      await mkdir(path.dirname(outfile), { recursive: true });
      const entry: BundleMeasurement = {
        handler,
        kind,
        variant,
        externals,
        bytes: 0,
        kb: 0,
        mapBytes: 0,
        topInputs: [],
        coldImportMs: [],
        coldImportMedianMs: Number.NaN,
      };
      try {
        const result = await build({
          ...esbuildOptions(externals),
          entryPoints: [path.join(PROJECT_ROOT, 'functions', `${handler}.ts`)],
          outfile,
          metafile: true,
          logLevel: 'silent',
        });
        entry.bytes = (await stat(outfile)).size;
        entry.kb = round(entry.bytes / 1024);
        entry.mapBytes = (await stat(`${outfile}.map`)).size;
        entry.topInputs = topInputs(result.metafile, outfile);
        const eager = kind === 'worker' ? [] : nonLazyExternalImports(result.metafile, ZIP_EXTERNAL_MODULES);
        if (eager.length > 0) throw new Error(`imported eagerly but external: ${eager.join(', ')}`);
        imports.set(entry, { outfile, env: { ...BASE_ENV, ...resourceEnvironment(handler as HandlerName) } });
      } catch (error: unknown) {
        entry.error = shortError(error);
      }
      measurements.push(entry);
    }
  }
  options.log(`  ${measurements.length} bundles built; cold imports: ${options.runs} rounds over all of them`);

  // Round-robin: a burst of load elsewhere on the machine then touches every bundle alike, not one bundle's samples.
  for (let round_ = 0; round_ < options.runs; round_++) {
    for (const [entry, { outfile, env }] of imports) {
      try {
        entry.coldImportMs.push(round(await coldImport(outfile, env), 2));
      } catch (error: unknown) {
        entry.error ??= shortError(error);
      }
    }
  }
  for (const entry of measurements) {
    if (entry.coldImportMs.length > 0) entry.coldImportMedianMs = round(median(entry.coldImportMs));
    options.log(
      `  ${entry.variant.padEnd(19)} ${entry.handler.padEnd(11)} ${String(entry.kb).padStart(7)} KB  cold import ${entry.error ? `ERROR ${entry.error}` : `${entry.coldImportMedianMs} ms`}`,
    );
  }

  return {
    esbuildOptions: esbuildOptions(['<externals per variant>']),
    importEnvironment: BASE_ENV,
    runsPerBundle: options.runs,
    handlersWithoutFunction,
    measurements,
  };
}
