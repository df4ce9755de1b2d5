/**
 * A packet run (contract-v1.2 §3): `split` gathers every page's evidence in parallel (./packet-evidence.ts), divides
 * the pages into documents in one deterministic pass (shared/packets `splitPacket`), then extracts every document
 * that is not `other` with its schema, in parallel, grounded on the PACKET's page numbers; `auto` classifies the whole
 * file (a PDF, or an image as one page) from the same evidence and runs it as an ordinary run with the chosen schema
 * (./single-pass.ts), recording the class on the run.
 * Not to undo:
 * - Each page's evidence and each extracted document is a checkpoint (./packet-checkpoints.ts): a redelivery after a
 *   crash asks the providers only for what none covers, and counts what the checkpoints used in its one settlement.
 * - Every call is an attempt of the ONE run: one spend limit across the pages and documents (./packet-spend.ts), one
 *   settlement (./settle.ts), so money is exactly-once as for any run. The price is what was done.
 * - The result is checked to be a partition of the pages before it is returned (`checkPartition`); a document whose
 *   extraction every candidate failed fails the run (nothing is charged for a failed run).
 */

import { BatchParked } from '../batching/parked.js';
import { config } from '../config.js';
import type { Attempt } from '../contract.js';
import { runError } from '../errors.js';
import { groundFields } from '../fields/ground.js';
import type { PageWords } from '../fields/types.js';
import { log } from '../log.js';
import { Deadline, PdfFile } from '../media/index.js';
import {
  checkPartition,
  classifyFile,
  documentReview,
  OTHER,
  type PacketDocument,
  type PacketDocumentResult,
  type PageEvidence,
  packetReview,
  splitPacket,
} from '../packets/index.js';
import { buildTask, registry } from '../registry/registry.js';
import type { Settlement } from '../store/ledger.js';
import type { RunRecord } from '../store/runs.js';
import { ProviderFailure, type TaskSpec } from '../task.js';
import type { Totals } from './checkpoints.js';
import { ocrPagesForEvidence } from './evidence.js';
import { shapeResult, undecodable, usageOf } from './outcome.js';
import { PacketCheckpoints, type SavedOutput } from './packet-checkpoints.js';
import { callOnPages, gatherEvidence, pageWords } from './packet-evidence.js';
import { PacketSpend } from './packet-spend.js';
import { pagesWithBoxes, storePagePreviews } from './page-previews.js';
import { runSinglePass, type SinglePassInput } from './single-pass.js';

/**
 * Executes a packet run from its checkpoints; returns the settlement to write (nothing is written here but the
 * checkpoints). `afterWrite` runs after each checkpoint is written: a throw stops the run, which then throws it.
 */
export async function runPacket(
  run: RunRecord,
  bytes: Uint8Array,
  input: SinglePassInput,
  afterWrite?: () => void | Promise<void>,
): Promise<Settlement> {
  const packet = run.packet;
  if (!packet) throw new Error('runPacket: not a packet run');
  // An image (only `auto` takes one) is one page without a text layer: nothing to open.
  let pdf: PdfFile | null = null;
  if (run.file.kind === 'pdf') {
    try {
      pdf = await PdfFile.open(bytes, new Deadline(new AbortController().signal, input.deadlineMs, 'worker'));
    } catch (error: unknown) {
      if (error instanceof ProviderFailure && error.kind === 'unreadable_file')
        return { status: 'failed', error: undecodable(), attempts: [] };
      throw error;
    }
  }
  try {
    const saved = await PacketCheckpoints.load(run, input.deadlineMs, afterWrite);
    const spend = new PacketSpend(saved.spentBefore);
    const evidence = await gatherEvidence({ run, bytes, pdf, spend, saved, schemaIds: packet.schemaIds, ...input });
    if (packet.mode === 'auto' || pdf === null) return await runAuto(run, bytes, input, evidence, saved, spend);
    const context = { run, bytes, pdf, spend, saved, input, evidence };
    const documents = splitPacket(evidence.pages, packet.schemaIds);
    const extracted = await Promise.all(documents.map((doc) => extractDocument(context, doc)));
    await saved.finish();
    // A batch run's documents all park in one delivery (./batch-lane.ts); their pages' evidence is kept.
    const parked = extracted.find((e) => e.kind === 'parked');
    if (parked?.kind === 'parked') throw parked.error;
    return await packetSettlement(run, bytes, documents, extracted, evidence.used, input.deadlineMs);
  } finally {
    pdf?.close();
  }
}

/**
 * `schemaId: "auto"`: the whole file classed from its pages' evidence, then run as an ordinary run with the chosen
 * schema (./single-pass.ts) within what the classification left of the spend limit; the settlement records the class
 * and the schema's task, so the run shows which schema answered (`classification`, `expectedFields`).
 */
