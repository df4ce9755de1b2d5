/**
 * What Textract read, as the envelope's result: the document text and confidence from its blocks, and the task's
 * fields from the expense, identity or queries answer (or rule-based extraction over the text for an open task).
 * No SDK calls: pure mapping of the response shapes.
 */
import type {
  Block,
  DocumentMetadata,
  ExpenseDocument,
  ExpenseField,
  IdentityDocument,
  IdentityDocumentField,
} from '@aws-sdk/client-textract';
import type { FieldSpec, FieldType, ProviderUsage } from '../../task.js';
import { coerceText, nameWords } from '../fields.js';
import { extractFields, extractKeyValues } from '../local/extract-fields.js';
import { normaliseOpenResult } from '../task-prompt.js';
import type { ProviderInput } from '../types.js';
import { type TextractApi, type TextractQuery, textractPageMicros } from './profile.js';

/** Characters of the first lines that make an open analysis's summary. */
export const SUMMARY_MAX_CHARS = 200;

/** What an attempt read, whichever API read it. */
export interface Reading {
  /** Pages Textract processed (what it bills). */
  pages: number;
  /** Text-detection and analysis blocks (PAGE, LINE, WORD, QUERY, QUERY_RESULT …). */
  blocks: Block[];
  expense: ExpenseDocument[];
  identity: IdentityDocument[];
}

export function pagesOf(metadata: DocumentMetadata | undefined, fallback: number): number {
  const pages = metadata?.Pages;
  return typeof pages === 'number' && Number.isInteger(pages) && pages > 0 ? pages : fallback;
}

export function usageFor(api: TextractApi, pages: number): ProviderUsage {
  return { billableUnits: pages, costMicros: pages * textractPageMicros[api] };
}

/** LINE blocks as text: lines in reading order (Textract's), pages separated by a blank line. */
export function linesText(blocks: readonly Block[]): string {
  const pages = new Map<number, string[]>();
  for (const block of blocks) {
    if (block.BlockType !== 'LINE' || !block.Text) continue;
    const page = block.Page ?? 1;
    const lines = pages.get(page) ?? [];
    lines.push(block.Text);
    pages.set(page, lines);
  }
  return [...pages.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, lines]) => lines.join('\n'))
    .join('\n\n');
}

export function mean(values: readonly number[]): number | undefined {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return undefined;
  return finite.reduce((sum, v) => sum + v, 0) / finite.length;
}

/** Blocks of every expense document, each once (documents of one file share pages). */
export function expenseBlocks(documents: readonly ExpenseDocument[]): Block[] {
  const seen = new Set<string>();
  const out: Block[] = [];
  for (const block of documents.flatMap((d) => d.Blocks ?? [])) {
    if (block.Id !== undefined) {
      if (seen.has(block.Id)) continue;
      seen.add(block.Id);
    }
    out.push(block);
  }
  return out;
}

export function expenseFields(documents: readonly ExpenseDocument[]): ExpenseField[] {
  return documents.flatMap((d) => d.SummaryFields ?? []);
}

export function identityFields(documents: readonly IdentityDocument[]): IdentityDocumentField[] {
  return documents.flatMap((d) => d.IdentityDocumentFields ?? []);
}

/** The text Textract read: its LINE blocks, or (when an API returned none) its fields as `Label: value` lines. */
export function documentTextOf(reading: Reading): string {
  const blocks = [...reading.blocks, ...expenseBlocks(reading.expense)];
  const identityTexts = reading.identity.map((d) => linesText(d.Blocks ?? [])).filter((t) => t !== '');
  const text = [linesText(blocks), ...identityTexts].filter((t) => t !== '').join('\n\n');
  if (text !== '') return text;
  const fieldLines = [
    ...expenseFields(reading.expense).map((f) => [f.LabelDetection?.Text ?? f.Type?.Text, f.ValueDetection?.Text]),
    ...identityFields(reading.identity).map((f) => [f.Type?.Text, f.ValueDetection?.Text]),
  ]
    .filter(([label, value]) => label && value)
    .map(([label, value]) => `${label}: ${value}`);
  return fieldLines.join('\n');
}

/**
 * Mean LINE confidence / 100 (Textract's recognition confidence); when an API returned no lines, the mean confidence
 * of the values it extracted; 0 when nothing was read at all (a blank page).
 */
export function confidenceOf(reading: Reading): number {
  const lines = [
    ...reading.blocks,
    ...expenseBlocks(reading.expense),
    ...reading.identity.flatMap((d) => d.Blocks ?? []),
  ].filter((b) => b.BlockType === 'LINE');
  const values = [
    ...expenseFields(reading.expense).map((f) => f.ValueDetection?.Confidence),
    ...identityFields(reading.identity).map((f) => f.ValueDetection?.Confidence),
  ].filter((c): c is number => typeof c === 'number');
  const score = mean(lines.map((b) => b.Confidence ?? Number.NaN)) ?? mean(values) ?? 0;
  return Math.min(1, Math.max(0, score / 100));
}

