/**
 * A schema's fields from a document's rows: the fields of a sale (total, subtotal, tax, date, merchant, currency) by
 * the layout rules of receipt-rules.ts, each with its own confidence, every other field (and one those rules do not
 * find) by the text rules of extract-fields.ts. Pure.
 * Not to undo: a field's confidence is a fitted estimate of the chance it is right, from signals that predict it
 * (agreement with what was paid and with subtotal + tax, rival candidates, a label, the reader's confidence): the
 * constants below were fitted on half of the dev receipts and checked on the other half (docs/decisions.md#local-field-
 * extraction), so change them only by fitting again with bench/receipts.ts.
 */
import type { FieldSpec } from '../../task.js';
import { coerceText } from '../fields.js';
import { conceptOf } from './concepts.js';
import { extractFields } from './extract-fields.js';
import type { Row } from './layout.js';
import {
  type Finding,
  findCurrency,
  findDate,
  findMerchant,
  findSubtotal,
  findTax,
  findTotal,
} from './receipt-rules.js';

/** A field's signals as found, weighted: the logistic of intercept + Σ weight × signal. */
type Weights = Record<string, number> & { intercept: number };

export const WEIGHTS: Record<'total' | 'date' | 'vendor', Weights> = {
  total: {
    intercept: -0.5,
    keyword: 1.2,
    agreesPaid: 1.8,
    agreesSum: 1.2,
    repeated: 0.8,
    strong: 0.5,
    last: 0.4,
    rivals: -0.9,
    reader: 1.0,
  },
  date: { intercept: -0.2, label: 0.8, time: 0.6, agree: 0.5, rivals: -0.8, ambiguous: -0.5, reader: 2.0 },
  vendor: { intercept: -1.5, suffix: 2.0, rank: -0.4, tall: 0.4, reader: 1.5 },
};

function logistic(weights: Weights, signals: Record<string, number>): number {
  let z = weights.intercept;
  for (const [name, value] of Object.entries(signals)) z += (weights[name] ?? 0) * value;
  return Math.round((1 / (1 + Math.exp(-z))) * 1000) / 1000;
}

/** The findings of the sale's fields on a document's rows (bench/receipts.ts reads their signals). */
export function saleFindings(
  rows: readonly Row[],
  now: Date,
): Partial<Record<string, Finding<string | number> | null>> {
  return {
    total: findTotal(rows),
    subtotal: findSubtotal(rows),
    tax: findTax(rows),
    date: findDate(rows, now),
    vendor: findMerchant(rows),
    currency: findCurrency(rows),
  };
}

/**
 * The fields of `fields` read from `rows` (every page's, in order) and `text` (the same document as text), with a
 * confidence for each field the layout rules found.
 */
export function extractWithLayout(
  rows: readonly Row[],
  text: string,
  fields: FieldSpec[],
  now: Date,
): { result: Record<string, unknown>; confidence: Record<string, number> } {
  const byText = extractFields(text, fields);
  const findings = saleFindings(rows, now);
  const result: Record<string, unknown> = {};
  const confidence: Record<string, number> = {};
  for (const field of fields) {
    const concept = conceptOf(field.name);
    const found = concept === null ? undefined : findings[concept];
    const value = found === undefined || found === null ? null : coerceText(String(found.value), field.type);
    // A labelled vendor ("Vendor: Globex Ltd") is what the document says it is: the text rules read labels first.
    const labelledVendor =
      concept === 'vendor' &&
      byText[field.name] !== null &&
      /(?:vendor|merchant|seller|supplier|sold by|store)\s*:/i.test(text);
    if (found === undefined || found === null || value === null || labelledVendor) {
      result[field.name] = byText[field.name] ?? null;
      continue;
    }
    result[field.name] = value;
    const weights = concept === 'total' || concept === 'date' || concept === 'vendor' ? WEIGHTS[concept] : undefined;
    if (weights !== undefined) confidence[field.name] = logistic(weights, found.signals);
  }
  return { result, confidence };
}
