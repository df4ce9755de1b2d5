/**
 * The worker's core for one run: idempotent by jobId. A run that is already final is left alone (duplicate delivery);
 * otherwise the file is read, the plan executed with fallback, and the outcome settled with the money in one
 * transaction (store/ledger.ts). Unexpected infrastructure errors are rethrown so SQS redelivers — except on the last
 * allowed delivery, where the run is failed and refunded instead of being left queued behind a DLQ. A run larger than
 * one invocation fans out (./fanout.ts): its message sends its groups' messages, each group runs here, and the
 * delivery that counts the last group done merges and settles the run as this file settles any run. A claimed run is
 * held for a short lease its heartbeat renews (./heartbeat.ts); a delivery that loses it stops and settles nothing.
 */
import { uploadsBucketName } from '../aws/s3-urls.js';
import { config } from '../config.js';
import { runError } from '../errors.js';
import { afterItemSettled } from '../evaluations/finish.js';
import { dispatchAfterSettle } from '../events/dispatch.js';
import type { PageWords } from '../fields/types.js';
import { METRIC_NAMES } from '../infra/metrics.js';
import { log } from '../log.js';
import { pdfTextLayer } from '../media/index.js';
import { emitMetrics } from '../metrics.js';
import { calibrationKeysFor, predictAttempt } from '../planning/estimate.js';
import type { CalibrationSample } from '../pricing/calibration.js';
import { priceFor } from '../pricing/pricing.js';
import type { ProviderInput } from '../providers/types.js';
import { loadFactors, recordSamples } from '../store/calibration.js';
import { eventRecord } from '../store/events.js';
import { PROCESSING_FAILED, type Settlement, settleRun } from '../store/ledger.js';
import { resultTooLarge } from '../store/run-results.js';
import { claimRun, getRun, type RunRecord, releaseClaim, renewClaim } from '../store/runs.js';
import { type AttemptsOutcome, tryCandidates } from './attempts.js';
import { tryChain } from './chain.js';
import { chunkedSettlement, executeChunked } from './chunked.js';
import { held, keepLease, newLease, type ProcessOptions, type ProcessResult, SETTLE_RESERVE_MS } from './delivery.js';
import { fanOut, fansOut, processGroup } from './fanout.js';
import { type AnswerEvidence, earlyEvidenceOcr, withEvidence } from './grounding.js';
import { type Heartbeat, LeaseLost } from './heartbeat.js';
import { pooledAdapters } from './pool.js';
import { objectUnavailable, readObject } from './read-object.js';
import { computeConfidence, shapeResult } from './result.js';
import { chooseSteps, type TextLayer, textLayerOf } from './steps.js';

export type { Held, ProcessOptions, ProcessResult } from './delivery.js';

