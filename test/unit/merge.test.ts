/** Merging chunk answers (shared/worker/merge.ts): page order, seams, first confident values, alternatives. */
import { type ChunkAnswer, concatRows, mergeJson, mergeText } from '../../shared/worker/merge.js';

const chunk = (first: number, last: number, result: Record<string, unknown>, extra: Partial<ChunkAnswer> = {}) => ({
  first,
  last,
  result,
  ...extra,
});

describe('mergeText', () => {
  test('pages in page order whatever order they finished in, joined by a form feed line', () => {
    const merged = mergeText([chunk(3, 3, { text: 'three' }), chunk(1, 1, { text: 'one' }), chunk(2, 2, { text: '' })]);
    expect(merged.result).toEqual({
      text: 'one\n\f\n\n\f\nthree',
      pages: [
        { page: 1, text: 'one' },
        { page: 2, text: '' },
        { page: 3, text: 'three' },
      ],
    });
  });

  test('the native confidence is the mean over pages of the chunks that report one', () => {
    const merged = mergeText([
      chunk(1, 1, { text: 'a' }, { nativeConfidence: 0.9 }),
      chunk(2, 2, { text: 'b' }, { nativeConfidence: 0.5 }),
      chunk(3, 3, { text: 'c' }),
    ]);
    expect(merged.nativeConfidence).toBeCloseTo(0.7);
  });
});

describe('mergeJson', () => {
  test('a total on page 1 and page 40: equal values are one, a different one is kept as an alternative', () => {
    const same = mergeJson([chunk(1, 20, { total: 1200 }), chunk(21, 40, { total: 1200 })]);
    expect(same.result.total).toBe(1200);
    expect(same.alternatives).toEqual({});

    const differ = mergeJson([chunk(21, 40, { total: 1250 }), chunk(1, 20, { total: 1200 })]);
    expect(differ.result.total).toBe(1200);
    // A chunk of 20 pages does not say which holds its value: grounding finds the page (never the chunk's first).
    expect(differ.alternatives).toEqual({ total: [{ value: 1250 }] });
    const onePage = mergeJson([chunk(1, 1, { total: 1200 }), chunk(2, 2, { total: 1250 })]);
    expect(onePage.alternatives).toEqual({ total: [{ value: 1250, page: 2 }] });
  });

  test('scalars come from the first non-null value; a chunk that is not confident yields to a later one', () => {
    const merged = mergeJson([
      chunk(1, 10, { vendor: null, date: '2026-01-02' }, { nativeConfidence: 0.3 }),
      chunk(11, 20, { vendor: 'ACME', date: '2026-01-03' }, { nativeConfidence: 0.9 }),
    ]);
    expect(merged.result).toEqual({ vendor: 'ACME', date: '2026-01-03' });
    expect(merged.alternatives).toEqual({ date: [{ value: '2026-01-02' }] });
  });

  test('strings differing only in whitespace do not conflict', () => {
    const merged = mergeJson([chunk(1, 2, { vendor: 'ACME  Ltd' }), chunk(3, 4, { vendor: ' ACME Ltd ' })]);
    expect(merged.alternatives).toEqual({});
  });

  test('arrays are concatenated in page order, a key missing from some chunks included', () => {
    const merged = mergeJson([
      chunk(3, 4, { items: [{ n: 3 }] }),
      chunk(1, 2, { items: [{ n: 1 }, { n: 2 }], vendor: 'ACME' }),
      chunk(5, 6, { items: null }),
    ]);
    expect(merged.result).toEqual({ items: [{ n: 1 }, { n: 2 }, { n: 3 }], vendor: 'ACME' });
  });
});

describe('concatRows at a seam', () => {
  test('a row repeated across the seam is kept once', () => {
    const row = { description: 'Widget', amount: 5 };
    expect(
      concatRows([
        [{ description: 'A', amount: 1 }, row],
        [{ ...row }, { description: 'B', amount: 2 }],
      ]),
    ).toEqual([{ description: 'A', amount: 1 }, row, { description: 'B', amount: 2 }]);
  });

  test('a header row printed on every page is kept once', () => {
    const header = ['Date', 'Description', 'Amount'];
    expect(
      concatRows([
        [header, ['01-02', 'Coffee', '2.50']],
        [header, ['01-03', 'Tea', '1.80']],
      ]),
    ).toEqual([header, ['01-02', 'Coffee', '2.50'], ['01-03', 'Tea', '1.80']]);
  });

  test('a table row split over two pages is joined into one row', () => {
    expect(
      concatRows([
        [
          { description: 'Rent', amount: 900 },
          { description: 'Consulting, March', amount: null },
        ],
        [
          { description: null, amount: 1500 },
          { description: 'Travel', amount: 120 },
        ],
      ]),
    ).toEqual([
      { description: 'Rent', amount: 900 },
      { description: 'Consulting, March', amount: 1500 },
      { description: 'Travel', amount: 120 },
    ]);
  });

  test('rows that differ are both kept, and a repeat inside a chunk is not a seam', () => {
    const coffee = { description: 'Coffee', amount: 2.5 };
    expect(concatRows([[coffee, coffee], [{ description: 'Coffee', amount: 3 }]])).toEqual([
      coffee,
      coffee,
      { description: 'Coffee', amount: 3 },
    ]);
  });
});

describe('words', () => {
  const page = (n: number) => ({ page: n, source: 'text-layer' as const, words: [] });

  test("every chunk's words in page order whatever order they finished in; none when no chunk had any", () => {
    const merged = mergeJson([
      chunk(3, 4, {}, { words: [page(3), page(4)] }),
      chunk(1, 2, {}, { words: [page(1), page(2)] }),
      chunk(5, 5, {}),
    ]);
    expect(merged.words?.map((p) => p.page)).toEqual([1, 2, 3, 4]);
    expect(mergeText([chunk(1, 1, { text: 'a' })]).words).toBeUndefined();
  });
});
