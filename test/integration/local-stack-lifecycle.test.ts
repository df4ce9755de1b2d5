/**
 * `npm start` as an operator meets it (issue #19, items 1–5): a busy port, DynamoDB Local dying under the stack, data
 * kept across a restart and `--fresh`, which keys the banner prints, and what a terminal shows. Each test starts its
 * own stacks, each with a private data folder, beside the suite's shared one.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { pagePreviewKey } from '../../shared/uploads/page-previews.js';
import { startFakeServer } from '../support/fake-server.js';
import { processesMentioning, processTree } from '../support/processes.js';
import { fixture } from './client.js';
import { startStack } from './stack.js';

const ROOT = new URL('../..', import.meta.url).pathname;

function privateDir(): string {
  return mkdtempSync(join(tmpdir(), 'vision-lifecycle-'));
}

/** Whether a process is still alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Everything started with the data folder in its command line (DynamoDB Local's -dbPath) has ended. */
function expectNothingLeftRunning(dataDir: string): void {
  expect(processesMentioning(dataDir)).toEqual([]);
}

async function api(baseUrl: string, key: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Presigns, PUTs and creates a run of `bytes`; returns its jobId. */
async function submit(baseUrl: string, key: string, fileName: string, bytes: Uint8Array): Promise<string> {
  const presign = await api(baseUrl, key, 'POST', '/v1/uploads/presign', { fileName, contentLength: bytes.length });
  const put = await fetch(String(presign.body.uploadUrl), {
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream' },
    body: new Blob([new Uint8Array(bytes)]),
  });
  expect(put.status).toBe(200);
  const created = await api(baseUrl, key, 'POST', '/v1/runs', {
    uploadId: presign.body.uploadId,
    prompt: 'Extract the receipt',
    schemaId: 'receipt',
  });
  expect(created.status).toBe(202);
  return String(created.body.jobId);
}

/** Polls a run until it is no longer queued (or two minutes pass); returns its status. */
async function finalStatus(baseUrl: string, key: string, jobId: string): Promise<string> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const status = String((await api(baseUrl, key, 'GET', `/v1/runs/${jobId}`)).body.status);
    if (status !== 'queued' || Date.now() > deadline) return status;
    await new Promise((r) => setTimeout(r, 300));
  }
}

