/**
 * Boundaries and classes of a packet's documents from its pages' evidence, as ONE deterministic sequence decision
 * (a Viterbi pass over "starts a document of class c" / "continues the document before"), never page by page.
 * Each page's class scores weigh every state; the link between a page and the one before weighs the choice to
 * continue: page-number sequences, a shared running header, a shared identifier and a continued table hold pages
 * together; `Page 1`, a change of header or identifier, a blank separator split them. A document keeps one class, so
 * a lone page that looks unlike its neighbours is not cut out of a statement.
 * Not to undo: every page is in exactly one document, in order (the result is a partition of 1..n, whatever the
 * evidence); blank pages never start a document of their own, they belong to the document before them (the first
 * document when they open the packet). docs/decisions.md#packets-boundaries-by-evidence.
 */
import { OTHER, type PageEvidence } from './evidence.js';

/** One document of a packet: its pages and class. */
export interface PacketDocument {
  /** 0-based, in page order. */
  index: number;
  /** An allowed schema id, or `other`. */
  schemaId: string;
  pages: { first: number; last: number };
  /** How sure the pass is of the class: the class's share of its pages' (geometric mean) scores, in [0, 1]. */
  classification: { confidence: number };
}

/**
 * The weights of the link between a page and the page before it, in log-odds of "continues" (0: no opinion).
 * Exported for the tests and the bench; changed only with the bench's packets phase run before and after.
 */
export const LINK = {
  /** `Page k` right after `Page k-1` (of the same n). */
  pageSequence: 5,
  /** `Page 1`: a document starts here, whatever else the page shares with the one before. */
  pageOne: -6,
  /**
   * `Page 2` right after a page that prints no number: a first page is often left unnumbered (a letterhead, an
   * invoice's first sheet), so this is the sequence going on, a little less sure than a printed `Page 1`.
   */
  secondAfterUnnumbered: 4,
  /** `Page k` (k > 1) not following its predecessor's number: still someone's later page. */
  laterPage: 1.5,
  /** The page before said it was the last (`Page n of n`) and this one has no number. */
  afterLastPage: -2,
  /** The same running header or issuer at the top. */
  sameHeader: 1.5,
  /** A different header at the top (a new issuer, a new kind of document). */
  otherHeader: -2.5,
  /** A document number (invoice, account, statement, receipt) printed on both pages. */
  sharedId: 3,
  /** Both pages print document numbers and none is shared: a new document. */
  otherIds: -3,
  /** Without numbers to compare: the same person on both pages. */
  sharedName: 1,
  /** Without numbers to compare: only other people on this page. */
  otherNames: -1.5,
  /** A document title opens a page whose header is not the previous page's. */
  startCue: -1.5,
  /** A continued table, `continued`, a balance brought forward. */
  continued: 2.5,
  /** One or more blank pages stand between the two. */
  blankBetween: -3,
} as const;

/**
 * Log-odds added to "continues" inside a document of a class that is nearly always one page (a receipt, a card; an
 * identity document's second page is usually its back): two receipts of one shop without numbers are two receipts.
 */
export const CONTINUE_BIAS: Readonly<Record<string, number>> = { receipt: -2, business_card: -2, id_document: -1 };

/** Floor of a page's class probability: one page's evidence never rules a class out entirely. */
const CLASS_FLOOR = 0.02;
/**
 * How much an `other` page (terms, a cover sheet, a page of notes) counts towards a schema's document: documents
 * carry such pages, while a page of a schema's own is rarely part of an `other` document.
 */
const OTHER_IN_DOCUMENT = 0.5;
/** Two headers are the same when this share of their words is shared (Jaccard): a date or a page's own title moves. */
const SAME_HEADER = 0.6;

function words(header: string): Set<string> {
  return new Set(header.split(' ').filter((w) => w.length > 0));
}

