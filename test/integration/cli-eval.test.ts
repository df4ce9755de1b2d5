/**
 * `vision eval` as a user runs it (a child process, not a terminal) against the shared local stack: a folder of
 * documents beside their expected values, the cost question, the report table, `--json`, the `--min-accuracy` gate,
 * and a folder written from verified runs by `--from-verified`.
 */
import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, fixture, upload, visionCli, waitForFinal } from './client.js';

const repoRoot = new URL('../..', import.meta.url).pathname;

const vision = (args: string[]) => visionCli(args);

const folders: string[] = [];
afterAll(async () => {
  for (const dir of folders) await rm(dir, { recursive: true, force: true });
});

async function folder(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'vision-eval-'));
  folders.push(dir);
  return dir;
}

describe('vision eval DIR', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await folder();
    // SROIE-style labels: `company` is the schema's `merchant` (--map), `address` is not in the schema.
    const right = { company: 'ACME HARDWARE', date: '02/11/2026', total: '42.50', address: '1 Main St' };
    for (const name of ['a', 'b', 'c']) {
      await copyFile(`${repoRoot}test/fixtures/receipt.png`, join(dir, `${name}.png`));
      await writeFile(join(dir, `${name}.json`), JSON.stringify(right));
    }
    await copyFile(`${repoRoot}test/fixtures/receipt.jpg`, join(dir, 'd.jpg'));
    await writeFile(join(dir, 'd.json'), JSON.stringify({ ...right, total: 'RM 99.00' }));
    // A document without expected values is not part of the set.
    await copyFile(`${repoRoot}test/fixtures/damaged.png`, join(dir, 'e.png'));
  });

  test('asks before spending: not on a terminal and without --yes, nothing runs (exit 3)', async () => {
    // Four receipts on the local provider are estimated above the integration stack's $0.001 threshold.
    const before = await call<{ items: unknown[] }>('GET', '/v1/evaluations?limit=100');
    const out = await vision(['eval', dir, '--map', 'company=merchant']);
    expect(out.code).toBe(3);
    expect(out.stderr).toContain('COST_CONFIRMATION_REQUIRED');
    expect(out.stderr).toContain('--yes');
    const after = await call<{ items: unknown[] }>('GET', '/v1/evaluations?limit=100');
    expect(after.body.items.length).toBe(before.body.items.length);
  });

  test('prints the report as a table and exits 1 below --min-accuracy', async () => {
    const out = await vision(['eval', dir, '--map', 'company=merchant', '--yes', '--min-accuracy', '0.99']);
    expect(out.stderr).toContain('not compared: address');
    expect(out.stdout).toMatch(/^field\s+compared\s+right\s+accuracy/m);
    expect(out.stdout).toMatch(/^merchant\s+4\s+/m);
    expect(out.stdout).toMatch(/^total\s+4\s+3\s+75\.0 %/m);
    expect(out.stdout).toMatch(/^local\s+4\s+0\s+/m);
    expect(out.stdout).toContain('BELOW the minimum 99.0 %');
    expect(out.code).toBe(1);
  });

  test('--json prints the evaluation with its report; at or above the minimum it exits 0', async () => {
    const out = await vision(['eval', dir, '--map', 'company=merchant', '--yes', '--json', '--min-accuracy', '0.5']);
    expect(out.code).toBe(0);
    const evaluation = JSON.parse(out.stdout) as {
      status: string;
      progress: { itemsTotal: number; itemsDone: number };
      report: { perField: Record<string, { compared: number; right: number }>; accuracy: number };
    };
    expect(evaluation.status).toBe('completed');
    expect(evaluation.progress).toEqual({ itemsTotal: 4, itemsDone: 4 });
    expect(evaluation.report.perField.total).toMatchObject({ compared: 4, right: 3 });
    expect(evaluation.report.perField.address).toBeUndefined();
  });
});

describe('vision eval --from-verified', () => {
  test('writes the documents and the reviewed values of a workflow, which vision eval then scores', async () => {
    const workflow = `from-verified-${Date.now()}`;
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const uploadId = await upload('receipt.png', await fixture('receipt.png'));
      const created = await call('POST', '/v1/runs', {
        body: { uploadId, prompt: 'Extract the receipt', schemaId: 'receipt', workflow },
      });
      await waitForFinal(String(created.body.jobId));
      ids.push(String(created.body.jobId));
    }
    const [accepted, corrected, unreviewed] = ids;
    await call('POST', `/v1/runs/${accepted}/verify`, { body: { accepted: true } });
    await call('POST', `/v1/runs/${corrected}/verify`, { body: { accepted: false, corrections: { total: 40 } } });

    const out = await folder();
    const written = await vision(['eval', '--from-verified', '--workflow', workflow, '--out', out]);
    expect(written.code).toBe(0);
    expect(JSON.parse(written.stdout)).toMatchObject({ written: 2, notVerified: 1 });
    const files = (await readdir(out)).sort();
    expect(files).toEqual([`${accepted}.json`, `${accepted}.png`, `${corrected}.json`, `${corrected}.png`].sort());
    expect(files.some((f) => f.startsWith(String(unreviewed)))).toBe(false);
    expect(JSON.parse(await readFile(join(out, `${corrected}.json`), 'utf8'))).toMatchObject({ total: 40 });
    expect(await readFile(join(out, `${accepted}.png`))).toEqual(await fixture('receipt.png'));

    const scored = await vision(['eval', out, '--yes', '--json']);
    expect(scored.code).toBe(0);
    const report = (JSON.parse(scored.stdout) as { report: { perField: Record<string, { right: number }> } }).report;
    // The corrected total is the truth now: the run's own answer is wrong against it once.
    expect(report.perField.total).toMatchObject({ compared: 2, right: 1 });
  });
});
