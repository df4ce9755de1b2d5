/**
 * A run in page chunks (contract v1.1 §2; planning: shared/planning/chunks.ts): its chunks run concurrently
 * (SERVICE_RUN_CONCURRENCY, and the providers' shared pools, ./pool.ts), each one by ./chunk.ts, each answered one
 * checkpointed (./checkpoints.ts), and the answers merged (./merge.ts). A fanned-out run runs here one group of chunks
 * per delivery (`only`, ./fanout.ts). `runChunksOf` is the one way a delivery gets there: the run's bytes read, its
 * chunks run within the spend limit (or the group's share of it).
 * Not to undo:
 * - Pages a checkpoint covers are never asked again: a redelivered run pays only for the rest.
 * - Every attempt is checked against the run's cap with what the other chunks spent, have in flight, and keep
 *   reserved for their own primary path (./chunk-spend.ts): the hold taken at creation is never exceeded.
 * - A chunk cut at its output cap is split in two and asked again; a single page that is still cut fails the run
 *   (`truncated`), never a silently short answer.
 * - Out of time, the run stops starting chunks and is handed back (`RunIncomplete`): the next delivery resumes.
 */
import { BatchParked } from '../batching/parked.js';
import { config } from '../config.js';
import { log } from '../log.js';
import { Deadline, PdfFile } from '../media/index.js';
import type { Micros } from '../money.js';
import { chunkRanges, type PageRange, rangePages } from '../planning/chunks.js';
import { groupCapMicros } from '../planning/reservations.js';
import type { FactorsFor } from '../pricing/calibration.js';
import type { ProviderAdapter } from '../providers/types.js';
import { listCheckpoints } from '../store/chunks.js';
import type { Settlement } from '../store/ledger.js';
import type { RunRecord } from '../store/runs.js';
import { ProviderFailure, type ProviderId } from '../task.js';
import { addTo, CheckpointWriter, pagesLeft, summariseAttempts, type Totals, totalsOf } from './checkpoints.js';
import { type ChunkContext, runChunk } from './chunk.js';
import { RunSpend } from './chunk-spend.js';
import { type ChunkAnswer, type MergedAnswer, mergeJson, mergeText } from './merge.js';
import { pooledAdapters } from './pool.js';
import { objectUnavailable, readObject } from './read-object.js';

/** A chunk is not started with less time than this left: the run is handed back to resume on its next delivery. */
export const MIN_CHUNK_MS = 20_000;

/** Thrown when the invocation's time ran out with pages left: SQS redelivers the run, which resumes from checkpoints. */
export class RunIncomplete extends Error {
  constructor(readonly pagesLeft: number) {
    super(`out of time with ${pagesLeft} pages left; the next delivery resumes from the checkpoints`);
    this.name = 'RunIncomplete';
  }
}

export interface ChunksInput {
  run: RunRecord;
  bytes: Uint8Array;
  adapters: Partial<Record<ProviderId, ProviderAdapter>>;
  capMicros: Micros;
  deadlineMs: number;
  /** Chunks executing at once (SERVICE_RUN_CONCURRENCY). */
  concurrency: number;
  /**
   * Called after each checkpoint is written: crash simulation (the local stack), and a fanned-out group's look at
   * whether the run is still queued (./fanout.ts). A throw (or rejection) stops the run once in-flight chunks end.
   */
  afterChunk?: () => void | Promise<void>;
  /** Only the chunks within these pages (a fanned-out group's, ./fanout.ts); the answer merges only them. */
  only?: PageRange;
  /** The run's tenant's calibration factors (default: the shipped seeds), for reservations and fallbacks' bounds. */
  factors?: FactorsFor;
}

export type ChunkedOutcome = Totals &
  (
    | { status: 'completed'; merged: MergedAnswer }
    | { status: 'failed'; reason: 'truncated' | 'unreadable' | 'providers'; page: number }
  );

/** What a delivery gives `runChunksOf`: the adapters, when to stop, and for a group its pages. */
export interface ChunksOfOptions
  extends Pick<ChunksInput, 'adapters' | 'deadlineMs' | 'afterChunk' | 'only' | 'factors'> {}

/**
 * Reads the run's bytes and runs its chunks (a group's when `only` is given) within its spend limit, the estimate
 * times SERVICE_MAX_OVERRUN_RATIO (a group: its share of it). `unavailable`: the bytes are gone or were replaced.
 */
export async function runChunksOf(
  run: RunRecord,
  options: ChunksOfOptions,
): Promise<{ bytes: Uint8Array; outcome: ChunkedOutcome } | { unavailable: Settlement }> {
  const bytes = await readObject(run);
  if (typeof bytes === 'string') return { unavailable: objectUnavailable(bytes) };
  const limit = spendLimitOf(run);
  const outcome = await runChunks({
    run,
    bytes,
    adapters: pooledAdapters(options.adapters, config.providerConcurrency),
    capMicros: options.only ? groupCapMicros(run, options.only, limit) : limit,
    deadlineMs: options.deadlineMs,
    concurrency: config.runConcurrency,
    ...(options.only ? { only: options.only } : {}),
    ...(options.factors ? { factors: options.factors } : {}),
    ...(options.afterChunk ? { afterChunk: options.afterChunk } : {}),
  });
  return { bytes, outcome };
}

/**
 * The spend limit: the run may cost up to this multiple of its estimate; the client pays at most the estimate (and so
 * at most maxCostUsd, which the estimate is within), the service absorbs the rest (docs/pricing.md).
 */
export function spendLimitOf(run: Pick<RunRecord, 'estimateMicros'>): Micros {
  return Math.floor(run.estimateMicros * config.maxOverrunRatio);
}

