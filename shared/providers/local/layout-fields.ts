/**
 * A schema's fields from a document's rows: the fields of a sale (total, subtotal, tax, date, merchant, currency) by
 * the layout rules of receipt-rules.ts, each with its own confidence, every other field (and one those rules do not
 * find) by the text rules of extract-fields.ts. Pure.
 * Not to undo: a field's confidence is an estimate of the chance it is right, from signals that predict it (agreement
 * with what was paid and with subtotal + tax, rival candidates, a label, the reader's confidence, how a name looks):
 * the weights below were set on one half of the dev receipts and checked on the other (both figures, and why they
 * are set by hand rather than fitted: docs/decisions.md#local-field-extraction); check again with bench/receipts.ts.
 */
import { normaliseText } from '../../scoring/values.js';
import type { FieldSpec } from '../../task.js';
import { coerceText } from '../fields.js';
import { conceptOf } from './concepts.js';
import { extractFields } from './extract-fields.js';
import type { Row } from './layout.js';
import { findDate } from './receipt-dates.js';
import { findMerchant } from './receipt-merchant.js';
import { amountsOf, type Finding, findCurrency, findSubtotal, findTax, findTotal } from './receipt-rules.js';
import type { Claim } from './second-read.js';

/** A field's signals as found, weighted: the logistic of intercept + Σ weight × signal. */
type Weights = Record<string, number> & { intercept: number };

export const WEIGHTS: Record<'total' | 'date' | 'vendor', Weights> = {
  // A total is sure when the receipt corroborates it: what was paid, subtotal + tax, the same amount printed twice,
  // and a clear lead over any other labelled amount (`margin`, in rule points, at most 10).
  total: {
    intercept: -3,
    keyword: 0.5,
    agreesPaid: 5,
    agreesSum: 3,
    repeated: 2.5,
    strong: 0.5,
    last: 0.5,
    rivals: -1,
    margin: 0.3,
    reader: 1.0,
  },
  // A date is sure when labelled or beside a time and read surely to its least sure digit (`low`).
  date: { intercept: -6, label: 0.8, time: 0.6, agree: 0.5, rivals: -0.8, ambiguous: -0.5, reader: 2.0, low: 8 },
  // A business name: one with a company suffix, near the top, read surely to its least sure letter (`sure`) and shaped
  // like a name is right; single letters alone, 14+ letters run together, odd case, digits among letters or quotes,
  // a company form that starts the name (`ENTERPRISE LSETIA`: the name before it was lost) and a name off the axis of a
  // centred block (a word at one end too faint to be read) are what misreads look like.
  vendor: {
    intercept: -8,
    suffix: 1.5,
    rank: -0.8,
    fragments: -3,
    glued: -3,
    odd: -3,
    digits: -3,
    formFirst: -4,
    offCentre: -4,
    reader: 8,
    sure: 2,
  },
};

const VENDOR_LABEL = /(?:vendor|merchant|seller|supplier|sold\s+by|store)\s*:/i;

/** The confidence of a labelled vendor the top block's business name disagrees with (goes to review). */
const DISPUTED_VENDOR = 0.2;

function logistic(weights: Weights, signals: Record<string, number>): number {
  let z = weights.intercept;
  for (const [name, value] of Object.entries(signals)) z += (weights[name] ?? 0) * value;
  return Math.round((1 / (1 + Math.exp(-z))) * 1000) / 1000;
}

function cents(n: number): number {
  return Math.round(n * 100);
}

/**
 * The subtotal and tax only as a pair that adds up to the total: a receipt that prints its tax as included (a
 * subtotal equal to the total) gets the amount before tax from the total less the tax when the receipt prints that
 * amount, and otherwise neither is kept (`withheld`). A pair that does not add up holds a misread, and a wrong
 * optional value would fail the sum check and send a right total to review.
 */
