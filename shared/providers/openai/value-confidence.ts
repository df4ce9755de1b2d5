/**
 * OpenAI's confidence in each value of a JSON answer, from the output tokens' logprobs (issue #18: a field signal):
 * exp(mean logprob) over the tokens that spell a top-level key's value. Grounding uses it in place of the answer's
 * overall confidence for that field (shared/fields/ground.ts), so one unsure value no longer hides behind sure ones.
 * Not to undo: only when the tokens spell the answer text exactly; otherwise no value gets a confidence of its own.
 */

interface TokenLogprob {
  token: string;
  logprob: number;
}

/** Skips a JSON string starting at `i` (its opening quote); returns the index after its closing quote. */
function skipString(json: string, i: number): number {
  let j = i + 1;
  while (j < json.length && json[j] !== '"') j += json[j] === '\\' ? 2 : 1;
  return j + 1;
}

/** Skips one JSON value starting at `i`; returns the index after it. */
function skipValue(json: string, i: number): number {
  const first = json[i];
  if (first === '"') return skipString(json, i);
  if (first === '{' || first === '[') {
    let depth = 0;
    let j = i;
    while (j < json.length) {
      const ch = json[j];
      if (ch === '"') {
        j = skipString(json, j);
        continue;
      }
      if (ch === '{' || ch === '[') depth += 1;
      if (ch === '}' || ch === ']') depth -= 1;
      j += 1;
      if (depth === 0) return j;
    }
    return j;
  }
  let j = i;
  while (j < json.length && !/[,}\]\s]/.test(json[j] as string)) j += 1;
  return j;
}

const skipSpace = (json: string, i: number): number => {
  let j = i;
  while (j < json.length && /\s/.test(json[j] as string)) j += 1;
  return j;
};

/** Character ranges [start, end) of each top-level key's value in a JSON object text; empty when it is not one. */
export function topLevelValueSpans(json: string): Map<string, [number, number]> {
  const spans = new Map<string, [number, number]>();
  let i = skipSpace(json, 0);
  if (json[i] !== '{') return spans;
  i = skipSpace(json, i + 1);
  while (i < json.length && json[i] === '"') {
    const keyEnd = skipString(json, i);
    let key: string;
    try {
      key = JSON.parse(json.slice(i, keyEnd)) as string;
    } catch {
      return spans;
    }
    i = skipSpace(json, keyEnd);
    if (json[i] !== ':') return spans;
    const start = skipSpace(json, i + 1);
    const end = skipValue(json, start);
    spans.set(key, [start, end]);
    i = skipSpace(json, end);
    if (json[i] !== ',') break;
    i = skipSpace(json, i + 1);
  }
  return spans;
}

/** Per top-level key, exp(mean logprob) of the tokens overlapping its value; undefined when the tokens are unusable. */
export function valueConfidences(text: string, logprobs: readonly TokenLogprob[]): Record<string, number> | undefined {
  if (logprobs.length === 0 || logprobs.some((t) => !Number.isFinite(t.logprob))) return undefined;
  if (logprobs.map((t) => t.token).join('') !== text) return undefined;
  const out: Record<string, number> = {};
  for (const [key, [a, b]] of topLevelValueSpans(text)) {
    let offset = 0;
    let sum = 0;
    let count = 0;
    for (const t of logprobs) {
      const start = offset;
      offset += t.token.length;
      if (start < b && offset > a) {
        sum += Math.min(0, t.logprob);
        count += 1;
      }
    }
    if (count > 0) out[key] = Math.round(Math.exp(sum / count) * 1000) / 1000;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
