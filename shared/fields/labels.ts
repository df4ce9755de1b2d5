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

/** Words that say what an amount includes or leaves out: `Total Incl. GST` labels a total, not the tax. */
const QUALIFIERS = new Set([
  'incl',
  'inc',
  'including',
  'inclusive',
  'excl',
  'exc',
  'excluding',
  'exclusive',
  'inkl',
  'exkl',
]);

/** The tokens of a label, in order, but the word a qualifier governs (`incl GST`, `incl. of GST`: `gst`). */
function unqualified(label: readonly string[]): string[] {
  const out: string[] = [];
  let governed = false;
  for (const t of label) {
    if (governed && STOPWORDS.has(t)) continue;
    if (!governed) out.push(t);
    governed = QUALIFIERS.has(t);
  }
  return out;
}

/** The label words before a span (and a label fused into its first word by OCR, as in `Total:42.50`). */
export function labelWindow(index: WordIndex, span: Span): LabelWindow {
  const words = index.page(span).words;
  const label: string[] = [];
  let explicit = false;
  for (let w = span.first - 1, n = 0; w >= 0 && n < LABEL_WORDS; w--, n++) {
    const text = words[w]?.text ?? '';
    if (/\d/.test(text)) break;
    if (n === 0 && /:\s*$/.test(text)) explicit = true;
    label.unshift(...tokens(text));
  }
  const fused = words[span.first]?.text ?? '';
  const colon = fused.lastIndexOf(':');
  if (colon > 0 && colon < fused.length - 1) {
    label.push(...tokens(fused.slice(0, colon)));
    explicit = true;
  }
  return { tokens: new Set(unqualified(label)), explicit };
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
  // Loops, not spreads: this runs for every other field at every place a value is printed.
  let hits = 0;
  for (const set of label.words) {
    for (const t of set) {
      if (window.tokens.has(t)) {
        hits++;
        break;
      }
    }
  }
  return hits;
}

/** Share of the name's words the label prints, in [0, 1]. */
function nameScore(label: FieldLabel, window: LabelWindow): number {
  return label.words.length === 0 ? 0 : nameHits(label, window) / label.words.length;
}

/** How well the label names the field: its name, or half as much its description. */
function ownScore(label: FieldLabel, window: LabelWindow): number {
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

/** A place's label window, and the fields it names in full (with their word counts). */
interface Judged {
  window: LabelWindow;
  named: Map<string, number>;
}

/**
 * The labels of one result's fields, with what makes judging a place cheap when a schema has 200 fields and a value
 * is printed 200 times: each place's label window is read once, and only the fields sharing a word with a window
 * are weighed against it.
 */
export class LabelBook {
  private readonly labels = new Map<string, FieldLabel>();
  private readonly byToken = new Map<string, string[]>();
  private readonly windows = new Map<string, Judged>();

  constructor(fields: readonly { name: string; description?: string | undefined }[]) {
    for (const { name, description } of fields) {
      const label = fieldLabel(name, description);
      this.labels.set(name, label);
      for (const t of new Set(label.words.flatMap((set) => [...set]))) {
        const list = this.byToken.get(t);
        if (list === undefined) this.byToken.set(t, [name]);
        else list.push(name);
      }
    }
  }

  label(name: string): FieldLabel {
    let label = this.labels.get(name);
    if (label === undefined) {
      label = fieldLabel(name);
      this.labels.set(name, label);
    }
    return label;
  }

  private window(index: WordIndex, span: Span): Judged {
    const key = `${span.pageIndex}:${span.first}`;
    let judged = this.windows.get(key);
    if (judged === undefined) {
      if (this.windows.size > 50_000) this.windows.clear();
      const window = labelWindow(index, span);
      // The fields this window names in full, found through the words they share with it.
      const named = new Map<string, number>();
      for (const t of window.tokens) {
        for (const name of this.byToken.get(t) ?? []) {
          const label = this.label(name);
          if (!named.has(name) && nameHits(label, window) === label.words.length) named.set(name, label.words.length);
        }
      }
      judged = { window, named };
      this.windows.set(key, judged);
    }
    return judged;
  }

  /** How the label before a place bears on the field `name`. */
  judge(name: string, index: WordIndex, span: Span): LabelVerdict {
    const { window, named } = this.window(index, span);
    if (window.tokens.size === 0) return { own: 0, mislabelled: false, foreign: false };
    const label = this.label(name);
    const own = ownScore(label, window);
    // Another field's whole name, more specific than what the label says of this one: "Subtotal" (1 word, 0 of
    // `total`'s) or "Due Date" (2 words, 1 of `date`'s).
    const hits = nameHits(label, window);
    let mislabelled = false;
    for (const [other, length] of named) if (other !== name && length > hits) mislabelled = true;
    return { own, mislabelled, foreign: window.explicit && own === 0 && !mislabelled };
  }
}
