/**
 * OpenAI's confidence from the output tokens' logprobs: the answer's (`confidenceFromLogprobs`, exp(mean logprob) over
 * the tokens of its values) and each value's (issue #18: a field signal): exp(mean logprob) over the tokens that spell
 * a top-level key's value. Grounding uses it in place of the answer's
 * overall confidence for that field (shared/fields/ground.ts), so one unsure value no longer hides behind sure ones.
 * Not to undo: only when the tokens spell the answer text exactly; otherwise no value gets a confidence of its own.
 */

export interface TokenLogprob {
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

/** Character ranges [start, end) of the values in a JSON text: strings that are not keys, numbers, true/false/null. */
export function jsonValueRanges(json: string): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  let i = 0;
  while (i < json.length) {
    const ch = json[i] as string;
    if (ch === '"') {
      let j = i + 1;
      while (j < json.length && json[j] !== '"') j += json[j] === '\\' ? 2 : 1;
      let k = j + 1;
      while (k < json.length && /\s/.test(json[k] as string)) k++;
      if (json[k] !== ':') ranges.push([i, Math.min(j + 1, json.length)]);
      i = j + 1;
    } else if (/[-0-9tfn]/.test(ch)) {
      let j = i;
      while (j < json.length && !/[,\]}\s]/.test(json[j] as string)) j++;
      ranges.push([i, j]);
      i = j;
    } else {
      i++;
    }
  }
  return ranges;
}

/**
 * exp(mean logprob) over the tokens that overlap the answer's values; over every token when the tokens do not spell
 * the answer (or no token carries a value). Undefined without logprobs.
 */
export function confidenceFromLogprobs(text: string, logprobs: readonly TokenLogprob[]): number | undefined {
  const usable = logprobs.filter((t) => Number.isFinite(t.logprob));
  if (usable.length === 0) return undefined;
  let counted = usable;
  if (usable.map((t) => t.token).join('') === text) {
    const ranges = jsonValueRanges(text);
    let offset = 0;
    counted = usable.filter((t) => {
      const start = offset;
      offset += t.token.length;
      return ranges.some(([a, b]) => start < b && offset > a);
    });
    if (counted.length === 0) counted = usable;
  }
  const mean = counted.reduce((sum, t) => sum + Math.min(0, t.logprob), 0) / counted.length;
  return Math.min(1, Math.max(0, Math.exp(mean)));
}