/** Jaccard similarity of two normalised headers' words. */
export function headerSimilarity(a: string, b: string): number {
  const wa = words(a);
  const wb = words(b);
  if (wa.size === 0 || wb.size === 0) return 0;
  let shared = 0;
  for (const w of wa) if (wb.has(w)) shared += 1;
  return shared / (wa.size + wb.size - shared);
}

/** How many pages back a page's document numbers are compared when the page before printed none. */
export const IDS_LOOKBACK = 3;

/**
 * Log-odds that `page` continues the document of `before` (the last non-blank page before it), from the two pages'
 * evidence; `blankBetween` when blank pages separate them. `earlierIds`: the document numbers of the nearest page
 * before that printed any (within IDS_LOOKBACK), compared when `before` printed none: a terms page between two
 * invoices of one vendor must not join them.
 */
export function linkScore(
  before: PageEvidence,
  page: PageEvidence,
  blankBetween: boolean,
  earlierIds: readonly string[] = before.ids,
): number {
  let score = 0;
  const k = page.pageNumber?.k;
  const prior = before.pageNumber;
  if (k === 1) score += LINK.pageOne;
  else if (k !== undefined) {
    const follows =
      prior !== undefined &&
      prior.k === k - 1 &&
      (prior.n === undefined || page.pageNumber?.n === undefined || prior.n === page.pageNumber.n);
    if (follows) score += LINK.pageSequence;
    else score += k === 2 && prior === undefined ? LINK.secondAfterUnnumbered : LINK.laterPage;
  } else if (prior?.n !== undefined && prior.k >= prior.n) score += LINK.afterLastPage;

  let sameHeader = false;
  // A continued table's page opens with table rows, not with its issuer: its top line is no header to compare.
  if (before.header && page.header && !page.continued) {
    sameHeader = headerSimilarity(before.header, page.header) >= SAME_HEADER;
    score += sameHeader ? LINK.sameHeader : LINK.otherHeader;
  }
  // A number decides over a name: two invoices to one customer are two invoices.
  const ids = before.ids.length > 0 ? before.ids : earlierIds;
  if (ids.length > 0 && page.ids.length > 0) {
    score += page.ids.some((id) => ids.includes(id)) ? LINK.sharedId : LINK.otherIds;
  } else if (before.names.length > 0 && page.names.length > 0) {
    score += page.names.some((name) => before.names.includes(name)) ? LINK.sharedName : LINK.otherNames;
  }
  if (page.startCue && !sameHeader) score += LINK.startCue;
  if (page.continued) score += LINK.continued;
  if (blankBetween) score += LINK.blankBetween;
  return score;
}

/** log σ(x), stable for large |x|. */
function logSigmoid(x: number): number {
  return x >= 0 ? -Math.log1p(Math.exp(-x)) : x - Math.log1p(Math.exp(x));
}

/**
 * Each allowed class's weight for a page (`other` last): its scores (0 when absent) normalised and floored, and a
 * schema never below half of `other` (OTHER_IN_DOCUMENT).
 */
function classProbabilities(evidence: PageEvidence, classes: readonly string[]): number[] {
  const raw = classes.map((c) => Math.max(0, evidence.classes[c] ?? 0));
  const total = raw.reduce((s, x) => s + x, 0);
  const probabilities = total > 0 ? raw.map((x) => x / total) : raw.map(() => 1 / classes.length);
  const floored = probabilities.map((p) => Math.max(CLASS_FLOOR, p));
  const sum = floored.reduce((s, x) => s + x, 0);
  const normalised = floored.map((p) => p / sum);
  const other = normalised[classes.length - 1] as number;
  return normalised.map((p, i) => (i === classes.length - 1 ? p : Math.max(p, OTHER_IN_DOCUMENT * other)));
}

/** The allowed classes in a fixed order: the schema ids as given (duplicates dropped), then `other`. */
export function packetClasses(schemaIds: readonly string[]): string[] {
  return [...new Set(schemaIds.filter((id) => id !== OTHER)), OTHER];
}

