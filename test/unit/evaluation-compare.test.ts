/**
 * The comparison rules of contract-v1.2 §1 (shared/evaluation): by field type, with examples and property tests (a
 * value equals itself after formatting round trips; symmetry where the rule is symmetric).
 * Over 400 lines: the rules of one module, type by type, each with its examples beside its properties.
 */
import fc from 'fast-check';
import { compareLists, compareValue, scoreDocument } from '../../shared/scoring/compare.js';
import { bestPairs } from '../../shared/scoring/hungarian.js';
import { dateReadings, editDistance, normaliseText, sameDay } from '../../shared/scoring/values.js';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const LONG_MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const pad = (n: number) => String(n).padStart(2, '0');

/** A real calendar day from 1970 to 2068 (two-digit years read back into that range). */
const day = fc
  .record({
    y: fc.integer({ min: 1970, max: 2068 }),
    m: fc.integer({ min: 1, max: 12 }),
    d: fc.integer({ min: 1, max: 28 }),
  })
  .map(({ y, m, d }) => ({ y, m, d }));

/** Renderings of a day that show no day-month order or put the day first. */
function dayFirstRenderings({ y, m, d }: { y: number; m: number; d: number }): string[] {
  const yy = pad(y % 100);
  return [
    `${y}-${pad(m)}-${pad(d)}`,
    `${y}-${pad(m)}-${pad(d)}T10:30:00Z`,
    `${pad(d)}/${pad(m)}/${y}`,
    `${d}/${m}/${y}`,
    `${pad(d)}-${pad(m)}-${yy}`,
    `${pad(d)}.${pad(m)}.${y}`,
    `${d} ${MONTHS[m - 1]} ${y}`,
    `${pad(d)}-${MONTHS[m - 1]?.toUpperCase()}-${y}`,
    `${MONTHS[m - 1]} ${d}, ${y}`,
    `${LONG_MONTHS[m - 1]} ${d} ${y}`,
    `${d}th ${LONG_MONTHS[m - 1]} ${y}`,
    `${y}${pad(m)}${pad(d)}`,
  ];
}

describe('dates: the same calendar day in several conventions', () => {
  test("the contract's examples are equal", () => {
    for (const [a, b] of [
      ['25/12/2018', '2018-12-25'],
      ['25/12/2018', '25 Dec 2018'],
      ['2018-12-25', '25 Dec 2018'],
    ]) {
      expect(compareValue('date', a, b).outcome).toBe('right');
      expect(compareValue('date', b, a).outcome).toBe('right');
    }
  });

  test("an ambiguous day-month in the answer is read in the expected value's own order", () => {
    // Day first in the expected value: 05/12/2018 is the 5th of December, not the 12th of May.
    expect(compareValue('date', '25/12/2018', '25/12/2018').outcome).toBe('right');
    expect(sameDay('05/12/2018', '2018-12-05')).toBe(true);
    expect(sameDay('13/05/2018', '05/13/2018')).toBe(true); // both unambiguous, the same day
    expect(sameDay('13/12/2018', '12/13/2018')).toBe(true);
    // Both ambiguous: read in the same order, so a swapped day and month is another day.
    expect(sameDay('05/06/2018', '06/05/2018')).toBe(false);
    // The expected value shows day first (25 > 12): an ambiguous answer is read day first too.
    expect(sameDay('25/06/2018', '06/25/2018')).toBe(true);
    expect(sameDay('2018-06-05', '05/06/2018')).toBe(true);
    expect(sameDay('2018-05-06', '05/06/2018')).toBe(true); // no order shown by the expected value: either reading
  });

  test('a different day, an impossible date and a non-date are wrong', () => {
    expect(compareValue('date', '2018-12-25', '2018-12-26').outcome).toBe('wrong');
    expect(compareValue('date', '2018-02-28', '2018-02-30').outcome).toBe('wrong');
    expect(compareValue('date', '2018-12-25', 'Christmas').outcome).toBe('wrong');
    expect(dateReadings('31/02/2018')).toEqual([]);
    // Two-digit years: 00–69 are 20xx, 70–99 are 19xx.
    expect(dateReadings('14-03-18')).toEqual([{ day: '2018-03-14', order: 'dmy' }]);
    expect(dateReadings('01/02/85').map((r) => r.day)).toEqual(['1985-02-01', '1985-01-02']);
  });

  test('property: a day equals itself in every convention that shows no order or puts the day first', () => {
    fc.assert(
      fc.property(day, fc.nat(), fc.nat(), (date, i, j) => {
        const renderings = dayFirstRenderings(date);
        const a = renderings[i % renderings.length] as string;
        const b = renderings[j % renderings.length] as string;
        return compareValue('date', a, b).outcome === 'right';
      }),
      { numRuns: 500 },
    );
  });

  test('property: a different day is never the same day (either way round)', () => {
    fc.assert(
      fc.property(day, fc.integer({ min: 1, max: 400 }), fc.nat(), fc.nat(), (date, shift, i, j) => {
        const other = new Date(Date.UTC(date.y, date.m - 1, date.d + shift));
        const later = { y: other.getUTCFullYear(), m: other.getUTCMonth() + 1, d: other.getUTCDate() };
        if (later.y > 2068 || later.d > 28) return true;
        // The day and month swapped: 11/06/1970 read month first is 6 November. An ambiguous date beside one that
        // shows no order (ISO) may be read either way (the test above), so this pair is no counterexample.
        if (later.y === date.y && later.m === date.d && later.d === date.m) return true;
        const a = dayFirstRenderings(date)[i % 12] as string;
        const b = dayFirstRenderings(later)[j % 12] as string;
        return compareValue('date', a, b).outcome === 'wrong' && compareValue('date', b, a).outcome === 'wrong';
      }),
      { numRuns: 300 },
    );
  });
});

