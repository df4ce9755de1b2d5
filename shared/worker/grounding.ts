/**
 * Per-field evidence for a completed JSON run (contract-v1.1 §3): gathers the run's words (./evidence.ts), grounds the
 * result on them (shared/fields), and when a value found no support on pages nothing read (a scan only a language
 * model looked at), OCRs those pages locally, one at a time until every value has support — at most
 * EVIDENCE_OCR_MAX_PAGES, within the evidence OCR budget (SERVICE_EVIDENCE_OCR_BUDGET_MS, config.ts). The settlement
 * then carries `fields`, `review` and the run's confidence derived from its fields; a PDF's pages with a boxed field
 * get page images for the dashboard (./page-previews.ts).
 * Not to undo: evidence never fails a run. A grounding that throws leaves the run completed with every field at the
 * run's earlier confidence and `review.needed` (nobody checked the values against the page).
 */
import { config } from '../config.js';
import { groundFields } from '../fields/ground.js';
import type { Fields, Grounded, PageWords } from '../fields/types.js';
import { METRIC_NAMES } from '../infra/metrics.js';
import { log } from '../log.js';
import { emitMetrics } from '../metrics.js';
import { catalog } from '../providers/catalog.js';
import type { Settlement } from '../store/ledger.js';
import type { RunRecord } from '../store/runs.js';
import type { ProviderId } from '../task.js';
import { collectEvidenceWords, ocrPagesForEvidence, pagesWithoutWords } from './evidence.js';
import { pagesWithBoxes, storePagePreviews } from './page-previews.js';

/** Pages a run may OCR for evidence alone, lowest first. */
export const EVIDENCE_OCR_MAX_PAGES = 3;
/** The most time rendering the page images of a PDF's boxed pages may add to a run (./page-previews.ts). */
export const PREVIEWS_BUDGET_MS = 5_000;

type Completed = Extract<Settlement, { status: 'completed' }>;

/** What the answer brought beside its result: the provider's words (pages of the whole file) and its own confidence. */
export interface AnswerEvidence {
  words?: PageWords[];
  nativeConfidence?: number;
  valueConfidence?: Record<string, number>;
  /** The image's evidence OCR, started beside the provider's call (`earlyEvidenceOcr`); used if grounding needs it. */
  earlyOcr?: Promise<PageWords[]>;
}

/**
 * For a JSON run on an image whose first candidate is a language model (whose answer brings no words, so grounding
 * will OCR the image), that OCR started now, to run while the model answers; undefined for any other run. Bounded like
 * any evidence OCR; never rejects. The caller awaits it before the run settles.
 */
export function earlyEvidenceOcr(
  run: RunRecord,
  bytes: Uint8Array,
  candidates: readonly ProviderId[],
  deadlineMs: number,
): Promise<PageWords[]> | undefined {
  if (run.task.outputFormat !== 'json' || run.file.kind !== 'image') return undefined;
  const first = candidates[0];
  if (first === undefined || catalog[first]?.role !== 'language_model') return undefined;
  const ocrDeadlineMs = Math.min(deadlineMs, Date.now() + config.evidenceOcrBudgetMs);
  return ocrPagesForEvidence({ bytes, facts: run.file, pages: [1], maxPages: 1, deadlineMs: ocrDeadlineMs });
}

function byPage(words: readonly PageWords[]): PageWords[] {
  return [...words].sort((a, b) => a.page - b.page);
}

/** Grounds a completed JSON settlement; any other settlement is returned as it is. */
export async function withEvidence(
  run: RunRecord,
  bytes: Uint8Array,
  settlement: Settlement,
  answer: AnswerEvidence,
  deadlineMs: number,
): Promise<Settlement> {
  if (settlement.status !== 'completed' || run.task.outputFormat !== 'json') return settlement;
  try {
    const grounded = await groundRun(run, bytes, settlement, answer, deadlineMs);
    // Before the settlement: a reviewer who opens the run sees its page images at once (a PDF's; never throws).
    await storePagePreviews({
      run,
      bytes,
      pages: pagesWithBoxes(grounded.fields),
      deadlineMs: Math.min(deadlineMs, Date.now() + PREVIEWS_BUDGET_MS),
    });
    return { ...settlement, fields: grounded.fields, review: grounded.review, confidence: grounded.confidence };
  } catch (error: unknown) {
    log.error('grounding failed; the run completes unchecked and needs review', { jobId: run.jobId, error });
    return { ...settlement, ...ungrounded(settlement) };
  }
}