/**
 * Splits a packet into documents and classes them. `pages` is every page's evidence in page order (pages 1..n, each
 * once); `schemaIds` the schemas a document may be (`other` is always allowed). Deterministic: the same evidence
 * gives the same documents. Throws on evidence that is not exactly pages 1..n (a caller's bug, not a user's).
 */
export function splitPacket(pages: readonly PageEvidence[], schemaIds: readonly string[]): PacketDocument[] {
  pages.forEach((p, i) => {
    if (p.page !== i + 1) throw new Error(`packet evidence out of order: position ${i + 1} holds page ${p.page}`);
  });
  if (pages.length === 0) return [];
  const classes = packetClasses(schemaIds);
  const content = pages.filter((p) => !p.blank);
  if (content.length === 0) {
    return [{ index: 0, schemaId: OTHER, pages: { first: 1, last: pages.length }, classification: { confidence: 1 } }];
  }

  const C = classes.length;
  const emissions = content.map((p) => classProbabilities(p, classes).map(Math.log));
  // best[t][c * 2 + s]: the best score of pages 0..t with page t in class c, s = 0 starting a document, 1 continuing.
  const best: Float64Array[] = [];
  const from: Int32Array[] = [];
  for (let t = 0; t < content.length; t++) {
    const row = new Float64Array(C * 2).fill(Number.NEGATIVE_INFINITY);
    const back = new Int32Array(C * 2).fill(-1);
    const e = emissions[t] as number[];
    if (t === 0) {
      for (let c = 0; c < C; c++) row[c * 2] = e[c] as number;
    } else {
      const prev = best[t - 1] as Float64Array;
      const page = content[t] as PageEvidence;
      const before = content[t - 1] as PageEvidence;
      const earlier = content.slice(Math.max(0, t - IDS_LOOKBACK), t).findLast((p) => p.ids.length > 0);
      const link = linkScore(before, page, page.page - before.page > 1, earlier?.ids ?? []);
      // The best previous state of any class, for a start (first index wins ties: deterministic).
      let argmax = 0;
      for (let s = 1; s < C * 2; s++) if ((prev[s] as number) > (prev[argmax] as number)) argmax = s;
      for (let c = 0; c < C; c++) {
        const ec = e[c] as number;
        const odds = link + (CONTINUE_BIAS[classes[c] as string] ?? 0);
        row[c * 2] = (prev[argmax] as number) + logSigmoid(-odds) + ec;
        back[c * 2] = argmax;
        const [a, b] = [prev[c * 2] as number, prev[c * 2 + 1] as number];
        row[c * 2 + 1] = Math.max(a, b) + logSigmoid(odds) + ec;
        back[c * 2 + 1] = a >= b ? c * 2 : c * 2 + 1;
      }
    }
    best.push(row);
    from.push(back);
  }

  // Trace back the states, then read the documents off them.
  const last = best[content.length - 1] as Float64Array;
  let state = 0;
  for (let s = 1; s < C * 2; s++) if ((last[s] as number) > (last[state] as number)) state = s;
  const states = new Array<number>(content.length);
  for (let t = content.length - 1; t >= 0; t--) {
    states[t] = state;
    state = (from[t] as Int32Array)[state] as number;
  }

  const documents: PacketDocument[] = [];
  let startAt = 0;
  for (let t = 1; t <= content.length; t++) {
    if (t < content.length && (states[t] as number) % 2 === 1) continue;
    const c = Math.floor((states[startAt] as number) / 2);
    documents.push({
      index: documents.length,
      schemaId: classes[c] as string,
      // Pages are filled in below, blank pages included.
      pages: { first: (content[startAt] as PageEvidence).page, last: (content[t - 1] as PageEvidence).page },
      classification: { confidence: confidenceOf(content.slice(startAt, t), classes, c) },
    });
    startAt = t;
  }
  // Blank pages join the document before them; leading ones the first document; so the documents tile 1..n.
  documents.forEach((doc, i) => {
    const next = documents[i + 1];
    doc.pages = { first: i === 0 ? 1 : doc.pages.first, last: next ? next.pages.first - 1 : pages.length };
  });
  return documents;
}

