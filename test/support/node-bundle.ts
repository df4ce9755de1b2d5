/**
 * A TypeScript program bundled for plain `node`: what the tests spawn instead of `node --import tsx FILE`, which
 * pays tsx's loader (a hooks thread, a transform per module) in every process — ~3.5 CPU-seconds of each local
 * stack's start, ~0.6 of each CLI run. The bundle is the same sources: packages stay external (resolved from this
 * project's node_modules, as under tsx), and each source file keeps its own `import.meta.url` so that paths built from
 * it (native addons, the dashboard's assets, DynamoDB Local) are those of the file that wrote them. The entry keeps
 * the bundle's own, so its "am I the program" check (`process.argv[1]`) holds.
 * Built once per process and entry, written under a name of its content's hash (a rename: concurrent builds of the
 * same sources write the same file), with an inline source map so stack traces name the sources.
 */
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const OUT_DIR = path.join(ROOT, 'node_modules', '.cache', 'vision-test-bundles');

/** Each non-entry source file's `import.meta.url` becomes its own file URL. */
function ownImportMetaUrl(entry: string): Plugin {
  return {
    name: 'own-import-meta-url',
    setup(b) {
      b.onLoad({ filter: /\.[cm]?ts$/ }, (args) => {
        const text = readFileSync(args.path, 'utf8');
        if (args.path === entry) return { contents: text, loader: 'ts' };
        return {
          contents: text.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)),
          loader: 'ts',
        };
      });
    },
  };
}

async function bundle(entry: string): Promise<string> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: 'inline',
    plugins: [ownImportMetaUrl(entry)],
    logLevel: 'error',
  });
  const code = result.outputFiles[0]?.contents;
  if (!code) throw new Error(`esbuild produced nothing for ${entry}`);
  const hash = createHash('sha256').update(code).digest('hex').slice(0, 16);
  const file = path.join(OUT_DIR, `${path.basename(entry, path.extname(entry))}-${hash}.mjs`);
  if (existsSync(file)) {
    utimesSync(file, new Date(), new Date());
  } else {
    mkdirSync(OUT_DIR, { recursive: true });
    const partial = `${file}.${process.pid}.partial`;
    writeFileSync(partial, code);
    renameSync(partial, file);
    removeStale(path.basename(file));
  }
  return file;
}

/** A bundle is ~4 MB and each edit of its sources makes a new one: those not used for a day go. */
function removeStale(kept: string): void {
  const dayAgo = Date.now() - 24 * 3600_000;
  for (const name of readdirSync(OUT_DIR)) {
    const file = path.join(OUT_DIR, name);
    const written = statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? Date.now();
    if (name !== kept && written < dayAgo) rmSync(file, { force: true });
  }
}

const built = new Map<string, Promise<string>>();

/** The bundle of a project TypeScript file (a path relative to the project root, or absolute). */
export function bundled(file: string): Promise<string> {
  const entry = path.resolve(ROOT, file);
  let program = built.get(entry);
  if (!program) {
    program = bundle(entry);
    built.set(entry, program);
  }
  return program;
}

/** The `node` arguments that run a project TypeScript file as a program, bundled: ready for its own arguments. */
export async function bundledProgram(file: string): Promise<string[]> {
  return ['--enable-source-maps', await bundled(file)];
}
