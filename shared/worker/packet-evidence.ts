/**
 * Per-page evidence of a packet run (contract-v1.2 §3), the pages in parallel (SERVICE_PROVIDER_CONCURRENCY at once), each
 * kept as a checkpoint (./packet-checkpoints.ts) so that a redelivery asks no page again. When the plan's first
 * candidate is a language model, each page is one compact classification call through the normal attempt loop
 * (./attempts.ts: fallback, spend limit, every attempt recorded); otherwise the local engine decides from the page's
 * words (shared/packets/local-evidence.ts), which costs nothing: its text layer's, or for a page without one (a scan)
 * the words the local OCR engine reads on it (./evidence.ts `ocrPagesForEvidence`).
 * Not to undo: evidence never fails a run. A page whose model answer is missing or malformed gets the local engine's
 * evidence from its text layer (logged), so every page has evidence and the split stays a partition.
 */
import { BatchParked } from '../batching/parked.js';
import type { EvidenceWord, PageWords } from '../fields/types.js';
import { log } from '../log.js';
import { hasTextLayer, type PdfFile } from '../media/index.js';
import type { Micros } from '../money.js';
import { CLASSIFICATION_TASK } from '../packets/estimate.js';
import { HEADER_MAX_CHARS, IDS_MAX, OTHER, type PageEvidence, pageEvidence } from '../packets/evidence.js';
import { localPageEvidence } from '../packets/local-evidence.js';
import { chunkFacts } from '../planning/chunks.js';
import type { FactorsFor } from '../pricing/calibration.js';
import { catalog } from '../providers/catalog.js';
import { readingRows } from '../providers/local/layout.js';
import type { ProviderAdapter } from '../providers/types.js';
import type { RunRecord } from '../store/runs.js';
import type { ProviderId, TaskSpec } from '../task.js';
import { tryCandidates } from './attempts.js';
import { addTo, noTotals, type Totals } from './checkpoints.js';
import { ocrPagesForEvidence } from './evidence.js';
import type { PacketCheckpoints } from './packet-checkpoints.js';
import type { PacketSpend } from './packet-spend.js';
import { chooseSteps, textLayerOf } from './steps.js';

/** The marker a classification request's prompt starts with (fakes in test/ and bench/ recognise it by it). */
export const CLASSIFY_MARKER = 'PACKET PAGE CLASSIFICATION.';

export interface PacketEvidenceInput {
  run: RunRecord;
  /** The packet's file, and the same opened; `pdf` null for an image (`schemaId: "auto"`: one page, no text layer). */
  bytes: Uint8Array;
  pdf: PdfFile | null;
  schemaIds: readonly string[];
  adapters: Partial<Record<ProviderId, ProviderAdapter>>;
  capMicros: Micros;
  spend: PacketSpend;
  /** What earlier deliveries kept, and where this one keeps each page's evidence. */
  saved: PacketCheckpoints;
  deadlineMs: number;
  factors?: FactorsFor;
}

/** The page's words from its text layer (empty for a page without one, and for an image). */
export function pageWords(pdf: PdfFile | null, page: number): { text: string; words: EvidenceWord[] } {
  return pdf ? pdf.textAndWords(page - 1) : { text: '', words: [] };
}

/** The file's pages: a PDF's, or an image's one. */
function pageCount(pdf: PdfFile | null): number {
  return pdf ? pdf.pageCount : 1;
}

/** Whether this run's pages are classified by a language model (its plan's first candidate is one). */
export function classifiesWithModel(run: Pick<RunRecord, 'candidates'>): boolean {
  const first = run.candidates[0];
  return first !== undefined && catalog[first]?.role === 'language_model';
}

/** The per-page task a model is given: the priced classification task, told the classes and the answer's shape. */
export function classificationTask(schemaIds: readonly string[]): TaskSpec {
  const classes = [...schemaIds, OTHER].join(', ');
  return {
    ...CLASSIFICATION_TASK,
    prompt:
      `${CLASSIFY_MARKER} Classes: ${classes}. Answer {"pages": [one object for this page]} with keys: page (number), ` +
      'classes (score 0-1 per class), blank (boolean), pageNumber ({k, n} when the page prints "Page k of n"), ' +
      `header (the top line, lower case, at most ${HEADER_MAX_CHARS} characters), ids (document numbers printed ` +
      `with a label, at most ${IDS_MAX}), names (people the page is about), startCue (a title opens the page), ` +
      'continued (the page carries on from the previous one).',
  };
}

/**
 * Every page's evidence (1-based, in order) and what it cost, this delivery's and earlier ones'; and the words local
 * OCR read on the scanned pages it classified (`scanned`, by page: their fields are grounded on them). Throws what
 * stopped the run (the crash seam, a failed checkpoint write) once every page that was asked is kept.
 */
