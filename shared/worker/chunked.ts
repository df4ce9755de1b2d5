/**
 * Executing a run in page chunks (contract v1.1 §2; planning: shared/planning/chunks.ts). Each chunk is a small PDF of
 * its pages (with their text layer when every page has one) given to the plan's candidates with fallback, as a whole
 * run would be; chunks run concurrently (SERVICE_RUN_CONCURRENCY, and the providers' shared pools, ./pool.ts), each
 * finished one checkpointed (shared/store/chunks.ts) before the run moves on, and the answers merged (./merge.ts). A run
 * larger than one invocation runs here one group of chunks at a time (`only`), fanned out by ./fanout.ts.
 * Not to undo:
 * - Pages a checkpoint covers are never asked again: a redelivered run pays only for the rest.
 * - Every attempt is checked against the run's cap with what the other chunks spent, have in flight, and keep
 *   reserved for their own primary path (`SharedSpend`): the hold taken at creation is never exceeded.
 * - A chunk cut at its output cap is split in two and asked again; a single page that is still cut fails the run
 *   (`truncated`), never a silently short answer.
 * - Out of time, the run stops starting chunks and is handed back (`RunIncomplete`): the next delivery resumes.
 * - A chunk's words (evidence) are merged, offset to the whole document, but never checkpointed: they would not fit
 *   an item, and a resumed run's replayed chunks get theirs from the text layer at merge (./evidence.ts).
 * Over 400 lines: the shared spend, the split on truncation and the resume are one flow over the same chunk state;
 * split apart, each piece would need the others' invariants restated (planning, pools, checkpoints, merge are out).
 */
import type { Attempt } from '../contract.js';
import { runError } from '../errors.js';
import type { PageWords } from '../fields/types.js';
import { log } from '../log.js';
import { Deadline, PdfFile } from '../media/index.js';
import type { Micros } from '../money.js';
import { chunkFacts, chunkRanges, type PageRange, rangePages } from '../planning/chunks.js';
import { predictAttempt, predictedCostMicros } from '../planning/estimate.js';
import { primaryPathCost } from '../planning/plan.js';
import type { FactorsFor } from '../pricing/calibration.js';
import { priceFor } from '../pricing/pricing.js';
import { catalog } from '../providers/catalog.js';
import type { ProviderAdapter, ProviderOutput } from '../providers/types.js';
import { type ChunkCheckpoint, listCheckpoints, saveCheckpoint } from '../store/chunks.js';
import type { Settlement } from '../store/ledger.js';
import { resultTooLarge } from '../store/run-results.js';
import type { RunRecord, RunUsage } from '../store/runs.js';
import { ProviderFailure, type ProviderId } from '../task.js';
import { type SharedSpend, tryCandidates } from './attempts.js';
import { readText, tryChain } from './chain.js';
import { offsetWords } from './evidence.js';
import { type MergedAnswer, mergeJson, mergeText } from './merge.js';
import { computeConfidence, shapeResult } from './result.js';
import { chooseSteps, type TextLayer, textLayerOf } from './steps.js';

/** A chunk is not started with less time than this left: the run is handed back to resume on its next delivery. */
export const MIN_CHUNK_MS = 20_000;
/** At most this many failed or skipped attempts are reported (a summary of a long run's attempts, not a log). */
const MAX_REPORTED_FAILURES = 100;

/** Thrown when the invocation's time ran out with pages left: SQS redelivers the run, which resumes from checkpoints. */
export class RunIncomplete extends Error {
  constructor(readonly pagesLeft: number) {
    super(`out of time with ${pagesLeft} pages left; the next delivery resumes from the checkpoints`);
    this.name = 'RunIncomplete';
  }
}

export interface ChunkedInput {
  run: RunRecord;
  bytes: Uint8Array;
  adapters: Partial<Record<ProviderId, ProviderAdapter>>;
  capMicros: Micros;
  deadlineMs: number;
  /** Chunks executing at once (SERVICE_RUN_CONCURRENCY). */
  concurrency: number;
  /**
   * Called after each checkpoint: crash simulation (the local stack), and a fanned-out group's look at whether the run
   * is still queued (./fanout.ts). A throw (or rejection) stops the run once in-flight chunks end.
   */
  afterChunk?: () => void | Promise<void>;
  /** Only the chunks within these pages (a fanned-out group's, ./fanout.ts); the answer merges only them. */
  only?: PageRange;
  /** The run's tenant's calibration factors (default: the shipped seeds), for reservations and fallbacks' bounds. */
  factors?: FactorsFor;
}

interface Totals {
  attempts: Attempt[];
  requests: number;
  costMicros: Micros;
  billableUnits: number;
}

