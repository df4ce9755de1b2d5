/**
 * Starts and stops the real local stack (`scripts/local.ts`) as a child process, as a user's `npm start` would, and
 * tells tests where it is. Used by the integration suite's globalSetup/globalTeardown and by the benchmark.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

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
  stop(): Promise<void>;
}

/** Spawns the local stack with extra environment and resolves when it prints its READY line. */
export async function startStack(env: Record<string, string>, timeoutMs = 120_000): Promise<RunningStack> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/local.ts'], {
    cwd: new URL('../..', import.meta.url).pathname,
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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
      reject(new Error(`local stack exited with ${code}:\n${output.join('\n')}`));
    });
  });

  return {
    info,
    process: child,
    output,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