export async function gatherEvidence(
  input: PacketEvidenceInput,
): Promise<{ pages: PageEvidence[]; used: Totals; scanned: Map<number, PageWords> }> {
  const { saved } = input;
  const used = noTotals();
  const model = classifiesWithModel(input.run);
  const task = classificationTask(input.schemaIds);
  const scanned = model ? new Map<number, PageWords>() : await scannedPageWords(input);
  const local = (page: number) => localPageEvidence(page, pageWords(input.pdf, page).words, input.schemaIds);
  const numbers = Array.from({ length: pageCount(input.pdf) }, (_, i) => i + 1);
  // A batch run's page whose call parked (./batch-lane.ts) leaves the others to park theirs in the same delivery.
  let parked: BatchParked | undefined;
  const pages = await Promise.all(
    numbers.map(async (page): Promise<PageEvidence | undefined> => {
      const kept = saved.savedEvidence(page);
      if (kept) {
        addTo(used, kept.used);
        return kept.evidence;
      }
      if (!model) {
        const read = scanned.get(page);
        const evidence = read ? localPageEvidence(page, read.words, input.schemaIds) : local(page);
        saved.keepEvidence(evidence, 'local', noTotals());
        return evidence;
      }
      const answer = await saved
        .step(1, () => classifyPage(input, task, page))
        .catch((error: unknown) => {
          if (!(error instanceof BatchParked)) throw error;
          parked ??= error;
          return undefined;
        });
      if (!answer) return undefined;
      addTo(used, answer.used);
      if (answer.evidence && answer.provider) {
        saved.keepEvidence(answer.evidence, answer.provider, answer.used);
        return answer.evidence;
      }
      log.warn('no usable classification for a packet page; the local engine decides it', {
        jobId: input.run.jobId,
        page,
      });
      const evidence = local(page);
      saved.keepEvidence(evidence, 'local', answer.used);
      return evidence;
    }),
  );
  await saved.finish();
  if (parked) throw parked;
  return { pages: pages as PageEvidence[], used, scanned };
}

/**
 * The words the local OCR engine reads on the pages without a text layer (`hasTextLayer`: a scan, a photo) that no
 * earlier delivery classified, by page; a page keeps its text layer when OCR reads no more there. Never throws: a
 * page OCR could not read in time keeps what its text layer has (logged by `ocrPagesForEvidence`).
 */
async function scannedPageWords(input: PacketEvidenceInput): Promise<Map<number, PageWords>> {
  const pages = Array.from({ length: pageCount(input.pdf) }, (_, i) => i + 1).filter(
    (page) => input.saved.savedEvidence(page) === undefined && !hasTextLayer(pageWords(input.pdf, page).text),
  );
  const read = await ocrPagesForEvidence({
    bytes: input.bytes,
    facts: input.run.file,
    pages,
    deadlineMs: input.deadlineMs,
    maxPages: pages.length,
  });
  const chars = (words: readonly EvidenceWord[]) => words.reduce((sum, w) => sum + w.text.length, 0);
  return new Map(
    read.filter((p) => chars(p.words) > chars(pageWords(input.pdf, p.page).words)).map((p) => [p.page, p] as const),
  );
}

/**
 * The page's text as a reader sees it: its words in rows, top to bottom, cells of a row on one line with wide gaps
 * kept (mupdf's own text puts each table cell on a line of its own, so a continued table reads as a list of words).
 * The text layer as it is when it has no words (nothing to lay out).
 */
export function pageLayoutText(pdf: PdfFile | null, page: number): string {
  const { text, words } = pageWords(pdf, page);
  return words.length === 0
    ? text
    : readingRows(words)
        .map((row) => row.text)
        .join('\n');
}

/** One page given to the plan's candidates with the classification task; its evidence, or null when none parsed. */
async function classifyPage(input: PacketEvidenceInput, task: TaskSpec, page: number) {
  const { outcome, used } = await callOnPages(input, { first: page, last: page }, task, [
    pageLayoutText(input.pdf, page),
  ]);
  const evidence = outcome.output ? parseAnswer(outcome.output.result, page) : null;
  return { evidence, provider: outcome.provider, used };
}

/** What a call on the packet's pages needs: the run, its file, its adapters, and the packet's one spend limit. */
export type PagesCall = Omit<PacketEvidenceInput, 'schemaIds' | 'saved'>;

/**
 * Some of the packet's pages (one page to classify, a document to extract) given to the run's candidates with `task`,
 * within the packet's one spend limit and priced at the run's margin; the outcome and what it used.
 */
export async function callOnPages(
  call: PagesCall,
  range: { first: number; last: number },
  task: TaskSpec,
  texts: readonly string[],
) {
  const { run, pdf } = call;
  // An image is given whole, as it is (no text layer to read).
  const layer = pdf ? textLayerOf([...texts]) : undefined;
  const facts = pdf ? chunkFacts(run.file, range) : run.file;
  const steps = chooseSteps(facts, run.candidates, layer);
  const outcome = await tryCandidates({
    candidates: run.candidates,
    adapters: call.adapters,
    input: {
      bytes: pdf ? pdf.extractPages(range.first - 1, range.last - 1) : call.bytes,
      facts,
      task,
      ...(pdf ? { pages: range } : {}),
      ...(layer?.text !== undefined ? { documentText: layer.text } : {}),
    },
    capMicros: call.capMicros,
    deadlineMs: call.deadlineMs,
    shared: call.spend.call(),
    stepFor: steps.stepFor,
    cheaperStep: steps.cheaperStep,
    ...(call.factors ? { factors: call.factors } : {}),
    ...(run.marginPct !== undefined ? { marginPct: run.marginPct } : {}),
    ...(run.priority ? { priority: run.priority } : {}),
  });
  const used: Totals = {
    attempts: outcome.attempts,
    requests: outcome.requests,
    costMicros: outcome.costMicros,
    billableUnits: outcome.output?.usage.billableUnits ?? 0,
  };
  return { outcome, used };
}

/** The page's evidence from a model's answer (`{pages: [...]}` or the object itself), or null when it does not parse. */
export function parseAnswer(result: Record<string, unknown>, page: number): PageEvidence | null {
  const list = Array.isArray(result.pages) ? result.pages : [result];
  const entry =
    list.find((e) => typeof e === 'object' && e !== null && (e as { page?: unknown }).page === page) ?? list[0];
  if (typeof entry !== 'object' || entry === null) return null;
  const withDefaults = {
    blank: false,
    ids: [],
    names: [],
    startCue: false,
    continued: false,
    classes: {},
    ...entry,
    page,
  };
  const parsed = pageEvidence.safeParse(withDefaults);
  return parsed.success ? parsed.data : null;
}