/** Executes the run's chunks and merges them; throws RunIncomplete (or a simulated crash) to be redelivered. */
export async function runChunks(input: ChunksInput): Promise<ChunkedOutcome> {
  const { run, only } = input;
  const checkpoints = await listCheckpoints(run.jobId, only);
  const planned = chunkRanges(run.file.pages, run.chunkPages ?? Math.max(1, run.file.pages));
  const queue = pagesLeft(
    only ? planned.filter((r) => r.first >= only.first && r.last <= only.last) : planned,
    checkpoints,
  );
  const totals = totalsOf(checkpoints);
  if (checkpoints.length > 0) log.info('resuming a chunked run', { jobId: run.jobId, chunksDone: checkpoints.length });
  const answers: ChunkAnswer[] = checkpoints.map((c) => ({ first: c.first, last: c.last, ...c.output }));
  const spend = new RunSpend(run, input.capMicros, totals.costMicros, input.factors);
  spend.reserve(...queue);

  const pdf = await openPdf(input.bytes, input.deadlineMs);
  if (pdf === 'unreadable') return { ...summary(totals), status: 'failed', reason: 'unreadable', page: 1 };
  const context: ChunkContext = {
    run,
    pdf,
    adapters: input.adapters,
    capMicros: input.capMicros,
    deadlineMs: input.deadlineMs,
    ...(input.factors ? { factors: input.factors } : {}),
  };
  const writer = new CheckpointWriter(run, input.afterChunk);
  let failure: { reason: 'truncated' | 'unreadable' | 'providers'; page: number } | undefined;
  let stopped: unknown;
  let parked: BatchParked | undefined;
  let outOfTime = false;

  /** One chunk, start to end: the chunk's result applied to the run (its totals, the queue, the spend). */
  const execute = async (range: PageRange): Promise<void> => {
    const own = spend.start(range);
    let parkedHere = false;
    try {
      const result = await runChunk(context, range, own.shared);
      addTo(totals, result.used);
      if (result.kind === 'answered') {
        answers.push({
          first: range.first,
          last: range.last,
          ...result.checkpoint.output,
          ...(result.words ? { words: result.words } : {}),
        });
        writer.add(result.checkpoint);
        return;
      }
      if (result.kind === 'failed') {
        failure ??= { reason: result.reason, page: result.page };
        return;
      }
      if (result.truncated && rangePages(range) > 1) {
        const halves = halvesOf(range);
        // The halves replace this chunk's reservation; what it spent stays spent.
        if (spend.fitsInstead(own, halves)) {
          log.info('chunk cut at its output cap; asking again in two halves', { jobId: run.jobId, ...range });
          spend.reserve(...halves);
          queue.unshift(...halves);
          return;
        }
      }
      if (result.timedOut && input.deadlineMs - Date.now() < MIN_CHUNK_MS) {
        outOfTime = true;
        queue.unshift(range);
        spend.reserve(range);
        return;
      }
      failure ??= { reason: result.truncated ? 'truncated' : 'providers', page: range.first };
    } catch (error: unknown) {
      // A batch run's chunk parked in the batch lane: the other chunks go on to park theirs, so that every page call of
      // the run goes in the same batch window (./batch-lane.ts); the run parks once they have.
      // A parked chunk keeps what it holds of the limit (its reservation, or its parked attempt's bound) for the rest
      // of the delivery: the chunks beside it, answered now, are checked against it.
      if (error instanceof BatchParked) {
        parked ??= error;
        parkedHere = true;
      } else stopped ??= error;
    } finally {
      if (!parkedHere) spend.end(own);
    }
  };

  try {
    const running = new Set<Promise<void>>();
    while (queue.length > 0 || running.size > 0) {
      const halted = failure !== undefined || stopped !== undefined || writer.stopped !== undefined || outOfTime;
      if (!halted && queue.length > 0 && input.deadlineMs - Date.now() < MIN_CHUNK_MS) outOfTime = true;
      if (!halted && !outOfTime && queue.length > 0 && running.size < input.concurrency) {
        const task: Promise<void> = execute(queue.shift() as PageRange).finally(() => running.delete(task));
        running.add(task);
        continue;
      }
      if (running.size === 0) break;
      await Promise.race(running);
    }
  } finally {
    pdf.close();
    await writer.done();
  }

  const error = stopped ?? writer.stopped ?? parked;
  if (error !== undefined) throw error;
  if (failure) return { ...summary(totals), status: 'failed', ...failure };
  if (outOfTime) throw new RunIncomplete(queue.reduce((sum, range) => sum + rangePages(range), 0));
  const merged = run.task.outputFormat === 'text' ? mergeText(answers) : mergeJson(answers);
  return { ...summary(totals), status: 'completed', merged };
}

/**
 * The file opened for its chunks; `unreadable` when it passed inspection but cannot be opened: no provider could read
 * it either (CORRUPT_FILE, as at creation). Anything else is thrown, to be retried by a redelivery.
 */
async function openPdf(bytes: Uint8Array, deadlineMs: number): Promise<PdfFile | 'unreadable'> {
  try {
    return await PdfFile.open(bytes, new Deadline(new AbortController().signal, deadlineMs, 'worker'));
  } catch (error: unknown) {
    if (error instanceof ProviderFailure && error.kind === 'unreadable_file') return 'unreadable';
    throw error;
  }
}

/** A chunk's two halves (the first one the shorter when its pages are odd). */
function halvesOf(range: PageRange): PageRange[] {
  const middle = range.first + Math.floor(rangePages(range) / 2) - 1;
  return [
    { first: range.first, last: middle },
    { first: middle + 1, last: range.last },
  ];
}

function summary(totals: Totals): Totals {
  return { ...totals, attempts: summariseAttempts(totals.attempts) };
}
