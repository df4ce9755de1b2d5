/**
 * Rule-based field extraction for the `local` provider: turns a document's text (text layer or OCR) into the values of
 * a schema's fields without any model. Pure functions, no I/O.
 *
 * How a field is found:
 * 1. Label variants are built from the field's name (`invoiceNumber` / `invoice_number` → "invoice number",
 *    "invoice no", "invoice #", …) plus a small synonym table for common concepts (total, date, vendor, email, …).
 *    Variants are tried most specific first ("grand total" before "total", "invoice date" before "date").
 * 2. A label matches on a line as `label[:\s]+value`, case-insensitive, with word boundaries (so "Subtotal" never
 *    matches "total"). A label must start the line or a new "cell" (after a tab, 2+ spaces, `|`, `;` or after a
 *    previous `Key: value` on the same line), so "Sub Total" or "Due Date" do not match "total" or "date".
 *    The value runs to the end of the line, or to the next `Key:` on it; a label alone on its line takes the next line.
 * 3. The value is coerced to the field's type; a value that cannot be coerced is skipped (the next match is tried),
 *    and a field with no usable match is `null` — values are never invented.
 * 4. A few concepts fall back to patterns when no label matched: email / phone / website by regex, a generic `date`
 *    as the first date in the text, vendor / merchant as the first meaningful line (the letterhead) — only in a
 *    transactional document (one that speaks of a total, an invoice or a receipt) — and business-card name / title /
 *    company by line heuristics, only in a document that is not transactional. Otherwise a receipt's letterhead would
 *    become an ID document's `fullName`, and a card holder's name an invoice's `vendor`: values the document shows,
 *    but not as what the field means.
 */
import type { FieldSpec, FieldType } from '../../task.js';

type Concept =
  | 'total'
  | 'subtotal'
  | 'tax'
  | 'date'
  | 'vendor'
  | 'email'
  | 'phone'
  | 'website'
  | 'name'
  | 'title'
  | 'company'
  | 'currency';

interface ConceptDef {
  /** Field names (lower-case, separators removed) that mean this concept. */
  names: string[];
  /** Labels, most specific first. */
  labels: string[];
  /** Which occurrence of the winning label to keep: totals are printed last on receipts. */
  pick: 'first' | 'last';
}

const CONCEPTS: Record<Concept, ConceptDef> = {
  total: {
    names: [
      'total',
      'totalamount',
      'amounttotal',
      'grandtotal',
      'totaldue',
      'amountdue',
      'balancedue',
      'invoicetotal',
      'totalprice',
      'amount',
    ],
    labels: ['grand total', 'total amount', 'invoice total', 'total due', 'total', 'amount due', 'balance due'],
    pick: 'last',
  },
  subtotal: {
    names: ['subtotal', 'subtotalamount', 'netamount', 'nettotal'],
    labels: ['subtotal', 'sub total', 'sub-total', 'net total', 'net amount'],
    pick: 'last',
  },
  tax: {
    names: ['tax', 'taxamount', 'totaltax', 'vat', 'vatamount', 'salestax', 'gst'],
    labels: ['total tax', 'tax amount', 'sales tax', 'vat amount', 'tax', 'vat', 'gst'],
    pick: 'last',
  },
  date: {
    names: [
      'date',
      'invoicedate',
      'receiptdate',
      'issuedate',
      'dateofissue',
      'transactiondate',
      'purchasedate',
      'documentdate',
    ],
    labels: [
      'invoice date',
      'receipt date',
      'transaction date',
      'purchase date',
      'issue date',
      'date of issue',
      'date issued',
      'date/time',
      'date',
    ],
    pick: 'first',
  },
  vendor: {
    names: [
      'vendor',
      'vendorname',
      'merchant',
      'merchantname',
      'seller',
      'sellername',
      'supplier',
      'suppliername',
      'store',
      'storename',
    ],
    labels: ['vendor name', 'merchant name', 'vendor', 'merchant', 'seller', 'supplier', 'sold by', 'store'],
    pick: 'first',
  },
  email: {
    names: ['email', 'emailaddress', 'mail'],
    labels: ['email address', 'email', 'e-mail', 'mail'],
    pick: 'first',
  },
  phone: {
    names: ['phone', 'phonenumber', 'telephone', 'tel', 'mobile', 'mobilenumber', 'cell', 'cellphone'],
    labels: [
      'phone number',
      'phone',
      'telephone',
      'tel',
      'mobile',
      'mob',
      'cell',
      'ph',
      'direct',
      'office',
      't',
      'm',
      'p',
    ],
    pick: 'first',
  },
  website: {
    names: ['website', 'web', 'url', 'homepage', 'site'],
    labels: ['website', 'web', 'url'],
    pick: 'first',
  },
  name: {
    names: ['name', 'fullname', 'personname', 'contactname', 'contact'],
    labels: ['full name', 'name', 'contact'],
    pick: 'first',
  },
  title: {
    names: ['title', 'jobtitle', 'position', 'role', 'designation'],
    labels: ['job title', 'title', 'position', 'role', 'designation'],
    pick: 'first',
  },
  company: {
    names: ['company', 'companyname', 'organization', 'organisation', 'organizationname', 'business', 'employer'],
    labels: ['company name', 'company', 'organization', 'organisation', 'business'],
    pick: 'first',
  },
  currency: {
    names: ['currency', 'currencycode'],
    labels: ['currency'],
    pick: 'first',
  },
};

