/**
 * The local stack's data folder (`.local-data/` unless VISION_LOCAL_DATA_DIR names another): DynamoDB Local's
 * database (`dynamodb/`), a copy of every stored S3 object (`s3/`, s3-mirror.ts) and the generated dev key
 * (`dev-key`), kept across restarts. `--fresh` empties it first but keeps the dev key, so the key a shell exported or a
 * dashboard holds still works, and says what it removed. Not to undo: one stack at a time per folder (a lock file names
 * its pid), since two DynamoDB Local processes on one database file corrupt it.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

export const DEFAULT_DATA_DIR = fileURLToPath(new URL('../../.local-data', import.meta.url));

export interface DataDir {
  path: string;
  dynamodb: string;
  s3: string;
  /** True when the folder held a database from an earlier run (not new, not emptied by --fresh). */
  hadData: boolean;
  /** What `--fresh` removed: the database's size (every tenant, key, run and ledger entry) and the stored files. */
  removed?: Removed;
  /** Removes the lock (the stack calls it as it stops). */
  release(): Promise<void>;
}

export class DataDirInUse extends Error {
  constructor(
    readonly dir: string,
    readonly pid: number,
  ) {
    super(`the data folder ${dir} is in use by another local stack (pid ${pid})`);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error: unknown) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function lock(file: string): Promise<void> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await writeFile(file, `${process.pid}\n`, { flag: 'wx' });
      return;
    } catch (error: unknown) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number.parseInt(await readFile(file, 'utf8').catch(() => ''), 10);
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner)) {
        throw new DataDirInUse(path.dirname(file), owner);
      }
      // Left by a stack that died: take it over.
      await rm(file, { force: true });
    }
  }
  throw new Error(`could not lock ${file}`);
}

export interface Removed {
  databaseBytes: number;
  files: number;
}

/** The bytes of every file under `dir`, and how many stored objects it holds (s3-mirror.ts keeps one `.json` each). */
async function contents(dir: string): Promise<{ bytes: number; objects: number }> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  let bytes = 0;
  let objects = 0;
  for (const entry of entries.filter((e) => e.isFile())) {
    // `parentPath` from Node 20.12 (`path` before it, deprecated since).
    const parent = (entry as { parentPath?: string }).parentPath ?? entry.path;
    bytes += (await stat(path.join(parent, entry.name)).catch(() => ({ size: 0 }))).size;
    if (entry.name.endsWith('.json')) objects += 1;
  }
  return { bytes, objects };
}

/** The line `--fresh` prints: what it removed, and that the dev key is kept. */
export function freshSummary(dir: string, removed: Removed): string {
  if (removed.databaseBytes === 0 && removed.files === 0) return `--fresh: ${dir} held no data; nothing was removed`;
  const mb = (removed.databaseBytes / 1_000_000).toFixed(1);
  return (
    `--fresh: removed the database in ${dir} (${mb} MB: every tenant, API key, run, ledger entry and webhook) and ` +
    `${removed.files} stored file${removed.files === 1 ? '' : 's'} (uploads and page images); ` +
    'a generated dev key is kept, so an exported VISION_API_KEY or an open dashboard keeps working'
  );
}

/** Creates (or, with `fresh`, empties) the data folder and locks it for this process. */
export async function openDataDir(dir: string, options: { fresh: boolean }): Promise<DataDir> {
  const root = path.resolve(dir);
  await mkdir(root, { recursive: true });
  const lockFile = path.join(root, 'stack.lock');
  await lock(lockFile);
  const dynamodb = path.join(root, 'dynamodb');
  const s3 = path.join(root, 's3');
  let removed: Removed | undefined;
  if (options.fresh) {
    // The dev key stays: the stack puts it back in the new database, so the key handed out before still works.
    removed = { databaseBytes: (await contents(dynamodb)).bytes, files: (await contents(s3)).objects };
    for (const sub of [dynamodb, s3]) await rm(sub, { recursive: true, force: true });
  }
  // -sharedDb keeps every table in this one file.
  const hadData = existsSync(path.join(dynamodb, 'shared-local-instance.db'));
  await mkdir(dynamodb, { recursive: true });
  await mkdir(s3, { recursive: true });
  return {
    path: root,
    dynamodb,
    s3,
    hadData,
    ...(removed ? { removed } : {}),
    release: () => rm(lockFile, { force: true }),
  };
}

/** The dev key this folder's stack generated (made and kept on first use), so a restart keeps the same key. */
export async function generatedDevKey(dataDir: DataDir): Promise<string> {
  const file = path.join(dataDir.path, 'dev-key');
  const kept = (await readFile(file, 'utf8').catch(() => '')).trim();
  if (/^vk_dev_[A-Za-z0-9_-]{20,}$/.test(kept)) return kept;
  const key = `vk_dev_${randomBytes(24).toString('base64url')}`;
  await writeFile(file, `${key}\n`, { mode: 0o600 });
  return key;
}
