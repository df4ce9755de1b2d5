/**
 * The `vision` CLI (cli/vision.mjs → cli/vision.ts) as a user runs it: a child process, not a TTY (so no progress
 * and no prompt) — and once on a pseudo-terminal for the confirmation question — against the shared local stack; plus a second stack whose only provider is unreachable, so every
 * run ends failed with PROVIDER_ERROR (SDK and CLI).
 */
import { spawn } from 'node:child_process';
import { VisionClient, VisionError } from '../../sdk/index.js';
import { KEYS, stack, startStackOnSuiteEmulators, visionCli } from './client.js';
import type { RunningStack } from './stack.js';

const repoRoot = new URL('../..', import.meta.url).pathname;
const fixture = (name: string) => `test/fixtures/${name}`;

const vision = visionCli;

/**
 * Runs the CLI on a pseudo-terminal (util-linux `script`), as a person at a terminal would, and types `answer` once the
 * confirmation question appears. stdout and stderr arrive merged, as on a screen.
 */
function visionOnTerminal(args: string[], answer: string): Promise<{ code: number | null; screen: string }> {
  const quoted = [process.execPath, 'cli/vision.mjs', ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['--quiet', '--return', '--flush', '--command', quoted, '/dev/null'], {
      cwd: repoRoot,
      env: { ...process.env, NODE_NO_WARNINGS: '1', VISION_BASE_URL: stack().baseUrl, VISION_API_KEY: KEYS.a },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let screen = '';
    let answered = false;
    const onOutput = (chunk: Buffer) => {
      screen += chunk.toString();
      if (!answered && screen.includes('[y/N]')) {
        answered = true;
        child.stdin.write(`${answer}\r`);
      }
    };
    child.stdout.on('data', onOutput);
    child.stderr.on('data', onOutput);
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, screen }));
  });
}