const CONCEPT_BY_NAME = new Map<string, Concept>();
for (const [concept, def] of Object.entries(CONCEPTS) as [Concept, ConceptDef][]) {
  for (const name of def.names) CONCEPT_BY_NAME.set(name, concept);
}

/** Splits a field name into lower-case words: `invoiceNumber`, `invoice_number`, `Invoice-Number` → invoice, number. */
export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[^A-Za-z0-9#]+/)
    .filter((w) => w.length > 0)
    .map((w) => w.toLowerCase());
}

const NUMBER_SUFFIXES = new Set(['number', 'no', 'num', 'nr', '#']);
/** Suffixes that printed labels often leave out: "vendorName" is usually printed as "Vendor:". */
const DROPPABLE_SUFFIXES = new Set(['name', 'amount', 'value', 'text']);

/** Label variants for a field, most specific first. */
export function labelVariants(fieldName: string): string[] {
  const words = nameWords(fieldName);
  if (words.length === 0) return [];
  const derived: string[] = [words.join(' ')];
  const last = words[words.length - 1] as string;
  const stem = words.slice(0, -1).join(' ');
  if (stem !== '' && (NUMBER_SUFFIXES.has(last) || last === 'id')) {
    derived.push(`${stem} number`, `${stem} no`, `${stem} #`, `${stem} num`);
    if (last === 'id') derived.push(`${stem} id`);
  }
  if (stem !== '' && DROPPABLE_SUFFIXES.has(last)) derived.push(stem);

  const concept = conceptOf(fieldName);
  const multi = derived.filter((l) => l.includes(' '));
  const single = derived.filter((l) => !l.includes(' '));
  const ordered = concept === null ? [...multi, ...single] : [...multi, ...CONCEPTS[concept].labels, ...single];
  return [...new Set(ordered)];
}

function conceptOf(fieldName: string): Concept | null {
  return CONCEPT_BY_NAME.get(nameWords(fieldName).join('')) ?? null;
}

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
// Type coercion
// ---------------------------------------------------------------------------------------------------------------

const CURRENCY_CODES =
  'USD|EUR|GBP|CAD|AUD|NZD|JPY|CNY|CHF|INR|SEK|NOK|DKK|PLN|CZK|HUF|MXN|BRL|ZAR|SGD|HKD|KRW|TRY|AED|SAR|ILS|RUB';
const CURRENCY_CODE_RE = new RegExp(`\\b(?:${CURRENCY_CODES})\\b`, 'gi');
const CURRENCY_SYMBOL_RE = /[$€£¥₹₩₽¢₺₪]/g;

