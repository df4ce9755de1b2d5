/**
 * Cross-field checks, keyed by the field names a result has (registry names and their common variants): subtotal +
 * tax (+ tip + shipping − discount) = total within a cent; line items summing to the subtotal (or the total); an
 * opening balance plus signed transactions giving the closing one; dates that exist, issue dates not in the future,
 * due dates not before issue and periods that end after they start; IBAN (mod 97) and German and British VAT check
 * digits. Pure. Each failure names its fields and says which to blame (docs/confidence.md).
 * Not to undo: a sum check blames the one member whose value, recomputed from the others, is printed in the
 * document (under its own label when possible): `total` 42.51 with 42.50 under "Total" is the wrong one, not the
 * subtotal. Without such evidence every member shares the doubt.
 */

import type { FieldSpec } from '../task.js';
import { ibanValid, looksLikeIban, vatCheckDigitsFail } from './check-digits.js';
import { ACCOMPLICE, CULPRIT, UNRESOLVED } from './confidence.js';
import { formatAmount, looksLikeDate, nameTokens, parseDateValue } from './normalize.js';

/** A top-level field, or one field of one item of an array of objects. */
export interface FieldPath {
  field: string;
  item?: number;
  key?: string;
}

export interface CheckFailure {
  reason: string;
  blame: { path: FieldPath; factor: number }[];
}

/** Whether an amount is printed in the document: under the field's own label, anywhere, or not at all. */
export type AmountLookup = (field: string, value: number) => 'labelled' | 'anywhere' | 'absent';

export interface CheckInput {
  result: Record<string, unknown>;
  specs: ReadonlyMap<string, FieldSpec>;
  now: Date;
  lookup: AmountLookup;
}

/** Within a cent, floating point noise aside. */
const CENT = 0.01 + 1e-9;

const ROLES = {
  subtotal: ['subtotal', 'subtotalamount', 'netamount', 'nettotal', 'net'],
  tax: ['tax', 'taxamount', 'totaltax', 'vat', 'vatamount', 'salestax', 'gst', 'hst'],
  tip: ['tip', 'tipamount', 'gratuity'],
  shipping: ['shipping', 'shippingamount', 'shippingcost', 'freight'],
  discount: ['discount', 'discountamount'],
  total: ['total', 'totalamount', 'grandtotal', 'totaldue', 'amountdue', 'totalpaid'],
  items: ['items', 'lineitems', 'lines', 'products'],
  opening: ['openingbalance', 'startingbalance', 'beginningbalance'],
  closing: ['closingbalance', 'endingbalance'],
  transactions: ['transactions', 'entries'],
} as const;
const ITEM_AMOUNT = ['amount', 'total', 'linetotal', 'totalprice', 'lineamount', 'extendedprice'];
const ITEM_PRICE = ['price', 'unitprice', 'rate', 'unitcost'];
const ITEM_QUANTITY = ['quantity', 'qty', 'count'];
const ISSUE_DATE = ['invoicedate', 'issuedate', 'date', 'documentdate', 'receiptdate'];
const DUE_DATE = ['duedate', 'paymentduedate', 'paymentdue'];

/** Field names' words, remembered: the item checks ask for the same few keys of thousands of items. */
const wordsOfName = new Map<string, string[]>();
function words(name: string): string[] {
  let found = wordsOfName.get(name);
  if (found === undefined) {
    if (wordsOfName.size > 10_000) wordsOfName.clear();
    found = nameTokens(name);
    wordsOfName.set(name, found);
  }
  return found;
}

const compact = (name: string): string => words(name).join('');

function findKey(keys: readonly string[], aliases: readonly string[]): string | undefined {
  for (const alias of aliases) {
    const key = keys.find((k) => compact(k) === alias);
    if (key !== undefined) return key;
  }
  return undefined;
}

interface Amount {
  name: string;
  value: number;
}

function amountOf(result: Record<string, unknown>, aliases: readonly string[]): Amount | undefined {
  const name = findKey(Object.keys(result), aliases);
  const value = name === undefined ? undefined : result[name];
  return name !== undefined && typeof value === 'number' && Number.isFinite(value) ? { name, value } : undefined;
}