describe('numbers: currency signs, separators and sign notations', () => {
  test('amounts as printed equal the number', () => {
    for (const printed of [
      '1042.5',
      '1,042.50',
      '$1,042.50',
      '1.042,50 €',
      'RM 1,042.50',
      'RM1042.50',
      'USD 1042.50',
      '1 042,50',
    ]) {
      expect(compareValue('number', 1042.5, printed).outcome).toBe('right');
      expect(compareValue('number', printed, 1042.5).outcome).toBe('right');
    }
    for (const printed of ['(12.00)', '-12.00', '12.00-', '−12', '- 12.00']) {
      expect(compareValue('number', -12, printed).outcome).toBe('right');
    }
  });

  test('a comma before three digits groups thousands: an answer 1,000 times off is wrong', () => {
    for (const [printed, value] of [
      ['$42,500', 42_500],
      ['RM 4,000', 4000],
      ['38,500', 38_500],
      ['(1,000)', -1000],
    ] as const) {
      expect(compareValue('number', printed, value).outcome).toBe('right');
      expect(compareValue('number', printed, value / 1000).outcome).toBe('wrong');
      expect(compareValue('number', value / 1000, printed).outcome).toBe('wrong');
    }
    expect(compareValue('integer', '1,000', 1).outcome).toBe('wrong');
    // A dot before three digits is a decimal point; two separators, or two decimals, leave no choice.
    expect(compareValue('number', '4.500', 4.5).outcome).toBe('right');
    expect(compareValue('number', '4.500', 4500).outcome).toBe('wrong');
    expect(compareValue('number', '1.234.567', 1_234_567).outcome).toBe('right');
    expect(compareValue('number', '42,50', 42.5).outcome).toBe('right');
    expect(compareValue('number', '1,000.00', 1000).outcome).toBe('right');
  });

  test('equal within half a cent, not beyond', () => {
    expect(compareValue('number', '9.00', '9.004').outcome).toBe('right');
    expect(compareValue('number', '9.00', '9.005').outcome).toBe('right');
    expect(compareValue('number', '9.00', '9.01').outcome).toBe('wrong');
    expect(compareValue('number', '9.00', '-9.00').outcome).toBe('wrong');
    expect(compareValue('number', '9.00', 'nine').outcome).toBe('wrong');
  });

  /** An amount in cents and the ways receipts print it. */
  function renderings(cents: number): (string | number)[] {
    const abs = Math.abs(cents);
    const whole = Math.floor(abs / 100);
    const fraction = pad(abs % 100);
    const grouped = (sep: string) => String(whole).replace(/\B(?=(\d{3})+(?!\d))/g, sep);
    const forms = [
      `${whole}.${fraction}`,
      `${grouped(',')}.${fraction}`,
      `$${grouped(',')}.${fraction}`,
      `RM ${whole}.${fraction}`,
      `${grouped('.')},${fraction} €`,
      `USD ${grouped(',')}.${fraction}`,
    ];
    if (cents >= 0) return [...forms, abs / 100];
    return [...forms.map((f) => `-${f}`), ...forms.map((f) => `(${f})`), `${whole}.${fraction}-`, cents / 100];
  }

  test('property: an amount equals itself however it is printed, both ways round', () => {
    fc.assert(
      fc.property(fc.integer({ min: -100_000_000, max: 100_000_000 }), fc.nat(), fc.nat(), (cents, i, j) => {
        const forms = renderings(cents);
        const a = forms[i % forms.length];
        const b = forms[j % forms.length];
        return compareValue('number', a, b).outcome === 'right' && compareValue('number', b, a).outcome === 'right';
      }),
      { numRuns: 500 },
    );
  });

  test('property: amounts a cent or more apart are different, both ways round', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -10_000_000, max: 10_000_000 }),
        fc.integer({ min: 1, max: 100_000 }),
        (cents, gap) => {
          const a = (cents / 100).toFixed(2);
          const b = ((cents + gap) / 100).toFixed(2);
          return compareValue('number', a, b).outcome === 'wrong' && compareValue('number', b, a).outcome === 'wrong';
        },
      ),
    );
  });
});

