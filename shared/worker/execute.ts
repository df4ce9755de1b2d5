/**
 * A claimed run executed: the one path its plan takes, each ending in the settlement to write (nothing is written here:
 * ./settle.ts writes it). A packet is split and its documents extracted (./packet-run.ts); a PDF planned in page
 * chunks runs them (./chunked.ts); anything else runs in one pass (./single-pass.ts). Every path is given the run's
 * calibration (as its estimate was made: a fallback's bound is predicted with it) and its spend limit, and a JSON
 * answer comes back grounded on the document (./grounding.ts).
 * Not to undo: the bytes are the ones creation inspected (./read-object.ts); gone or replaced, the run fails with
 * nothing asked of a provider.
 */
import { config } from '../config.js';
import { calibrationKeysFor } from '../planning/estimate.js';
import { loadFactors } from '../store/calibration.js';
import type { Settlement } from '../store/ledger.js';
import type { RunRecord } from '../store/runs.js';
import { adaptersFor } from './batch-lane.js';
import { runChunksOf, spendLimitOf } from './chunked.js';
import { type ProcessOptions, SETTLE_RESERVE_MS } from './delivery.js';
import { earlyEvidenceOcr, withEvidence } from './grounding.js';
import type { Heartbeat } from './heartbeat.js';
import { chunkedSettlement, evidenceOf } from './outcome.js';
import { runPacket } from './packet-run.js';
import { pooledAdapters } from './pool.js';
import { objectUnavailable, readObject } from './read-object.js';
import { runSinglePass } from './single-pass.js';

export interface ExecuteOptions extends Pick<ProcessOptions, 'adapters' | 'remainingMs' | 'fault'> {
  /** The delivery's lease's guard: every provider call is refused once the lease is lost (./heartbeat.ts). */
  guard: Heartbeat['guard'];
}

/** Executes the run on the path its plan takes; returns the settlement (nothing written). */
export async function executeRun(run: RunRecord, options: ExecuteOptions): Promise<Settlement> {
  const deadlineMs = Date.now() + options.remainingMs - SETTLE_RESERVE_MS;
  // A batch run's provider calls go through the batch lane: the first delivery parks it (./batch-lane.ts).
  const adapters = options.guard(adaptersFor(run, options.adapters));
  // The run's tenant's calibration as its estimate was made (a batch run's with its batch keys).
  const keys = calibrationKeysFor([...run.candidates, ...(run.ocrCandidates ?? [])], run.task, run.priority);
  const factors = await loadFactors(run.tenantId, keys);
  if (run.chunkPages !== undefined && run.file.kind === 'pdf') {
    // Chunks read the bytes themselves, as a fanned-out group's do (./chunked.ts `runChunksOf`).
    const afterChunk = () => options.fault?.('after-chunk', run);
    const ran = await runChunksOf(run, { adapters, deadlineMs, factors, afterChunk });
    if ('unavailable' in ran) return ran.unavailable;
    const { bytes, outcome } = ran;
    const merged = outcome.status === 'completed' ? outcome.merged : undefined;
    return withEvidence(run, bytes, chunkedSettlement(run, outcome), evidenceOf(merged), deadlineMs);
  }
  const bytes = await readObject(run);
  if (typeof bytes === 'string') return objectUnavailable(bytes);
  const capMicros = spendLimitOf(run);
  if (run.packet) {
    // A packet's calls go through the providers' pools, as chunks' do.
    // The crash seam `after-chunk` fires after each of its checkpoints is written (./packet-checkpoints.ts).
    const pooled = pooledAdapters(adapters, config.providerConcurrency);
    const afterWrite = () => options.fault?.('after-chunk', run);
    return runPacket(run, bytes, { adapters: pooled, capMicros, factors, deadlineMs }, afterWrite);
  }
  // An image a language model answers comes back without words: its evidence OCR runs beside the model's call, and
  // is awaited before the run settles either way (no OCR is left running into the next invocation). Not a batch run's:
  // most of its deliveries only park it, and the one with the answer waits on no call (grounding reads the page then).
  const early =
    run.ocrCandidates || run.priority === 'batch'
      ? undefined
      : earlyEvidenceOcr(run, bytes, run.candidates, deadlineMs);
  try {
    return await runSinglePass(run, bytes, { adapters, capMicros, factors, deadlineMs, early });
  } finally {
    await early;
  }
}
