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
 * Not to undo: the scorer is deliberately small and local (date = same calendar day, day first when ambiguous as the
 * dataset says; number within 0.005; string normalised exact); the official comparison is shared/evaluation's.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { groundFields } from '../shared/fields/ground.js';
import { setLogSink } from '../shared/log.js';
import { coerceNumber } from '../shared/providers/fields.js';
import { localProvider, shutdownLocalProvider } from '../shared/providers/local/local-provider.js';
import type { ProviderInput } from '../shared/providers/types.js';
import { registry } from '../shared/registry/registry.js';
import type { FieldSpec } from '../shared/task.js';
import { percentile } from './stats.js';

const SCORED = ['merchant', 'date', 'total'] as const;
type Scored = (typeof SCORED)[number];
const LABEL_OF: Record<Scored, string> = { merchant: 'company', date: 'date', total: 'total' };

// ---------------------------------------------------------------------------------------------------------------
// Scoring
// ---------------------------------------------------------------------------------------------------------------

/** NFKC, case-folded, every run of whitespace / punctuation / symbols as one space, trimmed. */
export function normaliseText(s: string): string {
  return s
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\s\p{P}\p{S}]+/gu, ' ')
    .trim();
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

/** A printed or ISO date as `YYYY-MM-DD`, day first when day and month are ambiguous; null when it is none. */
export function dayOf(raw: string): string | null {
  const s = raw.trim().toLowerCase();
  const pad = (n: number) => String(n).padStart(2, '0');
  const year = (y: string) => (y.length === 2 ? 2000 + Number(y) : Number(y));
  let m = /^(\d{4})-(\d{1,2})-(\d{1,2})$/.exec(s);
  if (m) return `${m[1]}-${pad(Number(m[2]))}-${pad(Number(m[3]))}`;
  m = /^(\d{1,2})[/.-](\d{1,2})[/.-](\d{2}|\d{4})$/.exec(s);
  if (m) {
    let [d, mo] = [Number(m[1]), Number(m[2])];
    if (mo > 12 && d <= 12) [d, mo] = [mo, d];
    return `${year(m[3] ?? '')}-${pad(mo)}-${pad(d)}`;
  }
  m = /^(\d{1,2})[\s-]*([a-z]{3})[a-z]*[\s-]*(\d{2}|\d{4})$/.exec(s);
  if (m && MONTHS.includes(m[2] ?? '')) {
    return `${year(m[3] ?? '')}-${pad(MONTHS.indexOf(m[2] ?? '') + 1)}-${pad(Number(m[1]))}`;
  }
  return null;
}

function amountOf(raw: unknown): number | null {
  if (typeof raw === 'number') return raw;
  if (typeof raw !== 'string') return null;
  return coerceNumber(raw.replace(/^\s*RM\s*/i, ''));
}

function isRight(field: Scored, expected: string, got: unknown): boolean {
  if (got === null || got === undefined) return false;
  if (field === 'total') {
    const [e, g] = [amountOf(expected), amountOf(got)];
    return e !== null && g !== null && Math.abs(e - g) < 0.005;
  }
  if (field === 'date') return typeof got === 'string' && dayOf(got) !== null && dayOf(got) === dayOf(expected);
  return typeof got === 'string' && normaliseText(got) === normaliseText(expected);
}

/** P(a right value's confidence > a wrong one's), ties counting half; null without both kinds. */
export function auroc(right: readonly number[], wrong: readonly number[]): number | null {
  if (right.length === 0 || wrong.length === 0) return null;
  let wins = 0;
  for (const r of right) for (const w of wrong) wins += r > w ? 1 : r === w ? 0.5 : 0;
  return wins / (right.length * wrong.length);
}

// ---------------------------------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------------------------------

interface Outcome {
  name: string;
  ms: number;
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
): Promise<Omit<Outcome, 'name' | 'expected' | 'right'>> {
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
  const out = await localProvider.invoke(input, {
    signal: new AbortController().signal,
    deadlineMs: Date.now() + 120_000,
  });
  const ms = performance.now() - started;
  const grounded = groundFields({
    result: out.result,
    fieldSpecs: fields,
    words: out.words ?? [],
    ...(out.nativeConfidence !== undefined ? { nativeConfidence: out.nativeConfidence } : {}),
    ...(out.valueConfidence !== undefined ? { valueConfidence: out.valueConfidence } : {}),
    reviewThreshold: 0.8,
    now: new Date(),
  });
  const confidence = Object.fromEntries(SCORED.map((f) => [f, grounded.fields[f]?.confidence ?? 0])) as Record<
    Scored,
    number
  >;
  return { ms, got: out.result, confidence, review: grounded.review, text: out.documentText ?? '' };
}

function pct(n: number, of: number): string {
  return of === 0 ? '–' : `${((100 * n) / of).toFixed(1)} %`;
}

function report(title: string, outcomes: Outcome[]): string {
  const lines = [`## ${title} (${outcomes.length} receipts)`, '', '| field | right | AUROC |', '|---|---|---|'];
  for (const f of SCORED) {
    const right = outcomes.filter((o) => o.right[f]);
    const a = auroc(
      right.map((o) => o.confidence[f]),
      outcomes.filter((o) => !o.right[f]).map((o) => o.confidence[f]),
    );
    lines.push(`| ${f} | ${pct(right.length, outcomes.length)} | ${a === null ? '–' : a.toFixed(3)} |`);
  }
  const wrongRuns = outcomes.filter((o) => SCORED.some((f) => !o.right[f]));
  const rightRuns = outcomes.filter((o) => SCORED.every((f) => o.right[f]));
  const flagged = (runs: Outcome[]) => runs.filter((o) => o.review.needed).length;
  const ms = outcomes.map((o) => o.ms).sort((a, b) => a - b);
  lines.push(
    '',
    `review.needed on runs with a wrong field: ${flagged(wrongRuns)}/${wrongRuns.length} (${pct(flagged(wrongRuns), wrongRuns.length)})`,
    `review.needed on fully right runs: ${flagged(rightRuns)}/${rightRuns.length} (${pct(flagged(rightRuns), rightRuns.length)})`,
    `seconds per receipt, one at a time, warm: p50 ${(percentile(ms, 50) / 1000).toFixed(2)}, p90 ${(percentile(ms, 90) / 1000).toFixed(2)}`,
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
    const read = await readOne(dir, file, fields);
    const right = Object.fromEntries(SCORED.map((f) => [f, isRight(f, expected[f], read.got[f])])) as Record<
      Scored,
      boolean
    >;
    outcomes.push({ name, expected, right, ...read });
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