describe('strings: NFKC, case folding, whitespace and punctuation', () => {
  test("the contract's example and Unicode variants are equal", () => {
    expect(normaliseText('MR. D.I.Y. (M) SDN BHD')).toBe('mr d i y m sdn bhd');
    expect(compareValue('string', 'MR. D.I.Y. (M) SDN BHD', 'mr d i y m sdn bhd')).toEqual({
      outcome: 'right',
      score: 1,
    });
    expect(compareValue('string', 'ＡＣＭＥ Hardware', 'acme hardware').outcome).toBe('right'); // full-width (NFKC)
    expect(compareValue('string', 'Straße', 'STRASSE').outcome).toBe('right'); // case folding
    expect(compareValue('string', 'ﬁne  food', 'FINE\tFOOD').outcome).toBe('right'); // ligature, whitespace
  });

  test('a different string is wrong, scored by 1 − normalised edit distance', () => {
    const c = compareValue('string', 'LIGHTROOM GALLERY SDN BHD', 'LIGHTROOM GALLERY SDN BHO');
    expect(c.outcome).toBe('wrong');
    // 1 edit over 25 characters.
    expect(c.score).toBeCloseTo(1 - 1 / 25, 6);
    expect(compareValue('string', 'abc', 'xyz').score).toBe(0);
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });

  /** Ways a name may come back: case, punctuation, spacing, compatibility forms. */
  const variant = (s: string, k: number): string => {
    switch (k % 6) {
      case 0:
        return s.toUpperCase();
      case 1:
        return s.toLowerCase();
      case 2:
        return s.replace(/ /g, '  ,\t');
      case 3:
        return ` ${s.replace(/ /g, '. ')}. `;
      case 4:
        // Full-width letters and digits (NFKC folds them back).
        return s.replace(/[A-Za-z0-9]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0));
      default:
        return `(${s})`;
    }
  };
  const words = fc
    .array(fc.stringMatching(/^[A-Za-z0-9]{1,8}$/), { minLength: 1, maxLength: 5 })
    .map((w) => w.join(' '));

  test('property: a string equals its case, punctuation, whitespace and NFKC variants, both ways round', () => {
    fc.assert(
      fc.property(words, fc.nat(), fc.nat(), (s, i, j) => {
        const a = variant(s, i);
        const b = variant(s, j);
        return compareValue('string', a, b).outcome === 'right' && compareValue('string', b, a).outcome === 'right';
      }),
      { numRuns: 500 },
    );
  });

  test('property: comparison of two strings is symmetric (outcome and score)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), fc.string({ maxLength: 30 }), (a, b) => {
        const ab = compareValue('string', `x${a}`, `x${b}`);
        const ba = compareValue('string', `x${b}`, `x${a}`);
        return ab.outcome === ba.outcome && ab.score === ba.score && ab.score >= 0 && ab.score <= 1;
      }),
      { numRuns: 500 },
    );
  });
});

