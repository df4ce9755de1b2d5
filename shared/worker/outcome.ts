/**
 * What a run's execution comes to: the settlement to write (./settle.ts writes it), from a single pass's attempts or
 * a chunked run's merged chunks, and the evidence its answer brought for grounding; the usage every path prices with
 * the run's margin (a packet's too, ./packet-run.ts), and what a completed run teaches calibration. Pure.
 * Not to undo: a run that cannot be stored (a result over ~3 MB, run-results.ts) or whose file no provider could
 * decode is failed here, not thrown, so SQS does not redeliver it (and pay the providers) again and again.
 */
import type { Attempt } from '../contract.js';
import { runError } from '../errors.js';
import { log } from '../log.js';
import { predictAttempt } from '../planning/estimate.js';
import type { CalibrationSample } from '../pricing/calibration.js';
import { priceFor } from '../pricing/pricing.js';
import type { ProviderOutput } from '../providers/types.js';
import type { Settlement } from '../store/ledger.js';
import { resultTooLarge } from '../store/run-results.js';
import type { RunRecord, RunUsage } from '../store/runs.js';
import type { AttemptsOutcome } from './attempts.js';
import type { ChunkedOutcome } from './chunked.js';
import type { AnswerEvidence } from './grounding.js';
import { computeConfidence, shapeResult } from './result.js';

/** The settlement of a run executed in one pass (or one chain): its shaped answer, or why no provider gave one. */
export function singlePassSettlement(run: RunRecord, outcome: AttemptsOutcome): Settlement {
  const { output, attempts } = outcome;
  const usage = usageOf(run, {
    requests: outcome.requests,
    billableUnits: output?.usage.billableUnits ?? 0,
    costMicros: outcome.costMicros,
  });
  if (!output) {
    const details = { attempts: reported(attempts) };
    // No provider failed: the service could not decode the file for any of them (a damaged image or PDF whose header
    // passed the checks at creation, which read only headers). Retrying cannot help: CORRUPT_FILE, as at creation.
    const failed = attempts.filter((a) => a.outcome === 'failed');
    const error =
      failed.length > 0 && failed.every((a) => a.failure === 'unreadable_file')
        ? undecodable(details)
        : runError('PROVIDER_ERROR', 'Every candidate provider in the plan failed', details);
    return { status: 'failed', error, usage, attempts };
  }
  const calibration = calibrationSample(run, outcome);
  return completed(run, shapeResult(run.task, output), output, usage, attempts, calibration ? { calibration } : {});
}

/** The settlement of a run executed in page chunks: the merged answer, or why a chunk could not be answered. */
export function chunkedSettlement(run: RunRecord, outcome: ChunkedOutcome): Settlement {
  const { attempts } = outcome;
  const usage = usageOf(run, outcome);
  if (outcome.status === 'failed') {
    const details = { page: outcome.page, attempts: reported(attempts) };
    const error =
      outcome.reason === 'unreadable'
        ? undecodable(details)
        : outcome.reason === 'truncated'
          ? runError('PROVIDER_ERROR', `The answer for page ${outcome.page} does not fit a provider's output limit`, {
              reason: 'truncated',
              ...details,
            })
          : runError('PROVIDER_ERROR', `Every candidate provider failed on page ${outcome.page}`, details);
    return { status: 'failed', error, usage, attempts };
  }
  const { merged } = outcome;
  const output: ProviderOutput = {
    result: merged.result,
    usage: { billableUnits: outcome.billableUnits, costMicros: outcome.costMicros },
    ...(merged.documentText !== undefined ? { documentText: merged.documentText } : {}),
    ...(merged.nativeConfidence !== undefined ? { nativeConfidence: merged.nativeConfidence } : {}),
  };
  const alternatives = Object.keys(merged.alternatives).length;
  if (alternatives > 0) log.info('chunks read different values for some fields', { jobId: run.jobId, alternatives });
  // Text output is stored as its pages (get-run joins the text: runs/run-view.ts viewResult); JSON is coerced to the
  // schema's types as a lone answer is.
  const result = run.task.outputFormat === 'text' ? { pages: merged.result.pages } : shapeResult(run.task, output);
  return completed(run, result, output, usage, attempts, alternatives > 0 ? { alternatives: merged.alternatives } : {});
}

/**
 * A completed settlement: the result, its usage (priced once, by the caller) and its confidence; failed instead when
 * the result is larger than the service can store (output caps keep real answers far below it).
 */
function completed(
  run: Pick<RunRecord, 'jobId' | 'task'>,
  result: Record<string, unknown>,
  output: ProviderOutput,
  usage: RunUsage,
  attempts: Attempt[],
  extra: Pick<Extract<Settlement, { status: 'completed' }>, 'calibration' | 'alternatives'>,
): Settlement {
  const confidence = computeConfidence(run.task.outputFormat === 'json' ? run.task.fields : null, result, output);
  if (resultTooLarge(result)) {
    log.error('result too large to store; failing the run', { jobId: run.jobId });
    const error = runError('INTERNAL_ERROR', 'The result is larger than the service can store');
    return { status: 'failed', error, usage, attempts };
  }
  return { status: 'completed', result, usage, confidence, attempts, ...extra };
}

/** The error of a run whose file no provider could decode (a damaged file whose header passed creation's checks). */
export function undecodable(details: Record<string, unknown> = {}) {
  return runError('CORRUPT_FILE', 'The file cannot be decoded (its data is damaged); upload an intact copy', {
    reason: 'undecodable',
    ...details,
  });
}

/** The words and confidence an answer brought with it, for grounding. */
export function evidenceOf(answer: AnswerEvidence | undefined): AnswerEvidence {
  return {
    ...(answer?.words ? { words: answer.words } : {}),
    ...(answer?.nativeConfidence !== undefined ? { nativeConfidence: answer.nativeConfidence } : {}),
    ...(answer?.valueConfidence !== undefined ? { valueConfidence: answer.valueConfidence } : {}),
  };
}

/** What a run's attempts used: requests, billable units and cost. */
type Used = Pick<RunUsage, 'requests' | 'billableUnits' | 'costMicros'>;

/** What a run used, priced with the margin recorded on it at creation. */
export function usageOf(run: Pick<RunRecord, 'marginPct'>, used: Used): RunUsage {
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

/**
 * What a completed run teaches calibration: the successful language model's actual tokens against the prediction the
 * estimate was made from (the file's facts alone, as at creation). None for a provider billed by the page, an answer
 * whose usage was suspect, or a run that needed more than one request for its answer (a repair, a retry): those
 * say nothing about the prediction of one request. Runs in page chunks teach nothing yet.
 */
export function calibrationSample(run: RunRecord, outcome: AttemptsOutcome): CalibrationSample | undefined {
  const { provider, output } = outcome;
  if (!provider || !output || !outcome.step || outcome.usageSuspect) return undefined;
  const attemptsOfProvider = outcome.attempts.filter((a) => a.provider === provider && a.outcome !== 'skipped');
  if (attemptsOfProvider.length !== 1) return undefined;
  const predicted = predictAttempt(provider, run.file, run.task, outcome.step);
  const { inputTokens, outputTokens } = output.usage;
  if (!predicted?.tokens || !predicted.key || inputTokens === undefined || outputTokens === undefined) return undefined;
  return { key: predicted.key, predicted: predicted.tokens, actual: { input: inputTokens, output: outputTokens } };
}
