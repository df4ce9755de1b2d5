/**
 * The `vision` CLI without a service stack: `main()` in process against a scripted HTTP server (test/support/
 * fake-server.ts), so what a person sees for each mistake is checked quickly; plus the process itself once, for a
 * stdout closed by its reader. (test/integration/cli.test.ts runs it as a process against the local stack.)
 * Over 400 lines: every subcommand's messages against one scripted server; split by subcommand when it grows further.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { jest } from '@jest/globals';
import { editDistance, nearest } from '../../cli/args.js';
import { ProgressLine } from '../../cli/output.js';
// Named with .ts: jest would resolve '../../cli/vision.js' to the launcher cli/vision.mjs.
import { main } from '../../cli/vision.ts';
import pkg from '../../package.json' with { type: 'json' };
import { signatureHeader } from '../../shared/events/signature.js';
import {
  type FakeServer,
  type RecordedRequest,
  type ScriptedResponse,
  startFakeServer,
} from '../support/fake-server.js';

const ROOT = new URL('../..', import.meta.url).pathname;
const RECEIPT = `${ROOT}test/fixtures/receipt.png`;

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** An Io for the service at `baseUrl` that keeps what the CLI writes (`out`, readable while the CLI runs). */
function captured(baseUrl: string, options: { tty?: boolean; apiKey?: string } = {}) {
  const out = { stdout: '', stderr: '' };
  const io = {
    stdout: (text: string) => {
      out.stdout += text;
    },
    stderr: (text: string) => {
      out.stderr += text;
    },
    env: { VISION_BASE_URL: baseUrl, VISION_API_KEY: options.apiKey ?? 'vk_test_key' },
    stderrIsTTY: options.tty === true,
    interactive: false,
  };
  return { io, out };
}

/** Runs the CLI in process with the service at `baseUrl` (stderr a terminal when `tty`). */
async function vision(
  args: string[],
  baseUrl: string,
  options: { tty?: boolean; apiKey?: string } = {},
): Promise<Outcome> {
  const { io, out } = captured(baseUrl, options);
  const code = await main(args, io, new AbortController().signal);
  return { code, ...out };
}

const run = (jobId: string, status: string, extra: Record<string, unknown> = {}) => ({
  jobId,
  uploadId: 'upl_1',
  prompt: 'Extract',
  outputFormat: 'json',
  schemaId: 'receipt',
  estimatedCostUsd: 0.0003,
  metadata: {},
  workflow: 'expenses',
  createdAt: '2026-11-22T02:46:50.498Z',
  file: { name: 'r.png', type: 'image/png', sizeBytes: 10, pages: 1 },
  status,
  ...extra,
});
const completed = run('run_c', 'completed', {
  result: { total: 42.5 },
  chargedUsd: 0.00026,
  refundedUsd: 0,
  confidence: 0.925,
  strategy: 'ocr_then_analyze',
  attempts: [],
  usage: { requests: 1, billableUnits: 1, costUsd: 0.0002, priceUsd: 0.00026 },
});
const failed = run('run_f', 'failed', {
  error: { code: 'PROVIDER_ERROR', message: 'all providers failed', status: 502, retryable: true },
  chargedUsd: 0,
  refundedUsd: 0.0003,
  attempts: [],
});
const queued = run('run_q', 'queued', {
  stage: 'processing',
  progress: { pagesTotal: 20, pagesDone: 3, stage: 'ocr' },
});

const apiError = (status: number, code: string, details?: Record<string, unknown>): ScriptedResponse => ({
  status,
  json: { error: { code, message: `${code} message`, status, retryable: false, requestId: 'req_1', details } },
});

let server: FakeServer;
beforeAll(async () => {
  server = await startFakeServer();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  server.requests.length = 0;
});

