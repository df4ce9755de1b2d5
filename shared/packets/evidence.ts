/**
 * What one page of a packet says about itself (contract-v1.2 §3): how likely it is each allowed schema (or `other`),
 * and the signals that it starts or continues a document. The local engine derives it from the page's words
 * (./local-evidence.ts); a language model answers it directly, so it stays small: a handful of scores, a short header,
 * a few identifiers. The boundary pass (./boundaries.ts) reads nothing else.
 * Not to undo: evidence describes ONE page and never decides a boundary; comparing pages is the pass's job.
 */
import * as z from '../zod.js';

/** The class of a page that is none of the allowed schemas. */
export const OTHER = 'other';

/** Longest running header kept (characters): enough to tell two issuers apart, small in a model's answer. */
export const HEADER_MAX_CHARS = 120;
/** Most document identifiers kept per page. */
export const IDS_MAX = 8;

const fraction = () => z.number().check(z.minimum(0), z.maximum(1));
const count = () => z.number().check(z.int(), z.minimum(1), z.maximum(100_000));

export const pageEvidence = z.strictObject({
  /** 1-based page of the packet. */
  page: count(),
  /** Score in [0, 1] per allowed schema id and `other` (need not sum to 1; missing classes score 0). */
  classes: z.record(z.string().check(z.minLength(1), z.maxLength(64)), fraction()),
  /** Nothing legible on the page (a separator sheet, the back of a scan, "intentionally left blank"). */
  blank: z.boolean(),
  /** A printed page number: `Page k of n` (`n` absent for a bare `Page k`). */
  pageNumber: z.optional(z.strictObject({ k: count(), n: z.optional(count()) })),
  /**
   * The page's top lines, normalised (lower case, digits dropped, spaces collapsed): the issuer or running header.
   * Two pages of one statement share it; a new issuer changes it.
   */
  header: z.optional(z.string().check(z.maxLength(HEADER_MAX_CHARS))),
  /** Document numbers printed with a label (invoice, statement, account, receipt, passport number), normalised. */
  ids: z.array(z.string().check(z.minLength(1), z.maxLength(64))).check(z.maxLength(IDS_MAX)),
  /** People the page is about or addressed to (an account holder, a customer), normalised like ids. */
  names: z.array(z.string().check(z.minLength(1), z.maxLength(64))).check(z.maxLength(IDS_MAX)),
  /** A document title opens the page (`INVOICE`, `STATEMENT OF ACCOUNT`, `RECEIPT`): weak sign of a start. */
  startCue: z.boolean(),
  /** The page carries on from the one before: a table without its heading, `continued`, a balance brought forward. */
  continued: z.boolean(),
});
export type PageEvidence = z.infer<typeof pageEvidence>;

/** Evidence of a page that shows nothing: no class preference, no signals. */
export function blankEvidence(page: number): PageEvidence {
  return { page, classes: {}, blank: true, ids: [], names: [], startCue: false, continued: false };
}

/** Lower case, digits and punctuation dropped, spaces collapsed: a header as pages of one document repeat it. */
export function normaliseHeader(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^\p{L}\s]/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, HEADER_MAX_CHARS);
}

/** Upper case letters and digits only: `INV-1042`, `inv 1042` and `INV1042` are one identifier (names alike). */
export function normaliseId(text: string): string {
  return text
    .normalize('NFKC')
    .toUpperCase()
    .replace(/[^\p{L}\p{N}]/gu, '')
    .slice(0, 64);
}