describe('booleans and nulls', () => {
  test('booleans compare exactly (the strings true and false read as booleans)', () => {
    expect(compareValue('boolean', true, true).outcome).toBe('right');
    expect(compareValue('boolean', true, 'TRUE').outcome).toBe('right');
    expect(compareValue('boolean', false, true).outcome).toBe('wrong');
    expect(compareValue('boolean', true, 'yes').outcome).toBe('wrong');
  });

  test('expected null is right when the answer is null or absent, extra otherwise; a missing answer is missing', () => {
    expect(compareValue('string', null, null).outcome).toBe('right');
    expect(compareValue('string', null, undefined).outcome).toBe('right');
    expect(compareValue('string', null, '  ').outcome).toBe('right');
    expect(compareValue('number', null, 12)).toEqual({ outcome: 'extra', score: 0 });
    expect(compareValue('number', 12, null)).toEqual({ outcome: 'missing', score: 0 });
  });
});

describe('arrays of objects: paired by the Hungarian method', () => {
  const expected = [
    { description: 'Hammer', quantity: 1, amount: '12.50' },
    { description: 'Nails 100', quantity: 2, amount: '3.00' },
    { description: 'Glue', quantity: 1, amount: '4.25' },
  ];

  test('the same items in another order are right', () => {
    const got = [expected[2], expected[0], expected[1]];
    expect(compareValue('array', expected, got)).toEqual({
      outcome: 'right',
      score: 1,
      precision: 1,
      recall: 1,
      f1: 1,
    });
  });

  test('a missing item lowers recall; an extra item lowers precision; a wrong field lowers both', () => {
    const missing = compareValue('array', expected, expected.slice(0, 2));
    expect(missing).toMatchObject({ outcome: 'wrong', precision: 1 });
    expect(missing.recall).toBeCloseTo(6 / 9, 6);
    const extra = compareValue('array', expected, [...expected, { description: 'Tape', quantity: 1, amount: '2.00' }]);
    expect(extra).toMatchObject({ outcome: 'wrong', precision: 0.75, recall: 1 });
    const wrongField = compareValue('array', expected, [expected[0], { ...expected[1], amount: '30.00' }, expected[2]]);
    expect(wrongField.outcome).toBe('wrong');
    expect(wrongField.precision).toBeCloseTo(8 / 9, 6);
    expect(wrongField.recall).toBeCloseTo(8 / 9, 6);
    expect(wrongField.f1).toBeCloseTo(8 / 9, 6);
  });

  test('columns the expected items do not name are not errors; an item the answer added still is', () => {
    const labelled = [
      { description: 'Consulting', amount: '1,000.00' },
      { description: 'Travel', amount: 75 },
    ];
    const answered = [
      { description: 'Travel', amount: 75, quantity: 2, unitPrice: 37.5 },
      { description: 'Consulting', amount: 1000, quantity: 4, unitPrice: 250 },
    ];
    expect(compareValue('array', labelled, answered)).toEqual({
      outcome: 'right',
      score: 1,
      precision: 1,
      recall: 1,
      f1: 1,
    });
    const added = compareValue('array', labelled, [...answered, { description: 'Tips', quantity: 1 }]);
    expect(added).toMatchObject({ outcome: 'wrong', recall: 1 });
    expect(added.precision).toBeCloseTo(4 / 5, 6);
  });

  test('the pairing maximises the total: a near-copy is paired with its original, not greedily', () => {
    // Greedy on the first row would take the second answer (2 of 3 fields) and leave a worse total.
    const e = [
      { a: 1, b: 2, c: 3 },
      { a: 1, b: 2, c: 9 },
    ];
    const g = [
      { a: 1, b: 2, c: 9 },
      { a: 1, b: 2, c: 3 },
    ];
    expect(compareLists(e, g).outcome).toBe('right');
  });

  test('property: the Hungarian pairing is as good as the best permutation (small matrices)', () => {
    const permutations = (n: number): number[][] =>
      n === 0
        ? [[]]
        : permutations(n - 1).flatMap((p) =>
            Array.from({ length: n }, (_, i) => [...p.slice(0, i), n - 1, ...p.slice(i)]),
          );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }).chain((n) =>
          fc.array(fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: n, maxLength: n }), {
            minLength: n,
            maxLength: n,
          }),
        ),
        (matrix) => {
          const n = matrix.length;
          const total = (pairs: [number, number][]) => pairs.reduce((s, [i, j]) => s + (matrix[i]?.[j] ?? 0), 0);
          const best = Math.max(...permutations(n).map((p) => total(p.map((j, i): [number, number] => [i, j]))));
          const found = bestPairs(n, n, (i, j) => matrix[i]?.[j] ?? 0);
          return found.length === n && Math.abs(total(found) - best) < 1e-9;
        },
      ),
      { numRuns: 200 },
    );
  });

  test('empty lists: both empty is right, an answer to nothing is extra, no answer is missing', () => {
    expect(compareValue('array', [], []).outcome).toBe('right');
    expect(compareValue('array', [], [{ a: 1 }]).outcome).toBe('extra');
    expect(compareValue('array', [{ a: 1 }], []).outcome).toBe('missing');
    expect(compareValue('array', ['a', 'b'], ['B', 'A']).outcome).toBe('right');
  });
});

