/**
 * Dev tool: the local provider on a folder of real receipts, in process (no stack), scored field by field.
 *
 *   npx tsx bench/receipts.ts DIR [--split=fit|check|all] [--out=FILE] [--only=NNN,…]
 *
 * DIR holds `NAME.jpg|png` each beside `NAME.json` with `company`, `date` and `total` (the SROIE labels; see
 * ../shared/datasets/sroie-dev/README.md). Each image is read by `localProvider.invoke` with the `receipt` schema,
 * one at a time after one warm-up, and grounded by `groundFields` as the worker grounds it, so the confidences and
 * `review.needed` are the ones a run reports. Prints accuracy per field, AUROC of field confidence, the review
 * catch rates and the per-receipt time (p50, warm, one at a time); `--out` writes every receipt's details as JSON.
 * `--split`: `fit` = names whose number is even in its tens digit (007, 027, …), `check` = the others, for fitting
 * rules and constants on one half and checking them on the other.
 * Not to undo: it scores with the official comparison (shared/evaluation: `scoreDocument` by the schema's field types,
 * `calibrate` for AUROC), the same as the bench's accuracy phase (bench/accuracy.ts), so the two never disagree; a
 * missing value is wrong with confidence 0, as grounding reports it.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { groundFields } from '../shared/fields/ground.js';
import type { Fields } from '../shared/fields/types.js';
import { setLogSink } from '../shared/log.js';
import { localProvider, shutdownLocalProvider } from '../shared/providers/local/local-provider.js';
import type { ProviderInput } from '../shared/providers/types.js';
import { registry } from '../shared/registry/registry.js';
import { calibrate, scoreDocument } from '../shared/scoring/index.js';
import type { FieldSpec } from '../shared/task.js';
import { percentile } from './stats.js';

const SCORED = ['merchant', 'date', 'total'] as const;
type Scored = (typeof SCORED)[number];
const LABEL_OF: Record<Scored, string> = { merchant: 'company', date: 'date', total: 'total' };

// ---------------------------------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------------------------------

interface Outcome {
  name: string;
  ms: number;
  /** CPU time of the whole process while the receipt was read (onnxruntime's threads included). */
  cpuMs: number;
  expected: Record<Scored, string>;
  got: Record<string, unknown>;
  right: Record<Scored, boolean>;
  confidence: Record<Scored, number>;
  review: { needed: boolean; reasons: string[] };
  text: string;
}

