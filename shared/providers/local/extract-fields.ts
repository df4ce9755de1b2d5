/**
 * The local provider's rule-based extraction: a schema's fields read from a document's text by their printed labels
 * (`label[:\s]+value`, at the start of a line or cell, most specific label first), then by patterns for a few
 * concepts, then coerced (../fields.ts). A field not found is null, never invented; letterhead and card heuristics
 * apply only to the documents they fit. See docs/decisions.md#local-field-extraction.
 */

import { CURRENCY_CODES } from '../../fields/normalize.js';
import type { FieldSpec } from '../../task.js';
import { coerceDate, coerceText, findDate } from '../fields.js';
import { CONCEPTS, type Concept, conceptOf, labelVariants } from './concepts.js';

interface LabelMatch {
  line: number;
  value: string;
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function labelRegex(label: string): RegExp {
  const words = label.split(' ');
  let source = '';
  words.forEach((word, i) => {
    if (i > 0) source += word === '#' ? '[\\s._-]*' : '[\\s._-]+';
    source += escapeRegex(word);
  });
  // A label ending in '#' may be glued to its value ("Invoice #INV-1"); any other label must end at a word boundary.
  const tail = label.endsWith('#') ? '' : '(?![\\p{L}\\p{N}])';
  return new RegExp(`(?<![\\p{L}\\p{N}])${source}${tail}`, 'giu');
}

/** A `Key:` further along a value starts another cell: "INV-1 Date: 2026-11-02" → "INV-1". */
const NEXT_KEY = /(?:\t|\s{3,}|\s+(?=\p{L}[\p{L}\p{N} .#/&'-]{0,30}?:(?:\s|$)))/u;
const LABEL_LINE = /^\s*\p{L}[\p{L}\p{N} .#/&()'-]{0,40}?\s*:(?:\s|$)/u;
const SEPARATOR = /^(?:[ \t]*[.:=][ \t.:=_]*|[ \t]+)(?:[-–—][ \t]+)?/;

/** All `label[:\s]+value` occurrences of one label, in document order. */
function findLabelMatches(lines: string[], label: string): LabelMatch[] {
  const re = labelRegex(label);
  const gluedOk = label.endsWith('#');
  const matches: LabelMatch[] = [];
  lines.forEach((line, lineIndex) => {
    re.lastIndex = 0;
    for (let m = re.exec(line); m !== null; m = re.exec(line)) {
      const prefix = line.slice(0, m.index);
      const rest = line.slice(m.index + m[0].length);
      const sep = SEPARATOR.exec(rest)?.[0] ?? '';
      if (sep === '' && rest !== '' && !gluedOk) continue;
      const explicitKey = /[:=]/.test(sep) || gluedOk;
      const startsCell =
        !/[\p{L}\p{N}]/u.test(prefix) ||
        /(?:\t|\s{2,}|[|;,]\s*)$/.test(prefix) ||
        (explicitKey && prefix.includes(':') && /\s$/.test(prefix));
      if (!startsCell) continue;
      let value = rest.slice(sep.length);
      const cut = NEXT_KEY.exec(value);
      if (cut !== null) value = value.slice(0, cut.index);
      value = value.trim();
      if (value === '' && prefix.trim() === '') {
        // "Total:" alone on its line: the value is on the next non-empty line, unless that is another "Key:" line.
        const next = lines.slice(lineIndex + 1).find((l) => l.trim() !== '');
        if (next !== undefined && !LABEL_LINE.test(next)) value = next.trim();
      }
      if (value !== '') matches.push({ line: lineIndex, value });
    }
  });
  return matches;
}

// ---------------------------------------------------------------------------------------------------------------
// Pattern fallbacks
// ---------------------------------------------------------------------------------------------------------------

const EMAIL_RE = /[A-Z0-9._%+-]+@[A-Z0-9-]+(?:\.[A-Z0-9-]+)*\.[A-Z]{2,}/i;
const PHONE_RE = /(?:\+\s?)?(?:\(\d{1,4}\)[\s.-]?)?\d[\d\s().-]{5,}\d/g;
const URL_RE =
  /\b(?:https?:\/\/[^\s]+|www\.[^\s]+|[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|org|net|io|co|dev|ai|biz|info)(?:\/[^\s]*)?)\b/i;
const FAX_LINE = /(?<![\p{L}])fax(?![\p{L}])/iu;

function findPhone(s: string): string | null {
  for (const m of s.matchAll(PHONE_RE)) {
    const candidate = m[0].trim();
    const digits = candidate.replace(/\D/g, '').length;
    if (digits < 7 || digits > 15) continue;
    if (coerceDate(candidate) !== null) continue;
    if (/^\d+[.,]\d{2}$/.test(candidate)) continue;
    return candidate;
  }
  return null;
}

const COMPANY_SUFFIX =
  /(?<![\p{L}])(?:inc|llc|ltd|limited|gmbh|corp|corporation|company|co|plc|ag|s\.?a|pty|group|technologies|solutions|labs|systems|partners|holdings|studio|consulting)(?![\p{L}])\.?/iu;
const TITLE_WORDS =
  /(?<![\p{L}])(?:ceo|cto|cfo|coo|cmo|vp|vice president|president|founder|co-founder|director|manager|engineer|developer|designer|consultant|officer|head of|lead|analyst|architect|specialist|partner|owner|coordinator|assistant|executive|representative|associate|administrator|accountant|attorney|scientist|professor|advisor|adviser|sales|marketing)(?![\p{L}])/iu;
const DOC_TITLES = new Set([
  'invoice',
  'tax invoice',
  'receipt',
  'sales receipt',
  'bill',
  'statement',
  'quote',
  'quotation',
  'estimate',
  'order',
  'purchase order',
  'credit note',
  'business card',
]);

function isPlainLine(line: string): boolean {
  return (
    /\p{L}{2,}/u.test(line) &&
    !LABEL_LINE.test(line) &&
    !line.includes('@') &&
    !URL_RE.test(line) &&
    coerceDate(line) === null &&
    findPhone(line) === null
  );
}

function firstMeaningfulLine(lines: string[]): string | null {
  for (const raw of lines) {
    const line = raw.trim();
    if (line === '' || !isPlainLine(line)) continue;
    if (
      DOC_TITLES.has(
        line
          .toLowerCase()
          .replace(/[^a-z ]/g, '')
          .trim(),
      )
    )
      continue;
    if (/^page\s+\d+/i.test(line)) continue;
    return line;
  }
  return null;
}

function looksLikePersonName(line: string): boolean {
  const words = line.split(/\s+/);
  if (words.length < 2 || words.length > 4) return false;
  if (!words.every((w) => /^\p{Lu}[\p{L}'’.-]*$/u.test(w))) return false;
  return !COMPANY_SUFFIX.test(line) && !TITLE_WORDS.test(line) && !DOC_TITLES.has(line.toLowerCase());
}

/** Words of a receipt, an invoice or a statement: the documents whose first line is the seller's letterhead. */
const TRANSACTIONAL = /(?<![\p{L}])(?:total|subtotal|amount due|balance due|invoice|receipt)(?![\p{L}])/iu;

function fallback(concept: Concept | null, lines: string[], text: string): string | null {
  const transactional = TRANSACTIONAL.test(text);
  switch (concept) {
    case 'email':
      return EMAIL_RE.exec(text)?.[0] ?? null;
    case 'phone':
      for (const line of lines) {
        if (FAX_LINE.test(line)) continue;
        const phone = findPhone(line);
        if (phone !== null) return phone;
      }
      return null;
    case 'website': {
      for (const line of lines) {
        const withoutEmails = line.replace(new RegExp(EMAIL_RE.source, 'gi'), ' ');
        const m = URL_RE.exec(withoutEmails);
        if (m !== null) return m[0];
      }
      return null;
    }
    case 'vendor':
      return transactional ? firstMeaningfulLine(lines) : null;
    case 'date':
      for (const line of lines) {
        if (/(?<![\p{L}])due(?![\p{L}])/iu.test(line)) continue;
        const d = findDate(line);
        if (d !== null && d.value !== null) return d.text;
      }
      return null;
    case 'name':
      if (transactional) return null;
      return lines.map((l) => l.trim()).find((l) => isPlainLine(l) && looksLikePersonName(l)) ?? null;
    case 'title':
      if (transactional) return null;
      return lines.map((l) => l.trim()).find((l) => isPlainLine(l) && TITLE_WORDS.test(l)) ?? null;
    case 'company':
      if (transactional) return null;
      return lines.map((l) => l.trim()).find((l) => isPlainLine(l) && COMPANY_SUFFIX.test(l)) ?? null;
    case 'currency': {
      const code = new RegExp(`\\b(?:${CURRENCY_CODES})\\b`).exec(text);
      if (code !== null) return code[0];
      if (text.includes('€')) return 'EUR';
      if (text.includes('£')) return 'GBP';
      if (text.includes('₹')) return 'INR';
      return null;
    }
    default:
      return null;
  }
}

/** For pattern concepts, the labelled value is narrowed to the pattern ("Email: bob@x.io (work)" → "bob@x.io"). */
function refine(concept: Concept | null, value: string): string | null {
  switch (concept) {
    case 'email':
      return EMAIL_RE.exec(value)?.[0] ?? null;
    case 'phone':
      return findPhone(value);
    case 'website':
      return URL_RE.exec(value)?.[0] ?? null;
    default:
      return value;
  }
}

function extractOne(lines: string[], text: string, field: FieldSpec): unknown {
  const concept = conceptOf(field.name);
  const pick = concept === null ? 'first' : CONCEPTS[concept].pick;
  for (const label of labelVariants(field.name)) {
    const candidates = findLabelMatches(lines, label);
    if (pick === 'last') candidates.reverse();
    for (const candidate of candidates) {
      const value = refine(concept, candidate.value);
      if (value === null) continue;
      const coerced = coerceText(value, field.type);
      if (coerced !== null) return coerced;
    }
  }
  const found = fallback(concept, lines, text);
  return found === null ? null : coerceText(found, field.type);
}

/**
 * Extracts a schema's fields from document text. The result has exactly the fields' names as keys; a field that is not
 * found, or whose value cannot be coerced to its type, is `null`.
 */
export function extractFields(text: string, fields: FieldSpec[]): Record<string, unknown> {
  const lines = text.replace(/\u00a0/g, ' ').split(/\r?\n/);
  const result: Record<string, unknown> = {};
  for (const field of fields) {
    result[field.name] = extractOne(lines, text, field);
  }
  return result;
}

/** `Label: value` lines of a text, as printed (first occurrence of a label wins). */
export function extractKeyValues(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.replace(/\u00a0/g, ' ').split(/\r?\n/)) {
    const m = /^\s*(\p{L}[\p{L}\p{N} .#/&()'-]{0,40}?)\s*:\s+(\S.*?)\s*$/u.exec(raw);
    if (m === null) continue;
    const label = (m[1] ?? '').trim();
    const value = (m[2] ?? '').trim();
    if (label === '' || value === '' || Object.hasOwn(out, label)) continue;
    out[label] = value;
  }
  return out;
}
