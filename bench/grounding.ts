/**
 * Phase `grounding`: issue #18's figures for per-field evidence, in process, with the worker's own functions
 * (shared/worker/grounding.ts `withEvidence`, shared/worker/evidence.ts, shared/fields `groundFields`) and the real
 * local OCR engine; no emulators, no stack. bench/README.md (phase 10) says exactly what each figure covers.
 *
 * - receipt.png: its words as the real local provider reads them (one run, untimed here), then `withEvidence` timed;
 * - a generated 20-page text-layer invoice (./grounding-inputs.ts): text-layer words + `groundFields`, as for a model;
 * - scanned.pdf: `ocrPagesForEvidence` of its page, cold then warm; and on a text + 2 scans PDF, `withEvidence` with
 *   all values on the text page (no OCR) against one value only on the first scan (that page OCR'd, not the next);
 * - the calibration corpus (test/support/grounding-corpus.ts): every wrong value below every right one of its run.
 * Not to undo: the worker's own bounds are used (grounding's default 250 ms budget, EVIDENCE_OCR_*): a figure that
 * only holds with larger bounds would not be the worker's.
 */
import { readFile } from 'node:fs/promises';
import { config } from '../shared/config.js';
import { BUDGET_REASON, groundFields } from '../shared/fields/ground.js';
import type { Fields, Grounded, PageWords } from '../shared/fields/types.js';
import type { FileFacts } from '../shared/file-facts.js';
import { setLogSink } from '../shared/log.js';
import { localProvider, shutdownLocalProvider } from '../shared/providers/local/local-provider.js';
import type { Settlement } from '../shared/store/ledger.js';
import type { FieldSpec, TaskSpec } from '../shared/task.js';
import { collectEvidenceWords, ocrPagesForEvidence, pagesWithoutWords } from '../shared/worker/evidence.js';
import { EVIDENCE_OCR_MAX_PAGES, withEvidence } from '../shared/worker/grounding.js';
import { runItem } from '../test/support/aws.js';
import { CORPUS, type CorpusDoc, confidences, ground, plant, severalWrongs } from '../test/support/grounding-corpus.js';
import { SCAN_ONLY_VALUE, TEXT_PAGE_VALUES, textAndScansPdf } from '../test/support/text-and-scans-pdf.js';
import { invoicePdf } from './grounding-inputs.js';
import { measureSyntheticGrounding, type SyntheticGroundingResult } from './grounding-synthetic.js';
import { median, round, type Summary, summarize } from './stats.js';

/** A timed case: the first call apart, then warm calls. */
export interface Timed {
  firstMs: number;
  ms: Summary;
}

export interface GroundingResult {
  receipt: Timed & {
    words: number;
    fields: number;
    /** The real local provider's one run that gave the words (OCR; loads tesseract when nothing did before). */
    providerMs: number;
    /** Values without a box after grounding (should be none). */
    unplaced: string[];
    confidence: number;
    reviewNeeded: boolean;
  };
  invoice: Timed & {
    pages: number;
    words: number;
    fields: number;
    /** Where the time goes, warm: reading the text layer (collectEvidenceWords) and groundFields. */
    collectMs: Summary;
    groundMs: Summary;
    /** `withEvidence` on the same run (what the worker calls; no page lacks words, so no OCR can happen). */
    withEvidenceMs: Summary;
    unplaced: string[];
    /** The budget ran out (grounding skipped fields): the figure would then be the budget, not the work. */
    budgetSkipped: boolean;
  };
  invoiceWithItems: Timed & { items: number; values: number; unplaced: number; budgetSkipped: boolean };
  ocr: { file: string; firstMs: number; warmMs: number[]; medianMs: number; words: number };
  onlyPagesWithFields: {
    file: string;
    pagesWithoutWords: number[];
    /** Every value on the text page: no OCR. `ocrPages`: the pages one call OCR'd (the worker's log line). */
    allOnText: { ms: Summary; ocrPages: number[]; pagesGrounded: number[] };
    /** One value printed only on the first scan: that scan is OCR'd (not the second) and the value grounded there. */
    oneOnScan: { ms: Summary; ocrPages: number[]; pagesGrounded: number[]; scanValuePage: number | null };
  };
  corpus: CorpusFigure[];
  synthetic: SyntheticGroundingResult;
}

export interface CorpusFigure {
  name: string;
  /** The all-right run, each wrong planted alone, and the run with several wrongs at once. */
  runs: number;
  lowestRight: number;
  highestWrong: number;
  /** Runs in which some wrong value scored at or above a right value of the same run (should be 0). */
  overlappingRuns: number;
  /** The smallest gap (lowest right − highest wrong) over the runs with wrong values. */
  smallestGap: number;
}