function consistent(
  total: Finding<number> | null,
  subtotal: Finding<number> | null,
  tax: Finding<number> | null,
  rows: readonly Row[],
): { subtotal: Finding<number> | null; tax: Finding<number> | null; withheld: boolean } {
  if (total === null || subtotal === null || tax === null) return { subtotal, tax, withheld: false };
  if (Math.abs(cents(subtotal.value) + cents(tax.value) - cents(total.value)) <= 1) {
    return { subtotal, tax, withheld: false };
  }
  const net = cents(total.value) - cents(tax.value);
  const printed = rows.some((r) => amountsOf(r).some((m) => cents(m.value) === net));
  if (cents(subtotal.value) === cents(total.value) && printed) {
    const value = net / 100;
    return { subtotal: { value, printed: value.toFixed(2), signals: subtotal.signals }, tax, withheld: false };
  }
  return { subtotal: null, tax: null, withheld: true };
}

/**
 * The findings of the sale's fields on a document's rows, by concept (bench/receipts.ts reads their signals);
 * `withheld` names the concepts found but left out as inconsistent, which no text rule may fill in either.
 */
export function saleFindings(
  rows: readonly Row[],
  now: Date,
): { found: Partial<Record<string, Finding<string | number> | null>>; withheld: Set<string> } {
  const total = findTotal(rows);
  const pair = consistent(total, findSubtotal(rows), findTax(rows), rows);
  return {
    found: {
      total,
      subtotal: pair.subtotal,
      tax: pair.tax,
      date: findDate(rows, now),
      vendor: findMerchant(rows),
      currency: findCurrency(rows),
    },
    withheld: new Set(pair.withheld ? ['subtotal', 'tax'] : []),
  };
}

/**
 * The fields of `fields` read from `rows` (every page's, in order) and `text` (the same document as text), with a
 * confidence for each field the layout rules found, and the words its total and merchant were read from (the claims
 * a second read checks: ./second-read.ts).
 */
export function extractWithLayout(
  rows: readonly Row[],
  text: string,
  fields: FieldSpec[],
  now: Date,
): { result: Record<string, unknown>; confidence: Record<string, number>; claims: Record<string, Claim> } {
  const byText = extractFields(text, fields);
  const { found: findings, withheld } = saleFindings(rows, now);
  const result: Record<string, unknown> = {};
  const confidence: Record<string, number> = {};
  const claims: Record<string, Claim> = {};
  for (const field of fields) {
    const concept = conceptOf(field.name);
    if (concept !== null && withheld.has(concept)) {
      result[field.name] = null;
      continue;
    }
    const found = concept === null ? undefined : findings[concept];
    // A string field (a bare name) takes the value as printed (`42.50`); the other types are normalised from it.
    const raw =
      found === undefined || found === null
        ? ''
        : field.type === 'string'
          ? (found.printed ?? String(found.value))
          : String(found.value);
    const value = found === undefined || found === null ? null : coerceText(raw, field.type);
    // A labelled vendor ("Vendor: Globex Ltd") is what the document says it is: the text rules read labels first.
    const labelledVendor = concept === 'vendor' && byText[field.name] !== null && VENDOR_LABEL.test(text);
    if (found === undefined || found === null || value === null || labelledVendor) {
      result[field.name] = byText[field.name] ?? null;
      // The label names one business and the letterhead above it another (a salesperson "Sold by:" under the shop's
      // name): which one sold is in doubt. Text below the label (an invoice's line items) disputes nothing.
      const other = byText[field.name];
      const labelRow = rows.findIndex((r) => VENDOR_LABEL.test(r.text));
      const above = found?.row !== undefined && found.row < labelRow;
      if (labelledVendor && above && value !== null && normaliseText(String(value)) !== normaliseText(String(other))) {
        confidence[field.name] = DISPUTED_VENDOR;
      }
      continue;
    }
    result[field.name] = value;
    const weights = concept === 'total' || concept === 'date' || concept === 'vendor' ? WEIGHTS[concept] : undefined;
    if (weights !== undefined) confidence[field.name] = logistic(weights, found.signals);
    // Not the date: read again, its thin digits came back otherwise on 4 right dates of the dev set and on no wrong one
    // (docs/decisions.md#local-field-extraction); its least sure digit already ranks dates.
    const kind = concept === 'total' ? 'amount' : concept === 'vendor' ? 'name' : null;
    if (kind !== null && found.words !== undefined && found.words.length > 0) {
      claims[field.name] = { kind, words: found.words };
    }
  }
  return { result, confidence, claims };
}
