/**
 * The local engine's evidence for one page of a packet, from the words it read there (a text layer or OCR; the rows
 * of shared/providers/local/layout.ts): class scores from each schema's cue phrases, the printed page number, the top
 * line as the running header, labelled identifiers, a title that opens a document, a continued table. Pure and
 * general: cues are words any document of a kind prints, never names of particular issuers.
 * Not to undo: a cue counts once per page (a statement's fifty "balance" rows are not fifty votes).
 */
import type { EvidenceWord } from '../fields/types.js';
import { type Row, readingRows } from '../providers/local/layout.js';
import { blankEvidence, IDS_MAX, normaliseHeader, normaliseId, OTHER, type PageEvidence } from './evidence.js';

/** A phrase a document of a kind prints, and how much it says (roughly: bits of evidence). */
type Cue = readonly [phrase: string, weight: number];

/** Cue phrases of the registry's schemas and of `other` (terms, notices). Lower case, matched on word boundaries. */
export const CUES: Readonly<Record<string, readonly Cue[]>> = {
  receipt: [
    ['receipt', 2],
    ['cashier', 2],
    ['thank you', 1.5],
    ['change', 1],
    ['cash', 1],
    ['tender', 1.5],
    ['served by', 1.5],
    ['store', 0.5],
    ['subtotal', 0.5],
    ['visa', 0.5],
    ['card', 0.5],
    ['total', 0.5],
  ],
  invoice: [
    ['invoice', 3],
    ['bill to', 2],
    ['ship to', 1],
    ['due date', 2],
    ['payment terms', 1.5],
    ['amount due', 1.5],
    ['total due', 1.5],
    ['unit price', 1.5],
    ['remit', 1.5],
    ['purchase order', 1],
    ['iban', 1],
    ['qty', 0.5],
  ],
  bank_statement: [
    ['statement', 2],
    ['opening balance', 2.5],
    ['closing balance', 2.5],
    ['brought forward', 2],
    ['carried forward', 2],
    ['statement period', 2],
    ['account number', 1.5],
    ['sort code', 1.5],
    ['withdrawals', 1.5],
    ['deposits', 1],
    ['available balance', 1],
    ['balance', 1],
    ['debit', 0.5],
    ['credit', 0.5],
  ],
  id_document: [
    ['passport', 3],
    ['identity card', 3],
    ['driving licence', 3],
    ['driver license', 3],
    ['date of birth', 2],
    ['nationality', 2],
    ['place of birth', 1.5],
    ['surname', 1.5],
    ['given names', 1.5],
    ['date of expiry', 1],
    ['sex', 1],
  ],
  business_card: [
    ['mobile', 1],
    ['tel', 0.5],
    ['www', 1],
  ],
  [OTHER]: [
    ['terms and conditions', 3],
    ['governing law', 2],
    ['liability', 1.5],
    ['warranty', 1],
    ['privacy', 1],
    ['hereby', 1],
    ['agreement', 1],
    ['shall', 1],
  ],
};

/** What `other` scores before any cue: a page with no cue at all is more likely nothing than anything. */
const OTHER_BASE = 1;
/** Titles that open a document (a row of its own near the top). */
const TITLE =
  /^(?:tax |commercial |sales )?(?:invoice|receipt|(?:bank )?statement(?: of account)?|credit note|passport|identity card|driving licen[cs]e)\b/i;
