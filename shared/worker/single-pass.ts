/**
 * A run that is not chunked: the whole file given to the plan's candidates with fallback in one attempt loop (or to
 * its chain: OCR, then a model analyzes the text), its answer shaped and grounded.
 * Not to undo: a PDF whose pages have a text layer needs no OCR: language models get its text (`analyze`, far fewer
 * tokens than the pages as images) as the estimate priced it (./steps.ts); in a single-step plan OCR providers and
 * `local` still run their own pass (local reads the layer itself), and a chained plan skips its OCR step when the layer
 * reads every page.
 */
import { uploadsBucketName } from '../aws/s3-urls.js';
import type { PageWords } from '../fields/types.js';
import { log } from '../log.js';
import { pdfTextLayer } from '../media/index.js';
import type { Micros } from '../money.js';
import type { FactorsFor } from '../pricing/calibration.js';
import type { ProviderAdapter, ProviderInput } from '../providers/types.js';
import type { Settlement } from '../store/ledger.js';
import type { RunRecord } from '../store/runs.js';
import type { ProviderId } from '../task.js';
import { tryCandidates } from './attempts.js';
import { tryChain } from './chain.js';
import { withEvidence } from './grounding.js';
import { evidenceOf, singlePassSettlement } from './outcome.js';
import { chooseSteps, type TextLayer, textLayerOf } from './steps.js';

export interface SinglePassInput {
  adapters: Partial<Record<ProviderId, ProviderAdapter>>;
  capMicros: Micros;
  factors: FactorsFor;
  deadlineMs: number;
  /** The image's evidence OCR started beside the model's call (./grounding.ts `earlyEvidenceOcr`), if any. */
  early?: Promise<PageWords[]> | undefined;
}

/** Executes a run that is not chunked; returns the settlement to write (nothing is written here). */
export async function runSinglePass(run: RunRecord, bytes: Uint8Array, input: SinglePassInput): Promise<Settlement> {
  const { deadlineMs } = input;
  const layer = run.file.kind === 'pdf' ? await readTextLayer(bytes, deadlineMs) : undefined;
  const step = {
    adapters: input.adapters,
    input: { bytes, facts: run.file, task: run.task, source: objectSource(run) },
    capMicros: input.capMicros,
    deadlineMs,
    factors: input.factors,
    ...(run.marginPct !== undefined ? { marginPct: run.marginPct } : {}),
    ...(run.priority ? { priority: run.priority } : {}),
  };
  const steps = chooseSteps(run.file, run.candidates, layer);
  const outcome = run.ocrCandidates
    ? await tryChain(run, run.ocrCandidates, step, layer?.complete ? layer.text : undefined)
    : await tryCandidates({
        ...step,
        candidates: run.candidates,
        input: { ...step.input, ...(steps.documentText !== undefined ? { documentText: steps.documentText } : {}) },
        stepFor: steps.stepFor,
        cheaperStep: steps.cheaperStep,
        ...(steps.planned ? { planned: steps.planned } : {}),
      });
  const settlement = singlePassSettlement(run, outcome);
  const evidence = { ...evidenceOf(outcome.output ?? undefined), ...(input.early ? { earlyOcr: input.early } : {}) };
  return withEvidence(run, bytes, settlement, evidence, deadlineMs);
}

/** The PDF's text layer page by page; undefined when it cannot be read (the providers then read the file themselves). */
async function readTextLayer(bytes: Uint8Array, deadlineMs: number): Promise<TextLayer | undefined> {
  try {
    const controller = new AbortController();
    return textLayerOf(await pdfTextLayer(bytes, { signal: controller.signal, deadlineMs }));
  } catch (error: unknown) {
    // Not fatal: the providers read the file themselves.
    log.warn('could not read the PDF text layer', { error });
    return undefined;
  }
}

/** Where a provider that reads S3 itself (Textract's asynchronous API) finds the run's bytes: the version inspected. */
function objectSource(run: RunRecord): NonNullable<ProviderInput['source']> {
  const versionId = run.objectIdentity?.versionId;
  return { bucket: uploadsBucketName(), key: run.objectKey, ...(versionId !== undefined ? { versionId } : {}) };
}