async function runAuto(
  run: RunRecord,
  bytes: Uint8Array,
  input: SinglePassInput,
  evidence: { pages: PageEvidence[]; used: Totals },
  saved: PacketCheckpoints,
  spend: PacketSpend,
): Promise<Settlement> {
  // The classification is kept; an extraction that could not finish in time is the next delivery's.
  saved.checkTime(run.file.pages);
  const chosen = classifyFile(evidence.pages, run.packet?.schemaIds ?? []);
  log.info('auto: classified the file', { jobId: run.jobId, ...chosen });
  const task = schemaTask(run, chosen.schemaId);
  const single = await runSinglePass({ ...run, task, schemaId: chosen.schemaId }, bytes, {
    ...input,
    capMicros: Math.max(0, input.capMicros - spend.spent),
  });
  const settlement = withUsed(run, single, evidence.used);
  if (settlement.status !== 'completed') return settlement;
  const review = documentReview(chosen.confidence, settlement.review, config.reviewConfidence);
  return { ...settlement, review, classified: { ...chosen, task } };
}

interface Context {
  run: RunRecord;
  bytes: Uint8Array;
  pdf: PdfFile;
  /** Every page's evidence, and the words local OCR read on the scanned pages this delivery classified. */
  evidence: { pages: readonly PageEvidence[]; scanned: Map<number, PageWords> };
  spend: PacketSpend;
  saved: PacketCheckpoints;
  input: SinglePassInput;
}

type Extraction =
  | { kind: 'other' }
  /** Not asked: the run stopped first (its `finish` throws why). */
  | { kind: 'stopped' }
  /** Waiting in the batch lane: the delivery parks the run once every document's call has. */
  | { kind: 'parked'; error: BatchParked }
  | { kind: 'failed'; used: Totals }
  | {
      kind: 'answered';
      used: Totals;
      /** The aggregate of the document's fields (docs/confidence.md), as a run's confidence is. */
      confidence: number;
      document: Omit<PacketDocumentResult, 'index' | 'pages' | 'schemaId' | 'classification'> & { words: PageWords[] };
    };

/** The task of a document of `schemaId`: the run's prompt with that registry schema. */
function schemaTask(run: RunRecord, schemaId: string): TaskSpec {
  return buildTask({ prompt: run.prompt, outputFormat: 'json', schemaId, schema: registry.get(schemaId) });
}

/**
 * One document given to the plan's candidates with its schema: its pages as a small PDF, with their text; or its
 * answer as an earlier delivery kept it.
 */
async function extractDocument(context: Context, doc: PacketDocument): Promise<Extraction> {
  if (doc.schemaId === OTHER) return { kind: 'other' };
  const { run, pdf, input, saved } = context;
  const range = doc.pages;
  const task = schemaTask(run, doc.schemaId);
  const read: { text: string; words: PageWords['words']; page: number }[] = [];
  for (let page = range.first; page <= range.last; page++) read.push({ ...pageWords(pdf, page), page });
  const kept = saved.savedDocument(range);
  let parked: BatchParked | undefined;
  const asked = kept
    ? { output: kept.output, used: kept.used }
    : await saved
        .step(range.last - range.first + 1, async () => {
          const { outcome, used } = await callOnPages(
            { ...context, ...input },
            range,
            task,
            read.map((r) => r.text),
          );
          if (outcome.output && outcome.provider) saved.keepDocument(range, outcome.provider, outcome.output, used);
          return { output: outcome.output as SavedOutput | null, used };
        })
        .catch((error: unknown) => {
          if (!(error instanceof BatchParked)) throw error;
          parked = error;
          return undefined;
        });
  if (parked) return { kind: 'parked', error: parked };
  if (!asked) return { kind: 'stopped' };
  const { output, used } = asked;
  if (!output) return { kind: 'failed', used };
  const result = shapeResult(task, output);
  const words = await documentWords(context, read);
  const grounded = groundFields({
    result,
    fieldSpecs: task.fields,
    words,
    ...(output.nativeConfidence !== undefined ? { nativeConfidence: output.nativeConfidence } : {}),
    ...(output.valueConfidence !== undefined ? { valueConfidence: output.valueConfidence } : {}),
    reviewThreshold: config.reviewConfidence,
    now: new Date(),
  });
  const review = documentReview(doc.classification.confidence, grounded.review, config.reviewConfidence);
  const document = { result, fields: grounded.fields, review, words };
  return { kind: 'answered', used, confidence: grounded.confidence, document };
}