/** `Page 2 of 5`, `Page 2/5`, `Page 2`, `p. 2 of 5`. */
const PAGE_NUMBER = /\b(?:page|p\.)\s*(\d{1,5})(?:\s*(?:of|\/)\s*(\d{1,5}))?\b/i;
/** Labels whose value identifies a document or its holder (never a line's reference: those change inside one). */
// On one line, and the value holds a digit: the title `INVOICE` above `Invoice Number: …` is no value of its own.
const ID_LABEL =
  /\b(?:invoice|receipt|statement|account|acct|customer|policy|member|document|passport)[ \t]*(?:no\.?|number|num|nr\.?|#|id)?[ \t]*[:#.]?[ \t]*((?=[A-Z0-9\-/]*\d)[A-Z0-9][A-Z0-9\-/]{2,30})/gi;
/** A holder's name: a label (any case), then capitalised words (a name as printed, not a lower-case phrase). */
const NAME_LABEL = /\b(?:account holder|customer name|name|employee|bill to)[ \t]*:[ \t]*/gi;
const NAME = /^\p{Lu}[\p{L}'-]+(?: \p{Lu}[\p{L}.'-]*){1,3}/u;
/** Words that say the page carries on from the one before. */
const CONTINUED = /\b(?:continued|cont'?d|brought forward|balance forward)\b/i;
/** A row that reads as a table row: several cells, one of them a number. */
const NUMBER_CELL = /^[-+(]?[$€£]?\d[\d,.]*\)?$/;

function escapeRegExp(phrase: string): string {
  return phrase.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const CUE_PATTERNS = new Map(
  Object.entries(CUES).map(([id, cues]) => [
    id,
    cues.map(([phrase, weight]) => [new RegExp(`\\b${escapeRegExp(phrase)}\\b`, 'i'), weight] as const),
  ]),
);

/** The page's score for each class: 1 − e^(−weight/2) of its cues found, `other` from a base (see OTHER_BASE). */
function classScores(text: string, rows: readonly Row[], schemaIds: readonly string[]): Record<string, number> {
  const scores: Record<string, number> = {};
  for (const id of [...schemaIds, OTHER]) {
    let weight = id === OTHER ? OTHER_BASE : 0;
    for (const [pattern, w] of CUE_PATTERNS.get(id) ?? []) if (pattern.test(text)) weight += w;
    if (id === 'business_card') weight += businessCardWeight(text, rows);
    scores[id] = Math.round((1 - Math.exp(-weight / 2)) * 1000) / 1000;
  }
  return scores;
}

/** A business card is a few short lines with an e-mail address or a phone number. */
function businessCardWeight(text: string, rows: readonly Row[]): number {
  if (rows.length > 10) return 0;
  let weight = 0;
  if (/[\w.+-]+@[\w-]+\.[\w.-]+/.test(text)) weight += 2;
  if (/\+?\d[\d ()-]{7,}\d/.test(text)) weight += 1;
  return weight;
}

/** The first row with three or more letters: a logo's stray mark is no header. */
function headerRow(rows: readonly Row[]): Row | undefined {
  return rows.find((r) => (r.text.match(/\p{L}/gu)?.length ?? 0) >= 3);
}

function isTableRow(row: Row | undefined): boolean {
  if (!row) return false;
  const cells = row.text.split(/ {2,}/);
  return cells.length >= 3 && cells.some((c) => NUMBER_CELL.test(c.trim()));
}

/** Labelled document numbers (holding a digit) and holders' names, normalised, each at most IDS_MAX. */
function identifiers(text: string): { ids: string[]; names: string[] } {
  const ids = [...text.matchAll(ID_LABEL)].map((m) => normaliseId(m[1] ?? ''));
  const names: string[] = [];
  for (const m of text.matchAll(NAME_LABEL)) {
    const name = NAME.exec(text.slice(m.index + m[0].length).split('\n')[0] ?? '')?.[0];
    if (name) names.push(normaliseId(name));
  }
  const keep = (values: string[]) => [...new Set(values.filter((v) => v.length >= 3))].slice(0, IDS_MAX);
  return { ids: keep(ids), names: keep(names) };
}

/**
 * The evidence of page `page` (1-based in the packet) from the words read on it; `schemaIds` are the classes to
 * score (`other` is always scored). A page with no legible words is blank.
 */
export function localPageEvidence(
  page: number,
  words: readonly EvidenceWord[],
  schemaIds: readonly string[],
): PageEvidence {
  const rows = readingRows(words);
  const text = rows.map((r) => r.text).join('\n');
  const legible = text.match(/[\p{L}\p{N}]/gu)?.length ?? 0;
  if (legible < 3 || (/intentionally (?:left )?blank/i.test(text) && rows.length <= 3)) return blankEvidence(page);

  const evidence: PageEvidence = {
    page,
    classes: classScores(text, rows, schemaIds),
    blank: false,
    ...identifiers(text),
    startCue: rows.slice(0, 3).some((r) => TITLE.test(r.text.trim()) && r.text.trim().split(/\s+/).length <= 4),
    continued:
      CONTINUED.test(
        rows
          .slice(0, 5)
          .map((r) => r.text)
          .join('\n'),
      ) || isTableRow(rows[0]),
  };
  const number = PAGE_NUMBER.exec(text);
  const k = Number(number?.[1]);
  const n = number?.[2] === undefined ? undefined : Number(number[2]);
  if (k >= 1 && (n === undefined || n >= k)) evidence.pageNumber = n === undefined ? { k } : { k, n };
  const top = headerRow(rows);
  const header = top ? normaliseHeader(top.text.replace(PAGE_NUMBER, ' ')) : '';
  if (header.length > 0) evidence.header = header;
  return evidence;
}
