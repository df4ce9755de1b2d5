/**
 * Calibration of per-field confidence (shared/fields, docs/confidence.md) on the fixture corpus: in every run, each
 * value planted wrong (a total off by a digit, a wrong date, a merchant not on the page, a value printed under another
 * label) scores below every right value of the same run, and below every value of the all-right run. The corpus is
 * test/support/grounding-corpus.ts (the benchmark reports the same property on it).
 */
import { CORPUS, confidences, ground, plant, severalWrongs } from '../support/grounding-corpus.js';

describe.each(CORPUS)('calibration: $name', (doc) => {
  const rightRun = confidences(doc.right, ground(doc, doc.right));

  test('the all-right run grounds every value, none unsupported', () => {
    const grounded = ground(doc, doc.right);
    expect(grounded.unsupported).toEqual([]);
    expect(grounded.review).toEqual({ needed: false, reasons: [] });
  });

  test.each(doc.wrongs)('a wrong %s (%p) scores below every right value', (path, wrong) => {
    const result = plant(doc.right, path, wrong);
    const run = confidences(result, ground(doc, result));
    const wrongScore = run.get(path) ?? Number.NaN;
    const rightScores = [...run].filter(([p]) => p !== path).map(([, c]) => c);
    expect(wrongScore).toBeLessThan(Math.min(...rightScores));
    expect(wrongScore).toBeLessThan(Math.min(...rightRun.values()));
  });

  test('several wrong values at once: each below every right one', () => {
    const planted = severalWrongs(doc);
    const result = planted.reduce((acc, [path, value]) => plant(acc, path, value), doc.right);
    const run = confidences(result, ground(doc, result));
    const wrongPaths = new Set(planted.map(([path]) => path));
    const wrong = [...run].filter(([p]) => wrongPaths.has(p)).map(([, c]) => c);
    const right = [...run].filter(([p]) => !wrongPaths.has(p)).map(([, c]) => c);
    expect(wrong).toHaveLength(planted.length);
    expect(Math.max(...wrong)).toBeLessThan(Math.min(...right));
  });
});
