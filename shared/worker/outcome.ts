/**
 * What a run's execution comes to: the settlement to write (./settle.ts writes it), from a single pass's attempts or
 * a chunked run's merged chunks, and the evidence its answer brought for grounding; the usage every path prices with
 * the run's margin (a packet's too, ./packet-run.ts), and what a completed run teaches calibration. Pure.
 * The answer is shaped as the contract promises (`shapeResult`: a schema's exact field names, values coerced to their
 * types, missing or uncoercible values null; text as `{text}`) with its confidence in [0, 1] (`computeConfidence`,
 * docs/confidence.md: without a schema the provider's own, 0.5 when it has none; with one 0.5 x native + 0.3 x
 * coverage + 0.2 x the share of values found verbatim in the document text).
 * Not to undo: a run that cannot be stored (a result over ~3 MB, run-results.ts) or whose file no provider could
 * decode is failed here, not thrown, so SQS does not redeliver it (and pay the providers) again and again.
 */
import type { Attempt } from '../contract.js';
import { runError } from '../errors.js';
import { DEFAULT_NATIVE } from '../fields/confidence.js';
import { log } from '../log.js';
import { predictAttempt } from '../planning/estimate.js';
import type { CalibrationSample } from '../pricing/calibration.js';
import { priceFor } from '../pricing/pricing.js';
import { coerce } from '../providers/result-validation.js';
import type { ProviderOutput } from '../providers/types.js';
import type { Settlement } from '../store/ledger.js';
import { resultTooLarge } from '../store/run-results.js';
import type { RunRecord, RunUsage } from '../store/runs.js';
import type { FieldSpec, TaskSpec } from '../task.js';
import type { AttemptsOutcome } from './attempts.js';
import type { ChunkedOutcome } from './chunked.js';
import type { AnswerEvidence } from './grounding.js';

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
    // An answer cut off at its output limit is never accepted (contract-v1.1 §2); the run says so, as a chunk's does.
    const error =
      failed.length > 0 && failed.every((a) => a.failure === 'unreadable_file')
        ? undecodable(details)
        : outcome.truncated
          ? runError('PROVIDER_ERROR', "The answer does not fit a provider's output limit", {
              reason: 'truncated',
              ...details,
            })
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

/**
 * Shapes the result the contract promises for the task, as it is stored. A text result is stored as its pages, as a
 * chunked run's is (get-run joins the text, contract-v1.1 §2: runs/run-view.ts viewResult); one read in one pass is
 * one page's, since a PDF of more pages runs in page chunks for text (planning/chunks.ts `pagesPerChunk`).
 */
export function shapeResult(task: TaskSpec, output: ProviderOutput): Record<string, unknown> {
  if (task.outputFormat === 'text') {
    const text = typeof output.result.text === 'string' ? output.result.text : (output.documentText ?? '');
    return { pages: [{ page: 1, text }] };
  }
  if (task.fields === null) return output.result;
  const shaped: Record<string, unknown> = {};
  for (const field of task.fields) shaped[field.name] = coerce(output.result[field.name], field.type);
  return shaped;
}

function normalise(text: string): string {
  return text.toLowerCase().replace(/[\s,$€£]+/g, '');
}

function grounded(value: unknown, documentText: string): boolean {
  if (typeof value === 'number') {
    const doc = normalise(documentText);
    return doc.includes(String(value)) || doc.includes(value.toFixed(2));
  }
  if (typeof value === 'string') return normalise(documentText).includes(normalise(value));
  return false;
}

/** The envelope's confidence, rounded to 3 decimals. */
export function computeConfidence(
  fields: FieldSpec[] | null,
  result: Record<string, unknown>,
  output: ProviderOutput,
): number {
  const native = clamp(output.nativeConfidence ?? DEFAULT_NATIVE);
  if (fields === null || fields.length === 0) return round3(native);
  const present = fields.filter((f) => result[f.name] !== null && result[f.name] !== undefined);
  const coverage = present.length / fields.length;
  const checkable = present.filter((f) => typeof result[f.name] === 'string' || typeof result[f.name] === 'number');
  const grounding =
    output.documentText && checkable.length > 0
      ? checkable.filter((f) => grounded(result[f.name], output.documentText ?? '')).length / checkable.length
      : coverage > 0
        ? 0.5
        : 0;
  return round3(clamp(0.5 * native + 0.3 * coverage + 0.2 * grounding));
}

function clamp(x: number): number {
  return Math.min(1, Math.max(0, Number.isFinite(x) ? x : 0));
}
function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
