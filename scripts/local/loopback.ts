/**
 * Keeps DynamoDB Local on loopback. It has no option for its listen address and binds every interface, which would let
 * anyone who reaches the machine read the key table or insert a key. On Linux with a C compiler, the tiny shim
 * bind-loopback.c is compiled once (into node_modules/.cache) and preloaded into the JVM; elsewhere the stack says in
 * one line that DynamoDB Local listens on every interface. docs/decisions.md#the-local-stack-listens-on-loopback-only.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SOURCE = path.join(HERE, 'bind-loopback.c');
const LIBRARY = path.join(HERE, '..', '..', 'node_modules', '.cache', 'vision-local', 'bind-loopback.so');

/** The environment that keeps a JVM's wildcard listener on 127.0.0.1, or a reason it cannot be had here. */
export function loopbackJvmEnvironment(): { env: Record<string, string> } | { unavailable: string } {
  if (process.platform !== 'linux') return { unavailable: `no preload shim on ${process.platform}` };
  if (!existsSync(LIBRARY)) {
    try {
      mkdirSync(path.dirname(LIBRARY), { recursive: true });
      execFileSync('cc', ['-shared', '-fPIC', '-O2', '-o', LIBRARY, SOURCE, '-ldl'], { stdio: 'pipe' });
    } catch (error: unknown) {
      return { unavailable: `could not compile ${path.basename(SOURCE)} (${(error as Error).message.split('\n')[0]})` };
    }
  }
  const preload = [process.env.LD_PRELOAD, LIBRARY].filter(Boolean).join(' ');
  return { env: { LD_PRELOAD: preload } };
}
