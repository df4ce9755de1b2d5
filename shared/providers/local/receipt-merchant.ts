/**
 * The merchant of a sale, read from a page's rows (layout.ts): the business name in the top block (a company form,
 * else the largest print), OCR's usual confusions in it undone, with the signals of its confidence (how a misread
 * name looks, the reader's least sure character, a row off the axis of a centred block). Pure; part of
 * ./receipt-rules.ts.
 * Not to undo: no list of merchants, nothing keyed to particular receipts (docs/decisions.md#local-field-extraction).
 */
import type { ReadWord, Row } from './layout.js';
import { amountsOf, type Finding, readerOf, wordsAt } from './receipt-rules.js';

const COMPANY_SUFFIX =
  /(?<![\p{L}])(?:sdn\.?\s*bhd|bhd|s\/b|inc|llc|l\.l\.c|ltd|limited|gmbh|corp(?:oration)?|company|co\.|plc|ag|s\.?a\.?r?\.?l?|pty|pte|enterprise|trading|holdings|group|restaurant|restoran|cafe|café|store|stores|mart|shop|bakery|pharmacy|farmasi|hardware|stationery|supermarket|hotel|kedai|syarikat|s\.?r\.?l|b\.?v|n\.?v|oy|ab)(?![\p{L}])/iu;
const NOT_MERCHANT =
  /\b(?:tax\s*invoice|invoice|receipt|resit|bill|welcome|thank|cashier|operator|server|table|tel|phone|fax|email|www|http|gst|reg(?:istration)?\s*no|roc|co\.?\s*reg|company\s*no|no\.?\s*\d|jalan|jln|lot|street|st\.|road|rd\.|avenue|ave\.|blvd|boulevard|way|lane|drive|highway|taman|floor|level|suite|unit|date|time|order|member|qty|price|amt|desc(?:ription)?|disc|opening|hours|hrs)\b|[@:]|\d{5}|^\(.*\)$/i;

function letters(text: string): number {
  return (text.match(/\p{L}/gu) ?? []).length;
}

/** A word's `0` and `1` as the letters they stand for, in the word's case (`SC0OP` → `SCOOP`, `Sc0op` → `Scoop`). */
function lettersFor(word: string): string {
  const lower = (word.match(/\p{Ll}/gu) ?? []).length > (word.match(/\p{Lu}/gu) ?? []).length;
  return word.replace(/0/g, lower ? 'o' : 'O').replace(/1/g, lower ? 'l' : 'I');
}

/**
 * A business name as printed, with the reader's usual confusions in it undone: a `0` or `1` inside a word of letters
 * (`SC0OP`, `S00N`, `1DEA`) is the letter, and `SON BHD` or `SDNBHD` (a Malaysian company's form misread) is `SDN BHD`.
 */
export function cleanName(text: string): string {
  return text
    .replace(/(?<![\p{L}\p{N}])[\p{L}01]*[01][\p{L}01]*(?![\p{L}\p{N}])/gu, (word) =>
      letters(word) >= 2 && 2 * letters(word) >= word.length ? lettersFor(word) : word,
    )
    .replace(/\bSDN\.?(?=BHD)/gi, (sdn) => `${sdn} `)
    .replace(/\bS[O0]N(\.?\s*BHD)\b/gi, (_, tail: string) => `SDN${tail}`);
}

/** A company form that ends a name (`ACME SDN BHD`, `ACME ENTERPRISE`): one that starts it is a name cut short. */
const TRAILING_FORM =
  /^(?:sdn\.?\s*bhd|bhd|s\/b|inc|llc|ltd|limited|gmbh|corp(?:oration)?|plc|pty|pte|enterprise|trading|holdings|group)\b/i;

/**
 * How a name looks misread: single letters standing alone (`ST T IONERY`: a word split), runs of 14+ letters
 * (`GARDENIABAKERIES`: a space lost; `INTERNATIONAL` is 13), words of mixed case or with a digit inside (`eCo8Way`),
 * and digits or quotes at all (`A32'75'`, `BD1187`: a business name is letters; a number in it is rarely a misread).
 */