/** Every check the result's fields allow; the failures, in a stable order. */
export function crossFieldChecks(input: CheckInput): CheckFailure[] {
  return [...sumChecks(input), ...balanceCheck(input), ...dateChecks(input), ...digitChecks(input)];
}

/** Which member of a failed sum to blame: the one whose implied value the document prints (labelled first). */
function blameSum(members: { name: string; implied: number }[], lookup: AmountLookup): CheckFailure['blame'] {
  const seen = members.map((m) => lookup(m.name, m.implied));
  const pick = (want: 'labelled' | 'anywhere') => members.filter((_, i) => seen[i] === want);
  const culprit = pick('labelled').length === 1 ? pick('labelled') : pick('anywhere');
  if (culprit.length !== 1) return members.map((m) => ({ path: { field: m.name }, factor: UNRESOLVED }));
  return members.map((m) => ({ path: { field: m.name }, factor: m === culprit[0] ? CULPRIT : ACCOMPLICE }));
}

function sumChecks({ result, lookup }: CheckInput): CheckFailure[] {
  const failures: CheckFailure[] = [];
  const subtotal = amountOf(result, ROLES.subtotal);
  const tax = amountOf(result, ROLES.tax);
  const total = amountOf(result, ROLES.total);
  const adds = [amountOf(result, ROLES.tip), amountOf(result, ROLES.shipping)].filter((a) => a !== undefined);
  const discount = amountOf(result, ROLES.discount);
  const extra = adds.reduce((sum, a) => sum + a.value, 0) - Math.abs(discount?.value ?? 0);
  if (subtotal !== undefined && tax !== undefined && total !== undefined) {
    const lhs = subtotal.value + tax.value + extra;
    if (Math.abs(lhs - total.value) > CENT) {
      const terms = [subtotal, tax, ...adds];
      const left = terms.map((t) => t.name).join(' + ') + (discount ? ` − ${discount.name}` : '');
      const numbers =
        terms.map((t) => formatAmount(t.value)).join(' + ') +
        (discount ? ` − ${formatAmount(Math.abs(discount.value))}` : '');
      // Each member's value as the others imply it (a discount is subtracted whatever its printed sign).
      const members = [
        ...terms.map((t) => ({ name: t.name, implied: total.value - (lhs - t.value) })),
        ...(discount ? [{ name: discount.name, implied: lhs + Math.abs(discount.value) - total.value }] : []),
        { name: total.name, implied: lhs },
      ];
      failures.push({
        reason: `${left} ≠ ${total.name} (${numbers} ≠ ${formatAmount(total.value)})`,
        blame: blameSum(members, lookup),
      });
    }
  }
  const itemsKey = findKey(Object.keys(result), ROLES.items);
  const target = subtotal ?? total;
  const sum = itemsKey === undefined ? undefined : itemSum(itemsKey, result[itemsKey]);
  if (itemsKey !== undefined && sum !== undefined && target !== undefined) {
    const viaTotal =
      target === total && tax !== undefined && Math.abs(sum.total + tax.value + extra - target.value) <= CENT;
    if (Math.abs(sum.total - target.value) > CENT && !viaTotal) {
      failures.push({
        reason: `sum of ${itemsKey} ≠ ${target.name} (${formatAmount(sum.total)} ≠ ${formatAmount(target.value)})`,
        blame: blameItems(target, sum, lookup),
      });
    }
  }
  return failures;
}

/** One item's part in a sum: the value summed (its amount, or its unit price), its field, and a quantity used. */
interface Term {
  key: string;
  value: number;
  path: FieldPath;
  quantity?: FieldPath;
}

/** The items' amounts summed (an amount, else price × quantity); undefined when an item has neither. */
function itemSum(field: string, value: unknown): { total: number; terms: Term[] } | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined;
  let total = 0;
  const terms: Term[] = [];
  for (let i = 0; i < value.length; i++) {
    const item = value[i];
    if (typeof item !== 'object' || item === null || Array.isArray(item)) return undefined;
    const row = item as Record<string, unknown>;
    const keys = Object.keys(row);
    const amountKey = findKey(keys, ITEM_AMOUNT);
    const priceKey = findKey(keys, ITEM_PRICE);
    const quantityKey = findKey(keys, ITEM_QUANTITY);
    const amount = amountKey === undefined ? undefined : row[amountKey];
    const price = priceKey === undefined ? undefined : row[priceKey];
    const quantity = quantityKey === undefined ? 1 : row[quantityKey];
    if (typeof amount === 'number' && Number.isFinite(amount) && amountKey !== undefined) {
      total += amount;
      terms.push({ key: amountKey, value: amount, path: { field, item: i, key: amountKey } });
    } else if (typeof price === 'number' && typeof quantity === 'number' && priceKey !== undefined) {
      total += price * quantity;
      terms.push({
        key: priceKey,
        value: price,
        path: { field, item: i, key: priceKey },
        ...(quantityKey === undefined ? {} : { quantity: { field, item: i, key: quantityKey } }),
      });
    } else return undefined;
  }
  return { total, terms };
}

