/**
 * The assignment problem: pairs rows with columns so that the total score is as high as possible (the Hungarian
 * method, with potentials, O(n²·m)). Used to pair the items of an expected array with the items of an answer's.
 * Not to undo: above `EXACT_LIMIT` items a side the items are paired by position, without scoring every pair, so that
 * a hostile answer with thousands of rows cannot make one comparison take seconds (a score matrix is rows × columns
 * comparisons); real line-item lists are far below it.
 */

/** Most items a side paired by score; beyond it, by position. */
export const EXACT_LIMIT = 300;

/**
 * The pairs `[row, column]` of the highest total score; every row is paired when rows ≤ columns, else every column.
 * `scoreOf(i, j)` is in [0, 1]. A pair may have score 0 (the caller decides what such a pair means).
 */
export function bestPairs(
  rows: number,
  columns: number,
  scoreOf: (i: number, j: number) => number,
): [number, number][] {
  if (rows === 0 || columns === 0) return [];
  if (rows > EXACT_LIMIT || columns > EXACT_LIMIT) {
    return Array.from({ length: Math.min(rows, columns) }, (_, i): [number, number] => [i, i]);
  }
  const score = Array.from({ length: rows }, (_, i) => Array.from({ length: columns }, (_, j) => scoreOf(i, j)));
  if (rows > columns) {
    const transposed = Array.from({ length: columns }, (_, j) =>
      Array.from({ length: rows }, (_, i) => at(score, i, j)),
    );
    return assign(transposed).map(([j, i]) => [i, j]);
  }
  return assign(score);
}

function at(score: readonly (readonly number[])[], i: number, j: number): number {
  return score[i]?.[j] ?? 0;
}

/** Rows ≤ columns: every row gets a distinct column, minimising Σ (1 − score). */
function assign(score: readonly (readonly number[])[]): [number, number][] {
  const n = score.length;
  const m = score[0]?.length ?? 0;
  const cost = (i: number, j: number) => 1 - at(score, i - 1, j - 1);
  // 1-based potentials and matching, as in the textbook formulation; column 0 is the virtual start.
  const u = new Float64Array(n + 1);
  const v = new Float64Array(m + 1);
  const rowOf = new Int32Array(m + 1);
  const way = new Int32Array(m + 1);
  for (let i = 1; i <= n; i++) {
    rowOf[0] = i;
    let j0 = 0;
    const minv = new Float64Array(m + 1).fill(Number.POSITIVE_INFINITY);
    const used = new Uint8Array(m + 1);
    do {
      used[j0] = 1;
      const i0 = rowOf[j0] ?? 0;
      let delta = Number.POSITIVE_INFINITY;
      let j1 = 0;
      for (let j = 1; j <= m; j++) {
        if (used[j]) continue;
        const reduced = cost(i0, j) - (u[i0] ?? 0) - (v[j] ?? 0);
        if (reduced < (minv[j] ?? 0)) {
          minv[j] = reduced;
          way[j] = j0;
        }
        if ((minv[j] ?? 0) < delta) {
          delta = minv[j] ?? 0;
          j1 = j;
        }
      }
      for (let j = 0; j <= m; j++) {
        if (used[j]) {
          const r = rowOf[j] ?? 0;
          u[r] = (u[r] ?? 0) + delta;
          v[j] = (v[j] ?? 0) - delta;
        } else {
          minv[j] = (minv[j] ?? 0) - delta;
        }
      }
      j0 = j1;
    } while (rowOf[j0] !== 0);
    do {
      const j1 = way[j0] ?? 0;
      rowOf[j0] = rowOf[j1] ?? 0;
      j0 = j1;
    } while (j0 !== 0);
  }
  const pairs: [number, number][] = [];
  for (let j = 1; j <= m; j++) {
    const i = rowOf[j] ?? 0;
    if (i > 0) pairs.push([i - 1, j - 1]);
  }
  return pairs.sort((a, b) => a[0] - b[0]);
}