describe('one document by its schema', () => {
  const fields = [
    { name: 'merchant', type: 'string' as const, required: true },
    { name: 'date', type: 'date' as const, required: true },
    { name: 'total', type: 'number' as const, required: true },
    { name: 'currency', type: 'string' as const, required: false },
  ];

  test('each expected field is compared by its type, with the confidence the run gave it', () => {
    const scores = scoreDocument({
      fields,
      expected: { merchant: 'MR. D.I.Y. (M) SDN BHD', date: '14-03-18', total: 'RM37.10', currency: null },
      got: { merchant: 'MR D.I.Y (M) SDN BHD', date: '2018-03-14', total: 37.1, currency: 'MYR', tax: 2 },
      evidence: { merchant: { confidence: 0.9 }, date: { confidence: 0.8 }, total: { confidence: 0.95 } },
    });
    expect(Object.keys(scores)).toEqual(['merchant', 'date', 'total', 'currency']);
    expect(scores.merchant).toMatchObject({ outcome: 'right', confidence: 0.9 });
    expect(scores.date).toMatchObject({ outcome: 'right', got: '2018-03-14' });
    expect(scores.total).toMatchObject({ outcome: 'right', expected: 'RM37.10', got: 37.1 });
    expect(scores.currency).toMatchObject({ outcome: 'extra', confidence: null });
  });

  test('a field its schema named without a type is compared by what the expected value is, not as text', () => {
    // An inline schema's bare names become text fields for the extraction, whose answer may still be a date or amount.
    const bare = ['merchant', 'date', 'total'].map((name) => ({ name, type: 'string' as const, required: false }));
    const input = {
      fields: bare,
      expected: { merchant: 'Acme Hardware', date: '02/11/2026', total: '42.50' },
      got: { merchant: 'ACME HARDWARE', date: '2026-11-02', total: 42.5 },
    };
    const asText = scoreDocument(input);
    expect([asText.date?.outcome, asText.total?.outcome]).toEqual(['wrong', 'wrong']);
    const untyped = scoreDocument({ ...input, untyped: ['merchant', 'date', 'total'] });
    expect(Object.values(untyped).map((f) => f.outcome)).toEqual(['right', 'right', 'right']);
  });

  test('a failed run counts every field missing (never dropped)', () => {
    const scores = scoreDocument({ fields, expected: { merchant: 'A', total: 1 }, got: null });
    expect(scores).toEqual({
      merchant: { expected: 'A', got: null, outcome: 'missing', score: 0, confidence: null },
      total: { expected: 1, got: null, outcome: 'missing', score: 0, confidence: null },
    });
  });
});