test('a busy port: one line naming PORT, exit code 1, and nothing left running', async () => {
  const blocker: Server = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const port = (blocker.address() as { port: number }).port;
  const dataDir = privateDir();
  try {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/local.ts'], {
      cwd: ROOT,
      env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', VISION_LOCAL_DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toEqual([`port ${port} is in use; set PORT=… (PORT=0 picks a free one)`]);
    expectNothingLeftRunning(dataDir);
  } finally {
    blocker.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

/** The stack under a pseudo-terminal (`script`), as `npm start` runs in a shell; its output as the terminal shows it. */
function startOnTerminal(env: Record<string, string>): { child: ChildProcess; screen: () => string } {
  // `exec`, as `npm start` does: the shell `script` runs (dash when SHELL is /bin/sh or unset, as in CI) would
  // otherwise stay as the terminal's foreground process, be killed by the Ctrl-C itself, and `script` report 130.
  const child = spawn('script', ['-qfec', `exec ${process.execPath} --import tsx scripts/local.ts`, '/dev/null'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', SHELL: '/bin/sh', ...env },
    // Its input is the terminal's keyboard: a Ctrl-C typed there (\x03) interrupts the terminal's foreground processes.
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let text = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    text += chunk.toString().replaceAll('\r', '');
  });
  return { child, screen: () => text };
}

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 150_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

test('on a terminal: a short banner whose export line works, readable logs (native warnings too); when DynamoDB Local dies the stack says so in one line and exits 1 with nothing left', async () => {
  const dataDir = privateDir();
  const { child, screen } = startOnTerminal({ VISION_LOCAL_DATA_DIR: dataDir, VISION_PROVIDERS: 'local' });
  try {
    const exported = await until(
      'the export line',
      () => /export VISION_BASE_URL=(\S+) VISION_API_KEY=(\S+)/.exec(screen()) ?? undefined,
    );
    const [, baseUrl = '', key = ''] = exported;
    // The line is right: the key it names works at the address it names, and it is the key the stack generated.
    expect((await api(baseUrl, key, 'GET', '/v1/schemas')).status).toBe(200);
    expect(key).toBe(readFileSync(join(dataDir, 'dev-key'), 'utf8').trim());
    // Nothing for machines on a terminal: no READY blob, no JSON log line; and the banner stays short.
    expect(screen()).not.toContain('VISION_LOCAL_READY');
    expect(
      screen()
        .split('\n')
        .filter((line) => line.trimStart().startsWith('{')),
    ).toEqual([]);
    expect(
      screen()
        .split('\n')
        .filter((line) => line.trim() !== '').length,
    ).toBeLessThanOrEqual(12);

    // MuPDF warns on stderr while it repairs a PDF whose cross-reference table is broken: on the terminal that is a log
    // line, not raw text (and the run still completes: a repairable PDF is not a bad file).
    const invoice = Buffer.from(await fixture('invoice.pdf')).toString('latin1');
    const broken = Buffer.from(invoice.replace(/startxref\s+\d+/, 'startxref\n999999'), 'latin1');
    expect(await finalStatus(baseUrl, key, await submit(baseUrl, key, 'broken-xref.pdf', broken))).toBe('completed');
    const repairSaid = await until(
      'the PDF repair warning',
      () =>
        screen()
          .split('\n')
          .find((line) => line.includes('repairing PDF document')),
      30_000,
    );
    expect(repairSaid).toMatch(
      /^\d\d:\d\d:\d\d WARN {2}library output {2}stream=stderr {2}output="(.*\\n)?warning: repairing PDF document/,
    );

    const stackPid = processTree(child.pid as number).find((pid) =>
      readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('scripts/local.ts'),
    );
    const java = processTree(stackPid as number).find((pid) =>
      readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('DynamoDBLocal'),
    );
    expect(java).toBeDefined();
    process.kill(java as number, 'SIGKILL');

    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(1);
    const said = screen()
      .split('\n')
      .filter((line) => line.includes('DynamoDB Local'));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/ERROR DynamoDB Local stopped \(killed by SIGKILL\); the local stack .* stops too/);
    expectNothingLeftRunning(dataDir);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('runs, keys, uploaded files and page images survive a restart (a queued run is then processed); --fresh starts empty', async () => {
  const dataDir = privateDir();
  const key = 'vk_test_kept_0123456789abcdef0123456789';
  const env = { VISION_LOCAL_DATA_DIR: dataDir, VISION_DEV_API_KEYS: `keeper:${key}`, VISION_PROVIDERS: 'local' };
  const bytes = await fixture('receipt.png');
  try {
    // First run of the stack: no worker, so the run stays queued when it stops.
    const first = await startStack({ ...env, LOCAL_WORKER_CONCURRENCY: '0' });
    let jobId = '';
    try {
      // A supplied key is never printed; its tenant is named.
      expect(first.output.join('\n')).not.toContain(key);
      expect(first.output.join('\n')).toContain('for tenant "keeper" (not printed)');
      jobId = await submit(first.info.baseUrl, key, 'receipt.png', bytes);
      // A page image as the worker stores one: its size is user metadata, which must be kept too.
      const s3 = new S3Client({ endpoint: first.info.endpoints.s3, forcePathStyle: true });
      await s3.send(
        new PutObjectCommand({
          Bucket: first.info.resources.bucket,
          Key: pagePreviewKey({ tenantId: 'keeper', jobId }, 1),
          Body: bytes,
          ContentType: 'image/jpeg',
          Metadata: { width: '800', height: '834' },
        }),
      );
      s3.destroy();
    } finally {
      await first.stop();
    }

    const second = await startStack(env);
    try {
      // The queue is not kept: the stack sends the queued run to its worker again at start.
      expect(await finalStatus(second.info.baseUrl, key, jobId)).toBe('completed');
      const file = await api(second.info.baseUrl, key, 'GET', `/v1/runs/${jobId}/file`);
      const kept = new Uint8Array(await (await fetch(String(file.body.url))).arrayBuffer());
      expect(Buffer.from(kept).equals(bytes)).toBe(true);
      const s3 = new S3Client({ endpoint: second.info.endpoints.s3, forcePathStyle: true });
      const head = await s3.send(
        new HeadObjectCommand({
          Bucket: second.info.resources.bucket,
          Key: pagePreviewKey({ tenantId: 'keeper', jobId }, 1),
        }),
      );
      s3.destroy();
      expect([head.ContentType, head.Metadata]).toEqual(['image/jpeg', { width: '800', height: '834' }]);
    } finally {
      await second.stop();
    }

    const fresh = await startStack(env, 120_000, ['--fresh']);
    try {
      expect((await api(fresh.info.baseUrl, key, 'GET', `/v1/runs/${jobId}`)).status).toBe(404);
    } finally {
      await fresh.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

/** `npm start` as a process manager runs it; resolves with npm's process and the stack's own pid once it is ready. */
async function npmStart(dataDir: string): Promise<{ npm: ChildProcess; stackPid: number }> {
  const npm = spawn('npm', ['start', '--silent'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', VISION_LOCAL_DATA_DIR: dataDir, VISION_PROVIDERS: 'local', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  npm.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const ready = await until('the READY line', () => /VISION_LOCAL_READY (\{.*\})/.exec(out)?.[1]);
  return { npm, stackPid: (JSON.parse(ready) as { pid: number }).pid };
}

test('`npm start` under a process manager: a TERM to npm stops the whole stack, DynamoDB Local included, and so does npm killed outright', async () => {
  const dataDir = privateDir();
  try {
    const first = await npmStart(dataDir);
    expect(processesMentioning(dataDir)).not.toEqual([]);
    first.npm.kill('SIGTERM');
    const stopped = (pid: number) => (!alive(pid) && processesMentioning(dataDir).length === 0 ? true : undefined);
    await until('the stack and DynamoDB Local to stop', () => stopped(first.stackPid), 15_000);

    // npm gone without passing anything on: the stack notices its parent went, and stops.
    const second = await npmStart(dataDir);
    second.npm.kill('SIGKILL');
    await until('the stack and DynamoDB Local to stop after npm died', () => stopped(second.stackPid), 15_000);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('Ctrl-C at the terminal with a run in flight: no error or warning, exit code 0, nothing left running', async () => {
  const dataDir = privateDir();
  // A provider that never answers: the run is with it when Ctrl-C is pressed.
  const hanging = await startFakeServer(() => new Promise(() => {}));
  const { child, screen } = startOnTerminal({
    VISION_LOCAL_DATA_DIR: dataDir,
    VISION_PROVIDERS: 'openai',
    OPENAI_API_KEY: 'sk-test-ctrl-c-0123456789',
    OPENAI_BASE_URL: `${hanging.url}/v1`,
  });
  try {
    const exported = await until(
      'the export line',
      () => /export VISION_BASE_URL=(\S+) VISION_API_KEY=(\S+)/.exec(screen()) ?? undefined,
    );
    const [, baseUrl = '', key = ''] = exported;
    await submit(baseUrl, key, 'receipt.png', await fixture('receipt.png'));
    await until('the provider to be asked', () => (hanging.requests.length > 0 ? true : undefined));
    const before = screen().length;
    child.stdin?.write('\x03');
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(0);
    const said = screen()
      .slice(before)
      .split('\n')
      .filter((line) => line.trim() !== '' && line.trim() !== '^C');
    // The stop says it stopped, and that the run in progress is taken up at the next start; nothing else.
    expect(said.filter((line) => / (WARN|ERROR) /.test(line))).toEqual([]);
    expect(said.join('\n')).toMatch(/INFO {2}SIGINT: stopping/);
    expect(said.join('\n')).toMatch(/the next start takes them up at once/);
    expectNothingLeftRunning(dataDir);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await hanging.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('--fresh keeps the generated dev key (an exported key and an open dashboard keep working) and says what it removed', async () => {
  const dataDir = privateDir();
  const env = { VISION_LOCAL_DATA_DIR: dataDir, VISION_PROVIDERS: 'local', LOCAL_WORKER_CONCURRENCY: '0' };
  try {
    const first = await startStack(env);
    const key = readFileSync(join(dataDir, 'dev-key'), 'utf8').trim();
    let jobId = '';
    try {
      jobId = await submit(first.info.baseUrl, key, 'receipt.png', await fixture('receipt.png'));
    } finally {
      await first.stop();
    }

    const fresh = await startStack(env, 120_000, ['--fresh']);
    try {
      expect(readFileSync(join(dataDir, 'dev-key'), 'utf8').trim()).toBe(key);
      expect((await api(fresh.info.baseUrl, key, 'GET', '/v1/schemas')).status).toBe(200);
      expect((await api(fresh.info.baseUrl, key, 'GET', `/v1/runs/${jobId}`)).status).toBe(404);
      const said = fresh.output.find((line) => line.startsWith('--fresh: '));
      expect(said).toMatch(
        /^--fresh: removed the database in .+ \(\d+\.\d MB: every tenant, API key, run, ledger entry and webhook\) and 1 stored file \(uploads and page images\); a generated dev key is kept/,
      );
    } finally {
      await fresh.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