function option(name: string): string | undefined {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

function inSplit(name: string, split: string): boolean {
  if (split === 'all') return true;
  const tens = Number(name.slice(-2, -1));
  return (Number.isNaN(tens) ? 0 : tens % 2) === (split === 'fit' ? 0 : 1);
}

async function readOne(
  dir: string,
  file: string,
  fields: FieldSpec[],
): Promise<Omit<Outcome, 'name' | 'expected' | 'right' | 'confidence'> & { evidence: Fields }> {
  const bytes = new Uint8Array(await readFile(path.join(dir, file)));
  const meta = await sharp(bytes).metadata();
  const input: ProviderInput = {
    bytes,
    facts: {
      mime: file.endsWith('.png') ? 'image/png' : 'image/jpeg',
      kind: 'image',
      sizeBytes: bytes.byteLength,
      width: meta.width ?? 0,
      height: meta.height ?? 0,
      pages: 1,
    },
    task: {
      prompt: 'Extract the receipt',
      outputFormat: 'json',
      fields,
      schemaId: 'receipt',
      schemaLabel: 'Receipt',
      promptScaffold: null,
    },
    step: 'vision',
  };
  const started = performance.now();
  const cpu = process.cpuUsage();
  const out = await localProvider.invoke(input, {
    signal: new AbortController().signal,
    deadlineMs: Date.now() + 120_000,
  });
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  const cpuMs = (used.user + used.system) / 1000;
  const grounded = groundFields({
    result: out.result,
    fieldSpecs: fields,
    words: out.words ?? [],
    ...(out.nativeConfidence !== undefined ? { nativeConfidence: out.nativeConfidence } : {}),
    ...(out.valueConfidence !== undefined ? { valueConfidence: out.valueConfidence } : {}),
    reviewThreshold: 0.8,
    now: new Date(),
  });
  return {
    ms,
    cpuMs,
    got: out.result,
    evidence: grounded.fields,
    review: grounded.review,
    text: out.documentText ?? '',
  };
}

function pct(n: number, of: number): string {
  return of === 0 ? '–' : `${((100 * n) / of).toFixed(1)} %`;
}

function report(title: string, outcomes: Outcome[]): string {
  const lines = [`## ${title} (${outcomes.length} receipts)`, '', '| field | right | AUROC |', '|---|---|---|'];
  for (const f of SCORED) {
    const right = outcomes.filter((o) => o.right[f]);
    const a = calibrate(outcomes.map((o) => ({ confidence: o.confidence[f], right: o.right[f] }))).auroc;
    lines.push(`| ${f} | ${pct(right.length, outcomes.length)} | ${a === null ? '–' : a.toFixed(3)} |`);
  }
  const wrongRuns = outcomes.filter((o) => SCORED.some((f) => !o.right[f]));
  const rightRuns = outcomes.filter((o) => SCORED.every((f) => o.right[f]));
  const flagged = (runs: Outcome[]) => runs.filter((o) => o.review.needed).length;
  const ms = outcomes.map((o) => o.ms).sort((a, b) => a - b);
  const cpu = outcomes.map((o) => o.cpuMs).sort((a, b) => a - b);
  lines.push(
    '',
    `review.needed on runs with a wrong field: ${flagged(wrongRuns)}/${wrongRuns.length} (${pct(flagged(wrongRuns), wrongRuns.length)})`,
    `review.needed on fully right runs: ${flagged(rightRuns)}/${rightRuns.length} (${pct(flagged(rightRuns), rightRuns.length)})`,
    `seconds per receipt, one at a time, warm: p50 ${(percentile(ms, 50) / 1000).toFixed(2)}, p90 ${(percentile(ms, 90) / 1000).toFixed(2)}; CPU p50 ${(percentile(cpu, 50) / 1000).toFixed(2)}, p90 ${(percentile(cpu, 90) / 1000).toFixed(2)} (load ${os.loadavg()[0]?.toFixed(1)})`,
    '',
  );
  return lines.join('\n');
}

async function main(): Promise<void> {
  const dir = process.argv.slice(2).find((a) => !a.startsWith('--'));
  if (dir === undefined)
    throw new Error('usage: npx tsx bench/receipts.ts DIR [--split=fit|check|all] [--out=FILE] [--only=NNN,…]');
  const split = option('split') ?? 'all';
  const only = option('only')?.split(',');
  const fields = registry.get('receipt')?.expectedFields as FieldSpec[];
  setLogSink(() => {});
  const names = (await readdir(dir))
    .filter((f) => /\.(jpe?g|png)$/i.test(f))
    .map((f) => ({ file: f, name: f.replace(/\.[^.]+$/, '') }))
    .filter(({ name }) => inSplit(name, split) && (only === undefined || only.includes(name)))
    .sort((a, b) => a.name.localeCompare(b.name));
  const first = names[0];
  if (first === undefined) throw new Error(`no receipts in ${dir} for --split=${split}`);
  await readOne(dir, first.file, fields); // warm-up: worker start and model load are not a receipt's time
  const outcomes: Outcome[] = [];
  for (const { file, name } of names) {
    const labels = JSON.parse(await readFile(path.join(dir, `${name}.json`), 'utf8')) as Record<string, string>;
    const expected = Object.fromEntries(SCORED.map((f) => [f, labels[LABEL_OF[f]] ?? ''])) as Record<Scored, string>;
    const { evidence, ...read } = await readOne(dir, file, fields);
    const scores = scoreDocument({ fields, expected, got: read.got, evidence });
    const right = {} as Record<Scored, boolean>;
    const confidence = {} as Record<Scored, number>;
    for (const f of SCORED) {
      right[f] = scores[f]?.outcome === 'right';
      confidence[f] = scores[f]?.confidence ?? 0;
    }
    outcomes.push({ name, expected, right, confidence, ...read });
    process.stderr.write(
      `${name} ${SCORED.map((f) => `${f}:${right[f] ? 'ok' : 'x'}`).join(' ')} ${(read.ms / 1000).toFixed(2)} s\n`,
    );
  }
  await shutdownLocalProvider();
  let out = report(`${path.basename(dir)}, split ${split}`, outcomes);
  if (split === 'all') {
    out += `\n${report(
      'fit half',
      outcomes.filter((o) => inSplit(o.name, 'fit')),
    )}`;
    out += `\n${report(
      'check half',
      outcomes.filter((o) => inSplit(o.name, 'check')),
    )}`;
  }
  process.stdout.write(out);
  const file = option('out');
  if (file !== undefined) await writeFile(file, JSON.stringify(outcomes, null, 2));
}

await main();
