/**
 * Labels: the words printed just before a value ("Total:", "Invoice Date"), and how well they name a field. Used to
 * choose among the places a value is printed (the `42.50` after "Total", not the one after "Subtotal") and as a
 * signal: a value printed only under another field's label is suspect. Pure.
 * Not to undo: labels are compared as whole tokens (`subtotal` never counts as `total`), and the label window stops
 * at the previous word holding a digit, so the label of the value before is never read as this one's.
 */
import { nameTokens, tokens } from './normalize.js';
import type { Span, WordIndex } from './word-index.js';

/** Other words printed for a field name's word (few and common; docs/confidence.md). */
const SYNONYMS: Record<string, string[]> = {
  number: ['no', 'nr', 'num', 'nummer'],
  amount: ['amt', 'sum'],
  quantity: ['qty'],
  total: ['sum', 'gesamt', 'balance'],
  tax: ['vat', 'gst', 'hst', 'mwst'],
  vendor: ['seller', 'supplier', 'from'],
  merchant: ['store', 'shop'],
  description: ['desc', 'item'],
  date: ['dated', 'datum'],
  phone: ['tel', 'telephone'],
  email: ['mail'],
};

const STOPWORDS = new Set([
  'a',
  'an',
  'the',
  'of',
  'or',
  'and',
  'for',
  'in',
  'on',
  'to',
  'before',
  'after',
  'by',
  'is',
]);

/** How far back a label is looked for, in words. */
const LABEL_WORDS = 4;

/** What the words before a value say. `explicit`: the word just before ends with a colon ("Bill To:"). */
export interface LabelWindow {
  tokens: Set<string>;
  explicit: boolean;
}

/** The label words before a span (and a label fused into its first word by OCR, as in `Total:42.50`). */
export function labelWindow(index: WordIndex, span: Span): LabelWindow {
  const words = index.page(span).words;
  const found = new Set<string>();
  let explicit = false;
  const fused = words[span.first]?.text ?? '';
  const colon = fused.lastIndexOf(':');
  if (colon > 0 && colon < fused.length - 1) {
    for (const t of tokens(fused.slice(0, colon))) found.add(t);
    explicit = true;
  }
  for (let w = span.first - 1, n = 0; w >= 0 && n < LABEL_WORDS; w--, n++) {
    const text = words[w]?.text ?? '';
    if (/\d/.test(text)) break;
    if (n === 0 && /:\s*$/.test(text)) explicit = true;
    for (const t of tokens(text)) found.add(t);
  }
  return { tokens: found, explicit };
}

/** How a field's name (and description) are recognised in a label. */
export interface FieldLabel {
  /** Per word of the name, the tokens that print it (the word and its synonyms). */
  words: Set<string>[];
  description: Set<string>;
}

export function fieldLabel(name: string, description?: string): FieldLabel {
  const words = nameTokens(name).map((w) => new Set([w, ...(SYNONYMS[w] ?? [])]));
  const own = new Set(words.flatMap((set) => [...set]));
  const desc = tokens(description ?? '').filter((t) => !STOPWORDS.has(t) && !own.has(t));
  return { words, description: new Set(desc) };
}

/** How many of the name's words the label prints. */
function nameHits(label: FieldLabel, window: LabelWindow): number {
  return label.words.filter((set) => [...set].some((t) => window.tokens.has(t))).length;
}

/** Share of the name's words the label prints, in [0, 1]. */
export function nameScore(label: FieldLabel, window: LabelWindow): number {
  return label.words.length === 0 ? 0 : nameHits(label, window) / label.words.length;
}

/** How well the label names the field: its name, or half as much its description. */
export function ownScore(label: FieldLabel, window: LabelWindow): number {
  const fromName = nameScore(label, window);
  if (label.description.size === 0) return fromName;
  const fromDescription = [...label.description].filter((t) => window.tokens.has(t)).length / label.description.size;
  return Math.max(fromName, 0.5 * fromDescription);
}

/** How a place's label bears on a field: its own label, another field's label, or an unrelated explicit one. */
export interface LabelVerdict {
  own: number;
  /** The label names another field of the result more fully than this one ("Subtotal" for `total`). */
  mislabelled: boolean;
  /** An explicit label ("Bill To:") that names nothing of this field. */
  foreign: boolean;
}

export function judgeLabel(
  label: FieldLabel,
  others: readonly FieldLabel[],
  index: WordIndex,
  span: Span,
): LabelVerdict {
  const window = labelWindow(index, span);
  if (window.tokens.size === 0) return { own: 0, mislabelled: false, foreign: false };
  const own = ownScore(label, window);
  // Another field's whole name, more specific than what the label says of this one: "Subtotal" (1 word, 0 of
  // `total`'s) or "Due Date" (2 words, 1 of `date`'s).
  const hits = nameHits(label, window);
  const mislabelled = others.some((o) => o.words.length > hits && nameHits(o, window) === o.words.length);
  return { own, mislabelled, foreign: window.explicit && own === 0 && !mislabelled };
}