/**
 * Whom a failed items sum blames: the target when the document prints the items' sum (the subtotal was misread);
 * else, when the target is printed, the items whose amounts the document does not print; else everyone alike.
 */
function blameItems(
  target: Amount,
  sum: { total: number; terms: Term[] },
  lookup: AmountLookup,
): CheckFailure['blame'] {
  // A quantity is never the culprit: the unit price beside it is what was misread (or the quantity is right).
  const all = (factor: number, terms: readonly Term[]) =>
    terms.flatMap((t) => [
      { path: t.path, factor },
      ...(t.quantity ? [{ path: t.quantity, factor: Math.max(factor, ACCOMPLICE) }] : []),
    ]);
  if (lookup(target.name, sum.total) !== 'absent') {
    return [{ path: { field: target.name }, factor: CULPRIT }, ...all(ACCOMPLICE, sum.terms)];
  }
  const unprinted = sum.terms.filter((t) => lookup(t.key, t.value) === 'absent');
  if (unprinted.length > 0 && lookup(target.name, target.value) !== 'absent') {
    const printed = sum.terms.filter((t) => !unprinted.includes(t));
    return [
      { path: { field: target.name }, factor: ACCOMPLICE },
      ...all(CULPRIT, unprinted),
      ...all(ACCOMPLICE, printed),
    ];
  }
  return [{ path: { field: target.name }, factor: UNRESOLVED }, ...all(UNRESOLVED, sum.terms)];
}

/** Opening balance + Σ signed transaction amounts = closing balance; only when some amount is negative (signed). */
function balanceCheck({ result, lookup }: CheckInput): CheckFailure[] {
  const opening = amountOf(result, ROLES.opening);
  const closing = amountOf(result, ROLES.closing);
  const key = findKey(Object.keys(result), ROLES.transactions);
  const sum = key === undefined ? undefined : itemSum(key, result[key]);
  if (opening === undefined || closing === undefined || key === undefined || sum === undefined) return [];
  const rows = result[key] as Record<string, unknown>[];
  const signed = rows.some((row) => Object.values(row).some((v) => typeof v === 'number' && v < 0));
  if (!signed || Math.abs(opening.value + sum.total - closing.value) <= CENT) return [];
  const blame = blameSum(
    [
      { name: opening.name, implied: closing.value - sum.total },
      { name: closing.name, implied: opening.value + sum.total },
    ],
    lookup,
  );
  return [
    {
      reason: `${opening.name} + sum of ${key} ≠ ${closing.name} (${formatAmount(opening.value)} + ${formatAmount(sum.total)} ≠ ${formatAmount(closing.value)})`,
      blame,
    },
  ];
}

/** Names of dates that cannot be later than today: issue, purchase, transaction, statement dates and birth dates. */
const PAST_WORDS = ['invoice', 'issue', 'issued', 'purchase', 'transaction', 'receipt', 'order', 'birth', 'statement'];
const FUTURE_WORDS = ['due', 'expiry', 'expiration', 'expires', 'valid', 'until', 'delivery', 'renewal', 'next'];

function isDateField(name: string, value: unknown, spec: FieldSpec | undefined): value is string {
  if (typeof value !== 'string') return false;
  if (spec !== undefined) return spec.type === 'date';
  return words(name).includes('date') || looksLikeDate(value);
}