/** Answers the analyze flow: presign, the upload, creation (or `create`'s answer), then `polls` in turn. */
function analyzeFlow(create: ScriptedResponse, polls: unknown[] = []): (r: RecordedRequest) => ScriptedResponse {
  let poll = 0;
  return (r) => {
    if (r.path === '/v1/uploads/presign') {
      return {
        json: {
          uploadId: 'upl_1',
          uploadUrl: `${server.url}/upload`,
          expiresAt: '2026-11-22T03:00:00Z',
          method: 'PUT',
          headers: { 'Content-Type': 'application/octet-stream' },
          maxBytes: 1000000,
        },
      };
    }
    if (r.path === '/upload') return { status: 200, raw: '' };
    if (r.path === '/v1/runs' && r.method === 'POST') return create;
    return { json: polls[Math.min(poll++, polls.length - 1)] };
  };
}

test('--version prints the version', async () => {
  const out = await vision(['--version'], server.url);
  expect(out).toEqual({ code: 0, stdout: `vision ${pkg.version}\n`, stderr: '' });
});

test('suggestions: the nearest known word within a third of its length; a swap of neighbours is one edit', () => {
  expect(editDistance('kitten', 'sitting')).toBe(3);
  expect(editDistance('reciept', 'receipt')).toBe(1);
  expect(nearest('reciept', ['invoice', 'receipt', 'id_document'])).toBe('receipt');
  expect(nearest('hlep', ['analyze', 'runs', 'help', 'health'])).toBe('help');
  expect(nearest('--promt', ['--prompt', '--schema'])).toBe('--prompt');
  expect(nearest('frobnicate', ['analyze', 'runs', 'verify', 'usage'])).toBeUndefined();
  expect(nearest('ab', ['xy'])).toBeUndefined();
});

describe('argument errors name the argument, suggest the nearest word, and make no request', () => {
  const cases: [string[], string][] = [
    [['analyse', 'receipt.png'], 'error: unknown command "analyse"; did you mean "analyze"?'],
    [['analyze', RECEIPT, '--promt', 'Extract'], 'error: unknown option --promt; did you mean --prompt?'],
    [['analyze'], 'error: missing <file>'],
    [['analyze', RECEIPT], 'error: missing --prompt'],
    [['analyze', RECEIPT, 'second.png', '--prompt', 'x'], 'error: unexpected argument "second.png"'],
    [['analyze', RECEIPT, '--prompt'], 'error: --prompt needs a value'],
    [
      ['analyze', RECEIPT, '--prompt', 'x', '--format', 'jsn'],
      '--format must be one of json, text; got "jsn"; did you mean "json"?',
    ],
    [['runs', 'get'], 'error: missing <jobId>'],
    [['runs', 'lst'], 'error: unknown command "runs lst"; did you mean "runs list"?'],
    [['runs', 'list', '--status', 'complete'], 'got "complete"; did you mean "completed"?'],
    [['verify', 'run_1'], 'error: missing --accept or --correct field=value'],
    [['--verison'], 'error: unknown option --verison; did you mean --version?'],
    [['--base-url', 'http://x', 'schemas'], 'error: --base-url goes after the command'],
    [['analyze', 'no-such-file.png', '--prompt', 'x'], 'error: no-such-file.png: no such file\n'],
    [['analyze', `${ROOT}test/fixtures`, '--prompt', 'x'], 'fixtures: is a directory, not a file\n'],
    [
      ['analyze', RECEIPT, '--prompt', 'x', '--schema-file', 'nope.json'],
      'error: --schema-file nope.json: no such file\n',
    ],
  ];
  test.each(cases)('vision %j', async (args, message) => {
    const out = await vision(args, server.url);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain(message);
    expect(out.stderr).not.toMatch(/ENOENT|EISDIR| {4}at /);
    expect(server.requests).toEqual([]);
  });
});

