/**
 * A packet run's checkpoints (contract-v1.2 §3: "the same checkpoints … as §2 of v1.1"), in the run's chunk store
 * (shared/store/chunks.ts), written in waves by ./checkpoints.ts `CheckpointWriter` as chunks' are: each page's
 * evidence under its page (`first = last = p`, a page done in the run's progress), each extracted document's answer
 * under its pages negated (`first = -f, last = -l`, no page counted: its pages were counted when classified). A
 * redelivery reads them back, asks again only what none covers, and counts what they used in the one settlement.
 * Not to undo:
 * - Once the run stops (the crash seam threw, a write failed), no new call starts; every call that finished is still
 *   written (it was paid for), then `finish` rethrows so that the delivery is redone from the checkpoints.
 * - What earlier deliveries spent is spent: the packet's one spend limit starts from it (`spentBefore`).
 * - Out of time (less than MIN_CHUNK_MS before the delivery's deadline, as for a chunk), no new call starts either;
 *   the finished ones are written and `finish` throws `RunIncomplete`: the run is handed back, and the next delivery
 *   goes on from the checkpoints, as a chunked run's does (./chunked.ts).
 */
import { config } from '../config.js';
import type { Micros } from '../money.js';
import { type PageEvidence, pageEvidence } from '../packets/evidence.js';
import type { PageRange } from '../planning/chunks.js';
import type { ProviderOutput } from '../providers/types.js';
import { type ChunkCheckpoint, listCheckpoints } from '../store/chunks.js';
import type { RunRecord } from '../store/runs.js';
import type { ProviderId } from '../task.js';
import { CheckpointWriter, type Totals, totalsOf } from './checkpoints.js';
import { MIN_CHUNK_MS, RunIncomplete } from './chunked.js';
import { Semaphore } from './pool.js';

/** A document's answer as a provider gave it (the words are not kept: the worker reads them from the text layer). */
export type SavedOutput = Omit<ProviderOutput, 'words'>;

function usedOf(checkpoint: ChunkCheckpoint): Totals {
  return totalsOf([checkpoint]);
}

export class PacketCheckpoints {
  private readonly evidence = new Map<number, { evidence: PageEvidence; used: Totals }>();
  private readonly documents = new Map<string, { provider: ProviderId; output: SavedOutput; used: Totals }>();
  /** None outside a run's delivery (`unsaved`). */
  private readonly writer: CheckpointWriter | undefined;
  /**
   * A page's or document's call is one provider call: the run's calls go as many at once as one provider's pool takes
   * (SERVICE_PROVIDER_CONCURRENCY, ./pool.ts), as they did before checkpoints; SERVICE_RUN_CONCURRENCY (chunks of
   * many pages) held a 100-page packet to four rounds of calls.
   */
  private readonly slots = new Semaphore(config.providerConcurrency);
  /** What earlier deliveries of the run spent (every checkpoint's cost). */
  readonly spentBefore: Micros;
  /** Pages of the calls not started for lack of time (0: none was refused). */
  private pagesLeft = 0;

  private constructor(
    run: Pick<RunRecord, 'jobId' | 'expiresAtEpoch'> | undefined,
    saved: readonly ChunkCheckpoint[],
    afterWrite?: () => void | Promise<void>,
    /** Epoch ms by which the delivery must be done (none: no time limit, the bench). */
    private readonly deadlineMs = Number.POSITIVE_INFINITY,
  ) {
    this.writer = run && new CheckpointWriter(run, afterWrite);
    for (const c of saved) {
      if (c.first > 0) {
        const parsed = pageEvidence.safeParse({ ...c.output.result, page: c.first });
        if (parsed.success) this.evidence.set(c.first, { evidence: parsed.data, used: usedOf(c) });
      } else {
        const { billableUnits, ...answer } = c.output;
        const output: SavedOutput = { ...answer, usage: { billableUnits, costMicros: c.costMicros } };
        this.documents.set(key({ first: -c.first, last: -c.last }), { provider: c.provider, output, used: usedOf(c) });
      }
    }
    this.spentBefore = saved.reduce((sum, c) => sum + c.costMicros, 0);
  }