/** A value Textract read, in the field's type (dates as ISO when the notation is unambiguous); null when it is not one. */
export function typed(raw: string | undefined, type: FieldType): unknown {
  const text = raw?.trim();
  // Textract answers with one piece of text; a list cannot be read from it without guessing (nor can an object).
  if (!text || type === 'array') return null;
  return coerceText(text, type);
}

export function summaryOf(text: string): string {
  let summary = '';
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '') continue;
    if (summary !== '' && summary.length + trimmed.length + 2 > SUMMARY_MAX_CHARS) break;
    summary = summary === '' ? trimmed : `${summary}; ${trimmed}`;
  }
  return summary.slice(0, SUMMARY_MAX_CHARS);
}

/** Open analysis: the first lines as the summary, the text, and its `Label: value` lines as key-values. */
export function openResult(text: string): Record<string, unknown> {
  const keyValues = Object.entries(extractKeyValues(text)).map(([key, value]) => ({ key, value }));
  return normaliseOpenResult({ summary: summaryOf(text), text, keyValues });
}

/** A field's name as an AWS type name: `dateOfIssue` → `DATE_OF_ISSUE`. */
export function typeKey(name: string): string {
  return nameWords(name).join('_').toUpperCase();
}

/** Expense SummaryField types for the receipt and invoice registry fields, most specific first (`TYPE@GROUP`). */
export const EXPENSE_TYPES: Readonly<Record<string, readonly string[]>> = {
  merchant: ['VENDOR_NAME', 'NAME@VENDOR'],
  vendor: ['VENDOR_NAME', 'NAME@VENDOR'],
  date: ['INVOICE_RECEIPT_DATE'],
  invoiceDate: ['INVOICE_RECEIPT_DATE'],
  dueDate: ['DUE_DATE'],
  invoiceNumber: ['INVOICE_RECEIPT_ID'],
  subtotal: ['SUBTOTAL'],
  tax: ['TAX'],
  total: ['TOTAL', 'AMOUNT_PAID', 'AMOUNT_DUE'],
  totalDue: ['AMOUNT_DUE', 'TOTAL'],
};

/** Where the currency of a receipt or invoice is best read: the amounts that carry one, the total first. */
export const CURRENCY_SOURCES = ['TOTAL', 'AMOUNT_DUE', 'AMOUNT_PAID', 'SUBTOTAL', 'TAX'];

export function expenseMatches(field: ExpenseField, candidate: string): boolean {
  const [type, group] = candidate.split('@');
  if (field.Type?.Text !== type) return false;
  return group === undefined || (field.GroupProperties ?? []).some((g) => g.Types?.includes(group));
}

export function bestExpense(
  fields: readonly ExpenseField[],
  match: (f: ExpenseField) => boolean,
): ExpenseField | undefined {
  let best: ExpenseField | undefined;
  for (const f of fields) {
    if (!match(f) || !f.ValueDetection?.Text?.trim()) continue;
    if (best === undefined || (f.ValueDetection.Confidence ?? 0) > (best.ValueDetection?.Confidence ?? 0)) best = f;
  }
  return best;
}

/**
 * AnalyzeExpense's normalised SummaryFields onto the schema: the registry's receipt and invoice fields by type, the
 * currency from the amounts' currency code, any other field by its AWS type name or its printed label.
 */
export function expenseResult(
  fields: readonly FieldSpec[],
  documents: readonly ExpenseDocument[],
): Record<string, unknown> {
  const summary = expenseFields(documents);
  const result: Record<string, unknown> = {};
  for (const field of fields) {
    if (field.name === 'currency') {
      const withCode = summary.filter((f) => f.Currency?.Code);
      const source =
        CURRENCY_SOURCES.map((type) => withCode.find((f) => f.Type?.Text === type)).find((f) => f !== undefined) ??
        withCode[0];
      result[field.name] = source?.Currency?.Code ?? null;
      continue;
    }
    const words = nameWords(field.name).join('');
    const candidates: ((f: ExpenseField) => boolean)[] = [
      ...(EXPENSE_TYPES[field.name] ?? []).map((c) => (f: ExpenseField) => expenseMatches(f, c)),
      (f) => f.Type?.Text === typeKey(field.name),
      (f) => nameWords(f.LabelDetection?.Text ?? '').join('') === words,
    ];
    let value: ExpenseField | undefined;
    for (const candidate of candidates) {
      value = bestExpense(summary, candidate);
      if (value) break;
    }
    result[field.name] = typed(value?.ValueDetection?.Text, field.type);
  }
  return result;
}

/** Identity field type as a key: AWS documents `FIRST_NAME`, its examples show `first name`. */
export function identityType(field: IdentityDocumentField): string {
  return (field.Type?.Text ?? '')
    .trim()
    .toUpperCase()
    .replace(/[\s-]+/g, '_');
}