const usageRow = (workflow: string | null, extra: Record<string, unknown> = {}) => ({
  workflow,
  runs: 0,
  completed: 0,
  failed: 0,
  queued: 0,
  estimatedUsd: 0,
  chargedUsd: 0,
  refundedUsd: 0,
  verified: 0,
  accepted: 0,
  acceptanceRate: null,
  meanConfidence: null,
  ...extra,
});
const USAGE = {
  from: '2026-10-28T00:00:00.000Z',
  to: '2026-11-27T00:00:00.000Z',
  interval: 'day',
  workflows: [
    usageRow('expenses', {
      runs: 12,
      completed: 10,
      failed: 1,
      queued: 1,
      estimatedUsd: 0.00312,
      chargedUsd: 0.002611,
      refundedUsd: 0.000509,
      verified: 5,
      accepted: 4,
      acceptanceRate: 0.8,
      meanConfidence: 0.9134,
    }),
    usageRow(null, { runs: 3, completed: 3, chargedUsd: 0.00078, meanConfidence: 0.88 }),
  ],
  totals: usageRow(null, {
    runs: 15,
    completed: 13,
    failed: 1,
    queued: 1,
    chargedUsd: 0.003391,
    refundedUsd: 0.000509,
    verified: 5,
    accepted: 4,
    acceptanceRate: 0.8,
    meanConfidence: 0.9054,
  }),
  series: Array.from({ length: 30 }, (_, day) => ({
    start: `day ${day}`,
    end: `day ${day + 1}`,
    totals: usageRow(null),
    workflows: [],
  })),
};

describe('usage prints a table; --json the whole answer', () => {
  test('one row per workflow and the total, numbers under their headings, money to the micro-dollar', async () => {
    server.respond(() => ({ json: USAGE }));
    const out = await vision(['usage'], server.url);
    expect(out).toMatchObject({ code: 0, stderr: '' });
    expect(out.stdout.split('\n')).toEqual([
      'usage from 2026-10-28T00:00:00.000Z to 2026-11-27T00:00:00.000Z',
      'workflow  runs  completed  failed  queued    charged   refunded  reviewed  accepted  confidence',
      'expenses    12         10       1       1  $0.002611  $0.000509         5       80%        0.91',
      '(none)       3          3       0       0   $0.00078         $0         0         -        0.88',
      'total       15         13       1       1  $0.003391  $0.000509         5       80%        0.91',
      '',
    ]);
  });

  test('a period without runs says so', async () => {
    server.respond(() => ({ json: { ...USAGE, workflows: [], totals: usageRow(null) } }));
    const out = await vision(['usage'], server.url);
    expect(out.stdout.split('\n').slice(0, 2)).toEqual([
      'usage from 2026-10-28T00:00:00.000Z to 2026-11-27T00:00:00.000Z',
      'no runs in this period',
    ]);
  });

  test('--json prints the answer as the service gave it, series included', async () => {
    server.respond(() => ({ json: USAGE }));
    const out = await vision(['usage', '--json'], server.url);
    expect(JSON.parse(out.stdout)).toEqual(USAGE);
  });
});

describe('usage --from/--to', () => {
  test('a value in none of the documented forms is refused before any request, naming the forms', async () => {
    for (const from of ['yesterday', '2025-02-30', '2025-01-31T09:30:00', '31/01/2025']) {
      const out = await vision(['usage', '--from', from], server.url);
      expect(out.code).toBe(2);
      expect(out.stderr).toContain(
        `error: --from "${from}" is not a date or time; use 2025-01-31 (midnight UTC), 2025-01-31T09:30:00Z or 2025-01-31T09:30:00+02:00`,
      );
    }
    const reversed = await vision(['usage', '--from', '2025-03-01', '--to', '2025-02-01'], server.url);
    expect(reversed.code).toBe(2);
    expect(reversed.stderr).toContain('--from (2025-03-01T00:00:00.000Z) must be before --to');
    expect(server.requests).toEqual([]);
  });

  test('every documented form is sent as a UTC timestamp', async () => {
    server.respond(() => ({ json: USAGE }));
    const out = await vision(
      ['usage', '--from', '2025-01-31', '--to', '2025-02-01T09:30:00+02:00', '--interval', 'hour'],
      server.url,
    );
    expect(out.code).toBe(0);
    const query = new URL(server.requests[0]?.path ?? '', server.url).searchParams;
    expect(Object.fromEntries(query)).toEqual({
      from: '2025-01-31T00:00:00.000Z',
      to: '2025-02-01T07:30:00.000Z',
      interval: 'hour',
    });
  });
});

