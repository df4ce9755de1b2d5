/**
 * test/support/node-bundle.ts: what the tests spawn instead of `node --import tsx`. A bundled program must see each
 * source file's own `import.meta.url` (paths to native addons and assets are built from it), the entry its bundle's
 * (its "am I the program" check), and bundles not used for a day are removed when a new one is written.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { bundled, bundledProgram } from '../support/node-bundle.js';

const run = promisify(execFile);
let dir = '';
/** The bundles this file writes (each with a nonce, so never used again). */
const written: string[] = [];

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'node-bundle-'));
  mkdirSync(path.join(dir, 'lib'));
  writeFileSync(path.join(dir, 'lib', 'where.ts'), 'export const where: string = import.meta.url;\n');
  // A nonce, so that each run writes a bundle of its own (and so removes stale ones).
  writeFileSync(
    path.join(dir, 'entry.ts'),
    `import { where } from './lib/where.js';\n` +
      `const nonce: string = ${JSON.stringify(`${process.pid}-${Date.now()}`)};\n` +
      `console.log(JSON.stringify({ nonce, entry: import.meta.url, lib: where, args: process.argv.slice(2) }));\n`,
  );
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  for (const file of written) rmSync(file, { force: true });
});

test('each source keeps its own import.meta.url and the entry the bundle’s; arguments reach the program', async () => {
  const program = await bundledProgram(path.join(dir, 'entry.ts'));
  const { stdout } = await run(process.execPath, [...program, 'a', 'b']);
  const seen = JSON.parse(stdout) as { entry: string; lib: string; args: string[] };
  expect(seen.lib).toBe(pathToFileURL(path.join(dir, 'lib', 'where.ts')).href);
  expect(seen.entry).toBe(pathToFileURL(program.at(-1) as string).href);
  expect(seen.args).toEqual(['a', 'b']);
});

test('one build per entry and process; a new bundle removes those unused for a day, and keeps the others', async () => {
  const first = await bundled(path.join(dir, 'entry.ts'));
  written.push(first);
  expect(await bundled(path.join(dir, 'entry.ts'))).toBe(first);

  const outDir = path.dirname(first);
  const stale = path.join(outDir, 'stale-0000000000000000.mjs');
  const recent = path.join(outDir, 'recent-0000000000000000.mjs');
  writeFileSync(stale, '');
  writeFileSync(recent, '');
  const twoDaysAgo = new Date(Date.now() - 48 * 3600_000);
  utimesSync(stale, twoDaysAgo, twoDaysAgo);
  try {
    // Another entry with content of its own: a new bundle is written.
    const other = path.join(dir, 'other.ts');
    writeFileSync(other, `console.log(${JSON.stringify(`other-${process.pid}-${Date.now()}`)});\n`);
    written.push(await bundled(other));
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(recent)).toBe(true);
    expect(existsSync(first)).toBe(true);
  } finally {
    rmSync(stale, { force: true });
    rmSync(recent, { force: true });
  }
});