export async function processRun(jobId: string, options: ProcessOptions): Promise<ProcessResult> {
  const run = await getRun(jobId);
  if (!run) {
    log.warn('message for unknown run; dropping', { jobId });
    return 'missing';
  }
  if (run.status !== 'queued') return 'already-final';
  if (options.group !== undefined) {
    const started = Date.now();
    const outcome = await processGroup(run, options.group, {
      ...options,
      deadlineMs: started + options.remainingMs - SETTLE_RESERVE_MS,
      settle: (settling, settlement) => settle(settling, settlement, options),
    });
    if (outcome !== 'finish') return outcome;
    // Every group is counted: merge from the checkpoints and settle, as the run's own (re)delivery would.
    const { group: _, ...rest } = options;
    return processRun(jobId, { ...rest, remainingMs: options.remainingMs - (Date.now() - started) });
  }

  const lease = newLease(options);
  let heartbeat: Heartbeat | undefined;
  // What the plan came to, once it has: a failure after it (writing the settlement) still reports its attempts.
  let planned: Settlement | undefined;
  try {
    if (fansOut(run)) return await fanOut(run, options.receiveCount);
    const claim = await claimRun(jobId, {
      leaseUntil: lease.until,
      holder: lease.holder,
      receiveCount: options.receiveCount,
    });
    if (claim.state === 'final') return 'already-final';
    if (claim.state === 'leased') return held(claim.lease);
    heartbeat = keepLease(lease, options, (until) => renewClaim(jobId, lease.holder, until), { jobId });
    const settlement = await runPlan(run, { ...options, adapters: heartbeat.guard(options.adapters) });
    planned = settlement;
    // Nothing is renewed once the run may be settled; a lease lost meanwhile settles nothing (its new holder does).
    await heartbeat.stop();
    heartbeat.check();
    return await settle(run, settlement, options);
  } catch (error: unknown) {
    await heartbeat?.stop();
    if (error instanceof LeaseLost || heartbeat?.lost) {
      log.warn('lost the lease on the run while working; its new holder finishes it', { jobId });
      return 'lease-lost';
    }
    if (options.receiveCount < options.maxReceiveCount) {
      // Giving up: the redelivery (or a duplicate) may take the run at once rather than wait out this lease.
      if (heartbeat) await releaseClaim(jobId, lease.holder);
      throw error;
    }
    log.error('run failed on its last delivery; failing and refunding', { jobId, error });
    const settledAt = new Date();
    const settled = await settleRun(
      run,
      { status: 'failed', error: PROCESSING_FAILED, attempts: planned?.attempts ?? [] },
      settledAt,
    );
    if (settled) await dispatchAfterSettle(eventRecord(run, 'failed', settledAt.toISOString()));
    return settled ? 'settled' : 'already-final';
  }
}