describe('what the service answers, explained', () => {
  test('an unknown schema id names the nearest known one', async () => {
    server.respond(
      analyzeFlow(
        apiError(400, 'UNKNOWN_SCHEMA', { schemaId: 'reciept', knownSchemaIds: ['receipt', 'invoice', 'id_document'] }),
      ),
    );
    const out = await vision(['analyze', RECEIPT, '--prompt', 'x', '--schema', 'reciept'], server.url);
    expect(out.code).toBe(3);
    expect(out.stderr).toContain('error: UNKNOWN_SCHEMA (400): UNKNOWN_SCHEMA message [request req_1]');
    expect(out.stderr).toContain('hint: did you mean "receipt"? known schemas: receipt, invoice, id_document');
  });

  test('a refused key points at where the key came from', async () => {
    server.respond(() => apiError(401, 'UNAUTHORIZED'));
    const fromEnv = await vision(['schemas'], server.url);
    expect(fromEnv.code).toBe(3);
    expect(fromEnv.stderr).toContain('hint: the service refused the API key from VISION_API_KEY');
    const fromFlag = await vision(['schemas', '--api-key', 'vk_other'], server.url);
    expect(fromFlag.stderr).toContain('hint: the service refused the API key from --api-key');
    // The key itself is never echoed.
    expect(fromEnv.stderr + fromFlag.stderr).not.toMatch(/vk_test_key|vk_other/);
  });

  test('a refused connection asks whether the service is running at that address', async () => {
    const closed = await startFakeServer();
    await closed.close();
    const out = await vision(['schemas'], closed.url);
    expect(out.code).toBe(5);
    expect(out.stderr).toContain('ECONNREFUSED');
    expect(out.stderr).toContain(
      `hint: nothing answers at ${closed.url} (from VISION_BASE_URL): is the service running there?`,
    );
  });
});

describe('runs list', () => {
  beforeEach(() => server.respond(() => ({ json: { items: [completed, failed, queued], nextCursor: 'c2' } })));

  test('prints one line per run by default', async () => {
    const out = await vision(['runs', 'list', '--limit', '3'], server.url);
    expect(out.code).toBe(0);
    expect(out.stdout.split('\n')).toEqual([
      'run_c  completed  2026-11-22T02:46:50.498Z  expenses  receipt  $0.00026  confidence 0.925',
      'run_f  failed     2026-11-22T02:46:50.498Z  expenses  receipt  $0  PROVIDER_ERROR',
      'run_q  queued     2026-11-22T02:46:50.498Z  expenses  receipt  -  processing 3/20 pages',
      '',
    ]);
    expect(out.stderr).toBe('');
  });

  test('--json prints the whole answer; a terminal is told how to get the next page', async () => {
    const json = await vision(['runs', 'list', '--json'], server.url);
    expect(JSON.parse(json.stdout)).toEqual({ items: [completed, failed, queued], nextCursor: 'c2' });
    const onTerminal = await vision(['runs', 'list'], server.url, { tty: true });
    expect(onTerminal.stderr).toBe('more: vision runs list --cursor c2\n');
  });
});

