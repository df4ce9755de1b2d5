/**
 * Keeps DynamoDB Local on loopback. It has no option for its listen address and binds every interface, which would let
 * anyone who reaches the machine read the key table or insert a key. On Linux with a C compiler, the tiny shim
 * bind-loopback.c is compiled once (into node_modules/.cache) and preloaded into the JVM; elsewhere the stack says in
 * one line that DynamoDB Local listens on every interface. docs/decisions.md#the-local-stack-listens-on-loopback-only.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SOURCE = path.join(HERE, 'bind-loopback.c');
const CACHE = path.join(HERE, '..', '..', 'node_modules', '.cache', 'vision-local');

/** The environment that keeps a JVM's wildcard listener on 127.0.0.1, or a reason it cannot be had here. */
export function loopbackJvmEnvironment(): { env: Record<string, string> } | { unavailable: string } {
  if (process.platform !== 'linux') return { unavailable: `no preload shim on ${process.platform}` };
  // Named by the source's hash: a changed shim is built again. Built under a temporary name and renamed, so two stacks
  // starting at once never load a half-written library.
  const hash = createHash('sha256').update(readFileSync(SOURCE)).digest('hex').slice(0, 12);
  const LIBRARY = path.join(CACHE, `bind-loopback-${hash}.so`);
  if (!existsSync(LIBRARY)) {
    const partial = `${LIBRARY}.${process.pid}.tmp`;
    try {
      mkdirSync(CACHE, { recursive: true });
      execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', partial, SOURCE, '-ldl'], { stdio: 'pipe' });
      renameSync(partial, LIBRARY);
    } catch (error: unknown) {
      rmSync(partial, { force: true });
      return { unavailable: `could not compile ${path.basename(SOURCE)} (${(error as Error).message.split('\n')[0]})` };
    }
  }
  const preload = [process.env.LD_PRELOAD, LIBRARY].filter(Boolean).join(' ');
  return { env: { LD_PRELOAD: preload } };
}