const FIXTURES = new URL('../test/fixtures/', import.meta.url);
const fixture = async (name: string): Promise<Uint8Array> => new Uint8Array(await readFile(new URL(name, FIXTURES)));
const later = (): number => Date.now() + 120_000;

function jsonTask(fields: FieldSpec[] | null): TaskSpec {
  return { prompt: 'Extract', outputFormat: 'json', fields, schemaId: null, schemaLabel: null, promptScaffold: null };
}

function completed(result: Record<string, unknown>): Settlement {
  const usage = { requests: 1, billableUnits: 1, costMicros: 0, priceMicros: 0 };
  return { status: 'completed', result, usage, confidence: 0.9, attempts: [] };
}

const fieldsOf = (s: Settlement): Fields => (s.status === 'completed' ? (s.fields ?? {}) : {});

/** `fn` once (the first call), then `n` times; milliseconds, the warm samples kept for the JSON. */
async function timed<T>(n: number, fn: () => Promise<T> | T): Promise<Timed & { samples: number[]; last: T }> {
  let t = performance.now();
  let last = await fn();
  const firstMs = round(performance.now() - t);
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    t = performance.now();
    last = await fn();
    samples.push(round(performance.now() - t, 2));
  }
  return { firstMs, ms: summarize(samples), samples, last };
}

/** Paths of the non-null printable values (items of arrays of objects by `field.i.key`) that got no box. */
function unplaced(result: Record<string, unknown>, fields: Fields): string[] {
  const out: string[] = [];
  const printable = (v: unknown) => typeof v === 'string' || typeof v === 'number';
  for (const [name, value] of Object.entries(result)) {
    if (printable(value) && fields[name]?.bbox === undefined) out.push(name);
    if (!Array.isArray(value)) continue;
    value.forEach((item, i) => {
      if (typeof item !== 'object' || item === null) return;
      for (const [key, v] of Object.entries(item)) {
        if (printable(v) && fields[name]?.items?.[i]?.[key]?.bbox === undefined) out.push(`${name}.${i}.${key}`);
      }
    });
  }
  return out;
}

const pagesGrounded = (fields: Fields): number[] =>
  [...new Set(Object.values(fields).flatMap((f) => (f.page === undefined ? [] : [f.page])))].sort((a, b) => a - b);
const budgetSkipped = (g: Grounded): boolean => g.review.reasons.includes(BUDGET_REASON);

async function receiptFigure(iterations: number, log: (line: string) => void): Promise<GroundingResult['receipt']> {
  const doc = corpusDoc('receipt.png');
  const bytes = await fixture('receipt.png');
  const facts: FileFacts = {
    mime: 'image/png',
    kind: 'image',
    sizeBytes: bytes.byteLength,
    width: 800,
    height: 834,
    pages: 1,
  };
  const task = jsonTask(doc.fieldSpecs);
  const t = performance.now();
  const output = await localProvider.invoke(
    { bytes, facts, task, step: 'vision' },
    { signal: new AbortController().signal, deadlineMs: later() },
  );
  const providerMs = round(performance.now() - t);
  const run = runItem({ jobId: 'bench-grounding-receipt', task, file: facts });
  const answer = {
    ...(output.words ? { words: output.words } : {}),
    ...(output.nativeConfidence === undefined ? {} : { nativeConfidence: output.nativeConfidence }),
  };
  const r = await timed(iterations, () => withEvidence(run, bytes, completed(doc.right), answer, later()));
  const settled = r.last.status === 'completed' ? r.last : undefined;
  log(`  receipt.png: withEvidence p50 ${r.ms.p50} ms (words from one local provider run of ${providerMs} ms)`);
  return {
    firstMs: r.firstMs,
    ms: r.ms,
    words: (output.words ?? []).reduce((n, p) => n + p.words.length, 0),
    fields: Object.keys(doc.right).length,
    providerMs,
    unplaced: unplaced(doc.right, fieldsOf(r.last)),
    confidence: settled?.confidence ?? Number.NaN,
    reviewNeeded: settled?.review?.needed ?? true,
  };
}

