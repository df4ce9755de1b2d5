/**
 * What the local stack prints for its log entries (shared/log.ts routes them here): on a terminal one readable line
 * each, otherwise the service's JSON lines unchanged (tests and tools parse them). Not to undo: identical warnings and
 * errors are printed once and then counted (`repeated: N` every few seconds), so a failing dependency cannot flood
 * the terminal with one stack trace per request.
 */
import type { LogEntry, LogSink } from '../../shared/log.js';

export type LogFormat = 'pretty' | 'json';

/** `VISION_LOCAL_LOG_FORMAT` when set, else pretty on a terminal and JSON otherwise. */
export function logFormat(requested: string | undefined, isTTY: boolean): LogFormat {
  if (requested === 'pretty' || requested === 'json') return requested;
  return isTTY ? 'pretty' : 'json';
}

const LEVEL_LABEL = { debug: 'DEBUG', info: 'INFO ', warn: 'WARN ', error: 'ERROR' } as const;

function fieldText(value: unknown): string {
  if (typeof value === 'string') return /[\s"=]/.test(value) ? JSON.stringify(value) : value;
  return JSON.stringify(value);
}

/**
 * One entry as a terminal line: `12:03:04 WARN  message key=value …`. An error shows its name and message; its stack
 * only when `withStacks` (LOG_LEVEL=debug).
 */
export function prettyLine(entry: LogEntry, withStacks = false): string {
  const { level, time, message, repeated, ...fields } = entry;
  const clock = time.slice(11, 19);
  const parts = [`${clock} ${LEVEL_LABEL[level]} ${message}`];
  let stack: string | undefined;
  for (const [key, value] of Object.entries(fields)) {
    if (value && typeof value === 'object' && 'message' in value && 'name' in value) {
      const error = value as { name: unknown; message: unknown; stack?: unknown };
      parts.push(`${key}=${fieldText(`${String(error.name)}: ${String(error.message)}`)}`);
      if (withStacks && typeof error.stack === 'string') stack = error.stack;
    } else {
      parts.push(`${key}=${fieldText(value)}`);
    }
  }
  if (typeof repeated === 'number') parts.push(`(repeated ${repeated} more times)`);
  return stack === undefined ? parts.join('  ') : `${parts.join('  ')}\n${stack}`;
}

/** Fields that differ between otherwise identical events (ids, times, durations, stacks). */
const VOLATILE = /(^time$|^id$|Id$|At$|Ms$|^stack$)/;

function fingerprint(entry: LogEntry): string {
  return JSON.stringify(entry, (key, value: unknown) => (VOLATILE.test(key) ? undefined : value));
}

export interface ConsoleSink {
  sink: LogSink;
  /** Prints the counts of repeats not yet reported. */
  flush(): void;
  /** Stops the timer after a last `flush()` (the stack calls it before it exits). */
  stop(): void;
}

/**
 * A sink that prints each entry in `format` through `out`, and collapses identical warnings and errors: the first is
 * printed, later ones within `windowMs` of the previous are counted and reported by the next `flush()` (a timer calls
 * it every `windowMs`), as the first entry again with `repeated: N`.
 */
export function createConsoleSink(options: {
  format: LogFormat;
  out: (line: string, level: LogEntry['level']) => void;
  withStacks?: boolean;
  windowMs?: number;
  now?: () => number;
}): ConsoleSink {
  const windowMs = options.windowMs ?? 5000;
  const now = options.now ?? Date.now;
  const seen = new Map<string, { entry: LogEntry; repeated: number; lastSeen: number }>();
  const print = (entry: LogEntry) =>
    options.out(
      options.format === 'json' ? JSON.stringify(entry) : prettyLine(entry, options.withStacks ?? false),
      entry.level,
    );

  const flush = () => {
    const at = now();
    for (const [key, state] of seen) {
      if (state.repeated > 0) {
        print({ ...state.entry, time: new Date(at).toISOString(), repeated: state.repeated });
        state.repeated = 0;
      } else if (at - state.lastSeen >= windowMs) {
        seen.delete(key);
      }
    }
  };
  const timer = setInterval(flush, windowMs);
  timer.unref();

  const sink: LogSink = (entry) => {
    if (entry.level !== 'warn' && entry.level !== 'error') return print(entry);
    const key = fingerprint(entry);
    const state = seen.get(key);
    const at = now();
    if (state && at - state.lastSeen < windowMs) {
      state.repeated += 1;
      state.lastSeen = at;
      return;
    }
    seen.set(key, { entry, repeated: 0, lastSeen: at });
    print(entry);
  };
  return {
    sink,
    flush,
    stop: () => {
      clearInterval(timer);
      flush();
    },
  };
}

export interface Writers {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

/**
 * Turns whatever else this process writes to stdout or stderr into log entries: tesseract's worker thread
 * ("Warning: Invalid resolution 25 dpi"), mupdf's WASM ("warning: repairing PDF document"), Node's own warnings. Each
 * write is one entry (`output`: the text, trailing newline removed). Returns the original writers, which the stack's own
 * output (log lines, banner) goes through. A crash's stack trace is written by Node directly and stays raw.
 */
export function captureForeignOutput(onOutput: (stream: 'stdout' | 'stderr', text: string) => void): Writers {
  const originals = {
    stdout: process.stdout.write.bind(process.stdout),
    stderr: process.stderr.write.bind(process.stderr),
  };
  for (const name of ['stdout', 'stderr'] as const) {
    const capture = (chunk: unknown, ...rest: unknown[]): boolean => {
      const text = (typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8')).replace(
        /\s+$/,
        '',
      );
      if (text !== '') onOutput(name, text);
      const callback = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined;
      callback?.();
      return true;
    };
    process[name].write = capture as typeof process.stdout.write;
  }
  return { stdout: (text) => void originals.stdout(text), stderr: (text) => void originals.stderr(text) };
}