export type ChunkedOutcome = Totals &
  (
    | { status: 'completed'; merged: MergedAnswer }
    | { status: 'failed'; reason: 'truncated' | 'unreadable' | 'providers'; page: number }
  );

/** Failed and skipped attempts in order (at most MAX_REPORTED_FAILURES), then one success per provider and step. */
export function summariseAttempts(attempts: readonly Attempt[]): Attempt[] {
  const failures = attempts.filter((a) => a.outcome !== 'succeeded').slice(0, MAX_REPORTED_FAILURES);
  const successes = new Map<string, Attempt>();
  for (const a of attempts.filter((x) => x.outcome === 'succeeded')) {
    const key = `${a.provider}/${a.step}`;
    const seen = successes.get(key);
    if (!seen || a.latencyMs > seen.latencyMs) successes.set(key, a);
  }
  return [...failures, ...successes.values()];
}

/** The parts of the planned ranges that no checkpoint covers (a split chunk may be covered in pieces). */
export function pagesLeft(planned: readonly PageRange[], done: readonly PageRange[]): PageRange[] {
  const covered = new Set<number>();
  for (const range of done) for (let page = range.first; page <= range.last; page++) covered.add(page);
  const left: PageRange[] = [];
  for (const range of planned) {
    let first: number | undefined;
    for (let page = range.first; page <= range.last + 1; page++) {
      const open = page <= range.last && !covered.has(page);
      if (open && first === undefined) first = page;
      if (!open && first !== undefined) {
        left.push({ first, last: page - 1 });
        first = undefined;
      }
    }
  }
  return left;
}

/** What a chunk keeps reserved until it ends: its primary path's predicted cost (for a chain, both steps'). */
export function chunkReservation(run: RunRecord, range: PageRange, factors?: FactorsFor): Micros {
  const facts = chunkFacts(run.file, range);
  if (!run.ocrCandidates) {
    return primaryPathCost(run.candidates, (id) => predictedCostMicros(id, facts, run.task, factors)) ?? 0;
  }
  // A chain: both steps' primary paths, as the plan held them (planning/plan.ts chainedPlan).
  const step = (s: 'ocr' | 'analyze') => (id: ProviderId) =>
    predictAttempt(id, facts, run.task, s, factors)?.costMicros;
  return (
    (primaryPathCost(run.ocrCandidates, step('ocr')) ?? 0) + (primaryPathCost(run.candidates, step('analyze')) ?? 0)
  );
}