/** Writes the run's settlement (once: settleRun's conditions), then its metrics, calibration and event. */
async function settle(run: RunRecord, settlement: Settlement, options: ProcessOptions): Promise<ProcessResult> {
  options.fault?.('before-settle', run);
  const settledAt = new Date();
  const settled = await settleRun(run, settlement, settledAt);
  if (settled) emitRunMetrics(run, settlement);
  options.fault?.('after-settle', run);
  // The settlement wrote the run's event; hand it on now (a crash before this leaves it to the sweep). Learning
  // runs beside it, so a receiver does not wait for the calibration write.
  if (settled) {
    await Promise.all([
      dispatchAfterSettle(eventRecord(run, settlement.status, settledAt.toISOString())),
      learn(run, settlement),
      // The last run of an evaluation writes its report (a crash before it leaves it to a read or the reconciler).
      ...(run.evaluation ? [afterItemSettled(run.evaluation.evaluationId)] : []),
    ]);
  }
  return settled ? 'settled' : 'already-final';
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

/**
 * Metrics for the dashboard and alarms: failed attempts and fallbacks per provider, failed runs, run latency. An
 * attempt failed by the client's own file (unreadable_file) says nothing about the provider: it is not counted, so a
 * batch of damaged uploads does not trip the provider alarm.
 */
function emitRunMetrics(run: RunRecord, settlement: Settlement): void {
  const attempts = settlement.attempts.filter((a) => a.failure !== 'unreadable_file');
  emitMetrics([
    ...attempts
      .filter((a) => a.outcome === 'failed')
      .map((a) => ({
        name: METRIC_NAMES.providerAttemptFailed,
        value: 1,
        unit: 'Count' as const,
        provider: a.provider,
      })),
    // A fallback: the plan moved on from a failed or skipped candidate to a later one.
    ...attempts
      .slice(0, -1)
      .filter((a) => a.outcome !== 'succeeded')
      .map((a) => ({ name: METRIC_NAMES.providerFallback, value: 1, unit: 'Count' as const, provider: a.provider })),
    ...(settlement.status === 'failed' ? [{ name: METRIC_NAMES.runFailed, value: 1, unit: 'Count' as const }] : []),
    // The service's share of the run (price over estimate), summed by operators; 0 for most runs.
    ...(settlement.status === 'completed'
      ? [
          {
            name: METRIC_NAMES.absorbedMicros,
            value: Math.max(0, settlement.usage.priceMicros - run.estimateMicros),
            unit: 'None' as const,
          },
        ]
      : []),
    { name: METRIC_NAMES.runLatencyMs, value: Date.now() - Date.parse(run.createdAt), unit: 'Milliseconds' },
  ]);
}

/** Where a provider that reads S3 itself (Textract's asynchronous API) finds the run's bytes: the version inspected. */
function objectSource(run: RunRecord): NonNullable<ProviderInput['source']> {
  const versionId = run.objectIdentity?.versionId;
  return { bucket: uploadsBucketName(), key: run.objectKey, ...(versionId !== undefined ? { versionId } : {}) };
}

/** Reads the file and executes the plan; returns the outcome to settle (nothing is written here). */
async function runPlan(run: RunRecord, options: ProcessOptions): Promise<Settlement> {
  const bytes = await readObject(run);
  if (typeof bytes === 'string') return objectUnavailable(bytes);

  // The spend limit: the run may cost up to this multiple of its estimate; the client pays at most the estimate (and
  // so at most maxCostUsd, which the estimate is within), the service absorbs the rest (docs/pricing.md).
  const capMicros = Math.floor(run.estimateMicros * config.maxOverrunRatio);
  // The run's tenant's calibration, as its estimate was made (a fallback's bound is predicted with it).
  const providers = [...run.candidates, ...(run.ocrCandidates ?? [])];
  const factors = await loadFactors(run.tenantId, calibrationKeysFor(providers, run.task));
  const deadlineMs = Date.now() + options.remainingMs - SETTLE_RESERVE_MS;
  if (run.chunkPages !== undefined && run.file.kind === 'pdf') {
    const outcome = await executeChunked({
      run,
      bytes,
      adapters: pooledAdapters(options.adapters, config.providerConcurrency),
      capMicros,
      deadlineMs,
      concurrency: config.runConcurrency,
      factors,
      afterChunk: () => options.fault?.('after-chunk', run),
    });
    const merged = outcome.status === 'completed' ? outcome.merged : undefined;
    return withEvidence(run, bytes, chunkedSettlement(run, outcome), evidenceOf(merged), deadlineMs);
  }
  // An image a language model answers comes back without words: its evidence OCR runs beside the model's call, and
  // is awaited before the run settles either way (no OCR is left running into the next invocation).
  const early = run.ocrCandidates ? undefined : earlyEvidenceOcr(run, bytes, run.candidates, deadlineMs);
  try {
    return await runSinglePass(run, bytes, { options, capMicros, factors, deadlineMs, early });
  } finally {
    await early;
  }
}

/** The plan of a run that is not chunked: a single pass (or OCR then analyze), its result shaped and grounded. */
async function runSinglePass(
  run: RunRecord,
  bytes: Uint8Array,
  context: {
    options: ProcessOptions;
    capMicros: number;
    factors: Awaited<ReturnType<typeof loadFactors>>;
    deadlineMs: number;
    early: Promise<PageWords[]> | undefined;
  },
): Promise<Settlement> {
  const { options, capMicros, factors, deadlineMs } = context;
  // A PDF whose pages have a text layer needs no OCR: language models get its text (`analyze`, far fewer tokens than
  // the pages as images) as the estimate priced it (./steps.ts); in a single-step plan OCR providers and `local`
  // still run their own pass (local reads the layer itself), and a chained plan skips its OCR step when the layer
  // reads every page.
  const layer = run.file.kind === 'pdf' ? await readTextLayer(bytes, deadlineMs) : undefined;
  const step = {
    adapters: options.adapters,
    input: { bytes, facts: run.file, task: run.task, source: objectSource(run) },
    capMicros,
    deadlineMs,
    factors,
    ...(run.marginPct !== undefined ? { marginPct: run.marginPct } : {}),
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
  const usage = {
    requests: outcome.requests,
    billableUnits: outcome.output?.usage.billableUnits ?? 0,
    costMicros: outcome.costMicros,
    priceMicros: priceFor(outcome.costMicros, run.marginPct),
  };
  const calibration = sampleOf(run, outcome);

  if (!outcome.output) {
    const attempts = outcome.attempts.map((a) => ({
      provider: a.provider,
      step: a.step,
      outcome: a.outcome,
      failure: a.failure,
    }));
    // No provider failed: the service could not decode the file for any of them (a damaged image or PDF whose header
    // passed the checks at creation, which read only headers). Retrying cannot help: CORRUPT_FILE, as at creation.
    const failed = outcome.attempts.filter((a) => a.outcome === 'failed');
    if (failed.length > 0 && failed.every((a) => a.failure === 'unreadable_file')) {
      return {
        status: 'failed',
        error: runError('CORRUPT_FILE', 'The file cannot be decoded (its data is damaged); upload an intact copy', {
          reason: 'undecodable',
          attempts,
        }),
        usage,
        attempts: outcome.attempts,
      };
    }
    return {
      status: 'failed',
      error: runError('PROVIDER_ERROR', 'Every candidate provider in the plan failed', { attempts }),
      usage,
      attempts: outcome.attempts,
    };
  }

  const result = shapeResult(run.task, outcome.output);
  // Over ~3 MB serialized a result cannot be stored, even in parts (run-results.ts); output caps keep real answers far
  // below that. Failed here, and not thrown, so SQS does not redeliver (and pay the providers) again and again.
  if (resultTooLarge(result)) {
    log.error('result too large to store; failing the run', { jobId: run.jobId });
    return {
      status: 'failed',
      error: runError('INTERNAL_ERROR', 'The result is larger than the service can store'),
      usage,
      attempts: outcome.attempts,
    };
  }
  const settlement: Settlement = {
    status: 'completed',
    result,
    usage,
    confidence: computeConfidence(run.task.outputFormat === 'json' ? run.task.fields : null, result, outcome.output),
    attempts: outcome.attempts,
    ...(calibration ? { calibration } : {}),
  };
  const evidence = { ...evidenceOf(outcome.output), ...(context.early ? { earlyOcr: context.early } : {}) };
  return withEvidence(run, bytes, settlement, evidence, deadlineMs);
}

/** The words and confidence an answer brought with it, for grounding. */
function evidenceOf(answer: AnswerEvidence | undefined): AnswerEvidence {
  return {
    ...(answer?.words ? { words: answer.words } : {}),
    ...(answer?.nativeConfidence !== undefined ? { nativeConfidence: answer.nativeConfidence } : {}),
    ...(answer?.valueConfidence !== undefined ? { valueConfidence: answer.valueConfidence } : {}),
  };
}

/**
 * What a completed run teaches calibration: the successful language model's actual tokens against the prediction the
 * estimate was made from (the file's facts alone, as at creation). None for a provider billed by the page, an answer
 * whose usage was suspect, or a run that needed more than one request for its answer (a repair, a retry): those
 * say nothing about the prediction of one request. Runs in page chunks teach nothing yet.
 */
function sampleOf(run: RunRecord, outcome: AttemptsOutcome): CalibrationSample | undefined {
  const provider = outcome.provider;
  const output = outcome.output;
  if (!provider || !output || !outcome.step || outcome.usageSuspect) return undefined;
  const attemptsOfProvider = outcome.attempts.filter((a) => a.provider === provider && a.outcome !== 'skipped');
  if (attemptsOfProvider.length !== 1) return undefined;
  const predicted = predictAttempt(provider, run.file, run.task, outcome.step);
  const { inputTokens, outputTokens } = output.usage;
  if (!predicted?.tokens || !predicted.key || inputTokens === undefined || outputTokens === undefined) return undefined;
  return {
    key: predicted.key,
    predicted: predicted.tokens,
    actual: { input: inputTokens, output: outputTokens },
  };
}

/** Feeds a settled run's sample to calibration; never fails the run (its money is already settled). */
async function learn(run: RunRecord, settlement: Settlement): Promise<void> {
  if (settlement.status !== 'completed' || !settlement.calibration) return;
  try {
    await recordSamples(run.tenantId, [settlement.calibration]);
  } catch (error: unknown) {
    log.warn('could not record a calibration sample', { jobId: run.jobId, error });
  }
}
