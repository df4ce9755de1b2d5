/**
 * The OCR step of a chained plan's chunk of several pages, one page per call: an OCR engine's synchronous API takes
 * one page, and Textract reads more only from S3 (the whole stored file, not the chunk). The analyze step's primary
 * path stays reserved throughout, and the estimate's own OCR attempt is the chunk's first engine's.
 * Not to undo: a batch run's page that parks in the batch lane does not stop the others: every page parks in the same
 * delivery (one wave), not one page per delivery.
 */
import { BatchParked } from '../batching/parked.js';
import type { PageWords } from '../fields/types.js';
import type { PdfFile } from '../media/index.js';
import type { Micros } from '../money.js';
import { chunkFacts, type PageRange } from '../planning/chunks.js';
import { predictAttempt } from '../planning/estimate.js';
import { primaryPathCost } from '../planning/plan.js';
import type { FactorsFor } from '../pricing/calibration.js';
import { catalog } from '../providers/catalog.js';
import type { ProviderAdapter } from '../providers/types.js';
import type { RunRecord } from '../store/runs.js';
import type { ProviderId } from '../task.js';
import { type SharedSpend, tryCandidates } from './attempts.js';
import { readText } from './chain.js';
import { noTotals, type Totals } from './checkpoints.js';
import { offsetWords } from './evidence.js';

/** What reading a chunk's pages came to: its text (undefined when a page could not be read: `failedPage`). */
export interface PagesRead extends Totals {
  text: string | undefined;
  /** The words read, in whole-document pages. */
  words: PageWords[];
  failedPage?: number;
}

export interface PagesOcrInput {
  run: RunRecord;
  pdf: PdfFile;
  range: PageRange;
  adapters: Partial<Record<ProviderId, ProviderAdapter>>;
  shared: SharedSpend;
  capMicros: Micros;
  deadlineMs: number;
  marginPct?: number;
  factors?: FactorsFor;
}

/** OCRs the chunk's pages one at a time with the chain's OCR candidates; stops at the first page none could read. */
export async function ocrPagesOneByOne(input: PagesOcrInput): Promise<PagesRead> {
  const { run, range } = input;
  const priority = run.priority ?? 'standard';
  const ocrCandidates = run.ocrCandidates ?? [];
  const analyzeBound = (id: ProviderId) =>
    predictAttempt(id, chunkFacts(run.file, range), run.task, 'analyze', input.factors, { priority })?.costMicros;
  const ocrPrimary = ocrCandidates.find((id) => catalog[id] !== undefined);
  const read: PagesRead = { ...noTotals(), text: undefined, words: [] };
  const texts: string[] = [];
  let parked: BatchParked | undefined;
  for (let page = range.first; page <= range.last; page++) {
    const one = { first: page, last: page };
    const facts = chunkFacts(run.file, one);
    const outcome = await tryCandidates({
      adapters: input.adapters,
      capMicros: input.capMicros,
      deadlineMs: input.deadlineMs,
      shared: input.shared,
      ...(input.marginPct !== undefined ? { marginPct: input.marginPct } : {}),
      candidates: ocrCandidates,
      input: { bytes: input.pdf.extractPages(page - 1, page - 1), facts, task: run.task, pages: one },
      stepFor: () => 'ocr',
      // The estimate priced the chunk's OCR by the first engine (planning/plan.ts chainedPlan).
      ...(ocrPrimary ? { planned: { provider: ocrPrimary, step: 'ocr' as const } } : {}),
      costBound: (id) => predictAttempt(id, facts, run.task, 'ocr')?.costMicros,
      spentMicros: read.costMicros,
      reservedMicros: primaryPathCost(run.candidates, analyzeBound) ?? 0,
    }).catch((error: unknown) => {
      if (!(error instanceof BatchParked)) throw error;
      parked ??= error;
      return undefined;
    });
    if (outcome === undefined) continue;
    read.attempts.push(...outcome.attempts);
    read.requests += outcome.requests;
    read.costMicros += outcome.costMicros;
    if (!outcome.output) return { ...read, failedPage: page };
    read.billableUnits += outcome.output.usage.billableUnits;
    read.words.push(...offsetWords(outcome.output.words ?? [], page - 1));
    texts.push(readText(outcome.output).trim());
  }
  if (parked) throw parked;
  // A chunk of blank pages has nothing to analyze: a failed reading, as a whole chain's OCR step with no text.
  return texts.some((t) => t !== '') ? { ...read, text: texts.join('\n\n') } : { ...read, failedPage: range.first };
}
