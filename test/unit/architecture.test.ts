/**
 * The layers of shared/ (docs/architecture.md), read from the code's own imports: no module imports from a layer above
 * its own or from another room of its layer, and no import cycle exists anywhere in shared/.
 */
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Each room of shared/ (a folder, or a file directly in shared/) and its layer, bottom first. A room imports only
 * rooms of lower layers. A new room must be placed here.
 */
const LAYERS: readonly (readonly string[])[] = [
  // Data the CDK stack and the local stack share: routes, resources, environment variable names, metric names.
  ['infra'],
  // Plumbing everything may use: facts of a file, money, errors, logging, resource names.
  ['file-facts', 'money', 'errors', 'log', 'zod', 'json-limits', 'resource-name', 'dashboard'],
  // The task and failure vocabulary.
  ['task'],
  // Per-field evidence: the words on the pages and grounding a result on them (pure).
  ['fields'],
  // Scoring answers against expected values: comparison by field type, calibration, an evaluation's report (pure).
  ['scoring'],
  // Configuration and the AWS clients.
  ['config', 'metrics', 'aws'],
  // The contract, prices, and what a file is: inspection (the API) and preparation (the worker).
  ['contract', 'pricing', 'inspect', 'media'],
  // Persistence, uploads, HTTP plumbing, schemas, and the providers.
  ['store', 'uploads', 'http', 'openapi', 'registry', 'providers'],
  // Which providers run a task, and what it may cost; which waiting requests go out in which batch, and when.
  ['planning', 'batching'],
  // Packets: page evidence, boundaries and classes, the split result and its estimate (pure; the API and worker use it).
  ['packets'],
  // The API's use cases.
  ['runs'],
  // Evaluations and accuracy from reviews: the API's use cases built on runs (and the reconciler's part for them).
  ['evaluations'],
  // Run events: the webhook routes' use cases, dispatch from the outbox, delivery.
  ['events'],
  // The worker's use cases.
  ['worker'],
];

const layerOf = new Map(LAYERS.flatMap((rooms, layer) => rooms.map((room) => [room, layer] as const)));

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(rel);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [rel] : [];
  });
}

/** The shared/ files a file imports (static, type-only, re-exports and `import()` with a literal path). */
function importsOf(file: string): string[] {
  const text = readFileSync(path.join(ROOT, file), 'utf8');
  const specifiers = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)'(\.{1,2}\/[^']+)'/g)].map((m) => m[1] ?? '');
  return specifiers
    .map((spec) => path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)).replace(/\.js$/, '.ts'))
    .filter((target) => target.startsWith('shared/') && target.endsWith('.ts'));
}

/** `shared/store/runs.ts` → `store`; `shared/config.ts` → `config`. */
const roomOf = (file: string): string => file.split('/')[1]?.replace(/\.ts$/, '') ?? file;

const files = sourceFiles('shared');
const graph = new Map(files.map((file) => [file, importsOf(file)]));

describe('the layers of shared/', () => {
  test('every room of shared/ has a layer', () => {
    expect([...new Set(files.map(roomOf))].filter((room) => !layerOf.has(room))).toEqual([]);
  });

  test('no module imports from a layer above it or from another room of its own layer', () => {
    const wrong: string[] = [];
    for (const [file, targets] of graph) {
      for (const target of targets) {
        const [from, to] = [roomOf(file), roomOf(target)];
        if (from === to) continue;
        if ((layerOf.get(to) ?? Infinity) >= (layerOf.get(from) ?? -1)) wrong.push(`${file} -> ${target}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  test('no import cycle anywhere in shared/', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (file: string, trail: string[]): void => {
      state.set(file, 'open');
      for (const target of graph.get(file) ?? []) {
        if (state.get(target) === 'open') cycles.push([...trail.slice(trail.indexOf(target)), target].join(' -> '));
        else if (!state.has(target) && graph.has(target)) visit(target, [...trail, target]);
      }
      state.set(file, 'done');
    };
    for (const file of files) if (!state.has(file)) visit(file, [file]);
    expect(cycles).toEqual([]);
  });

  test('every docs/decisions.md#heading a module cites exists (GitHub anchors)', () => {
    const slug = (heading: string) =>
      heading
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\- _]/gu, '')
        .replace(/ /g, '-');
    const anchors = new Set(
      [...readFileSync(path.join(ROOT, 'docs', 'decisions.md'), 'utf8').matchAll(/^#+ (.+)$/gm)].map((m) =>
        slug(m[1] ?? ''),
      ),
    );
    const cited = [...files, ...sourceFiles('functions'), ...sourceFiles('lib'), ...sourceFiles('scripts')].flatMap(
      (file) =>
        [...readFileSync(path.join(ROOT, file), 'utf8').matchAll(/decisions\.md#([\w-]+)/g)].map(
          (m) => `${file}: ${m[1]}`,
        ),
    );
    expect(cited.length).toBeGreaterThan(10);
    expect(cited.filter((c) => !anchors.has(c.split(': ')[1] ?? ''))).toEqual([]);
  });

  test('the check reads imports: the worker reaches the providers, the API handlers the store', () => {
    expect(graph.get('shared/worker/single-pass.ts')?.some((t) => t.startsWith('shared/providers/'))).toBe(true);
    expect(graph.get('shared/runs/create-run.ts')?.some((t) => t.startsWith('shared/store/'))).toBe(true);
  });
});