function parsePlainNumber(s: string): number | null {
  if (!/^\d[\d,.' ]*$/.test(s) || /[,.' ]$/.test(s)) return null;
  let t = s;
  if (/[' ]/.test(t)) {
    // Spaces and apostrophes only as thousands separators: "1 250,00", "1'250.00".
    if (!/^\d{1,3}(?:[' ]\d{3})+(?:[.,]\d+)?$/.test(t)) return null;
    t = t.replace(/[' ]/g, '');
  }
  const lastComma = t.lastIndexOf(',');
  const lastDot = t.lastIndexOf('.');
  if (lastComma >= 0 && lastDot >= 0) {
    const decimal = lastComma > lastDot ? ',' : '.';
    const thousands = decimal === ',' ? '.' : ',';
    const [intPart, fracPart, ...extra] = t.split(decimal);
    if (extra.length > 0 || intPart === undefined || fracPart === undefined) return null;
    if (!new RegExp(`^\\d{1,3}(?:\\${thousands}\\d{3})*$`).test(intPart) || !/^\d+$/.test(fracPart)) return null;
    t = `${intPart.split(thousands).join('')}.${fracPart}`;
  } else if (lastComma >= 0) {
    if (/^\d{1,3}(?:,\d{3})+$/.test(t)) t = t.replace(/,/g, '');
    else if (/^\d+,\d+$/.test(t)) t = t.replace(',', '.');
    else return null;
  } else if (lastDot >= 0) {
    if (/^\d{1,3}(?:\.\d{3}){2,}$/.test(t)) t = t.replace(/\./g, '');
    else if (!/^\d+\.\d+$/.test(t)) return null;
  }
  const n = Number(t);
  return Number.isFinite(n) ? n : null;
}

/**
 * Parses an amount as printed: currency symbols and codes, thousands separators (`,` `.` space `'`), a decimal comma,
 * and negatives as `-42.50`, `(42.50)` or `42.50-`. Text after the amount is tolerated only when it holds no digit
 * ("42.50 paid"), so "3 items 42.50" is not a number.
 */
export function coerceNumber(raw: string): number | null {
  let s = raw.replace(CURRENCY_CODE_RE, ' ').replace(CURRENCY_SYMBOL_RE, ' ').replace(/\s+/g, ' ').trim();
  let negative = false;
  if (/^\(.*\)$/.test(s)) {
    negative = true;
    s = s.slice(1, -1).trim();
  }
  if (/^[-−–]/.test(s)) {
    negative = !negative;
    s = s.slice(1).trim();
  } else if (/\d-$/.test(s)) {
    negative = !negative;
    s = s.slice(0, -1).trim();
  }
  let n = parsePlainNumber(s);
  if (n === null) {
    const lead = /^(\d[\d,.' ]*\d|\d)(?=\s|$)(.*)$/.exec(s);
    if (lead?.[1] !== undefined && !/\d/.test(lead[2] ?? '')) n = parsePlainNumber(lead[1]);
  }
  if (n === null) return null;
  return negative ? -n : n;
}

const TRUE_WORDS = new Set(['true', 'yes', 'y', 'on', 'checked', 'x', '✓', '✔', '☑', '1', 'paid']);
const FALSE_WORDS = new Set(['false', 'no', 'n', 'off', 'unchecked', '☐', '0', 'none', 'unpaid']);

export function coerceBoolean(raw: string): boolean | null {
  const s = raw.trim().toLowerCase().replace(/[.!]$/, '');
  if (TRUE_WORDS.has(s)) return true;
  if (FALSE_WORDS.has(s)) return false;
  return null;
}

const MONTH_RE =
  '(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)';
const MONTHS: Record<string, number> = {
  jan: 1,
  feb: 2,
  mar: 3,
  apr: 4,
  may: 5,
  jun: 6,
  jul: 7,
  aug: 8,
  sep: 9,
  oct: 10,
  nov: 11,
  dec: 12,
};
const DATE_ISO = /(?<!\d)(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?!\d)/;
const DATE_MONTH_FIRST = new RegExp(`\\b${MONTH_RE}\\.?\\s+(\\d{1,2})(?:st|nd|rd|th)?,?\\s+(\\d{4})(?!\\d)`, 'i');
const DATE_DAY_FIRST = new RegExp(
  `(?<!\\d)(\\d{1,2})(?:st|nd|rd|th)?[\\s-]+${MONTH_RE}\\.?,?[\\s-]+(\\d{4}|\\d{2})(?!\\d)`,
  'i',
);
const DATE_NUMERIC = /(?<!\d)(\d{1,2})([/.-])(\d{1,2})\2(\d{4}|\d{2})(?!\d)/;

function isoDate(y: number, m: number, d: number): string | null {
  const date = new Date(Date.UTC(y, m - 1, d));
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== m - 1 || date.getUTCDate() !== d) return null;
  return `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
}

function fullYear(y: string): number {
  const n = Number(y);
  if (y.length > 2) return n;
  return n < 70 ? 2000 + n : 1900 + n;
}

function monthNumber(name: string): number {
  return MONTHS[name.slice(0, 3).toLowerCase()] ?? 0;
}

interface DateMatch {
  /** The date as printed. */
  text: string;
  /** ISO `YYYY-MM-DD`, the printed text when day and month are ambiguous, or null when it is not a real date. */
  value: string | null;
}

/** The first date in a string, in order of reliability of the notation. */
function findDate(raw: string): DateMatch | null {
  const iso = DATE_ISO.exec(raw);
  if (iso !== null) return { text: iso[0], value: isoDate(Number(iso[1]), Number(iso[2]), Number(iso[3])) };
  const mdy = DATE_MONTH_FIRST.exec(raw);
  if (mdy !== null) return { text: mdy[0], value: isoDate(Number(mdy[3]), monthNumber(mdy[1] ?? ''), Number(mdy[2])) };
  const dmy = DATE_DAY_FIRST.exec(raw);
  if (dmy !== null) {
    return { text: dmy[0], value: isoDate(fullYear(dmy[3] ?? ''), monthNumber(dmy[2] ?? ''), Number(dmy[1])) };
  }
  const num = DATE_NUMERIC.exec(raw);
  if (num === null) return null;
  const a = Number(num[1]);
  const b = Number(num[3]);
  const y = fullYear(num[4] ?? '');
  let value: string | null = null;
  if (num[2] === '.' || (a > 12 && b <= 12)) value = isoDate(y, b, a);
  else if (b > 12 && a <= 12) value = isoDate(y, a, b);
  else if (a === b) value = isoDate(y, a, b);
  else if (a <= 12 && b <= 12 && a > 0 && b > 0) value = num[0];
  return { text: num[0], value };
}

/**
 * Finds a date in a value and normalises it to ISO `YYYY-MM-DD`: `2026-11-02`, `Nov 2, 2026`, `2 November 2026`,
 * `15/10/2026` (day > 12, so day-first), `02.11.2026` (dotted dates are day-first). A numeric date whose day and month
 * are both ≤ 12 and differ (`02/11/2026`) is ambiguous and is returned as printed. No date, or an impossible one → null.
 */
export function coerceDate(raw: string): string | null {
  return findDate(raw)?.value ?? null;
}

function coerce(value: string, type: FieldType): unknown {
  switch (type) {
    case 'number':
      return coerceNumber(value);
    case 'integer': {
      const n = coerceNumber(value);
      return n !== null && Number.isInteger(n) ? n : null;
    }
    case 'boolean':
      return coerceBoolean(value);
    case 'date':
      return coerceDate(value);
    case 'array': {
      const items = value
        .split(/[,;]/)
        .map((s) => s.trim())
        .filter((s) => s !== '');
      return items.length > 0 ? items : null;
    }
    case 'object':
      // A nested object cannot be read from flat "Label: value" text without guessing.
      return null;
    default: {
      const s = value.trim();
      return s === '' ? null : s;
    }
  }
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
      const coerced = coerce(value, field.type);
      if (coerced !== null) return coerced;
    }
  }
  const found = fallback(concept, lines, text);
  return found === null ? null : coerce(found, field.type);
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