describe('review (contract-v1.1 §3)', () => {
  const needsReview = {
    ...completed,
    jobId: 'run_r',
    fields: { total: { confidence: 0.41, page: 1, bbox: [0.6, 0.8, 0.7, 0.82], source: '$42.50' } },
    review: { needed: true, reasons: ['total: confidence 0.41 is below 0.8', 'subtotal + tax does not equal total'] },
  };

  test('runs list --review needed asks for the queue and marks each run that needs review', async () => {
    server.respond(() => ({ json: { items: [needsReview], nextCursor: null } }));
    const out = await vision(['runs', 'list', '--review', 'needed'], server.url);
    expect(out.code).toBe(0);
    expect(out.stdout).toBe(
      'run_r  completed  2026-11-22T02:46:50.498Z  expenses  receipt  $0.00026  confidence 0.925  review needed\n',
    );
    expect(server.requests.map((r) => r.path)).toEqual(['/v1/runs?review=needed']);
  });

  test('an empty review queue is said so on stderr, terminal or not (stdout stays empty for scripts)', async () => {
    server.respond(() => ({ json: { items: [], nextCursor: null } }));
    const out = await vision(['runs', 'list', '--review', 'needed'], server.url);
    expect(out).toEqual({ code: 0, stdout: '', stderr: 'no runs need review: the review queue is empty\n' });
    const filtered = await vision(['runs', 'list', '--review', 'needed', '--workflow', 'expenses'], server.url);
    expect(filtered.stderr).toBe('no runs need review with these filters\n');
    const none = await vision(['runs', 'list'], server.url);
    expect(none.stderr).toBe('no runs\n');
  });

  test('--review takes only "needed", refused before any request', async () => {
    const out = await vision(['runs', 'list', '--review', 'neded'], server.url);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('--review must be one of needed; got "neded"; did you mean "needed"?');
    expect(server.requests).toEqual([]);
  });

  test('analyze prints the result on stdout, then on stderr why its review is needed', async () => {
    server.respond(analyzeFlow({ json: run('run_r', 'queued', { stage: 'waiting' }) }, [needsReview]));
    const out = await vision(['analyze', RECEIPT, '--prompt', 'Extract'], server.url);
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout).review).toEqual(needsReview.review);
    expect(out.stderr).toBe(
      'review needed for run run_r:\n' +
        '  - total: confidence 0.41 is below 0.8\n' +
        '  - subtotal + tax does not equal total\n',
    );
  });

  test('analyze of a run that needs no review prints nothing on stderr', async () => {
    const fine = { ...needsReview, review: { needed: false, reasons: [] } };
    server.respond(analyzeFlow({ json: run('run_r', 'queued', { stage: 'waiting' }) }, [fine]));
    const out = await vision(['analyze', RECEIPT, '--prompt', 'Extract'], server.url);
    expect(out).toMatchObject({ code: 0, stderr: '' });
  });
});

describe('values from the service never reach the terminal raw (they can carry document text)', () => {
  /** An escape sequence, a carriage return, a C1 CSI, a bell, a right-to-left override and a newline. */
  const hostile = 'Total\u001b[2J\u001b]0;owned\u0007\r\u009b31m \u202egnp.exe\nline 2';
  const ESCAPES = /(?!\n)[\p{Cc}\u202E]/u;

  test('review reasons on stderr: control characters stripped, the newline kept', async () => {
    const reviewed = { ...completed, review: { needed: true, reasons: [hostile] } };
    server.respond(analyzeFlow({ json: run('run_c', 'queued', { stage: 'waiting' }) }, [reviewed]));
    const out = await vision(['analyze', RECEIPT, '--prompt', 'Extract'], server.url);
    expect(out.code).toBe(0);
    expect(out.stderr).toBe('review needed for run run_c:\n  - Total[2J]0;owned31m gnp.exe\nline 2\n');
  });

  test('runs list lines and the service’s error messages are stripped the same way', async () => {
    server.respond(() => ({ json: { items: [{ ...failed, workflow: hostile }], nextCursor: null } }));
    const listed = await vision(['runs', 'list'], server.url);
    expect(listed.stdout).not.toMatch(ESCAPES);
    expect(listed.stdout).toContain('Total[2J]0;owned31m gnp.exe');
    server.respond(() => ({
      status: 400,
      json: { error: { code: 'INVALID_REQUEST', message: hostile, status: 400, retryable: false, requestId: 'r' } },
    }));
    const refused = await vision(['runs', 'get', 'run_x'], server.url);
    expect(refused.code).toBe(3);
    expect(refused.stderr).not.toMatch(ESCAPES);
  });

  test('JSON output escapes them instead (\\u001b, \\u009b, \\u202e): inert on a terminal, the same value parsed', async () => {
    const value = { ...completed, workflow: hostile, result: { merchant: 'A\u007fB\u0085C\u2066D' } };
    server.respond(() => ({ json: value }));
    const out = await vision(['runs', 'get', 'run_c'], server.url);
    expect(out.stdout).not.toMatch(ESCAPES);
    expect(out.stdout).toContain('\\u009b31m');
    expect(out.stdout).toContain('\\u202egnp.exe');
    expect(JSON.parse(out.stdout)).toEqual(value);
  });
});

