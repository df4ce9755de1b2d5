/**
 * How right a packet's split is against its truth: boundary precision, recall and F1 (a boundary is a page that starts
 * a document, page 1 excluded: every split has it), and page-class accuracy (a page is right when the document it was
 * put in has the class of the document it truly belongs to). Pure; counts add up over packets (`addScores`).
 */

/** A document as scoring needs it. */
export interface SplitDocument {
  schemaId: string;
  pages: { first: number; last: number };
}

export interface SplitCounts {
  /** Boundaries found that are true. */
  boundariesRight: number;
  /** Boundaries found. */
  boundariesFound: number;
  /** Boundaries in the truth. */
  boundariesTrue: number;
  pagesRight: number;
  pages: number;
  /** Documents found with exactly the true pages and class. */
  documentsExact: number;
  documentsTrue: number;
}

export interface SplitScore extends SplitCounts {
  precision: number;
  recall: number;
  f1: number;
  pageAccuracy: number;
}

function starts(documents: readonly SplitDocument[]): Set<number> {
  return new Set(documents.map((d) => d.pages.first).filter((p) => p > 1));
}

function classByPage(documents: readonly SplitDocument[]): Map<number, string> {
  const byPage = new Map<number, string>();
  for (const d of documents) for (let p = d.pages.first; p <= d.pages.last; p++) byPage.set(p, d.schemaId);
  return byPage;
}

/** The counts of one packet's split against its truth. */
export function countSplit(found: readonly SplitDocument[], truth: readonly SplitDocument[]): SplitCounts {
  const [foundStarts, trueStarts] = [starts(found), starts(truth)];
  const [foundClass, trueClass] = [classByPage(found), classByPage(truth)];
  let pagesRight = 0;
  for (const [page, schemaId] of trueClass) if (foundClass.get(page) === schemaId) pagesRight += 1;
  const key = (d: SplitDocument) => `${d.schemaId} ${d.pages.first}-${d.pages.last}`;
  const foundKeys = new Set(found.map(key));
  return {
    boundariesRight: [...foundStarts].filter((p) => trueStarts.has(p)).length,
    boundariesFound: foundStarts.size,
    boundariesTrue: trueStarts.size,
    pagesRight,
    pages: trueClass.size,
    documentsExact: truth.filter((d) => foundKeys.has(key(d))).length,
    documentsTrue: truth.length,
  };
}

/** Counts summed over packets. */
export function addCounts(a: SplitCounts, b: SplitCounts): SplitCounts {
  return {
    boundariesRight: a.boundariesRight + b.boundariesRight,
    boundariesFound: a.boundariesFound + b.boundariesFound,
    boundariesTrue: a.boundariesTrue + b.boundariesTrue,
    pagesRight: a.pagesRight + b.pagesRight,
    pages: a.pages + b.pages,
    documentsExact: a.documentsExact + b.documentsExact,
    documentsTrue: a.documentsTrue + b.documentsTrue,
  };
}

/** The rates of some counts. With nothing to find, precision and recall are 1 (nothing was missed or invented). */
export function scoreOf(c: SplitCounts): SplitScore {
  const precision = c.boundariesFound === 0 ? (c.boundariesTrue === 0 ? 1 : 0) : c.boundariesRight / c.boundariesFound;
  const recall = c.boundariesTrue === 0 ? (c.boundariesFound === 0 ? 1 : 0) : c.boundariesRight / c.boundariesTrue;
  const f1 = precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
  return { ...c, precision, recall, f1, pageAccuracy: c.pages === 0 ? 1 : c.pagesRight / c.pages };
}