/** The evidence a class score stands for: the cue weight w of its 1 − e^(−w/2) (./local-evidence.ts). */
function weightOf(score: number): number {
  return -2 * Math.log1p(-Math.min(Math.max(0, score), MAX_SCORE));
}
/** Scores are kept to three decimals: 0.999 is as sure as a score says (a weight of about 14). */
const MAX_SCORE = 0.999;

/**
 * A page's probability of each class for the confidence of a document of class `c`: each class's evidence weighed
 * against the others' as log-odds (p ∝ e^w), so one strong cue set against weak ones is sure while equal scores split
 * (a model's scores are read the same way: 0.95 against 0.05 is sure). For a
 * schema's document an `other` page still counts towards the schema (OTHER_IN_DOCUMENT, as in the split), renormalised.
 */
function pagePosterior(evidence: PageEvidence, classes: readonly string[], c: number): number[] {
  const weights = classes.map((k) => weightOf(evidence.classes[k] ?? 0));
  const top = Math.max(...weights);
  const odds = weights.map((w) => Math.exp(w - top));
  const total = odds.reduce((sum, x) => sum + x, 0);
  const p = odds.map((x) => x / total);
  const other = classes.length - 1;
  if (c === other) return p;
  const raised = p.map((x, k) => (k === other ? x : Math.max(x, OTHER_IN_DOCUMENT * (p[other] as number))));
  const sum = raised.reduce((s, x) => s + x, 0);
  return raised.map((x) => x / sum);
}

/**
 * The confidence of class `c` for a document of these (non-blank) pages: c's share of the per-class geometric means of
 * the pages' probabilities (pagePosterior), so a document whose pages agree is sure and a mixed one is not. Not to
 * undo: this is not the split's emission weights (classProbabilities), whose floors for joining pages into documents
 * capped every local-engine document below the review threshold.
 */
function confidenceOf(pages: readonly PageEvidence[], classes: readonly string[], c: number): number {
  const posteriors = pages.map((p) => pagePosterior(p, classes, c));
  const means = classes.map((_, k) =>
    Math.exp(posteriors.reduce((s, p) => s + Math.log(Math.max(p[k] as number, 1e-12)), 0) / posteriors.length),
  );
  const total = means.reduce((s, x) => s + x, 0);
  return Math.round(((means[c] as number) / total) * 1000) / 1000;
}

/** Each class's share of the per-class geometric means of the pages' emission weights: how `auto` picks its class. */
function classShares(emissions: number[][]): number[] {
  const C = emissions[0]?.length ?? 1;
  const means = Array.from({ length: C }, (_, k) =>
    Math.exp(emissions.reduce((s, e) => s + (e[k] as number), 0) / emissions.length),
  );
  const total = means.reduce((s, x) => s + x, 0);
  return means.map((m) => m / total);
}

/**
 * `schemaId: "auto"`: the class of a whole file that is one document, among the allowed schemas only (the run must
 * extract with one; `other` is never chosen), with its confidence measured as a split document's, `other` included:
 * a file that looks like none of the schemas is classed, with a low confidence that asks for a review. A file without
 * a legible page gets the first schema at confidence 0.
 */
export function classifyFile(
  pages: readonly PageEvidence[],
  schemaIds: readonly string[],
): { schemaId: string; confidence: number } {
  const classes = packetClasses(schemaIds);
  const content = pages.filter((p) => !p.blank);
  if (content.length === 0) return { schemaId: classes[0] as string, confidence: 0 };
  const shares = classShares(content.map((p) => classProbabilities(p, classes).map(Math.log)));
  let best = 0;
  for (let c = 1; c < classes.length - 1; c++) if ((shares[c] as number) > (shares[best] as number)) best = c;
  return { schemaId: classes[best] as string, confidence: confidenceOf(content, classes, best) };
}