async function invoiceFigures(
  iterations: number,
  log: (line: string) => void,
): Promise<Pick<GroundingResult, 'invoice' | 'invoiceWithItems'>> {
  const doc = invoicePdf();
  const facts: FileFacts = { mime: 'application/pdf', kind: 'pdf', sizeBytes: doc.bytes.byteLength, pages: doc.pages };
  const groundOn = (words: PageWords[], result: Record<string, unknown>, fieldSpecs: FieldSpec[]) =>
    groundFields({ result, fieldSpecs, words, reviewThreshold: 0.8, now: new Date() });
  const collectMs: number[] = [];
  const groundMs: number[] = [];
  const once = async () => {
    const t0 = performance.now();
    const words = await collectEvidenceWords({ bytes: doc.bytes, facts, output: {}, deadlineMs: later() });
    const t1 = performance.now();
    const grounded = groundOn(words, doc.result, doc.fieldSpecs);
    collectMs.push(t1 - t0);
    groundMs.push(performance.now() - t1);
    return { words, grounded };
  };
  const r = await timed(iterations, once);
  collectMs.shift();
  groundMs.shift();
  const run = runItem({ jobId: 'bench-grounding-invoice', task: jsonTask(doc.fieldSpecs), file: facts });
  const viaWorker = await timed(Math.ceil(iterations / 2), () =>
    withEvidence(run, doc.bytes, completed(doc.result), {}, later()),
  );
  const { words } = r.last;
  const items = await timed(Math.ceil(iterations / 2), () =>
    groundOn(words, doc.resultWithItems, doc.fieldSpecsWithItems),
  );
  const itemsUnplaced = unplaced(doc.resultWithItems, items.last.fields);
  log(`  20-page invoice: collect + ground p50 ${r.ms.p50} ms; with ${doc.items} line items ${items.ms.p50} ms`);
  return {
    invoice: {
      firstMs: r.firstMs,
      ms: r.ms,
      pages: doc.pages,
      words: words.reduce((n, p) => n + p.words.length, 0),
      fields: Object.keys(doc.result).length,
      collectMs: summarize(collectMs),
      groundMs: summarize(groundMs),
      withEvidenceMs: viaWorker.ms,
      unplaced: unplaced(doc.result, r.last.grounded.fields),
      budgetSkipped: budgetSkipped(r.last.grounded),
    },
    invoiceWithItems: {
      firstMs: items.firstMs,
      ms: items.ms,
      items: doc.items,
      values: Object.keys(doc.result).length + 2 + doc.items * 4,
      unplaced: itemsUnplaced.length,
      budgetSkipped: budgetSkipped(items.last),
    },
  };
}

async function ocrFigure(runs: number, log: (line: string) => void): Promise<GroundingResult['ocr']> {
  const bytes = await fixture('scanned.pdf');
  const facts: FileFacts = { mime: 'application/pdf', kind: 'pdf', sizeBytes: bytes.byteLength, pages: 1 };
  const once = () =>
    ocrPagesForEvidence({
      bytes,
      facts,
      pages: [1],
      maxPages: EVIDENCE_OCR_MAX_PAGES,
      deadlineMs: Date.now() + config.evidenceOcrBudgetMs,
    });
  const r = await timed(runs, once);
  const warmMs = r.samples;
  const words = r.last.reduce((n, p) => n + p.words.length, 0);
  log(`  scanned.pdf page 1 OCR: first ${r.firstMs} ms, warm median ${median(warmMs)} ms (${words} words)`);
  return { file: 'scanned.pdf', firstMs: r.firstMs, warmMs, medianMs: round(median(warmMs)), words };
}

/** The pages `fn` OCR'd for evidence, from the worker's own "OCR for evidence" log line (shared/worker/grounding.ts). */
async function ocrPagesOf<T>(fn: () => Promise<T>): Promise<{ value: T; pages: number[] }> {
  const pages: number[] = [];
  const level = process.env.LOG_LEVEL;
  process.env.LOG_LEVEL = 'info';
  setLogSink((entry) => {
    if (entry.message === 'OCR for evidence') pages.push(...(entry.pages as number[]));
  });
  try {
    return { value: await fn(), pages };
  } finally {
    setLogSink(null);
    if (level === undefined) delete process.env.LOG_LEVEL;
    else process.env.LOG_LEVEL = level;
  }
}

