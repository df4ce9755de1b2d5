/**
 * `vision eval DIR` on a terminal (contract-v1.2 §1), in process against a scripted service: the cost question asked
 * before anything is spent (yes: created with the confirmation; no: nothing created, exit 3), progress shown while
 * the runs settle, the report printed as a table, exit 1 below `--min-accuracy`. The SDK's evaluation and quality
 * methods are checked on the wire here too. (test/integration/cli-eval.test.ts runs the CLI as a process, not on a
 * terminal, against the local stack.)
 */
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UsageError } from '../../cli/args.js';
import { evaluate } from '../../cli/eval.js';
import { VisionClient } from '../../sdk/index.js';
import {
  type FakeServer,
  type RecordedRequest,
  type ScriptedResponse,
  startFakeServer,
} from '../support/fake-server.js';

const ROOT = new URL('../..', import.meta.url).pathname;

let server: FakeServer;
let dir: string;
beforeAll(async () => {
  server = await startFakeServer();
  dir = await mkdtemp(join(tmpdir(), 'cli-eval-'));
  for (const name of ['a', 'b']) {
    await copyFile(`${ROOT}test/fixtures/receipt.png`, join(dir, `${name}.png`));
    await writeFile(join(dir, `${name}.json`), JSON.stringify({ company: 'ACME', total: 42.5 }));
  }
});
afterAll(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  server.requests.length = 0;
});

const report = {
  perField: {
    merchant: { compared: 2, right: 2, accuracy: 1, missing: 0, extra: 0, meanScore: 1 },
    total: { compared: 2, right: 1, accuracy: 0.5, missing: 0, extra: 0, meanScore: 0.5 },
  },
  perProvider: { local: { accuracy: 0.75, runs: 2, failed: 0, costUsd: 0.00052, p50LatencyMs: 3100 } },
  calibration: { auroc: 1, ece: 0.1, brier: 0.05, bins: [] },
  review: { wrongRuns: 1, wrongFlagged: 1, rightRuns: 1, rightFlagged: 0 },
  accuracy: 0.75,
  costUsd: 0.00052,
};

const evaluation = (itemsDone: number) => ({
  evaluationId: 'eval_1',
  name: 'set',
  status: itemsDone === 2 ? 'completed' : 'queued',
  schemaId: 'receipt',
  providers: ['local'],
  workflow: null,
  metadata: {},
  progress: { itemsTotal: 2, itemsDone },
  estimatedCostUsd: 0.0006,
  chargedUsd: itemsDone === 2 ? 0.00052 : 0,
  refundedUsd: itemsDone === 2 ? 0.00008 : 0,
  createdAt: '2026-11-28T10:00:00.000Z',
  ...(itemsDone === 2 ? { completedAt: '2026-11-28T10:00:09.000Z', report } : {}),
});

/** The service: the schema, uploads, creation refused once for confirmation, then progress 0 → 1 → 2 of 2. */
function service(): (r: RecordedRequest) => ScriptedResponse {
  let uploads = 0;
  let polls = 0;
  return (r) => {
    if (r.path === '/v1/schemas') {
      return {
        json: {
          items: [
            {
              id: 'receipt',
              label: 'Receipt',
              description: 'A receipt',
              expectedFields: [
                { name: 'merchant', type: 'string', required: true },
                { name: 'total', type: 'number', required: true },
              ],
            },
          ],
        },
      };
    }
    if (r.path === '/v1/uploads/presign') {
      uploads += 1;
      return {
        json: {
          uploadId: `upl_${uploads}`,
          uploadUrl: `${server.url}/upload/${uploads}`,
          expiresAt: '2026-11-28T11:00:00Z',
          method: 'PUT',
          headers: { 'Content-Type': 'application/octet-stream' },
        },
      };
    }
    if (r.path.startsWith('/upload/')) return { status: 200 };
    if (r.method === 'POST' && r.path === '/v1/evaluations') {
      if ((r.body as { confirmCost?: boolean }).confirmCost !== true) {
        return {
          status: 402,
          json: {
            error: {
              code: 'COST_CONFIRMATION_REQUIRED',
              message: 'confirm',
              status: 402,
              retryable: false,
              requestId: 'req_1',
              details: { estimatedCostUsd: 0.0006, thresholdUsd: 0.0001 },
            },
          },
        };
      }
      return {
        status: 202,
        json: {
          evaluationId: 'eval_1',
          status: 'queued',
          name: 'set',
          items: 2,
          documents: 2,
          providers: null,
          estimatedCostUsd: 0.0006,
          createdAt: '2026-11-28T10:00:00.000Z',
        },
      };
    }
    if (r.method === 'GET' && r.path.startsWith('/v1/evaluations/eval_1')) {
      polls += 1;
      return { json: evaluation(Math.min(2, polls - 1)) };
    }
    return { status: 404, json: { error: { code: 'NOT_FOUND', message: r.path, status: 404, retryable: false } } };
  };
}

