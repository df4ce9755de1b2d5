/**
 * Limits on the shape of JSON a client sends, checked by walking the value iteratively (never recursively): request
 * bodies before validation (depth, no `__proto__`), and values stored as sent (depth, numbers DynamoDB holds exactly).
 * Without them such input overflowed the stack or failed the write with a 500: docs/decisions.md#limits-on-the-shape-of-client-json.
 */

export const BODY_MAX_DEPTH = 32;
export const STORED_MAX_DEPTH = 16;
const MIN_MAGNITUDE = 1e-130;

export interface JsonProblem {
  /** Where, as keys and array indexes from the value's root. */
  path: (string | number)[];
  message: string;
}

/** The first problem found in `value`, or undefined. `numbers`: also refuse numbers DynamoDB cannot store exactly. */
export function jsonProblem(value: unknown, limits: { maxDepth: number; numbers?: boolean }): JsonProblem | undefined {
  const pending: { value: unknown; path: (string | number)[] }[] = [{ value, path: [] }];
  while (pending.length > 0) {
    const { value: current, path } = pending.pop() as (typeof pending)[number];
    if (typeof current === 'number' && limits.numbers) {
      const magnitude = Math.abs(current);
      if (magnitude > Number.MAX_SAFE_INTEGER || (magnitude !== 0 && magnitude < MIN_MAGNITUDE)) {
        return {
          path,
          message: `numbers must be 0 or of magnitude ${MIN_MAGNITUDE} to ${Number.MAX_SAFE_INTEGER} (send larger or more precise values as strings)`,
        };
      }
    }
    if (current === null || typeof current !== 'object') continue;
    // A container at depth d holds values at depth d + 1; the root container is level 1.
    if (path.length + 1 > limits.maxDepth) {
      return { path, message: `JSON may nest at most ${limits.maxDepth} levels` };
    }
    if (Array.isArray(current)) {
      current.forEach((item, index) => {
        pending.push({ value: item, path: [...path, index] });
      });
      continue;
    }
    for (const [key, item] of Object.entries(current)) {
      if (key === '__proto__') return { path: [...path, key], message: 'the key "__proto__" is not allowed' };
      pending.push({ value: item, path: [...path, key] });
    }
  }
  return undefined;
}
