/**
 * A chained OCR-then-analyze plan's execution (shared/planning/plan.ts `chainedPlan`), for a whole run or one page
 * chunk of it (./chunked.ts passes the chunk's facts as `run.file`).
 */

import { DEFAULT_NATIVE } from '../fields/confidence.js';
import { predictAttempt } from '../planning/estimate.js';
import { primaryPathCost } from '../planning/plan.js';
import { catalog } from '../providers/catalog.js';
import type { ProviderOutput } from '../providers/types.js';
import type { RunRecord } from '../store/runs.js';
import type { ProviderId, Step } from '../task.js';
import { type AttemptsInput, type AttemptsOutcome, tryCandidates } from './attempts.js';

/** The text an OCR step read. */
export function readText(output: ProviderOutput): string {
  const text = output.result.text;
  return output.documentText ?? (typeof text === 'string' ? text : '');
}

/** `spentMicros`: what the run (or chunk) spent before this chain, counted against the cap by both steps. */
export type StepOptions = Omit<AttemptsInput, 'candidates' | 'stepFor' | 'cheaperStep' | 'planned' | 'costBound'>;

/**
 * A chained OCR-then-analyze plan: the first OCR engine that reads the document gives its text to the `analyze`
 * candidates (a full text layer replaces the OCR step). Each step's attempts are predicted as the estimate predicted
 * them (the analysis for the text it is really given), the OCR step keeps the analyze step's primary path in reserve
 * and at least 40 % of the time left, and the analyze step's fallbacks count what the OCR step cost against the cap. A reading with no text is a failed
 * OCR attempt (there is nothing to analyze): the next engine tries, and if none reads anything the run fails with
 * nothing charged. The outcome reads as one: every attempt of both steps, every request and cost, the pages the OCR
 * step processed, and the lower of the two native confidences, each defaulting as a lone provider's would (an
 * answer is no surer than the reading it came from). The OCR step's words are the answer's (evidence).
 */
export async function tryChain(
  run: RunRecord,
  ocrCandidates: readonly ProviderId[],
  options: StepOptions,
  textLayer: string | undefined,
): Promise<AttemptsOutcome> {
  // The analyze step's primary path (and its local reserve) stays available whatever the OCR step does.
  const analyzeReserve =
    primaryPathCost(
      run.candidates,
      (provider) => predictAttempt(provider, run.file, run.task, 'analyze', options.factors)?.costMicros,
    ) ?? 0;
  // The estimate priced each step's first candidate with a cost model (planning/plan.ts chainedPlan).
  const planned = (candidates: readonly ProviderId[], step: Step) => {
    const provider = candidates.find((id) => catalog[id] !== undefined);
    return provider === undefined ? {} : { planned: { provider, step } };
  };
  let ocr: AttemptsOutcome | undefined;
  let text = textLayer;
  if (text === undefined) {
    ocr = await tryCandidates({
      ...options,
      deadlineMs: Date.now() + 0.6 * Math.max(0, options.deadlineMs - Date.now()),
      candidates: ocrCandidates,
      stepFor: () => 'ocr',
      ...planned(ocrCandidates, 'ocr'),
      reservedMicros: analyzeReserve,
      reject: (output) => (readText(output).trim() === '' ? 'the OCR step read no text' : undefined),
    });
    if (!ocr.output) return ocr;
    text = readText(ocr.output);
  }
  // The text the analysis reads (narrowed for the closure below).
  const documentText = text;
  const analyze = await tryCandidates({
    ...options,
    candidates: run.candidates,
    input: { ...options.input, documentText },
    // Bounded for the text it is given (tryCandidates' own bound), as a single pass's analysis is.
    stepFor: () => 'analyze',
    ...planned(run.candidates, 'analyze'),
    spentMicros: (options.spentMicros ?? 0) + (ocr?.costMicros ?? 0),
  });
  const confidences = ocr?.output
    ? [ocr.output.nativeConfidence ?? DEFAULT_NATIVE, analyze.output?.nativeConfidence ?? DEFAULT_NATIVE]
    : [analyze.output?.nativeConfidence].filter((c): c is number => c !== undefined);
  return {
    provider: analyze.provider,
    step: analyze.step ?? null,
    usageSuspect: analyze.usageSuspect === true || ocr?.usageSuspect === true,
    attempts: [...(ocr?.attempts ?? []), ...analyze.attempts],
    requests: (ocr?.requests ?? 0) + analyze.requests,
    costMicros: (ocr?.costMicros ?? 0) + analyze.costMicros,
    truncated: Boolean(ocr?.truncated || analyze.truncated),
    output: analyze.output && {
      ...analyze.output,
      // The words the OCR step read (with their boxes) are the evidence the answer is grounded on.
      ...(ocr?.output?.words !== undefined ? { words: ocr.output.words } : {}),
      documentText: text,
      ...(confidences.length > 0 ? { nativeConfidence: Math.min(...confidences) } : {}),
      usage: {
        ...analyze.output.usage,
        billableUnits: ocr?.output?.usage.billableUnits ?? analyze.output.usage.billableUnits,
      },
    },
  };
}
