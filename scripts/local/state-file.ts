/**
 * Where a running stack leaves its coordinates for tools (`npm run keys`): `{endpoints, resources, baseUrl, pid}`.
 * VISION_LOCAL_STATE_FILE overrides the path. The first running stack owns the file: a second stack (e.g. the
 * integration suite's) leaves a live owner's file alone, and a stack removes the file on shutdown only if it is its own.
 */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const stateFile = resolve(
  process.env.VISION_LOCAL_STATE_FILE || fileURLToPath(new URL('../../.local-data/stack.json', import.meta.url)),
);

function isAlive(pid: unknown): boolean {
  if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error: unknown) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function stateFilePid(): Promise<number | undefined> {
  try {
    const pid = (JSON.parse(await readFile(stateFile, 'utf8')) as { pid?: unknown }).pid;
    return typeof pid === 'number' ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Writes the state file (atomically) unless another live stack owns it; returns whether this stack owns it now. */
export async function writeStateFile(state: Record<string, unknown>): Promise<boolean> {
  const owner = await stateFilePid();
  if (owner !== undefined && owner !== process.pid && isAlive(owner)) return false;
  await mkdir(dirname(stateFile), { recursive: true });
  const tmp = `${stateFile}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify({ ...state, pid: process.pid }, null, 2)}\n`, { mode: 0o600 });
  await rename(tmp, stateFile);
  return true;
}

export async function removeStateFile(): Promise<void> {
  if ((await stateFilePid()) === process.pid) await rm(stateFile, { force: true });
}