describe('the progress line on a terminal', () => {
  afterEach(() => jest.useRealTimers());

  test('ticks every second while nothing happens, and shows the pages of a long document', () => {
    jest.useFakeTimers({ now: 0 });
    let screen = '';
    const line = new ProgressLine((text) => {
      screen += text;
    }, true);
    line.update({ stage: 'queued', jobId: 'run_1', elapsedMs: 0 });
    jest.advanceTimersByTime(2000);
    line.update({
      stage: 'processing',
      jobId: 'run_1',
      elapsedMs: 2500,
      progress: { pagesTotal: 20, pagesDone: 3, stage: 'processing' },
    });
    jest.advanceTimersByTime(1000);
    line.end();
    jest.advanceTimersByTime(5000);
    const frames = screen.split('\r\x1b[2K').filter(Boolean);
    expect(frames).toEqual([
      'queued run_1 0.0s',
      'queued run_1 1.0s',
      'queued run_1 2.0s',
      'processing run_1 pages 3/20 2.0s',
      'processing run_1 pages 3/20 3.0s\n',
    ]);
  });

  test('is not drawn when stderr is not a terminal', () => {
    const writes: string[] = [];
    const line = new ProgressLine((text) => writes.push(text), false);
    line.update({ stage: 'queued', jobId: 'run_1', elapsedMs: 0 });
    line.end();
    expect(writes).toEqual([]);
  });

  test('analyze shows the pages the run reports', async () => {
    server.respond(
      analyzeFlow({ json: run('run_q', 'queued', { stage: 'waiting' }) }, [
        queued,
        { ...queued, progress: { pagesTotal: 20, pagesDone: 20, stage: 'ocr' } },
        completed,
      ]),
    );
    const out = await vision(['analyze', RECEIPT, '--prompt', 'Extract'], server.url, { tty: true });
    expect(out.code).toBe(0);
    expect(out.stderr).toMatch(/processing run_q pages 3\/20 \d+\.\ds/);
    expect(out.stderr).toMatch(/processing run_q pages 20\/20 \d+\.\ds/);
    expect(out.stderr.endsWith('\n')).toBe(true);
    expect(JSON.parse(out.stdout).jobId).toBe('run_c');
  });
});

