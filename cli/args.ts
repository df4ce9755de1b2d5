/**
 * The `vision` CLI's argument handling on top of node's util.parseArgs: every usage error names the argument it is
 * about, and a misspelt command, option or value gets the nearest known one ("did you mean …?"). Values are checked
 * here, before any request is made.
 */
import { type ParseArgsConfig, parseArgs } from 'node:util';

/** Bad arguments: exit code 2, and the message names the argument. */
export class UsageError extends Error {}

/** Options every command takes. */
export const GLOBAL_OPTIONS = {
  'base-url': { type: 'string' },
  'api-key': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/**
 * Edit distance: the fewest single-character insertions, deletions, substitutions and swaps of two neighbours
 * (`reciept` → `receipt` is one) from `a` to `b` (Levenshtein with transpositions, "optimal string alignment").
 */
export function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, (before[j - 2] ?? 0) + 1);
      current.push(best);
    }
    [before, previous] = [previous, current];
  }
  return previous[b.length] ?? 0;
}

/** The known word nearest to `input`, when it is near enough to be a typo (at most a third of it wrong). */
export function nearest(input: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const word of known) {
    const distance = editDistance(input.toLowerCase(), word.toLowerCase());
    if (distance < bestDistance) [best, bestDistance] = [word, distance];
  }
  if (best === undefined || bestDistance === 0) return best;
  return bestDistance <= Math.max(1, Math.floor(best.length / 3)) ? best : undefined;
}

/** `; did you mean "x"?` for the nearest known word, or nothing. */
export function didYouMean(input: string, known: readonly string[]): string {
  const near = nearest(input, known);
  return near === undefined ? '' : `; did you mean "${near}"?`;
}

/** `value` when it is one of `allowed`; otherwise a UsageError naming the flag, the allowed values and the nearest. */
export function oneOf<const T extends string>(
  value: string | undefined,
  allowed: readonly T[],
  flag: string,
): T | undefined {
  if (value === undefined) return undefined;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new UsageError(`${flag} must be one of ${allowed.join(', ')}; got "${value}"${didYouMean(value, allowed)}`);
}

/**
 * parseArgs with usage errors a person can act on: unknown options (with the nearest known one), options missing
 * their value, and positionals named after `positionals` (`missing <file>`, `unexpected argument "x"`).
 */
export function parse<const T extends ParseArgsConfig>(
  config: T,
  positionals: readonly string[],
): ReturnType<typeof parseArgs<T>> {
  const options = config.options ?? {};
  const names = Object.keys(options);
  // A lenient pass first, to say what is wrong in our words (parseArgs' own messages name no alternative).
  const { tokens } = parseArgs({ ...config, strict: false, tokens: true });
  for (const token of tokens ?? []) {
    if (token.kind !== 'option') continue;
    const option = options[token.name];
    if (option === undefined) {
      const known = names.map((name) => `--${name}`);
      const near = nearest(token.rawName, known);
      throw new UsageError(`unknown option ${token.rawName}${near ? `; did you mean ${near}?` : ''}`);
    }
    if (option.type === 'string' && token.value === undefined) throw new UsageError(`${token.rawName} needs a value`);
    if (option.type === 'boolean' && token.inlineValue === true)
      throw new UsageError(`${token.rawName} takes no value`);
  }
  let parsed: ReturnType<typeof parseArgs<T>>;
  try {
    parsed = parseArgs(config);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const given = (parsed.positionals as string[] | undefined) ?? [];
  if (!(parsed.values as { help?: boolean }).help) {
    const missing = positionals[given.length];
    if (missing !== undefined) throw new UsageError(`missing <${missing}>`);
    const extra = given[positionals.length];
    if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}"`);
  }
  return parsed;
}

/** k=v → string; k:=json → parsed JSON value. */
export function parsePairs(pairs: string[] | undefined, flag: string): Record<string, unknown> | undefined {
  if (!pairs || pairs.length === 0) return undefined;
  const out: Record<string, unknown> = {};
  for (const pair of pairs) {
    const json = pair.match(/^([^=:]+):=(.*)$/s);
    if (json) {
      try {
        out[json[1] as string] = JSON.parse(json[2] as string);
      } catch {
        throw new UsageError(`${flag} ${pair}: the value after := is not valid JSON`);
      }
      continue;
    }
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`${flag} expects key=value (or key:=json), got "${pair}"`);
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

export function parseNumber(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new UsageError(`${flag} expects a number, got "${value}"`);
  return n;
}

/** The forms --from and --to take, as the help and the errors state them. */
export const TIME_FORMS = '2025-01-31 (midnight UTC), 2025-01-31T09:30:00Z or 2025-01-31T09:30:00+02:00';

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

/** A date or a date-time with its zone (TIME_FORMS), as the UTC timestamp the API takes; a UsageError otherwise. */
export function parseTime(value: string | undefined, flag: string): string | undefined {
  if (value === undefined) return undefined;
  const match = DATE.exec(value) ?? DATE_TIME.exec(value);
  const [year, month, day] = (match?.slice(1, 4) ?? []).map(Number) as [number?, number?, number?];
  const time = match ? Date.parse(DATE.test(value) ? `${value}T00:00:00Z` : value.toUpperCase()) : Number.NaN;
  // Date.parse rolls 2025-02-30 over to March: a real calendar day only.
  const calendar = new Date(Date.UTC(year ?? 0, (month ?? 1) - 1, day ?? 0));
  const realDay =
    calendar.getUTCFullYear() === year && calendar.getUTCMonth() + 1 === month && calendar.getUTCDate() === day;
  if (!match || Number.isNaN(time) || !realDay) {
    throw new UsageError(`${flag} "${value}" is not a date or time; use ${TIME_FORMS}`);
  }
  return new Date(time).toISOString();
}
