/**
 * The preload shim of DynamoDB Local's JVM, on Linux with a C compiler: bind-loopback.c keeps it on 127.0.0.1 (it has
 * no option for its listen address and binds every interface, which would let anyone who reaches the machine read the
 * key table or insert a key), and end-with-parent.c ends it with the stack that started it, even a stack killed with
 * SIGKILL. Compiled once into node_modules/.cache and preloaded; elsewhere the stack says in one line what it lacks.
 * docs/decisions.md#the-local-stack-listens-on-loopback-only.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SOURCES = ['bind-loopback.c', 'end-with-parent.c'].map((name) => path.join(HERE, name));
const CACHE = path.join(HERE, '..', '..', 'node_modules', '.cache', 'vision-local');

/**
 * The environment that keeps a JVM's wildcard listener on 127.0.0.1 and ends it with this process, or a reason it
 * cannot be had here.
 */
export function jvmShimEnvironment(): { env: Record<string, string> } | { unavailable: string } {
  if (process.platform !== 'linux') return { unavailable: `no preload shim on ${process.platform}` };
  // Named by the sources' hash: a changed shim is built again. Built under a temporary name and renamed, so two stacks
  // starting at once never load a half-written library.
  const hash = createHash('sha256');
  for (const source of SOURCES) hash.update(readFileSync(source));
  const LIBRARY = path.join(CACHE, `jvm-shim-${hash.digest('hex').slice(0, 12)}.so`);
  if (!existsSync(LIBRARY)) {
    const partial = `${LIBRARY}.${process.pid}.tmp`;
    try {
      mkdirSync(CACHE, { recursive: true });
      execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', partial, ...SOURCES, '-ldl'], { stdio: 'pipe' });
      renameSync(partial, LIBRARY);
    } catch (error: unknown) {
      rmSync(partial, { force: true });
      return {
        unavailable: `could not compile ${SOURCES.map((s) => path.basename(s)).join(' and ')} (${(error as Error).message.split('\n')[0]})`,
      };
    }
  }
  const preload = [process.env.LD_PRELOAD, LIBRARY].filter(Boolean).join(' ');
  return { env: { LD_PRELOAD: preload, VISION_LOCAL_STACK_PID: String(process.pid) } };
}
