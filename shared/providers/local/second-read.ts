/**
 * A second look at the values the rules chose (total, date, merchant): the part of its text region each value was
 * read from, cut anew a little longer and thicker and contrast-stretched, read by the recognition model alone, and
 * compared with the first read. A recogniser sure of a wrong letter the first time (`FAIT` for `FATT` at 0.98, `2016` for `2018`)
 * often reads it otherwise from a different crop: that disagreement is a doubt its own certainty cannot show, and it
 * caps the field's confidence (SECOND_READ_CAP) so that the run goes to review.
 * Not to undo: a second read only ever lowers a confidence, never raises one (two reads by one model agreeing prove
 * little), and one that finds nothing comparable (`unread`) says nothing. Pure but for the injected reader.
 * docs/decisions.md#local-field-extraction has the measurements.
 */
import type { ReadWord } from './layout.js';
import { type GreyImage, subRegion, type TextRegion } from './paddle-geometry.js';

/** What a field's second read says of its first. */
export type Verdict = 'agrees' | 'disagrees' | 'unread';

/** How a value is compared: an amount by its value, a date by its digits, a name by its letters. */
export type ValueKind = 'amount' | 'date' | 'name';

/** A value to look at again: the words it was read from. */
export interface Claim {
  kind: ValueKind;
  words: readonly ReadWord[];
}

/** Reads a part of a text region of an image again (the recognition model alone). */
export type LineReader = (image: GreyImage, region: TextRegion) => Promise<string>;

/** The confidence of a value its second read disagrees with: under the review threshold (0.8). */
export const SECOND_READ_CAP = 0.5;

/** The part is cut this many times its thickness longer at either end than the words it holds. */
const GROW = 0.3;
/**
 * And this many times as thick as its region: the model sees the letters smaller, with more paper around them. Cut
 * as thick as the first read, a misread came back the same (`FAIT`); measured in docs/decisions.md.
 */
const THICKEN = 1.3;

/**
 * Letters and digits only, upper-case, with the reader's look-alikes made one (`O`/`D`/`Q`/`0`, `I`/`L`/`1`, `S`/`5`,
 * `B`/`8`, `Z`/`2`, `G`/`6`): a second read is doubted for a different letter, not for the same shape read otherwise.
 */
export function shapeOf(text: string): string {
  return text
    .toUpperCase()
    .replace(/[^\p{L}\p{N}]/gu, '')
    .replace(/[ODQ]/g, '0')
    .replace(/[IL]/g, '1')
    .replace(/S/g, '5')
    .replace(/B/g, '8')
    .replace(/Z/g, '2')
    .replace(/G/g, '6');
}

/** A text and the same with one character lost at its start, its end or both (a crop's edge cuts into print). */
function trimmed(s: string): string[] {
  if (s.length < 4) return [s];
  return [s, s.slice(1), s.slice(0, -1), s.slice(1, -1)];
}

const AMOUNT = /(\d+)\s?[.,:]\s?(\d{2})(?!\d)/g;

/** The amounts a read shows (an `O` among digits a zero). */
function amounts(text: string): number[] {
  const digits = text.replace(/(?<=\d)[Oo]|[Oo](?=\d)/g, '0');
  return [...digits.matchAll(AMOUNT)].map((m) => Number(`${m[1]}.${m[2]}`));
}

/**
 * Whether a second read (`second`) agrees with the first (`first`). An amount: the same amount, else `disagrees` when
 * the second shows another one (`unread` when none); a date: the same digits in order; a name: the same letters and
 * digits up to look-alikes, a character lost or gained at either edge of the crop forgiven.
 */
export function verdictOf(kind: ValueKind, first: string, second: string): Verdict {
  if (kind === 'amount') {
    const [value] = amounts(first);
    const seen = amounts(second);
    if (value === undefined || seen.length === 0) return 'unread';
    return seen.some((v) => Math.abs(v - value) < 0.005) ? 'agrees' : 'disagrees';
  }
  if (kind === 'date') {
    const want = first.replace(/\D/g, '');
    const got = second.replace(/[Oo]/g, '0').replace(/\D/g, '');
    if (got.includes(want)) return 'agrees';
    return got.length >= 4 ? 'disagrees' : 'unread';
  }
  const [a, b] = [shapeOf(first), shapeOf(second)];
  if (b.length < Math.min(3, a.length)) return 'unread';
  return trimmed(a).some((x) => trimmed(b).includes(x)) ? 'agrees' : 'disagrees';
}

/** The claim's words by the text region they were read from (words without one, from another engine, left out). */
function byRegion(words: readonly ReadWord[]): ReadWord[][] {
  const groups = new Map<TextRegion, ReadWord[]>();
  for (const word of words) {
    if (word.line === undefined) continue;
    groups.set(word.line.region, [...(groups.get(word.line.region) ?? []), word]);
  }
  return [...groups.values()].map((g) => g.sort((a, b) => (a.line?.from ?? 0) - (b.line?.from ?? 0)));
}

/**
 * The second read of each claim: the run of its words in each text region read again as one piece (a name split over
 * two lines is two pieces); one piece disagreeing is enough. A claim with nothing to compare is `unread`.
 */
export async function secondRead(
  image: GreyImage,
  claims: Readonly<Record<string, Claim>>,
  read: LineReader,
): Promise<Record<string, Verdict>> {
  const verdicts: Record<string, Verdict> = {};
  for (const [field, claim] of Object.entries(claims)) {
    let verdict: Verdict = 'unread';
    for (const words of byRegion(claim.words)) {
      const first = words[0]?.line;
      const last = words[words.length - 1]?.line;
      if (first === undefined || last === undefined) continue;
      const part = subRegion(first.region, first.from, last.to, GROW);
      const text = await read(image, { ...part, halfThickness: THICKEN * part.halfThickness });
      const said = verdictOf(claim.kind, words.map((w) => w.text).join(' '), text);
      if (said === 'disagrees') {
        verdict = said;
        break;
      }
      if (said === 'agrees') verdict = said;
    }
    verdicts[field] = verdict;
  }
  return verdicts;
}

/** The confidences with each field its second read disagrees with capped at SECOND_READ_CAP (review). */
export function doubted(
  confidence: Readonly<Record<string, number>>,
  verdicts: Readonly<Record<string, Verdict>>,
): Record<string, number> {
  const out = { ...confidence };
  for (const [field, verdict] of Object.entries(verdicts)) {
    if (verdict === 'disagrees') out[field] = Math.min(out[field] ?? 1, SECOND_READ_CAP);
  }
  return out;
}