function nameShape(text: string): Record<string, number> {
  const words = text.split(/\s+/).filter((w) => w !== '');
  return {
    formFirst: TRAILING_FORM.test(text) ? 1 : 0,
    fragments: words.filter((w) => /^\p{L}$/u.test(w)).length,
    glued: words.filter((w) => /\p{L}{14,}/u.test(w)).length,
    odd: words.filter((w) => /\p{Ll}\p{Lu}|\p{L}\d+\p{L}/u.test(w)).length,
    // A number standing alone is part of many names (`99 SPEED MART`); digits among letters, or quotes, are not.
    digits: words.filter((w) => /\p{L}.*\d|\d.*\p{L}|['"`]/u.test(w)).length,
  };
}

/** A company's trailing registration number or note in brackets (`SDN BHD (860671-D)`). */
const REGISTRATION = /\s*[([][^()[\]]*\d[^()[\]]*[)\]]?[\s.,;]*$/u;

/** A row's text without its trailing registration: `SDN BHD (860671-D)` → `SDN BHD`. */
function withoutRegistration(text: string): string {
  return text
    .replace(REGISTRATION, '')
    .replace(/\s{2,}/g, ' ')
    .trim();
}

/**
 * The words a name is made of on its rows: every word but a trailing registration number's. By place, not by text: a
 * word whose correction needs its neighbour (`SON` in `SON BHD`) is still one of the name's, and a second read of the
 * name (./second-read.ts) reads the run from its first word to its last, so each word in between must be in it.
 */
function nameWords(named: readonly Row[]): ReadWord[] {
  return named.flatMap((row) => {
    const kept = REGISTRATION.exec(row.text)?.index ?? row.text.length;
    const words = wordsAt(row, 0, kept);
    return words.length > 0 ? words : row.words;
  });
}

/** Rows of at least this many characters show where a top block's lines are centred (a short one may be a logo). */
const CENTRED_CHARS = 8;
/** A block is centred when its rows' centres stand, in the median, within this many characters of their axis (a
 * monospace printer centres a line of odd length half a character off). */
const CENTRED_SPREAD = 0.75;
/**
 * A name's row this many characters or more off a centred block's axis has lost print at one end. Right names of the
 * dev set's centred blocks stand 0.6 at most off it (docs/decisions.md#local-field-extraction).
 */
export const OFF_CENTRE_CHARS = 1.5;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

/**
 * Whether the name's rows stand off the axis the top block's lines are centred on, by OFF_CENTRE_CHARS characters of
 * their own print or more: a name whose first or last word was printed too faintly for a text region to be drawn
 * reads whole but short, and off-centre by half that word. A block that is not centred says nothing.
 */
function offCentre(block: readonly Row[], named: readonly Row[]): number {
  const lines = block.filter((r) => r.text.length >= CENTRED_CHARS);
  if (lines.length < 3) return 0;
  const centre = (r: Row) => (r.bbox[0] + r.bbox[2]) / 2;
  const inChars = (r: Row, d: number) => (d * r.text.length) / Math.max(1e-6, r.bbox[2] - r.bbox[0]);
  const axis = median(lines.map(centre));
  if (median(lines.map((r) => inChars(r, Math.abs(centre(r) - axis)))) > CENTRED_SPREAD) return 0;
  return named.some((r) => inChars(r, Math.abs(centre(r) - axis)) >= OFF_CENTRE_CHARS) ? 1 : 0;
}

/**
 * The merchant: in the top block (the rows before the first amount), the first row that carries a company suffix
 * (`SDN BHD`, `LTD`, `GmbH`, `Restaurant`…, a suffix alone on its row joining the row above), else the row in the
 * largest print among the first rows that are not an address, a phone number, a registration or a title.
 */
export function findMerchant(rows: readonly Row[]): Finding<string> | null {
  const firstAmount = rows.findIndex((r) => amountsOf(r).length > 0);
  const block = rows.slice(0, Math.min(firstAmount < 0 ? rows.length : firstAmount, 12));
  const usable = block
    .map((row, i) => ({ row, i, text: withoutRegistration(row.text) }))
    .filter((r) => letters(r.text) >= 3 && !NOT_MERCHANT.test(r.text));
  const medianHeight = [...block.map((r) => r.height)].sort((a, b) => a - b)[Math.floor(block.length / 2)] ?? 0;
  const suffixOnly = (text: string) => letters(text.replace(new RegExp(COMPANY_SUFFIX.source, 'giu'), '')) < 2;
  const signals = (value: string, named: Row[], k: number) => {
    const reader = readerOf(named.flatMap((row) => row.words));
    return {
      rank: k,
      tall: named.some((row) => row.height >= medianHeight * 1.15) ? 1 : 0,
      reader: reader.confidence,
      low: reader.low,
      sure: readerOf(nameWords(named)).sure,
      offCentre: offCentre(block, named),
      ...nameShape(value),
    };
  };
  for (const [k, r] of usable.entries()) {
    if (!COMPANY_SUFFIX.test(r.text)) continue;
    // A name broken over two rows: "… RESTAURANT" above "SDN BHD", or "SDN BHD" alone below the name.
    const above = usable[k - 1];
    const below = usable[k + 1];
    let text = r.text;
    let named = [r.row];
    if (suffixOnly(r.text) && above !== undefined && above.i === r.i - 1) {
      text = `${above.text} ${r.text}`;
      named = [above.row, r.row];
    } else if (below !== undefined && below.i === r.i + 1 && suffixOnly(below.text)) {
      text = `${r.text} ${below.text}`;
      named = [r.row, below.row];
    }
    const value = cleanName(text);
    const row = named[0] === above?.row ? above?.i : r.i;
    return {
      value,
      row: row ?? r.i,
      words: nameWords(named),
      signals: { suffix: 1, ...signals(value, named, k) },
    };
  }
  const tallest = [...usable.slice(0, 4)].sort((a, b) => b.row.height - a.row.height)[0];
  if (tallest === undefined) return null;
  const value = cleanName(tallest.text);
  return {
    value,
    row: tallest.i,
    words: nameWords([tallest.row]),
    signals: { suffix: 0, ...signals(value, [tallest.row], usable.indexOf(tallest)) },
  };
}
