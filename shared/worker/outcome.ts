/**
 * What a run's execution comes to: the settlement to write (./settle.ts writes it), from a single pass's attempts or
 * a chunked run's merged chunks, and the evidence its answer brought for grounding. Pure.
 * Not to undo: a run that cannot be stored (a result over ~3 MB, run-results.ts) or whose file no provider could
 * decode is failed here, not thrown, so SQS does not redeliver it (and pay the providers) again and again.
 */
import type { Attempt } from '../contract.js';
import { runError } from '../errors.js';
import { log } from '../log.js';
import { priceFor } from '../pricing/pricing.js';
import type { ProviderOutput } from '../providers/types.js';
import type { Settlement } from '../store/ledger.js';
import { resultTooLarge } from '../store/run-results.js';
import type { RunRecord, RunUsage } from '../store/runs.js';
import type { AttemptsOutcome } from './attempts.js';
import type { ChunkedOutcome } from './chunked.js';
import type { AnswerEvidence } from './grounding.js';
import { computeConfidence, shapeResult } from './result.js';
import { calibrationSample } from './settle.js';

/** The settlement of a run executed in one pass (or one chain): its shaped answer, or why no provider gave one. */
export function singlePassSettlement(run: RunRecord, outcome: AttemptsOutcome): Settlement {
  const billableUnits = outcome.output?.usage.billableUnits ?? 0;
  const used = { requests: outcome.requests, billableUnits, costMicros: outcome.costMicros };
  if (!outcome.output) {
    const attempts = reported(outcome.attempts);
    // No provider failed: the service could not decode the file for any of them (a damaged image or PDF whose header
    // passed the checks at creation, which read only headers). Retrying cannot help: CORRUPT_FILE, as at creation.
    const failed = outcome.attempts.filter((a) => a.outcome === 'failed');
    const error =
      failed.length > 0 && failed.every((a) => a.failure === 'unreadable_file')
        ? runError('CORRUPT_FILE', 'The file cannot be decoded (its data is damaged); upload an intact copy', {
            reason: 'undecodable',
            attempts,
          })
        : runError('PROVIDER_ERROR', 'Every candidate provider in the plan failed', { attempts });
    return { status: 'failed', error, usage: usageOf(run, used), attempts: outcome.attempts };
  }
  const result = shapeResult(run.task, outcome.output);
  const usage = usageOf(run, used);
  if (resultTooLarge(result)) return tooLarge(run, usage, outcome.attempts);
  const calibration = calibrationSample(run, outcome);
  return {
    status: 'completed',
    result,
    usage,
    confidence: computeConfidence(run.task.outputFormat === 'json' ? run.task.fields : null, result, outcome.output),
    attempts: outcome.attempts,
    ...(calibration ? { calibration } : {}),
  };
}

/** The settlement of a run executed in page chunks: the merged answer, or why a chunk could not be answered. */
export function chunkedSettlement(run: RunRecord, outcome: ChunkedOutcome): Settlement {
  const { attempts } = outcome;
  if (outcome.status === 'failed') {
    const details = { page: outcome.page, attempts: reported(attempts) };
    const error =
      outcome.reason === 'unreadable'
        ? runError('CORRUPT_FILE', 'The file cannot be decoded (its data is damaged); upload an intact copy', {
            reason: 'undecodable',
            ...details,
          })
        : outcome.reason === 'truncated'
          ? runError('PROVIDER_ERROR', `The answer for page ${outcome.page} does not fit a provider's output limit`, {
              reason: 'truncated',
              ...details,
            })
          : runError('PROVIDER_ERROR', `Every candidate provider failed on page ${outcome.page}`, details);
    return { status: 'failed', error, usage: usageOf(run, outcome), attempts };
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
  const usage = usageOf(run, outcome);
  if (resultTooLarge(result)) return tooLarge(run, usage, attempts);
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

/** The words and confidence an answer brought with it, for grounding. */
export function evidenceOf(answer: AnswerEvidence | undefined): AnswerEvidence {
  return {
    ...(answer?.words ? { words: answer.words } : {}),
    ...(answer?.nativeConfidence !== undefined ? { nativeConfidence: answer.nativeConfidence } : {}),
    ...(answer?.valueConfidence !== undefined ? { valueConfidence: answer.valueConfidence } : {}),
  };
}

/** What a run used, priced with the margin recorded on it at creation. */
function usageOf(run: RunRecord, used: { requests: number; billableUnits: number; costMicros: number }): RunUsage {
  return {
    requests: used.requests,
    billableUnits: used.billableUnits,
    costMicros: used.costMicros,
    priceMicros: priceFor(used.costMicros, run.marginPct),
  };
}

/** The attempts as a failed run's error reports them. */
function reported(attempts: readonly Attempt[]) {
  return attempts.map((a) => ({ provider: a.provider, step: a.step, outcome: a.outcome, failure: a.failure }));
}

/** A result larger than the service can store: the run fails (output caps keep real answers far below it). */
function tooLarge(run: RunRecord, usage: RunUsage, attempts: Attempt[]): Settlement {
  log.error('result too large to store; failing the run', { jobId: run.jobId });
  return {
    status: 'failed',
    error: runError('INTERNAL_ERROR', 'The result is larger than the service can store'),
    usage,
    attempts,
  };
}