/** The best value of an identity field type: dates from their normalised form, else the text as read. */
export function identityValue(fields: readonly IdentityDocumentField[], type: string): string | undefined {
  let best: IdentityDocumentField | undefined;
  for (const f of fields) {
    if (identityType(f) !== type || !f.ValueDetection?.Text?.trim()) continue;
    if (best === undefined || (f.ValueDetection.Confidence ?? 0) > (best.ValueDetection?.Confidence ?? 0)) best = f;
  }
  const normalised = best?.ValueDetection?.NormalizedValue?.Value;
  if (normalised && /^\d{4}-\d{2}-\d{2}/.test(normalised)) return normalised.slice(0, 10);
  return best?.ValueDetection?.Text?.trim();
}

/** The issuing state of a machine-readable zone (ICAO 9303: characters 3–5 of the first line), e.g. `USA`. */
export function mrzIssuingState(mrz: string | undefined): string | undefined {
  const match = /^[A-Z][A-Z0-9<]([A-Z<]{3})/.exec((mrz ?? '').replace(/\s+/g, '').toUpperCase());
  const code = match?.[1]?.replace(/</g, '');
  return code ? code : undefined;
}

export const ID_TYPES: Readonly<Record<string, string>> = {
  documentType: 'ID_TYPE',
  documentNumber: 'DOCUMENT_NUMBER',
  dateOfBirth: 'DATE_OF_BIRTH',
  expiryDate: 'EXPIRATION_DATE',
};

/**
 * AnalyzeID's normalised fields onto the schema: the registry's identity fields by type, the full name from its parts,
 * the issuing country from the MRZ (AnalyzeID has no country field; without an MRZ it stays null), any other field by
 * its AWS type name (`placeOfBirth` → PLACE_OF_BIRTH).
 */
export function identityResult(
  fields: readonly FieldSpec[],
  documents: readonly IdentityDocument[],
): Record<string, unknown> {
  const all = identityFields(documents);
  const result: Record<string, unknown> = {};
  for (const field of fields) {
    let raw: string | undefined;
    if (field.name === 'fullName') {
      const parts = ['FIRST_NAME', 'MIDDLE_NAME', 'LAST_NAME', 'SUFFIX']
        .map((type) => identityValue(all, type))
        .filter((part): part is string => part !== undefined && part !== '');
      raw = parts.length > 0 ? parts.join(' ') : undefined;
    } else if (field.name === 'issuingCountry') {
      raw = mrzIssuingState(identityValue(all, 'MRZ_CODE'));
    } else {
      raw = identityValue(all, ID_TYPES[field.name] ?? typeKey(field.name));
    }
    result[field.name] = typed(raw, field.type);
  }
  return result;
}

/** The best QUERY_RESULT per query alias (a multi-page job answers once per page; the most confident wins). */
export function queryAnswers(blocks: readonly Block[]): Map<string, { text: string; confidence: number }> {
  const byId = new Map<string, Block>();
  for (const block of blocks) if (block.Id !== undefined) byId.set(block.Id, block);
  const answers = new Map<string, { text: string; confidence: number }>();
  for (const block of blocks) {
    const alias = block.Query?.Alias;
    if (block.BlockType !== 'QUERY' || alias === undefined) continue;
    for (const relation of block.Relationships ?? []) {
      if (relation.Type !== 'ANSWER') continue;
      for (const id of relation.Ids ?? []) {
        const answer = byId.get(id);
        const text = answer?.Text?.trim();
        if (answer?.BlockType !== 'QUERY_RESULT' || !text) continue;
        const confidence = answer.Confidence ?? 0;
        const current = answers.get(alias);
        if (current === undefined || confidence > current.confidence) answers.set(alias, { text, confidence });
      }
    }
  }
  return answers;
}

export function queryResult(
  fields: readonly FieldSpec[],
  queries: readonly TextractQuery[],
  blocks: readonly Block[],
): Record<string, unknown> {
  const answers = queryAnswers(blocks);
  const result: Record<string, unknown> = {};
  for (const field of fields) {
    const query = queries.find((q) => q.field === field.name);
    result[field.name] = typed(query ? answers.get(query.alias)?.text : undefined, field.type);
  }
  return result;
}

export function resultFor(
  input: ProviderInput,
  api: TextractApi,
  reading: Reading,
  text: string,
  queries: readonly TextractQuery[],
): Record<string, unknown> {
  const { task } = input;
  if (input.step === 'ocr' || task.outputFormat === 'text') return { text };
  if (task.fields === null) return openResult(text);
  switch (api) {
    case 'expense':
      return expenseResult(task.fields, reading.expense);
    case 'identity':
      return identityResult(task.fields, reading.identity);
    case 'queries':
      return queryResult(task.fields, queries, reading.blocks);
    case 'detect_text':
      // A schema too large for queries: Textract's text, then the same rules the local provider applies.
      return extractFields(text, task.fields);
  }
}