async function run(args: string[], answer: boolean) {
  server.respond(service());
  const out = { stdout: '', stderr: '' };
  const questions: string[] = [];
  const code = await evaluate(
    {
      io: {
        stdout: (t) => {
          out.stdout += t;
        },
        stderr: (t) => {
          out.stderr += t;
        },
        env: {},
        stderrIsTTY: true,
        interactive: true,
      },
      signal: new AbortController().signal,
      clientFor: () => new VisionClient({ baseUrl: server.url, apiKey: 'vk_test_key' }),
      help: () => 0,
      ask: async (question) => {
        questions.push(question);
        return answer;
      },
    },
    args,
  );
  const creations = server.requests.filter((r) => r.method === 'POST' && r.path === '/v1/evaluations');
  return { code, ...out, questions, creations };
}

test('on a terminal it asks before spending; yes creates it confirmed, shows progress, prints the table', async () => {
  const out = await run([dir, '--map', 'company=merchant', '--min-accuracy', '0.9'], true);
  expect(out.questions).toEqual([expect.stringContaining('Estimated cost 0.0006 USD exceeds the confirmation')]);
  expect(out.creations.map((r) => (r.body as { confirmCost?: boolean }).confirmCost)).toEqual([undefined, true]);
  expect((out.creations[1]?.body as { items?: unknown[] } | undefined)?.items).toEqual([
    { uploadId: 'upl_1', expected: { merchant: 'ACME', total: 42.5 } },
    { uploadId: 'upl_2', expected: { merchant: 'ACME', total: 42.5 } },
  ]);
  // Progress as the runs settle, on the terminal's stderr.
  expect(out.stderr).toContain('uploaded 2 of 2');
  expect(out.stderr).toContain('0 of 2 runs done');
  expect(out.stderr).toContain('1 of 2 runs done');
  expect(out.stderr).toContain('2 of 2 runs done');
  expect(out.stdout).toMatch(/^total\s+2\s+1\s+50\.0 %/m);
  expect(out.stdout).toMatch(/^local\s+2\s+0\s+75\.0 %\s+0\.00052\s+3\.1 s/m);
  expect(out.stdout).toContain('BELOW the minimum 90.0 %');
  expect(out.code).toBe(1);
});

test('on a terminal, no: nothing is created with the confirmation, nothing is polled (exit 3)', async () => {
  const out = await run([dir, '--map', 'company=merchant'], false);
  expect(out.questions).toHaveLength(1);
  expect(out.creations).toHaveLength(1);
  expect(server.requests.some((r) => r.path.startsWith('/v1/evaluations/'))).toBe(false);
  expect(out.stderr).toContain('Not confirmed; nothing was run.');
  expect(out.code).toBe(3);
});

test('a document whose values name no schema field is refused before anything is uploaded', async () => {
  const other = await mkdtemp(join(tmpdir(), 'cli-eval-unmapped-'));
  try {
    await copyFile(`${ROOT}test/fixtures/receipt.png`, join(other, 'c.png'));
    await writeFile(join(other, 'c.json'), JSON.stringify({ company: 'ACME' }));
    // A usage error: the command line prints it and exits 2 (cli/vision.ts).
    await expect(run([other], true)).rejects.toThrow(
      new UsageError('c.json: no value of a receipt field to compare (rename with --map)'),
    );
    expect(server.requests.filter((r) => r.method !== 'GET')).toEqual([]);
  } finally {
    await rm(other, { recursive: true, force: true });
  }
});

test('at or above --min-accuracy it exits 0', async () => {
  expect((await run([dir, '--map', 'company=merchant', '--min-accuracy', '0.75'], true)).code).toBe(0);
});

test('the SDK: the three evaluation routes and the quality route, as the contract names them', async () => {
  server.respond((r) => {
    if (r.path.startsWith('/v1/quality')) {
      return {
        json: {
          from: '2026-11-01T00:00:00.000Z',
          to: '2026-11-28T00:00:00.000Z',
          verifiedRuns: 0,
          accuracy: null,
          fields: {},
          providers: {},
          calibration: { auroc: null, ece: null, brier: null, bins: [] },
          series: [],
        },
      };
    }
    if (r.path.startsWith('/v1/evaluations?')) return { json: { items: [evaluation(2)], nextCursor: 'c2' } };
    if (r.path.startsWith('/v1/evaluations/')) return { json: evaluation(2) };
    return service()(r);
  });
  const vision = new VisionClient({ baseUrl: server.url, apiKey: 'vk_test_key' });
  const created = await vision.createEvaluation(
    { name: 'set', schemaId: 'receipt', items: [{ uploadId: 'upl_1', expected: { total: 1 } }], confirmCost: true },
    { idempotencyKey: 'idem-1' },
  );
  expect(created.evaluationId).toBe('eval_1');
  const post = server.requests.find((r) => r.method === 'POST');
  expect(post?.headers['idempotency-key']).toBe('idem-1');
  expect((await vision.getEvaluation('eval_1', { itemsLimit: 5, itemsCursor: 'k' })).report?.accuracy).toBe(0.75);
  expect((await vision.listEvaluations({ limit: 10, cursor: 'c1' })).nextCursor).toBe('c2');
  expect((await vision.quality({ workflow: 'expenses', from: '2026-11-01T00:00:00Z' })).verifiedRuns).toBe(0);
  const gets = server.requests.filter((r) => r.method === 'GET').map((r) => r.path);
  expect(gets).toEqual([
    '/v1/evaluations/eval_1?itemsLimit=5&itemsCursor=k',
    '/v1/evaluations?limit=10&cursor=c1',
    '/v1/quality?workflow=expenses&from=2026-11-01T00%3A00%3A00Z',
  ]);
});