  /**
   * The run's checkpoints so far; `afterWrite` runs after each one is written (the crash seam); no call starts later
   * than MIN_CHUNK_MS before `deadlineMs`.
   */
  static async load(
    run: Pick<RunRecord, 'jobId' | 'expiresAtEpoch'>,
    deadlineMs: number,
    afterWrite?: () => void | Promise<void>,
  ): Promise<PacketCheckpoints> {
    return new PacketCheckpoints(run, await listCheckpoints(run.jobId), afterWrite, deadlineMs);
  }

  /** Nothing kept and nothing written: the pages' evidence outside a run's delivery (the bench). */
  static unsaved(): PacketCheckpoints {
    return new PacketCheckpoints(undefined, []);
  }

  /** Page `page`'s evidence and what gathering it used, when an earlier delivery kept it. */
  savedEvidence(page: number) {
    return this.evidence.get(page);
  }

  /** The extraction of the document on `pages`, when an earlier delivery kept it. */
  savedDocument(pages: PageRange) {
    return this.documents.get(key(pages));
  }

  /** Keeps page evidence: written with the next wave. */
  keepEvidence(evidence: PageEvidence, provider: ProviderId, used: Totals): void {
    const { page, ...rest } = evidence;
    this.writer?.add({
      first: page,
      last: page,
      provider,
      output: { result: rest, billableUnits: used.billableUnits },
      ...attemptsOf(used),
    });
  }

  /** Keeps a document's answer: written with the next wave; it counts no page done. */
  keepDocument(pages: PageRange, provider: ProviderId, output: ProviderOutput, used: Totals): void {
    const { result, documentText, nativeConfidence, valueConfidence } = output;
    this.writer?.add({
      first: -pages.first,
      last: -pages.last,
      provider,
      output: {
        result,
        ...(documentText !== undefined ? { documentText } : {}),
        ...(nativeConfidence !== undefined ? { nativeConfidence } : {}),
        ...(valueConfidence !== undefined ? { valueConfidence } : {}),
        billableUnits: used.billableUnits,
      },
      ...attemptsOf(used),
      pagesDone: 0,
    });
  }

  /**
   * Runs `call` (on `pages` pages) once one of the run's slots is free, unless the run has stopped meanwhile or its
   * time is short (then `undefined`: nothing is asked).
   */
  async step<T>(pages: number, call: () => Promise<T>): Promise<T | undefined> {
    const release = await this.slots.acquire();
    try {
      if (this.writer?.stopped !== undefined) return undefined;
      if (this.pagesLeft > 0 || this.deadlineMs - Date.now() < MIN_CHUNK_MS) {
        this.pagesLeft += pages;
        return undefined;
      }
      return await call();
    } finally {
      release();
    }
  }

  /**
   * Waits for every checkpoint's write; throws what stopped the run, if anything did, or `RunIncomplete` when calls
   * were left for lack of time.
   */
  async finish(): Promise<void> {
    await this.writer?.done();
    if (this.writer?.stopped !== undefined) throw this.writer.stopped;
    if (this.pagesLeft > 0) throw new RunIncomplete(this.pagesLeft);
  }

  /** Throws `RunIncomplete` when less than MIN_CHUNK_MS is left: a call started now could not finish in time. */
  checkTime(pages: number): void {
    if (this.deadlineMs - Date.now() < MIN_CHUNK_MS) throw new RunIncomplete(pages);
  }
}

function key(pages: PageRange): string {
  return `${pages.first}-${pages.last}`;
}

function attemptsOf(used: Totals) {
  return { attempts: used.attempts, requests: used.requests, costMicros: used.costMicros };
}
