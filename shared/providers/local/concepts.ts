/**
 * The local provider's vocabulary: which field names mean a common concept (total, date, vendor, email, …), the
 * labels a document prints for it (most specific first), and the label variants derived from any field name.
 */
import { nameWords } from '../fields.js';

export type Concept =
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

export const CONCEPTS: Record<Concept, ConceptDef> = {
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

/** The concept a field name means, if any. */
export function conceptOf(fieldName: string): Concept | null {
  return CONCEPT_BY_NAME.get(nameWords(fieldName).join('')) ?? null;
}