async function groundRun(
  run: RunRecord,
  bytes: Uint8Array,
  settlement: Completed,
  answer: AnswerEvidence,
  deadlineMs: number,
): Promise<Grounded> {
  const words = await collectEvidenceWords({
    bytes,
    facts: run.file,
    output: answer.words ? { words: answer.words } : {},
    deadlineMs,
  });
  // The pages nothing read yet: where a value without support may be (OCR'd below, at most EVIDENCE_OCR_MAX_PAGES).
  const unread = pagesWithoutWords(words, run.file.pages).slice(0, EVIDENCE_OCR_MAX_PAGES);
  const ground = (pages: PageWords[]) =>
    groundFields({
      result: settlement.result,
      fieldSpecs: run.task.fields,
      words: pages,
      ...(answer.nativeConfidence !== undefined ? { nativeConfidence: answer.nativeConfidence } : {}),
      ...(answer.valueConfidence !== undefined ? { valueConfidence: answer.valueConfidence } : {}),
      ...(settlement.alternatives ? { alternatives: settlement.alternatives } : {}),
      reviewThreshold: config.reviewConfidence,
      now: new Date(),
    });
  const first = ground(words);
  if (first.unsupported.length === 0 || unread.length === 0) return first;
  return groundWithOcr(run, bytes, { words, unread, early: answer.earlyOcr }, ground, first, deadlineMs);
}

/**
 * OCRs the unread pages one at a time, lowest first, grounding again after each, and stops as soon as every value has
 * support: a page after the last one holding an unsupported value is never read. (Which unread page holds a value
 * cannot be known before reading it, so an unread page before it is read.) Logs and counts the pages read.
 */
async function groundWithOcr(
  run: RunRecord,
  bytes: Uint8Array,
  known: { words: PageWords[]; unread: readonly number[]; early: Promise<PageWords[]> | undefined },
  ground: (pages: PageWords[]) => Grounded,
  first: Grounded,
  deadlineMs: number,
): Promise<Grounded> {
  const started = Date.now();
  const ocrDeadlineMs = Math.min(deadlineMs, started + config.evidenceOcrBudgetMs);
  const early = (await known.early) ?? [];
  let grounded = first;
  let pages = known.words;
  const read: number[] = [];
  for (const page of known.unread) {
    const done = early.filter((p) => p.page === page);
    const ocr =
      done.length > 0
        ? done
        : await ocrPagesForEvidence({ bytes, facts: run.file, pages: [page], maxPages: 1, deadlineMs: ocrDeadlineMs });
    if (ocr.length === 0) break; // out of time, or the engine failed (logged): the words so far stand
    read.push(page);
    pages = byPage([...pages, ...ocr]);
    grounded = ground(pages);
    if (grounded.unsupported.length === 0) break;
  }
  if (read.length > 0) {
    const beside = read.filter((page) => early.some((p) => p.page === page));
    log.info('OCR for evidence', { jobId: run.jobId, pages: read, besideProvider: beside, ms: Date.now() - started });
    emitMetrics([{ name: METRIC_NAMES.evidenceOcrPages, value: read.length, unit: 'Count' }]);
  }
  return grounded;
}

/** Fields and review when grounding itself failed: nothing was checked against the page. */
function ungrounded(settlement: Completed): { fields: Fields; review: { needed: true; reasons: string[] } } {
  const fields: Fields = {};
  for (const key of Object.keys(settlement.result)) fields[key] = { confidence: settlement.confidence };
  return { fields, review: { needed: true, reasons: ['the values could not be checked against the document'] } };
}