/** Executes the run's chunks and merges them; throws RunIncomplete (or a simulated crash) to be redelivered. */
export async function executeChunked(input: ChunkedInput): Promise<ChunkedOutcome> {
  const { run } = input;
  const size = run.chunkPages ?? Math.max(1, run.file.pages);
  const { only } = input;
  const checkpoints = await listCheckpoints(run.jobId, only);
  const finished: ChunkCheckpoint[] = [...checkpoints];
  /** This delivery's chunks' words by first page, in whole-document pages (not in checkpoints: see the top). */
  const chunkWords = new Map<number, PageWords[]>();
  const planned = chunkRanges(run.file.pages, size);
  const queue = pagesLeft(
    only ? planned.filter((r) => r.first >= only.first && r.last <= only.last) : planned,
    checkpoints,
  );
  const totals: Totals = {
    attempts: checkpoints.flatMap((c) => c.attempts),
    requests: checkpoints.reduce((sum, c) => sum + c.requests, 0),
    costMicros: checkpoints.reduce((sum, c) => sum + c.costMicros, 0),
    billableUnits: checkpoints.reduce((sum, c) => sum + c.output.billableUnits, 0),
  };
  if (checkpoints.length > 0) log.info('resuming a chunked run', { jobId: run.jobId, chunksDone: checkpoints.length });

  // The run's spend: what ended chunks cost, each running chunk's reservation (its primary path's predicted cost) or,
  // once it went past it, what it spent and has in flight, and the reservation of each chunk not started yet; all
  // within the run's spend limit (ratio x estimate).
  interface ChunkSpend {
    reserved: Micros;
    spent: Micros;
    inFlight: Micros;
  }
  const active = new Set<ChunkSpend>();
  const spend = { ended: totals.costMicros, queued: 0 };
  const committed = (c: ChunkSpend) => Math.max(c.reserved, c.spent + c.inFlight);
  const total = () => spend.ended + spend.queued + [...active].reduce((sum, c) => sum + committed(c), 0);
  const fits = (micros: Micros) => priceFor(micros, run.marginPct) <= input.capMicros;
  const reservation = (range: PageRange): Micros => chunkReservation(run, range, input.factors);
  for (const range of queue) spend.queued += reservation(range);

  let failure: { reason: 'truncated' | 'unreadable' | 'providers'; page: number } | undefined;
  const writes = new Set<Promise<void>>();
  let stopped: unknown;
  let outOfTime = false;

  let pdf: PdfFile;
  try {
    pdf = await PdfFile.open(input.bytes, new Deadline(new AbortController().signal, input.deadlineMs, 'worker'));
  } catch (error: unknown) {
    // A file that passed inspection but cannot be opened: no provider could read it either (CORRUPT_FILE, as at
    // creation); anything else is retried by a redelivery.
    if (error instanceof ProviderFailure && error.kind === 'unreadable_file') {
      return {
        ...totals,
        attempts: summariseAttempts(totals.attempts),
        status: 'failed',
        reason: 'unreadable',
        page: 1,
      };
    }
    throw error;
  }
  try {
    /**
     * The OCR step of a chain's chunk of several pages, one page per call: an OCR engine's synchronous API takes one
     * page, and Textract reads more only from S3 (the whole stored file, not the chunk). The analyze step's primary
     * path stays reserved throughout. `text` is undefined when a page could not be read (`failedPage`).
     */
    const readPages = async (
      range: PageRange,
      common: { shared: SharedSpend; capMicros: Micros; deadlineMs: number; marginPct?: number },
    ): Promise<Totals & { text: string | undefined; words: PageWords[]; failedPage?: number }> => {
      const ocrCandidates = run.ocrCandidates ?? [];
      const analyzeBound = (id: ProviderId) =>
        predictAttempt(id, chunkFacts(run.file, range), run.task, 'analyze', input.factors)?.costMicros;
      const ocrPrimary = ocrCandidates.find((id) => catalog[id] !== undefined);
      const read: Totals & { text: string | undefined; words: PageWords[]; failedPage?: number } = {
        attempts: [],
        requests: 0,
        costMicros: 0,
        billableUnits: 0,
        text: undefined,
        words: [],
      };
      const texts: string[] = [];
      for (let page = range.first; page <= range.last; page++) {
        const one = { first: page, last: page };
        const bytes = pdf.extractPages(page - 1, page - 1);
        const facts = chunkFacts(run.file, one);
        const outcome = await tryCandidates({
          ...common,
          adapters: input.adapters,
          candidates: ocrCandidates,
          input: { bytes, facts, task: run.task, pages: one },
          stepFor: () => 'ocr',
          // The estimate priced the chunk's OCR by the first engine (planning/plan.ts chainedPlan).
          ...(ocrPrimary ? { planned: { provider: ocrPrimary, step: 'ocr' as const } } : {}),
          costBound: (id) => predictAttempt(id, facts, run.task, 'ocr')?.costMicros,
          spentMicros: read.costMicros,
          reservedMicros: primaryPathCost(run.candidates, analyzeBound) ?? 0,
        });
        read.attempts.push(...outcome.attempts);
        read.requests += outcome.requests;
        read.costMicros += outcome.costMicros;
        if (!outcome.output) return { ...read, failedPage: page };
        read.billableUnits += outcome.output.usage.billableUnits;
        read.words.push(...offsetWords(outcome.output.words ?? [], page - 1));
        texts.push(readText(outcome.output).trim());
      }
      // A chunk of blank pages has nothing to analyze: a failed reading, as a whole chain's OCR step with no text.
      return texts.some((t) => t !== '') ? { ...read, text: texts.join('\n\n') } : { ...read, failedPage: range.first };
    };

    /**
     * A single-step plan's steps on one chunk, decided on the chunk's share of the file's facts as the estimate
     * was (planning/chunks.ts `chunkFacts`), not on the grafted chunk PDF's own size (./steps.ts).
     */
    const singlePassOf = (range: PageRange, layer: TextLayer) => {
      const steps = chooseSteps(chunkFacts(run.file, range), run.candidates, layer);
      return {
        stepFor: steps.stepFor,
        cheaperStep: steps.cheaperStep,
        ...(steps.planned ? { planned: steps.planned } : {}),
      };
    };

    const runChunk = async (range: PageRange): Promise<void> => {
      const own: ChunkSpend = { reserved: reservation(range), spent: 0, inFlight: 0 };
      spend.queued -= own.reserved;
      active.add(own);
      const shared: SharedSpend = {
        othersMicros: () => total() - committed(own),
        started: (bound) => {
          own.inFlight += bound;
        },
        settled: (bound, cost) => {
          own.inFlight -= bound;
          own.spent += cost;
        },
      };
      try {
        let bytes: Uint8Array;
        let layer: TextLayer;
        try {
          bytes = pdf.extractPages(range.first - 1, range.last - 1);
          const texts: string[] = [];
          for (let page = range.first; page <= range.last; page++) texts.push(pdf.text(page - 1));
          layer = textLayerOf(texts);
        } catch (error: unknown) {
          if (error instanceof ProviderFailure && error.kind === 'unreadable_file') {
            failure ??= { reason: 'unreadable', page: range.first };
            return;
          }
          throw error;
        }
        // The chunk's facts as the estimate saw them (its share of the file's bytes, not the grafted PDF's size): a
        // provider that reads the file decides from them what the estimate priced (a text layer, or a scan).
        const facts = chunkFacts(run.file, range);
        const common = {
          adapters: input.adapters,
          input: { bytes, facts, task: run.task, pages: range },
          capMicros: input.capMicros,
          deadlineMs: input.deadlineMs,
          shared,
          ...(input.factors ? { factors: input.factors } : {}),
          stopOnTruncated: rangePages(range) > 1,
          ...(run.marginPct !== undefined ? { marginPct: run.marginPct } : {}),
        };
        // A chain skips its OCR step only when the text layer reads every page of the chunk.
        const documentText = layer.complete ? layer.text : undefined;
        // A chain's multi-page chunk without a text layer is read page by page (see readPages).
        const read =
          run.ocrCandidates && documentText === undefined && rangePages(range) > 1
            ? await readPages(range, common)
            : undefined;
        if (read) {
          totals.attempts.push(...read.attempts);
          totals.requests += read.requests;
          totals.costMicros += read.costMicros;
          if (read.text === undefined) {
            failure ??= { reason: 'providers', page: read.failedPage ?? range.first };
            return;
          }
        }
        const text = read?.text ?? documentText;
        const outcome = run.ocrCandidates
          ? // A chain per chunk: OCR reads the chunk's pages (its text layer, when complete, replaces it), a model
            // analyzes that text. The chain's bounds are the chunk's (`file`: its facts).
            await tryChain(
              { ...run, file: facts },
              run.ocrCandidates,
              { ...common, ...(read ? { spentMicros: read.costMicros } : {}) },
              text,
            )
          : await tryCandidates({
              ...common,
              candidates: run.candidates,
              ...singlePassOf(range, layer),
              input: { ...common.input, ...(layer.text !== undefined ? { documentText: layer.text } : {}) },
            });
        totals.attempts.push(...outcome.attempts);
        totals.requests += outcome.requests;
        totals.costMicros += outcome.costMicros;
        if (outcome.output && outcome.provider) {
          // Pages read one by one are the chunk's billable units, as a chain's OCR step's are.
          const billableUnits = read ? read.billableUnits : outcome.output.usage.billableUnits;
          totals.billableUnits += billableUnits;
          const words = outcome.output.words ? offsetWords(outcome.output.words, range.first - 1) : read?.words;
          if (words !== undefined) chunkWords.set(range.first, words);
          const checkpoint: ChunkCheckpoint = {
            ...range,
            provider: outcome.provider,
            output: {
              result: outcome.output.result,
              billableUnits,
              ...(outcome.output.documentText !== undefined ? { documentText: outcome.output.documentText } : {}),
              ...(outcome.output.nativeConfidence !== undefined
                ? { nativeConfidence: outcome.output.nativeConfidence }
                : {}),
            },
            attempts: [...(read?.attempts ?? []), ...outcome.attempts],
            requests: (read?.requests ?? 0) + outcome.requests,
            costMicros: (read?.costMicros ?? 0) + outcome.costMicros,
          };
          // The slot goes to the next chunk while the checkpoint is written; the run merges only once every write
          // is done (and a crash seam fires only after its chunk's write).
          finished.push(checkpoint);
          const write: Promise<void> = saveCheckpoint(run, checkpoint)
            .then(() => input.afterChunk?.())
            .catch((error: unknown) => {
              stopped ??= error;
            })
            .finally(() => writes.delete(write));
          writes.add(write);
          return;
        }
        if (outcome.truncated && rangePages(range) > 1) {
          const middle = range.first + Math.floor(rangePages(range) / 2) - 1;
          const halves = [
            { first: range.first, last: middle },
            { first: middle + 1, last: range.last },
          ];
          const needed = halves.reduce((sum, half) => sum + reservation(half), 0);
          // The halves replace this chunk's reservation; what it spent stays spent.
          if (fits(total() - committed(own) + own.spent + needed)) {
            log.info('chunk cut at its output cap; asking again in two halves', { jobId: run.jobId, ...range });
            spend.queued += needed;
            queue.unshift(...halves);
            return;
          }
        }
        const timedOut = outcome.attempts.every((a) => a.failure === 'timeout');
        if (timedOut && input.deadlineMs - Date.now() < MIN_CHUNK_MS) {
          outOfTime = true;
          queue.unshift(range);
          spend.queued += own.reserved;
          return;
        }
        failure ??= { reason: outcome.truncated ? 'truncated' : 'providers', page: range.first };
      } catch (error: unknown) {
        stopped ??= error;
      } finally {
        active.delete(own);
        spend.ended += own.spent;
      }
    };

    const running = new Set<Promise<void>>();
    while (queue.length > 0 || running.size > 0) {
      const halted = failure !== undefined || stopped !== undefined || outOfTime;
      if (!halted && queue.length > 0 && input.deadlineMs - Date.now() < MIN_CHUNK_MS) outOfTime = true;
      if (!halted && !outOfTime && queue.length > 0 && running.size < input.concurrency) {
        const range = queue.shift() as PageRange;
        const task: Promise<void> = runChunk(range).finally(() => running.delete(task));
        running.add(task);
        continue;
      }
      if (running.size === 0) break;
      await Promise.race(running);
    }
  } finally {
    pdf.close();
    await Promise.all([...writes]);
  }

  if (stopped !== undefined) throw stopped;
  const summary = { ...totals, attempts: summariseAttempts(totals.attempts) };
  if (failure) return { ...summary, status: 'failed', ...failure };
  if (outOfTime) throw new RunIncomplete(queue.reduce((sum, range) => sum + rangePages(range), 0));
  const answers = finished.map((c) => {
    const words = chunkWords.get(c.first);
    return { first: c.first, last: c.last, ...c.output, ...(words !== undefined ? { words } : {}) };
  });
  const merged = run.task.outputFormat === 'text' ? mergeText(answers) : mergeJson(answers);
  return { ...summary, status: 'completed', merged };
}