/**
 * The words a document's fields are grounded on, on the PACKET's page numbers: a page's text layer, or for a scanned
 * page the words local OCR read on it: those it was classified from, else read now (a model classified it from its
 * image, or an earlier delivery did), within the deadline; a blank page is not read. Never throws (evidence never
 * fails a run).
 */
async function documentWords(
  context: Context,
  read: readonly { text: string; words: PageWords['words']; page: number }[],
): Promise<PageWords[]> {
  const words = new Map<number, PageWords>();
  const unread: number[] = [];
  for (const r of read) {
    const scanned = context.evidence.scanned.get(r.page);
    if (scanned) words.set(r.page, scanned);
    else if (r.words.length > 0) words.set(r.page, { page: r.page, source: 'text-layer', words: r.words });
    // A page its evidence calls blank (a separator sheet) has nothing to ground on: not read.
    else if (context.evidence.pages[r.page - 1]?.blank === false) unread.push(r.page);
  }
  if (unread.length > 0) {
    const facts = context.run.file;
    const { bytes, input } = context;
    const ocr = await ocrPagesForEvidence({
      bytes,
      facts,
      pages: unread,
      deadlineMs: input.deadlineMs,
      maxPages: unread.length,
    });
    for (const page of ocr) words.set(page.page, page);
  }
  return [...words.values()].sort((a, b) => a.page - b.page);
}

/** The split run's settlement: `{documents}` in page order, or the failure of a document no candidate answered. */
async function packetSettlement(
  run: RunRecord,
  bytes: Uint8Array,
  documents: readonly PacketDocument[],
  extracted: readonly Extraction[],
  evidence: Totals,
  deadlineMs: number,
): Promise<Settlement> {
  const used = [evidence, ...extracted.flatMap((e) => ('used' in e ? [e.used] : []))];
  const attempts: Attempt[] = used.flatMap((u) => u.attempts);
  const usage = usageOf(run, sumUsed(used));
  const failed = extracted.findIndex((e) => e.kind === 'failed');
  if (failed >= 0) {
    const doc = documents[failed] as PacketDocument;
    const reported = attempts.map((a) => ({
      provider: a.provider,
      step: a.step,
      outcome: a.outcome,
      failure: a.failure,
    }));
    const error = runError(
      'PROVIDER_ERROR',
      `Every candidate provider failed on document ${doc.index} (pages ${doc.pages.first}-${doc.pages.last})`,
      { page: doc.pages.first, attempts: reported },
    );
    return { status: 'failed', error, usage, attempts };
  }
  const results: PacketDocumentResult[] = documents.map((doc, i) => {
    const e = extracted[i] as Extraction;
    const base = { index: doc.index, schemaId: doc.schemaId, pages: doc.pages, classification: doc.classification };
    if (e.kind !== 'answered')
      return { ...base, review: documentReview(doc.classification.confidence, undefined, config.reviewConfidence) };
    const { words: _, ...document } = e.document;
    return { ...base, ...document };
  });
  const broken = checkPartition(results, run.file.pages);
  if (broken !== null) throw new Error(`packet split is not a partition: ${broken}`);
  const boxed = results.flatMap((d) => (d.fields ? pagesWithBoxes(d.fields) : []));
  await storePagePreviews({ run, bytes, pages: boxed, deadlineMs: Math.min(deadlineMs, Date.now() + 5_000) });
  // The run is as sure as its least sure document: of its class, and of its fields when it was extracted.
  const confidences = documents.map((doc, i) => {
    const e = extracted[i] as Extraction;
    return Math.min(doc.classification.confidence, e.kind === 'answered' ? e.confidence : 1);
  });
  return {
    status: 'completed',
    result: { documents: results },
    usage,
    confidence: Math.min(...confidences),
    attempts,
    review: packetReview(results),
  };
}

/** An `auto` run's single pass, with the classification's attempts and cost counted in. */
function withUsed(run: RunRecord, settlement: Settlement, evidence: Totals): Settlement {
  const attempts = [...evidence.attempts, ...settlement.attempts];
  if (!settlement.usage) return { ...settlement, attempts };
  return { ...settlement, attempts, usage: usageOf(run, sumUsed([settlement.usage, evidence])) };
}

/** What some calls used together. */
function sumUsed(used: readonly Omit<Totals, 'attempts'>[]): Omit<Totals, 'attempts'> {
  const sum = (f: (u: Omit<Totals, 'attempts'>) => number) => used.reduce((s, u) => s + f(u), 0);
  return {
    requests: sum((u) => u.requests),
    billableUnits: sum((u) => u.billableUnits),
    costMicros: sum((u) => u.costMicros),
  };
}
