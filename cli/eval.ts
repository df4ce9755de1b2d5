/**
 * `vision eval DIR` (contract-v1.2 §1, docs/evaluation.md): every document of a folder (`NAME.png|jpg|jpeg|pdf|heic`
 * beside `NAME.json`, its expected values) uploaded, evaluated in one evaluation (asking before spending, as `analyze`
 * does), followed to the end, and its report printed as a table (`--json`: the evaluation as JSON); exit 1 when the
 * accuracy is below `--min-accuracy`. `vision eval --from-verified --workflow W --out DIR` writes such a folder from
 * the workflow's verified runs (their files while the service still keeps them, the reviewed values).
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import type { CompletedRun, Evaluation, EvaluationReport, ProviderId, VisionClient } from '../sdk/index.js';
import { VisionError } from '../sdk/index.js';
import { GLOBAL_OPTIONS, parse, parseNumber, UsageError } from './args.js';
import { EXIT, type Io } from './output.js';
import type { ClientFor } from './webhooks.js';

const DOCUMENT = /\.(png|jpe?g|pdf|heic)$/i;
const PROVIDERS: readonly ProviderId[] = ['openai', 'anthropic', 'gemini', 'bedrock', 'textract', 'local'];
/** Documents uploaded at once. */
const UPLOADS_AT_ONCE = 4;

/** Exit code of an evaluation whose accuracy is below `--min-accuracy` (a gate, not an error of the CLI). */
export const EXIT_BELOW_MIN_ACCURACY = 1;

export interface EvalContext {
  io: Io;
  signal: AbortSignal;
  clientFor: ClientFor;
  help: () => number;
  /** Asks a yes/no question on the terminal. */
  ask: (question: string) => Promise<boolean>;
}

/** `company=merchant,total=amount` (repeatable): expected keys renamed before they are sent. */
function parseMap(values: string[] | undefined): Map<string, string> {
  const map = new Map<string, string>();
  for (const pair of (values ?? []).flatMap((v) => v.split(','))) {
    const [from, to] = pair.split('=').map((s) => s.trim());
    if (!from || !to) throw new UsageError(`--map: "${pair}" is not from=to`);
    map.set(from, to);
  }
  return map;
}

function parseProviders(value: string | undefined): ProviderId[] | undefined {
  if (value === undefined) return undefined;
  const list = value.split(',').map((s) => s.trim());
  for (const p of list) {
    if (!(PROVIDERS as readonly string[]).includes(p)) {
      throw new UsageError(`--providers: unknown provider "${p}"; known: ${PROVIDERS.join(', ')}`);
    }
  }
  return list as ProviderId[];
}

/** The documents of a folder with their expected values, in name order. */
async function readFolder(dir: string): Promise<{ file: string; name: string; expected: Record<string, unknown> }[]> {
  const entries = await readdir(dir).catch((error: NodeJS.ErrnoException) => {
    throw new UsageError(`${dir}: ${error.code === 'ENOENT' ? 'no such folder' : error.message}`);
  });
  const documents = [];
  for (const entry of entries.filter((e) => DOCUMENT.test(e)).sort()) {
    const name = entry.slice(0, -extname(entry).length);
    let text: string;
    try {
      text = await readFile(join(dir, `${name}.json`), 'utf8');
    } catch {
      continue;
    }
    let expected: unknown;
    try {
      expected = JSON.parse(text);
    } catch (error) {
      throw new UsageError(`${join(dir, `${name}.json`)}: not valid JSON (${(error as Error).message})`);
    }
    if (!expected || typeof expected !== 'object' || Array.isArray(expected)) {
      throw new UsageError(`${join(dir, `${name}.json`)}: expected values must be a JSON object`);
    }
    documents.push({ file: join(dir, entry), name, expected: expected as Record<string, unknown> });
  }
  return documents;
}

/** Runs `fn` over `items`, a few at a time. */
async function eachLimit<T>(items: readonly T[], limit: number, fn: (item: T, i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i] as T, i);
      }
    }),
  );
}