/** The settlement of a run executed in page chunks: the merged answer, or why a chunk could not be answered. */
export function chunkedSettlement(run: RunRecord, outcome: ChunkedOutcome): Settlement {
  const usage: RunUsage = {
    requests: outcome.requests,
    billableUnits: outcome.billableUnits,
    costMicros: outcome.costMicros,
    priceMicros: priceFor(outcome.costMicros, run.marginPct),
  };
  const attempts = outcome.attempts;
  if (outcome.status === 'failed') {
    const reported = attempts.map((a) => ({
      provider: a.provider,
      step: a.step,
      outcome: a.outcome,
      failure: a.failure,
    }));
    const error =
      outcome.reason === 'unreadable'
        ? runError('CORRUPT_FILE', 'The file cannot be decoded (its data is damaged); upload an intact copy', {
            reason: 'undecodable',
            page: outcome.page,
            attempts: reported,
          })
        : outcome.reason === 'truncated'
          ? runError('PROVIDER_ERROR', `The answer for page ${outcome.page} does not fit a provider's output limit`, {
              reason: 'truncated',
              page: outcome.page,
              attempts: reported,
            })
          : runError('PROVIDER_ERROR', `Every candidate provider failed on page ${outcome.page}`, {
              page: outcome.page,
              attempts: reported,
            });
    return { status: 'failed', error, usage, attempts };
  }
  const { merged } = outcome;
  const output: ProviderOutput = {
    result: merged.result,
    usage: { billableUnits: outcome.billableUnits, costMicros: outcome.costMicros },
    ...(merged.documentText !== undefined ? { documentText: merged.documentText } : {}),
    ...(merged.nativeConfidence !== undefined ? { nativeConfidence: merged.nativeConfidence } : {}),
  };
  // Text output is stored as its pages (get-run joins the text: runs/run-view.ts viewResult); JSON is coerced to the
  // schema's types as a lone answer is.
  const result = run.task.outputFormat === 'text' ? { pages: merged.result.pages } : shapeResult(run.task, output);
  if (resultTooLarge(result)) {
    log.error('result too large to store; failing the run', { jobId: run.jobId });
    return {
      status: 'failed',
      error: runError('INTERNAL_ERROR', 'The result is larger than the service can store'),
      usage,
      attempts,
    };
  }
  const alternatives = Object.keys(merged.alternatives).length;
  if (alternatives > 0) log.info('chunks read different values for some fields', { jobId: run.jobId, alternatives });
  return {
    status: 'completed',
    result,
    usage,
    confidence: computeConfidence(run.task.outputFormat === 'json' ? run.task.fields : null, result, output),
    attempts,
    ...(alternatives > 0 ? { alternatives: merged.alternatives } : {}),
  };
}
