/**
 * Starts and stops the real local stack (`scripts/local.ts`) as a child process, as a user's `npm start` would, and
 * tells tests where it is. The program is bundled once per process (test/support/node-bundle.ts): the same sources
 * without tsx's loader, which made most of each start's CPU; `npm start` itself is tested as it is by
 * local-stack-lifecycle.test.ts. Used by the integration suite's globalSetup/globalTeardown and by the benchmark. Each
 * stack starts empty, with its data in a private temporary folder removed when it stops, unless the caller names the
 * folder (VISION_LOCAL_DATA_DIR) to see data kept across restarts.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
// Named with its .ts extension: jest's globalSetup loads this module without the suite's moduleNameMapper.
import { bundledProgram } from '../support/node-bundle.ts';

export interface StackInfo {
  baseUrl: string;
  /** The stack's own process (DynamoDB Local is a child of it). */
  pid: number;
  endpoints: { dynamodb: string; s3: string; sqs: string };
  resources: {
    tables: Record<string, string>;
    bucket: string;
    queueUrl: string;
    deadLetterQueueUrl: string;
    webhookQueueUrl: string;
    webhookDeadLetterQueueUrl: string;
  };
}

export interface RunningStack {
  info: StackInfo;
  process: ChildProcess;
  /** Everything the stack printed (for diagnosing failures). */
  output: string[];
  /** Its data folder. */
  dataDir: string;
  stop(): Promise<void>;
}

/** Spawns the local stack with extra environment (and `npm start -- args`) and resolves when it prints its READY line. */
export async function startStack(
  env: Record<string, string>,
  timeoutMs = 120_000,
  args: string[] = [],
): Promise<RunningStack> {
  // Without a data folder of the caller's, the stack keeps nothing (--in-memory: DynamoDB Local is several times
  // faster in memory); the folder is still a private one, so no test can touch a developer's `.local-data/`.
  const ownDataDir = env.VISION_LOCAL_DATA_DIR === undefined;
  const dataDir = env.VISION_LOCAL_DATA_DIR ?? mkdtempSync(join(tmpdir(), 'vision-stack-'));
  const stackArgs = ownDataDir && !args.includes('--in-memory') ? [...args, '--in-memory'] : args;
  const child = spawn(process.execPath, [...(await bundledProgram('scripts/local.ts')), ...stackArgs], {
    cwd: new URL('../..', import.meta.url).pathname,
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'warn', VISION_LOCAL_DATA_DIR: dataDir, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const removeDataDir = () => {
    if (ownDataDir) rmSync(dataDir, { recursive: true, force: true });
  };
  const output: string[] = [];
  // stdio is 'pipe' above, so both streams exist.
  createInterface({ input: child.stderr as NodeJS.ReadableStream }).on('line', (line) => output.push(line));
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });

  const info = await new Promise<StackInfo>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`local stack not ready in ${timeoutMs} ms:\n${output.join('\n')}`)),
      timeoutMs,
    );
    lines.on('line', (line) => {
      output.push(line);
      if (line.startsWith('VISION_LOCAL_READY ')) {
        clearTimeout(timer);
        resolve(JSON.parse(line.slice('VISION_LOCAL_READY '.length)) as StackInfo);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      removeDataDir();
      reject(new Error(`local stack exited with ${code}:\n${output.join('\n')}`));
    });
  });

  return {
    info,
    process: child,
    output,
    dataDir,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = once(child, 'exit');
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(timer);
      }
      removeDataDir();
    },
  };
}
