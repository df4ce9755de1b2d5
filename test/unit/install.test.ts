/**
 * What `npm ci` installs: only this platform's binaries. Every installed package whose manifest names the platforms
 * it is for (`os`, `cpu`, `libc`) must be for this one; a lock entry without those fields makes npm install every
 * platform's binary (scripts/complete-lockfile.mjs, issue 26: 1.1 GB of them).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const NODE_MODULES = path.join(ROOT, 'node_modules');

type Manifest = { name: string; os?: string[]; cpu?: string[]; libc?: string[] };

/** The top-level installed packages' manifests (scoped ones included). */
function installed(): Manifest[] {
  const manifests: Manifest[] = [];
  const read = (dir: string) => {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) manifests.push(JSON.parse(readFileSync(file, 'utf8')) as Manifest);
  };
  for (const entry of readdirSync(NODE_MODULES)) {
    if (entry.startsWith('.')) continue;
    if (entry.startsWith('@')) {
      for (const scoped of readdirSync(path.join(NODE_MODULES, entry))) read(path.join(NODE_MODULES, entry, scoped));
    } else read(path.join(NODE_MODULES, entry));
  }
  return manifests;
}

/** npm's own rule: a list allows a value it names, or everything but what it names with `!`. */
function allows(list: string[] | undefined, value: string): boolean {
  if (!list || list.length === 0) return true;
  const negated = list.filter((v) => v.startsWith('!')).map((v) => v.slice(1));
  if (negated.includes(value)) return false;
  const positive = list.filter((v) => !v.startsWith('!'));
  return positive.length === 0 || positive.includes(value);
}

function thisLibc(): string | undefined {
  if (process.platform !== 'linux') return undefined;
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  return report?.header?.glibcVersionRuntime ? 'glibc' : 'musl';
}

test('npm installed no package meant for another platform', () => {
  const libc = thisLibc();
  const foreign = installed()
    .filter(
      (m) =>
        !allows(m.os, process.platform) ||
        !allows(m.cpu, process.arch) ||
        (libc !== undefined && !allows(m.libc, libc)),
    )
    .map((m) => m.name);
  expect(foreign).toEqual([]);
});

test("onnxruntime-node keeps only this platform's binary (scripts/prune-binaries.mjs)", () => {
  const bin = path.join(NODE_MODULES, 'onnxruntime-node', 'bin');
  const kept = readdirSync(bin).flatMap((napi) =>
    readdirSync(path.join(bin, napi)).flatMap((platform) =>
      readdirSync(path.join(bin, napi, platform)).map((arch) => `${platform}/${arch}`),
    ),
  );
  expect(kept).toEqual([`${process.platform}/${process.arch}`]);
});