function dateChecks({ result, specs, now }: CheckInput): CheckFailure[] {
  const failures: CheckFailure[] = [];
  const keys = Object.keys(result);
  const transactional = [ROLES.total, ROLES.subtotal, ROLES.tax].some((roles) => findKey(keys, roles) !== undefined);
  // A day of slack: "today" where the document was issued may be tomorrow in UTC.
  const latest = new Date(now.getTime() + 86_400_000).toISOString().slice(0, 10);
  for (const name of keys) {
    const value = result[name];
    if (!isDateField(name, value, specs.get(name))) {
      for (const failure of itemDateChecks(name, value)) failures.push(failure);
      continue;
    }
    const readings = parseDateValue(value);
    if (readings.length === 0) {
      failures.push({ reason: `${name}: not a real date (${value.slice(0, 40)})`, blame: [culprit({ field: name })] });
      continue;
    }
    const nameWords = words(name);
    const pastOnly =
      !nameWords.some((w) => FUTURE_WORDS.includes(w)) &&
      (nameWords.some((w) => PAST_WORDS.includes(w)) || (compact(name) === 'date' && transactional));
    if (pastOnly && readings.every((iso) => iso > latest)) {
      failures.push({ reason: `${name}: in the future (${readings[0]})`, blame: [culprit({ field: name })] });
    }
  }
  const single = (key: string | undefined) => {
    const readings = key === undefined || typeof result[key] !== 'string' ? [] : parseDateValue(result[key] as string);
    return readings.length === 1 ? readings[0] : undefined;
  };
  const pairs: [string | undefined, string | undefined][] = [[findKey(keys, ISSUE_DATE), findKey(keys, DUE_DATE)]];
  for (const start of keys.filter((k) => words(k).at(-1) === 'start')) {
    const stem = compact(start).slice(0, -'start'.length);
    pairs.push([start, keys.find((k) => compact(k) === `${stem}end`)]);
  }
  for (const [early, late] of pairs) {
    const a = single(early);
    const b = single(late);
    if (early === undefined || late === undefined || a === undefined || b === undefined || b >= a) continue;
    failures.push({
      reason: `${late} before ${early} (${b} < ${a})`,
      blame: [
        { path: { field: early }, factor: UNRESOLVED },
        { path: { field: late }, factor: UNRESOLVED },
      ],
    });
  }
  return failures;
}

/** Dates inside the items of an array of objects (`transactions[3].date`) must exist. */
function itemDateChecks(name: string, value: unknown): CheckFailure[] {
  if (!Array.isArray(value)) return [];
  // The date keys of the first items: thousands of items are then checked with a property read each.
  const keys = new Set<string>();
  for (const item of value.slice(0, 50)) {
    if (typeof item !== 'object' || item === null) continue;
    for (const key of Object.keys(item)) if (words(key).includes('date')) keys.add(key);
  }
  const failures: CheckFailure[] = [];
  for (let i = 0; i < value.length && keys.size > 0 && failures.length < 5; i++) {
    const item = value[i] as Record<string, unknown> | null;
    if (typeof item !== 'object' || item === null) continue;
    for (const key of keys) {
      const v = item[key];
      if (typeof v !== 'string' || !/\d/.test(v) || parseDateValue(v).length > 0) continue;
      failures.push({
        reason: `${name}[${i}].${key}: not a real date (${v.slice(0, 40)})`,
        blame: [culprit({ field: name, item: i, key })],
      });
    }
  }
  return failures;
}

function digitChecks({ result }: CheckInput): CheckFailure[] {
  const failures: CheckFailure[] = [];
  for (const [name, value] of Object.entries(result)) {
    if (typeof value !== 'string') continue;
    const nameWords = words(name);
    const ibanField = nameWords.includes('iban') || (nameWords.includes('account') && looksLikeIban(value));
    if (ibanField && !ibanValid(value)) {
      failures.push({ reason: `${name}: IBAN check digits fail`, blame: [culprit({ field: name })] });
    }
    const vatField =
      nameWords.includes('vat') ||
      compact(name) === 'vatin' ||
      (nameWords.includes('tax') && nameWords.some((w) => ['id', 'number', 'no', 'reg', 'registration'].includes(w)));
    if (vatField && vatCheckDigitsFail(value)) {
      failures.push({ reason: `${name}: VAT number check digits fail`, blame: [culprit({ field: name })] });
    }
  }
  return failures;
}

function culprit(path: FieldPath): { path: FieldPath; factor: number } {
  return { path, factor: CULPRIT };
}