async function onlyPagesWithFieldsFigure(
  runs: number,
  log: (line: string) => void,
): Promise<GroundingResult['onlyPagesWithFields']> {
  const pdf = await textAndScansPdf();
  const facts: FileFacts = { mime: 'application/pdf', kind: 'pdf', sizeBytes: pdf.bytes.byteLength, pages: pdf.pages };
  // As for a language model's answer: no words of its own, page 1's from the text layer, pages 2 and 3 (scans) none.
  const words = await collectEvidenceWords({ bytes: pdf.bytes, facts, output: {}, deadlineMs: later() });
  const measure = async (result: Record<string, unknown>, n: number) => {
    const run = runItem({ jobId: 'bench-grounding-scan', task: jsonTask(null), file: facts });
    const once = () => withEvidence(run, pdf.bytes, completed(result), {}, later());
    // The pages one call OCRs (untimed), then the timing.
    const counted = await ocrPagesOf(once);
    const r = await timed(n, once);
    const fields = fieldsOf(counted.value);
    return { ms: r.ms, ocrPages: counted.pages, pagesGrounded: pagesGrounded(fields), fields };
  };
  const allOnText = await measure({ ...TEXT_PAGE_VALUES }, 10);
  const { fields, ...oneOnScan } = await measure({ ...TEXT_PAGE_VALUES, ...SCAN_ONLY_VALUE }, runs);
  log(
    `  text + 2 scans PDF: all values on the text page ${allOnText.ms.p50} ms (OCR'd: ${allOnText.ocrPages.join(', ') || 'none'}); ` +
      `one on the first scan ${oneOnScan.ms.p50} ms (OCR'd: ${oneOnScan.ocrPages.join(', ') || 'none'})`,
  );
  return {
    file: 'generated: page 1 text layer (invoice), page 2 scan (receipt.png), page 3 scan (business-card.png)',
    pagesWithoutWords: pagesWithoutWords(words, pdf.pages),
    allOnText: { ms: allOnText.ms, ocrPages: allOnText.ocrPages, pagesGrounded: allOnText.pagesGrounded },
    oneOnScan: { ...oneOnScan, scanValuePage: fields.receiptTotal?.bbox ? (fields.receiptTotal.page ?? null) : null },
  };
}

function corpusDoc(prefix: string): CorpusDoc {
  const doc = CORPUS.find((d) => d.name.startsWith(prefix));
  if (doc === undefined) throw new Error(`no corpus document "${prefix}…"`);
  return doc;
}

/** Per corpus document, over its runs: the all-right run, each wrong planted alone, several wrongs at once. */
function corpusFigures(): CorpusFigure[] {
  return CORPUS.map((doc) => {
    const runs: { right: number[]; wrong: number[]; planted: number }[] = [];
    const score = (planted: [string, unknown][]) => {
      const result = planted.reduce((acc, [path, value]) => plant(acc, path, value), doc.right);
      const wrongPaths = new Set(planted.map(([path]) => path));
      const scored = [...confidences(result, ground(doc, result))];
      runs.push({
        right: scored.filter(([path]) => !wrongPaths.has(path)).map(([, c]) => c),
        wrong: scored.filter(([path]) => wrongPaths.has(path)).map(([, c]) => c),
        planted: wrongPaths.size,
      });
    };
    score([]);
    for (const wrong of doc.wrongs) score([wrong]);
    score(severalWrongs(doc));
    const planted = runs.filter((r) => r.planted > 0);
    // A planted value without a confidence of its own cannot be told apart: it counts as overlapping.
    const gaps = planted.map((r) =>
      r.wrong.length === r.planted ? Math.min(...r.right) - Math.max(...r.wrong) : Number.NaN,
    );
    return {
      name: doc.name,
      runs: runs.length,
      lowestRight: Math.min(...runs.flatMap((r) => r.right)),
      highestWrong: Math.max(...runs.flatMap((r) => r.wrong)),
      overlappingRuns: gaps.filter((gap) => !(gap > 0)).length,
      smallestGap: round(Math.min(...gaps), 3),
    };
  });
}

/** The phase (see the module comment); the local provider's OCR engine is shut down at the end. */
export async function measureGrounding(options: {
  iterations: number;
  pdfIterations: number;
  ocrRuns: number;
  log: (line: string) => void;
}): Promise<GroundingResult> {
  const { log } = options;
  try {
    // The OCR first, so that its first call loads tesseract (unless an earlier phase left it loaded), then the
    // receipt, whose first call is then the process's first grounding (JIT cold).
    const ocr = await ocrFigure(options.ocrRuns, log);
    const receipt = await receiptFigure(options.iterations, log);
    const invoices = await invoiceFigures(options.pdfIterations, log);
    const onlyPagesWithFields = await onlyPagesWithFieldsFigure(options.ocrRuns - 1, log);
    const corpus = corpusFigures();
    const synthetic = measureSyntheticGrounding({ iterations: options.iterations });
    return { receipt, ...invoices, ocr, onlyPagesWithFields, corpus, synthetic };
  } finally {
    await shutdownLocalProvider();
  }
}