describe('vision CLI against the local stack', () => {
  let completedJobId = '';

  test('analyze prints the completed run as JSON on stdout, nothing on stderr', async () => {
    const out = await vision([
      'analyze',
      fixture('receipt.png'),
      '--prompt',
      'Extract the receipt',
      '--schema',
      'receipt',
      '--workflow',
      'cli-test',
      '--metadata',
      'source=cli',
      '--metadata',
      'n:=3',
    ]);
    expect(out.code).toBe(0);
    expect(out.stderr).toBe('');
    const run = JSON.parse(out.stdout);
    expect(run.status).toBe('completed');
    expect(run.result.total).toBe(42.5);
    expect(run.metadata).toEqual({ source: 'cli', n: 3 });
    completedJobId = run.jobId;
  });

  test('--no-wait prints the queued envelope; runs get reads it back', async () => {
    const out = await vision([
      'analyze',
      fixture('receipt.png'),
      '--prompt',
      'Summarize',
      '--no-wait',
      '--format',
      'text',
    ]);
    expect(out.code).toBe(0);
    const created = JSON.parse(out.stdout);
    expect(created.status).toBe('queued');
    expect(created.outputFormat).toBe('text');
    const got = await vision(['runs', 'get', created.jobId]);
    expect(got.code).toBe(0);
    expect(JSON.parse(got.stdout).jobId).toBe(created.jobId);
  });

  test('cost confirmation: non-interactive without --yes exits 3 with a clear message; --yes completes', async () => {
    const refused = await vision(['analyze', fixture('scanned-pages.pdf'), '--prompt', 'Summarize']);
    expect(refused.code).toBe(3);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain('COST_CONFIRMATION_REQUIRED');
    expect(refused.stderr).toContain('--yes');
    const confirmed = await vision(['analyze', fixture('scanned-pages.pdf'), '--prompt', 'Summarize', '--yes']);
    expect(confirmed.code).toBe(0);
    expect(JSON.parse(confirmed.stdout).status).toBe('completed');
  });

  test('cost confirmation on a terminal: it shows both prices and asks; "n" runs nothing (exit 3), "y" completes', async () => {
    const newest = async () =>
      JSON.parse((await vision(['runs', 'list', '--limit', '1', '--json'])).stdout).items[0]?.jobId;
    const before = await newest();
    const declined = await visionOnTerminal(['analyze', fixture('scanned-pages.pdf'), '--prompt', 'Summarize'], 'n');
    expect(declined.screen).toMatch(
      /Estimated cost [0-9.]+ USD exceeds the confirmation threshold [0-9.]+ USD\. As a batch \(within 24 hours\) it would cost [0-9.]+ USD\. Run it now\? \[y\/N\]/,
    );
    expect(declined.screen).toContain('Not confirmed; nothing was run.');
    expect(declined.code).toBe(3);
    // Declining created no run: the newest run is the same as before.
    expect(await newest()).toBe(before);

    const accepted = await visionOnTerminal(['analyze', fixture('scanned-pages.pdf'), '--prompt', 'Summarize'], 'y');
    expect(accepted.screen).toContain('[y/N]');
    expect(accepted.code).toBe(0);
    expect(accepted.screen).toMatch(/"status": "completed"/);
    // On a terminal the progress shows the upload and the queue, with the elapsed time.
    expect(accepted.screen).toMatch(/uploading 100% \(\d+\/\d+ bytes\) \d+\.\ds/);
    expect(accepted.screen).toMatch(/queued run_[0-9a-f]+ \d+\.\ds/);
  });

  test('verify --accept and --correct', async () => {
    expect(completedJobId).not.toBe('');
    const accepted = await vision(['verify', completedJobId, '--accept', '--note', 'looks right']);
    expect(accepted.code).toBe(0);
    expect(JSON.parse(accepted.stdout).verification).toMatchObject({ accepted: true, note: 'looks right' });
    const corrected = await vision(['verify', completedJobId, '--correct', 'total:=43', '--correct', 'merchant=ACME']);
    expect(corrected.code).toBe(0);
    expect(JSON.parse(corrected.stdout).verification).toMatchObject({
      accepted: false,
      corrections: { total: 43, merchant: 'ACME' },
    });
  });

  test('runs list, usage, schemas', async () => {
    const filter = ['--workflow', 'cli-test', '--status', 'completed', '--limit', '5'];
    const list = await vision(['runs', 'list', ...filter, '--json']);
    expect(list.code).toBe(0);
    const items = JSON.parse(list.stdout).items as { jobId: string; workflow: string }[];
    expect(items.map((r) => r.jobId)).toContain(completedJobId);
    expect(items.every((r) => r.workflow === 'cli-test')).toBe(true);
    // By default one line per run, in the same order.
    const lines = await vision(['runs', 'list', ...filter]);
    expect(lines.code).toBe(0);
    const rows = lines.stdout.trimEnd().split('\n');
    expect(rows.map((line) => line.split(/\s+/)[0])).toEqual(items.map((r) => r.jobId));
    expect(rows.every((line) => / completed +\S+ +cli-test +\S+ +\$[0-9.]+ +confidence [0-9.]+$/.test(line))).toBe(
      true,
    );

    // Each documented form of --from is one the service takes.
    for (const from of ['2000-01-01T00:00:00Z', '2000-01-01', '2000-01-01T02:00:00+02:00']) {
      const usage = await vision(['usage', '--from', from, '--json']);
      expect({ from, code: usage.code, stderr: usage.stderr }).toEqual({ from, code: 0, stderr: '' });
      expect(JSON.parse(usage.stdout).workflows.map((w: { workflow: string }) => w.workflow)).toContain('cli-test');
    }
    // By default a table: the period, the headings, a row for the workflow and the total.
    const table = (await vision(['usage', '--from', '2000-01-01'])).stdout.trimEnd().split('\n');
    expect(table[0]).toMatch(/^usage from 2000-01-01T00:00:00\.000Z to \S+$/);
    expect(table[1]?.split(/\s+/)).toEqual([
      'workflow',
      'runs',
      'completed',
      'failed',
      'queued',
      'charged',
      'refunded',
      'reviewed',
      'accepted',
      'confidence',
    ]);
    expect(table.some((line) => /^cli-test +\d+ +\d+ +\d+ +\d+ +\$[0-9.]+ +\$[0-9.]+ /.test(line))).toBe(true);
    expect(table.at(-1)).toMatch(/^total +\d+ /);

    const schemas = await vision(['schemas']);
    expect(schemas.code).toBe(0);
    expect(JSON.parse(schemas.stdout).items.map((s: { id: string }) => s.id)).toEqual(
      expect.arrayContaining(['receipt', 'invoice', 'id_document', 'business_card', 'bank_statement']),
    );
  });

  test('rejected requests exit 3 with the error code on stderr', async () => {
    const out = await vision(['analyze', fixture('receipt.png'), '--prompt', 'x', '--schema', 'nope']);
    expect(out.code).toBe(3);
    expect(out.stderr).toContain('UNKNOWN_SCHEMA (400)');
    const notFound = await vision(['runs', 'get', 'run_doesnotexist']);
    expect(notFound.code).toBe(3);
    expect(notFound.stderr).toContain('NOT_FOUND');
    const badKey = await vision(['schemas'], { VISION_API_KEY: 'vk_wrong' });
    expect(badKey.code).toBe(3);
    expect(badKey.stderr).toContain('UNAUTHORIZED');
    expect(badKey.stderr).toContain('hint: the service refused the API key from VISION_API_KEY');
  });

  test('usage errors exit 2; --help documents the exit codes', async () => {
    const cases: string[][] = [
      ['analyze'],
      ['analyze', fixture('receipt.png')],
      ['analyze', fixture('receipt.png'), '--prompt', 'x', '--schema', 'receipt', '--schema-file', 'f.json'],
      ['analyze', fixture('receipt.png'), '--prompt', 'x', '--format', 'xml'],
      ['analyze', fixture('receipt.png'), '--prompt', 'x', '--max-cost', 'lots'],
      ['analyze', fixture('receipt.png'), '--prompt', 'x', '--bogus'],
      ['analyze', 'no-such-file.png', '--prompt', 'x'],
      ['verify', 'run_x'],
      ['runs'],
      ['runs', 'list', '--status', 'done'],
      ['frobnicate'],
      ['schemas', '--base-url', 'notaurl'],
    ];
    for (const args of cases) {
      const out = await vision(args);
      expect({ args, code: out.code }).toEqual({ args, code: 2 });
      expect(out.stderr).toMatch(/error: /);
    }
    const noKey = await vision(['schemas'], { VISION_API_KEY: undefined });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('VISION_API_KEY');

    const help = await vision(['--help']);
    expect(help.code).toBe(0);
    for (const code of ['0 ', '2 ', '3 ', '4 ', '5 ', '130']) expect(help.stdout).toContain(`  ${code}`);
  });

  test('`vision runs list | head -1` prints one run and nothing else, and the CLI ends quietly', async () => {
    const pipeline = spawn('bash', ['-c', 'set -o pipefail; node cli/vision.mjs runs list --limit 100 | head -1'], {
      cwd: repoRoot,
      env: { ...process.env, NODE_NO_WARNINGS: '1', VISION_BASE_URL: stack().baseUrl, VISION_API_KEY: KEYS.a },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    pipeline.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    pipeline.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => pipeline.once('close', resolve));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toMatch(/^run_[0-9a-f]+ +(completed|failed|queued) +\S+ .*\n$/);
  });

  test('an unreachable service exits 5', async () => {
    const out = await vision(['schemas', '--base-url', 'http://127.0.0.1:9']);
    expect(out.code).toBe(5);
    expect(out.stderr).toContain('NETWORK_ERROR');
    // The cause a user can act on, not only "fetch failed" (port 9 is one fetch refuses to use).
    expect(out.stderr).toContain('fetch failed (bad port)');
  });
});

describe('failed runs (a stack whose only provider is unreachable)', () => {
  const key = 'vk_test_failing_0123456789abcdef0123';
  let failing: RunningStack;

  beforeAll(async () => {
    failing = await startStackOnSuiteEmulators({
      VISION_PROVIDERS: 'openai',
      OPENAI_API_KEY: 'x',
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      VISION_DEV_API_KEYS: `cli:${key}`,
      VISION_LOCAL_TABLE_PREFIX: 'vision-failing-',
    });
  }, 180_000);
  afterAll(async () => {
    await failing?.stop();
  });

  test('SDK analyze throws VisionError PROVIDER_ERROR carrying the failed run', async () => {
    const vision = new VisionClient({ baseUrl: failing.info.baseUrl, apiKey: key });
    const error = await vision
      .analyze(new URL('../fixtures/receipt.png', import.meta.url).pathname, { prompt: 'Extract', schemaId: 'receipt' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(VisionError);
    const e = error as VisionError;
    expect(e).toMatchObject({ code: 'PROVIDER_ERROR', status: 502, retryable: true });
    expect(e.isRunFailure).toBe(true);
    expect(e.run?.status).toBe('failed');
    expect(e.jobId).toBe(e.run?.jobId);
  });

  test('CLI analyze exits 4 and prints the failed run', async () => {
    const out = await vision(['analyze', fixture('receipt.png'), '--prompt', 'Extract', '--schema', 'receipt'], {
      VISION_BASE_URL: failing.info.baseUrl,
      VISION_API_KEY: key,
    });
    expect(out.code).toBe(4);
    expect(JSON.parse(out.stdout)).toMatchObject({ status: 'failed', error: { code: 'PROVIDER_ERROR' } });
    expect(out.stderr).toContain('PROVIDER_ERROR (502)');
  });
});