describe('listen', () => {
  /** A port free a moment ago (the listener needs one known before it prints its address). */
  async function freePort(): Promise<number> {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const address = probe.address();
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    return typeof address === 'object' && address ? address.port : 0;
  }

  /** Polls `probe` until it gives a value (not undefined/false), for at most 5 s. */
  async function until<T>(probe: () => Promise<T | undefined | false>): Promise<T> {
    const deadline = Date.now() + 5000;
    for (;;) {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  const event = JSON.stringify({ id: 'evt_1', type: 'run.completed', createdAt: '2026-11-26T00:00:00.000Z', data: {} });
  const deliver = (port: number, header: string) =>
    fetch(`http://127.0.0.1:${port}/`, { method: 'POST', headers: { 'vision-signature': header }, body: event });

  test('accepts no event before its endpoint is registered (503), then only events signed with its secret', async () => {
    const secret = 'whsec_registered-secret-0123456789';
    let register: () => void = () => undefined;
    const registered = new Promise<void>((resolve) => {
      register = resolve;
    });
    server.respond(async (r) => {
      if (r.method === 'POST' && r.path === '/v1/webhooks') {
        await registered;
        const url = (r.body as { url: string }).url;
        return { status: 201, json: { id: 'wh_1', url, events: ['run.completed'], createdAt: event, secret } };
      }
      return { status: 204, raw: '' };
    });
    const port = await freePort();
    const { io, out } = captured(server.url);
    const stop = new AbortController();
    const done = main(['listen', '--port', String(port)], io, stop.signal);
    try {
      const now = Math.floor(Date.now() / 1000);
      // Listening, not registered yet: a forged event (signed with the empty key the secret was before) is refused.
      const early = await until(async () => deliver(port, signatureHeader('', event, now)).catch(() => undefined));
      expect(early.status).toBe(503);
      expect(out.stdout).toBe('');

      register();
      await until(async () => out.stderr.includes('listening on'));
      expect((await deliver(port, signatureHeader('', event, now))).status).toBe(400);
      expect(out.stdout).toBe('');
      expect((await deliver(port, signatureHeader(secret, event, now))).status).toBe(204);
      expect(JSON.parse(out.stdout)).toEqual(JSON.parse(event));
    } finally {
      register();
      stop.abort();
    }
    // Stopped by Ctrl-C (the abort): 130, as the help says, not the 0 of --count reached.
    expect(await done).toBe(130);
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /v1/webhooks',
      'DELETE /v1/webhooks/wh_1',
    ]);
  });

  test('with --secret, an event of a type --events did not ask for is taken (204) but not printed or counted', async () => {
    const secret = 'whsec_registered-secret-0123456789';
    const port = await freePort();
    const { io, out } = captured(server.url);
    const done = main(
      ['listen', '--port', String(port), '--secret', secret, '--events', 'run.failed', '--count', '1'],
      io,
      new AbortController().signal,
    );
    await until(async () => out.stderr.includes('listening on'));
    const now = Math.floor(Date.now() / 1000);
    expect((await deliver(port, signatureHeader(secret, event, now))).status).toBe(204);
    expect(out.stdout).toBe('');
    expect(out.stderr).toContain('ignored a run.completed event (--events run.failed)');
    const failedEvent = event.replace('run.completed', 'run.failed');
    const sent = await fetch(`http://127.0.0.1:${port}/`, {
      method: 'POST',
      headers: { 'vision-signature': signatureHeader(secret, failedEvent, now) },
      body: failedEvent,
    });
    expect(sent.status).toBe(204);
    expect(await done).toBe(0);
    expect(JSON.parse(out.stdout)).toMatchObject({ type: 'run.failed' });
  });

  test('a --port in use is a usage error (exit 2) in one line, not a stack trace', async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const address = busy.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    try {
      const out = await vision(
        ['listen', '--port', String(port), '--secret', 'whsec_registered-secret-0123456789'],
        server.url,
      );
      expect(out.code).toBe(2);
      expect(out.stderr.split('\n')[0]).toBe(`error: --port ${port}: already in use on 127.0.0.1`);
      expect(out.stderr).not.toContain('    at ');
    } finally {
      await new Promise<void>((resolve) => busy.close(() => resolve()));
    }
  });

  test('--secret must be a whsec_ secret: an empty or short one is a usage error', async () => {
    for (const secret of ['', 'whsec_', 'whsec_short']) {
      const out = await vision(['listen', '--secret', secret], server.url);
      expect(out.code).toBe(2);
      expect(out.stderr).toContain('--secret');
    }
  });
});

test('a reader that closes stdout early (`vision runs list | head -1`) ends the CLI quietly', async () => {
  server.respond(() => ({ json: { items: [completed, failed, queued], nextCursor: null } }));
  const child = spawn(process.execPath, ['cli/vision.mjs', 'runs', 'list', '--json'], {
    cwd: ROOT,
    env: { ...process.env, NODE_NO_WARNINGS: '1', VISION_BASE_URL: server.url, VISION_API_KEY: 'vk_test_key' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Closed before the CLI writes a byte: its write meets EPIPE.
  child.stdout.destroy();
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  expect(server.requests.map((r) => r.path)).toEqual(['/v1/runs']);
});
