/**
 * The second read of the values the rules chose (shared/providers/local/second-read.ts), with a reader written here
 * in place of the model: which comparisons count as a disagreement (a different letter or digit, a lost word) and
 * which do not (look-alikes, a character cut at a crop's edge, a read with nothing comparable), what part of the page
 * is read again, and that a disagreement sends the field under the review threshold while nothing else moves it.
 */
import type { ReadWord } from '../../shared/providers/local/layout.js';
import type { GreyImage, TextRegion } from '../../shared/providers/local/paddle-geometry.js';
import {
  type Claim,
  doubted,
  type LineReader,
  SECOND_READ_CAP,
  secondRead,
  shapeOf,
  verdictOf,
} from '../../shared/providers/local/second-read.js';

const REVIEW_THRESHOLD = 0.8;

describe('comparing a second read with the first', () => {
  test('a name read with one other letter, or a word lost, disagrees', () => {
    expect(verdictOf('name', 'YONG S00N FAIT S/B', 'YONG SOON FATT S/B')).toBe('disagrees');
    expect(verdictOf('name', 'ONE THREE SEAFOOD SDN BHD', 'ONE ONE THREE SEAFOOD SDN BHD')).toBe('disagrees');
  });

  test("a name's look-alikes, spacing, punctuation and a character cut at the crop's edge agree", () => {
    expect(verdictOf('name', 'URBAN 1DEA SON BHD', 'URBAN IDEA SDN. BHD')).toBe('agrees');
    expect(verdictOf('name', 'GOLDEN SCOOP SDN BHD', 'GOLDENSCOOP SDN BH')).toBe('agrees');
    expect(verdictOf('name', 'GOLDEN SCOOP SDN BHD', '(GOLDEN SCOOP SDN BHD')).toBe('agrees');
    expect(shapeOf('S0ON b8')).toBe(shapeOf('SOON B B'));
  });

  test('an amount agrees by its value and disagrees only with another amount', () => {
    expect(verdictOf('amount', 'RM39.80', 'RM 39.80')).toBe('agrees');
    expect(verdictOf('amount', '39.80', '39:8O')).toBe('agrees');
    expect(verdictOf('amount', '39.80', '38.80')).toBe('disagrees');
    expect(verdictOf('amount', '39.80', 'RM')).toBe('unread');
    expect(verdictOf('amount', 'RM', '39.80')).toBe('unread');
  });

  test('a date agrees by its digits in order; other digits disagree, too few say nothing', () => {
    expect(verdictOf('date', '25/05/2018', 'Date: 25-05-2018 13:02')).toBe('agrees');
    expect(verdictOf('date', '25/05/2016', '25/05/2018')).toBe('disagrees');
    expect(verdictOf('date', '25/05/2018', '25/')).toBe('unread');
  });

  test('a name read as too little to compare says nothing', () => {
    expect(verdictOf('name', 'ACME TRADING', '')).toBe('unread');
    expect(verdictOf('name', 'ACME TRADING', 'A.')).toBe('unread');
  });
});

describe('reading the claims again', () => {
  const image: GreyImage = { data: new Uint8Array(400 * 100).fill(255), width: 400, height: 100 };
  const region: TextRegion = { cx: 200, cy: 20, cos: 1, sin: 0, halfLength: 180, halfThickness: 10 };
  const other: TextRegion = { cx: 200, cy: 60, cos: 1, sin: 0, halfLength: 180, halfThickness: 10 };
  const word = (text: string, line: TextRegion, from: number, to: number): ReadWord => ({
    text,
    bbox: [0, 0, 0.1, 0.1],
    confidence: 0.99,
    line: { region: line, from, to },
  });
  /** A reader that answers per region, and records what it was asked to read. */
  const reader = (answers: Map<TextRegion, string>) => {
    const asked: TextRegion[] = [];
    const read: LineReader = async (_image, part) => {
      asked.push(part);
      const source = [...answers.keys()].find((r) => r.cy === part.cy) as TextRegion;
      return answers.get(source) ?? '';
    };
    return { read, asked };
  };

  test("each region's run of words is read once, a little longer than the words; one disagreeing piece is enough", async () => {
    const claims: Record<string, Claim> = {
      merchant: {
        kind: 'name',
        words: [word('SOON', region, -40, 0), word('YONG', region, -100, -50), word('S/B', other, -20, 10)],
      },
      total: { kind: 'amount', words: [word('RM', region, 100, 120), word('12.40', region, 125, 170)] },
    };
    const { read, asked } = reader(
      new Map([
        [region, 'YONG SOON'],
        [other, 'S/B.'],
      ]),
    );
    const verdicts = await secondRead(image, { merchant: claims.merchant as Claim }, read);
    expect(verdicts).toEqual({ merchant: 'agrees' });
    expect(asked).toHaveLength(2);
    // The run from YONG's start to SOON's end, grown at both ends (0.3 × the thickness, 20 px: 6 px).
    expect(asked[0]?.cx).toBeCloseTo(-50 + 200);
    expect(asked[0]?.halfLength).toBeCloseTo(50 + 6);
    // And thicker than the region (1.3 ×): the letters smaller in the crop than in the first read's.
    expect(asked[0]?.halfThickness).toBeCloseTo(13);

    const wrongTotal = reader(new Map([[region, 'RM 12.48']]));
    expect(await secondRead(image, { total: claims.total as Claim }, wrongTotal.read)).toEqual({
      total: 'disagrees',
    });
    const otherWord = reader(
      new Map([
        [region, 'YONG SOON'],
        [other, 'SDN'],
      ]),
    );
    expect(await secondRead(image, { merchant: claims.merchant as Claim }, otherWord.read)).toEqual({
      merchant: 'disagrees',
    });
  });

  test('words without a region (another engine read them) are not read again', async () => {
    const { read, asked } = reader(new Map());
    const claims: Record<string, Claim> = {
      date: { kind: 'date', words: [{ text: '05/11/2026', bbox: [0, 0, 0.2, 0.1], confidence: 0.9 }] },
    };
    expect(await secondRead(image, claims, read)).toEqual({ date: 'unread' });
    expect(asked).toHaveLength(0);
  });
});

describe('what a verdict does to a confidence', () => {
  test('a disagreement puts the field under the review threshold; agreement and no read leave it', () => {
    const confidence = { merchant: 0.97, date: 0.96, total: 0.99 };
    const out = doubted(confidence, { merchant: 'disagrees', date: 'agrees', total: 'unread' });
    expect(out).toEqual({ merchant: SECOND_READ_CAP, date: 0.96, total: 0.99 });
    expect(out.merchant).toBeLessThan(REVIEW_THRESHOLD);
    // Never raised: a low confidence stays low whatever the second read says.
    expect(doubted({ total: 0.3 }, { total: 'disagrees' })).toEqual({ total: 0.3 });
    expect(doubted({ total: 0.3 }, { total: 'agrees' })).toEqual({ total: 0.3 });
  });
});