const percent = (x: number | null | undefined) => (x === null || x === undefined ? '—' : `${(x * 100).toFixed(1)} %`);
const fixed = (x: number | null | undefined, digits = 3) => (x === null || x === undefined ? '—' : x.toFixed(digits));

function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length))) ?? [];
  return rows
    .map((r) =>
      r
        .map((cell, c) => cell.padEnd(widths[c] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** The report as the CLI prints it: fields, providers, calibration, review catch rate, accuracy. */
export function reportTable(evaluation: Evaluation, minAccuracy?: number): string {
  const report = evaluation.report as EvaluationReport;
  const lines = [
    `evaluation ${evaluation.evaluationId} "${evaluation.name}": ${evaluation.status}, ${evaluation.progress.itemsTotal} runs; ` +
      `charged ${evaluation.chargedUsd} USD of ${evaluation.estimatedCostUsd} held (${evaluation.refundedUsd} refunded)`,
    '',
    table([
      ['field', 'compared', 'right', 'accuracy', 'missing', 'extra', 'mean score'],
      ...Object.entries(report.perField).map(([name, f]) => [
        name,
        String(f.compared),
        String(f.right),
        percent(f.accuracy),
        String(f.missing),
        String(f.extra),
        fixed(f.meanScore),
      ]),
    ]),
    '',
    table([
      ['provider', 'runs', 'failed', 'accuracy', 'cost USD', 'p50 latency'],
      ...Object.entries(report.perProvider).map(([id, p]) => [
        id,
        String(p.runs),
        String(p.failed),
        percent(p.accuracy),
        String(p.costUsd),
        p.p50LatencyMs === null ? '—' : `${(p.p50LatencyMs / 1000).toFixed(1)} s`,
      ]),
    ]),
    '',
    `calibration: AUROC ${fixed(report.calibration.auroc)}, ECE ${fixed(report.calibration.ece)}, Brier ${fixed(report.calibration.brier)}`,
    `review: ${report.review.wrongFlagged} of ${report.review.wrongRuns} runs with a wrong field flagged; ` +
      `${report.review.rightFlagged} of ${report.review.rightRuns} all-right runs flagged`,
    `accuracy: ${percent(report.accuracy)}${
      minAccuracy === undefined
        ? ''
        : (report.accuracy ?? 0) < minAccuracy
          ? ` — BELOW the minimum ${percent(minAccuracy)}`
          : ` (minimum ${percent(minAccuracy)})`
    }`,
  ];
  return `${lines.join('\n')}\n`;
}

export async function evaluate(ctx: EvalContext, args: string[]): Promise<number> {
  const fromVerifiedRuns = args.includes('--from-verified');
  const { values, positionals } = parse(
    {
      args,
      options: {
        ...GLOBAL_OPTIONS,
        schema: { type: 'string' },
        providers: { type: 'string' },
        map: { type: 'string', multiple: true },
        'min-accuracy': { type: 'string' },
        json: { type: 'boolean' },
        name: { type: 'string' },
        workflow: { type: 'string' },
        'max-cost': { type: 'string' },
        yes: { type: 'boolean', short: 'y' },
        'from-verified': { type: 'boolean' },
        out: { type: 'string' },
        limit: { type: 'string' },
      },
      allowPositionals: true,
    },
    fromVerifiedRuns ? [] : ['DIR'],
  );
  if (values.help) return ctx.help();
  if (values['from-verified']) return fromVerified(ctx, values);
  const dir = positionals[0] as string;
  const minAccuracy = parseNumber(values['min-accuracy'], '--min-accuracy');
  if (minAccuracy !== undefined && (minAccuracy < 0 || minAccuracy > 1)) {
    throw new UsageError('--min-accuracy: a share from 0 to 1 (0.9 is 90 %)');
  }
  const maxCostUsd = parseNumber(values['max-cost'], '--max-cost');
  const providers = parseProviders(values.providers);
  const map = parseMap(values.map);
  const schemaId = values.schema ?? 'receipt';
  const documents = await readFolder(dir);
  if (documents.length === 0) throw new UsageError(`${dir}: no document with its NAME.json beside it`);
  const vision = ctx.clientFor(values);

  // Expected values by the schema's field names: renamed by --map, others left out (said once).
  const schema = (await vision.schemas({ signal: ctx.signal })).items.find((s) => s.id === schemaId);
  if (!schema) throw new UsageError(`--schema: unknown schema "${schemaId}" (see vision schemas)`);
  const fields = new Set(schema.expectedFields.map((f) => f.name));
  const ignored = new Set<string>();
  const expectedOf = (raw: Record<string, unknown>) =>
    Object.fromEntries(
      Object.entries(raw)
        .map(([key, value]) => [map.get(key) ?? key, value] as const)
        .filter(([key]) => {
          if (fields.has(key)) return true;
          ignored.add(key);
          return false;
        }),
    );
  const items = documents.map((d) => ({ uploadId: '', expected: expectedOf(d.expected) }));
  if (ignored.size > 0) {
    ctx.io.stderr(
      `not in the ${schemaId} schema, not compared: ${[...ignored].sort().join(', ')} (rename with --map)\n`,
    );
  }
  // A document nothing would be compared on would be paid for and score nothing: refused before anything is uploaded.
  const unscored = documents.filter((_, i) => Object.keys(items[i]?.expected ?? {}).length === 0);
  if (unscored.length > 0) {
    throw new UsageError(
      `${unscored.map((d) => `${d.name}.json`).join(', ')}: no value of a ${schemaId} field to compare (rename with --map)`,
    );
  }

  let uploaded = 0;
  await eachLimit(documents, UPLOADS_AT_ONCE, async (document, i) => {
    const bytes = new Uint8Array(await readFile(document.file));
    const slot = await vision.presign(
      { fileName: document.file.split('/').pop() ?? document.name, contentLength: bytes.length },
      { signal: ctx.signal },
    );
    await vision.upload(slot, bytes, { signal: ctx.signal });
    (items[i] as { uploadId: string }).uploadId = slot.uploadId;
    uploaded += 1;
    if (ctx.io.stderrIsTTY) ctx.io.stderr(`\ruploaded ${uploaded} of ${documents.length}`);
  });
  if (ctx.io.stderrIsTTY) ctx.io.stderr('\n');

  const body = {
    name: values.name ?? `${dir.replace(/\/+$/, '').split('/').pop() ?? dir} (${new Date().toISOString()})`,
    schemaId,
    items,
    ...(providers ? { providers } : {}),
    ...(values.workflow !== undefined ? { workflow: values.workflow } : {}),
    ...(maxCostUsd !== undefined ? { maxCostUsd } : {}),
    ...(values.yes ? { confirmCost: true } : {}),
  };
  const idempotencyKey = randomUUID();
  let created: Awaited<ReturnType<VisionClient['createEvaluation']>>;
  try {
    created = await vision.createEvaluation(body, { idempotencyKey, signal: ctx.signal });
  } catch (error) {
    if (!(error instanceof VisionError) || error.code !== 'COST_CONFIRMATION_REQUIRED') throw error;
    const { estimatedCostUsd, thresholdUsd } = error.details ?? {};
    const question = `Estimated cost ${String(estimatedCostUsd)} USD exceeds the confirmation threshold ${String(thresholdUsd)} USD. Run it? [y/N] `;
    if (!ctx.io.interactive) {
      ctx.io.stderr(
        `error: COST_CONFIRMATION_REQUIRED (402): the estimated cost ${String(estimatedCostUsd)} USD exceeds the ` +
          `confirmation threshold ${String(thresholdUsd)} USD.\n` +
          'Not running interactively: re-run with --yes to confirm, or --max-cost <usd> to set a budget.\n',
      );
      return EXIT.rejected;
    }
    if (!(await ctx.ask(question))) {
      ctx.io.stderr('Not confirmed; nothing was run.\n');
      return EXIT.rejected;
    }
    created = await vision.createEvaluation(
      { ...body, confirmCost: true },
      { idempotencyKey: randomUUID(), signal: ctx.signal },
    );
  }
  ctx.io.stderr(
    `evaluation ${created.evaluationId}: ${created.items} runs, estimated ${created.estimatedCostUsd} USD (held)\n`,
  );

  const final = await vision.waitForEvaluation(created.evaluationId, {
    signal: ctx.signal,
    intervalMs: 1000,
    onProgress: (e) => {
      if (ctx.io.stderrIsTTY) ctx.io.stderr(`\r${e.progress.itemsDone} of ${e.progress.itemsTotal} runs done`);
    },
  });
  if (ctx.io.stderrIsTTY) ctx.io.stderr('\n');
  if (values.json) ctx.io.stdout(`${JSON.stringify(final, null, 2)}\n`);
  else ctx.io.stdout(reportTable(final, minAccuracy));
  if (final.report && minAccuracy !== undefined && (final.report.accuracy ?? 0) < minAccuracy) {
    return EXIT_BELOW_MIN_ACCURACY;
  }
  return final.status === 'failed' ? EXIT.runFailed : EXIT.ok;
}

const EXTENSIONS: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/heic': 'heic',
  'application/pdf': 'pdf',
};

/**
 * Writes a folder `vision eval` reads from the workflow's verified runs: each run's file (while the service keeps
 * uploads) as `<jobId>.<ext>` and its reviewed values as `<jobId>.json` (the result, with the corrections applied).
 * A rejection that corrected nothing says no value is right: such runs are left out, as are runs whose file expired.
 */
async function fromVerified(
  ctx: EvalContext,
  values: {
    workflow?: string | undefined;
    out?: string | undefined;
    limit?: string | undefined;
  } & Parameters<ClientFor>[0],
): Promise<number> {
  if (values.workflow === undefined) throw new UsageError('--from-verified needs --workflow W');
  const out = values.out;
  if (out === undefined) throw new UsageError('--from-verified needs --out DIR (the folder to write)');
  const limit = parseNumber(values.limit, '--limit') ?? 1000;
  const vision = ctx.clientFor(values);
  await mkdir(out, { recursive: true });
  const summary = { dir: out, written: 0, fileExpired: 0, noTruth: 0, notVerified: 0 };
  let cursor: string | undefined;
  do {
    const page = await vision.listRuns(
      { workflow: values.workflow, status: 'completed', limit: 100, ...(cursor ? { cursor } : {}) },
      { signal: ctx.signal },
    );
    for (const run of page.items as CompletedRun[]) {
      if (summary.written >= limit) break;
      const review = run.verification;
      if (!review) {
        summary.notVerified += 1;
        continue;
      }
      if (!review.accepted && Object.keys(review.corrections).length === 0) {
        summary.noTruth += 1;
        continue;
      }
      let url: string;
      try {
        url = (await vision.fileUrl(run.jobId, { signal: ctx.signal })).url;
      } catch (error) {
        if (error instanceof VisionError && error.code === 'NOT_FOUND') {
          summary.fileExpired += 1;
          continue;
        }
        throw error;
      }
      const response = await fetch(url, { signal: ctx.signal });
      if (!response.ok) {
        summary.fileExpired += 1;
        continue;
      }
      const expected = { ...run.result, ...review.corrections };
      await writeFile(
        join(out, `${run.jobId}.${EXTENSIONS[run.file.type] ?? 'bin'}`),
        new Uint8Array(await response.arrayBuffer()),
      );
      await writeFile(join(out, `${run.jobId}.json`), `${JSON.stringify(expected, null, 2)}\n`);
      summary.written += 1;
    }
    cursor = page.nextCursor ?? undefined;
  } while (cursor && summary.written < limit);
  ctx.io.stdout(`${JSON.stringify(summary, null, 2)}\n`);
  return EXIT.ok;
}
