/**
 * One chunk of a run in page chunks: a small PDF of its pages (with their text layer) given to the plan's candidates
 * with fallback, as a whole run would be, or to its chain (OCR, then a model analyzes the text). It decides nothing
 * about the run: it says what happened (./chunked.ts splits, requeues or fails).
 * Not to undo:
 * - A chunk's steps and bounds are decided on its share of the file's facts as the estimate was (planning/chunks.ts
 *   `chunkFacts`), never on the grafted chunk PDF's own size.
 * - A chunk's words (evidence) are offset to the whole document and never checkpointed: they would not fit an item,
 *   and a resumed run's replayed chunks get theirs from the text layer at merge (./evidence.ts).
 */
import type { PageWords } from '../fields/types.js';
import type { PdfFile } from '../media/index.js';
import type { Micros } from '../money.js';
import { chunkFacts, type PageRange, rangePages } from '../planning/chunks.js';
import type { FactorsFor } from '../pricing/calibration.js';
import type { ProviderAdapter } from '../providers/types.js';
import type { ChunkCheckpoint } from '../store/chunks.js';
import type { RunRecord } from '../store/runs.js';
import { ProviderFailure, type ProviderId } from '../task.js';
import { type AttemptsOutcome, type SharedSpend, tryCandidates } from './attempts.js';
import { tryChain } from './chain.js';
import { noTotals, type Totals } from './checkpoints.js';
import { ocrPagesOneByOne, type PagesRead } from './chunk-ocr.js';
import { offsetWords } from './evidence.js';
import { chooseSteps, type TextLayer, textLayerOf } from './steps.js';

/** What every chunk of a run is given. */
export interface ChunkContext {
  run: RunRecord;
  pdf: PdfFile;
  adapters: Partial<Record<ProviderId, ProviderAdapter>>;
  capMicros: Micros;
  deadlineMs: number;
  factors?: FactorsFor;
}

/**
 * What a chunk came to, with what it `used` (its attempts, requests and cost; billable units only when answered):
 * `answered` (its checkpoint, and the words read), `failed` (no retry can help: a page unreadable, or no OCR engine
 * read one), or `unanswered` (every candidate failed; cut at an output cap, or out of time).
 */
export type ChunkResult = { used: Totals } & (
  | { kind: 'answered'; checkpoint: ChunkCheckpoint; words?: PageWords[] }
  | { kind: 'failed'; reason: 'unreadable' | 'providers'; page: number }
  | { kind: 'unanswered'; truncated: boolean; timedOut: boolean }
);

/** Runs one chunk; throws only what no answer explains (the run then stops, to be redelivered). */
export async function runChunk(context: ChunkContext, range: PageRange, shared: SharedSpend): Promise<ChunkResult> {
  const { run, pdf } = context;
  let bytes: Uint8Array;
  let layer: TextLayer;
  try {
    bytes = pdf.extractPages(range.first - 1, range.last - 1);
    const texts: string[] = [];
    for (let page = range.first; page <= range.last; page++) texts.push(pdf.text(page - 1));
    layer = textLayerOf(texts);
  } catch (error: unknown) {
    if (error instanceof ProviderFailure && error.kind === 'unreadable_file') {
      return { kind: 'failed', reason: 'unreadable', page: range.first, used: noTotals() };
    }
    throw error;
  }
  // A provider that reads the file decides from the chunk's facts what the estimate priced (a text layer, or a scan).
  const facts = chunkFacts(run.file, range);
  const common = {
    adapters: context.adapters,
    input: { bytes, facts, task: run.task, pages: range },
    capMicros: context.capMicros,
    deadlineMs: context.deadlineMs,
    shared,
    ...(context.factors ? { factors: context.factors } : {}),
    stopOnTruncated: rangePages(range) > 1,
    ...(run.marginPct !== undefined ? { marginPct: run.marginPct } : {}),
    // A batch run's attempts are predicted at their batch price, as its estimate was.
    ...(run.priority ? { priority: run.priority } : {}),
  };
  // A chain skips its OCR step only when the text layer reads every page of the chunk; without one, a chunk of
  // several pages is read page by page (./chunk-ocr.ts).
  const documentText = layer.complete ? layer.text : undefined;
  const read =
    run.ocrCandidates && documentText === undefined && rangePages(range) > 1
      ? await ocrPagesOneByOne({ ...common, run, pdf, range })
      : undefined;
  if (read && read.text === undefined) {
    return { kind: 'failed', reason: 'providers', page: read.failedPage ?? range.first, used: unbilled(read) };
  }
  const outcome = run.ocrCandidates
    ? // The chain's bounds are the chunk's (`file`: its facts).
      await tryChain(
        { ...run, file: facts },
        run.ocrCandidates,
        { ...common, ...(read ? { spentMicros: read.costMicros } : {}) },
        read?.text ?? documentText,
      )
    : await tryCandidates({
        ...common,
        candidates: run.candidates,
        ...singlePassSteps(run, range, layer),
        input: { ...common.input, ...(layer.text !== undefined ? { documentText: layer.text } : {}) },
      });
  const used = unbilled(read ? combined(read, outcome) : outcome);
  if (!outcome.output || !outcome.provider) {
    const timedOut = outcome.attempts.every((a) => a.failure === 'timeout');
    return { kind: 'unanswered', truncated: outcome.truncated === true, timedOut, used };
  }
  // Pages read one by one are the chunk's billable units, as a chain's OCR step's are.
  const billableUnits = read ? read.billableUnits : outcome.output.usage.billableUnits;
  const words = outcome.output.words ? offsetWords(outcome.output.words, range.first - 1) : read?.words;
  const { result, documentText: text, nativeConfidence } = outcome.output;
  const checkpoint: ChunkCheckpoint = {
    ...range,
    provider: outcome.provider,
    output: {
      result,
      billableUnits,
      ...(text !== undefined ? { documentText: text } : {}),
      ...(nativeConfidence !== undefined ? { nativeConfidence } : {}),
    },
    attempts: used.attempts,
    requests: used.requests,
    costMicros: used.costMicros,
  };
  return { kind: 'answered', checkpoint, ...(words !== undefined ? { words } : {}), used: { ...used, billableUnits } };
}

/**
 * A single-step plan's steps on one chunk, decided on the chunk's share of the file's facts as the estimate was, not
 * on the grafted chunk PDF's own size (./steps.ts).
 */
function singlePassSteps(run: RunRecord, range: PageRange, layer: TextLayer) {
  const steps = chooseSteps(chunkFacts(run.file, range), run.candidates, layer);
  return {
    stepFor: steps.stepFor,
    cheaperStep: steps.cheaperStep,
    ...(steps.planned ? { planned: steps.planned } : {}),
  };
}

/** The pages read one by one, then the analysis of their text: one chunk's attempts, requests and cost. */
function combined(read: PagesRead, outcome: AttemptsOutcome): Omit<Totals, 'billableUnits'> {
  return {
    attempts: [...read.attempts, ...outcome.attempts],
    requests: read.requests + outcome.requests,
    costMicros: read.costMicros + outcome.costMicros,
  };
}

/** What was used, no unit billed (a chunk's billable units count only when it is answered). */
function unbilled(used: Omit<Totals, 'billableUnits'>): Totals {
  return { attempts: used.attempts, requests: used.requests, costMicros: used.costMicros, billableUnits: 0 };
}
