/**
 * Structured JSON logs, one line per event. Deliberately tiny: values under keys that look like secrets are redacted
 * so an API key, a provider key or an auth header can never reach CloudWatch. A process may route the (already
 * redacted) entries elsewhere with `setLogSink` (the local stack prints them for a terminal); the JSON line is the default.
 */
import { ENV } from './infra/env.js';

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
type Level = Exclude<keyof typeof LEVELS, 'silent'>;

const SECRET_KEY = /(api[-_]?key|authorization|secret|password|token|credential)/i;

// Read per line, not through config.ts: logging must work before and without the configuration (and without zod).
function threshold(): number {
  const wanted = process.env[ENV.logLevel] as keyof typeof LEVELS | undefined;
  return LEVELS[wanted ?? 'info'] ?? LEVELS.info;
}

/** Replaces secret-looking values and turns errors into plain objects. */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 6) return '[depth]';
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEY.test(k) ? '[redacted]' : redact(v, depth + 1);
    return out;
  }
  return value;
}

/** One log event as written: level, time, message, then the redacted fields. */
export type LogEntry = { level: Level; time: string; message: string } & Record<string, unknown>;
export type LogSink = (entry: LogEntry) => void;

/** The default sink: one JSON line, warnings and errors on stderr. */
export const jsonSink: LogSink = (entry) => {
  const line = JSON.stringify(entry);
  if (entry.level === 'error' || entry.level === 'warn') process.stderr.write(`${line}\n`);
  else process.stdout.write(`${line}\n`);
};

let sink: LogSink = jsonSink;

/** Routes every later log entry to `next` (null: back to JSON lines). */
export function setLogSink(next: LogSink | null): void {
  sink = next ?? jsonSink;
}

function write(level: Level, message: string, fields?: Record<string, unknown>): void {
  if (LEVELS[level] < threshold()) return;
  sink({ level, time: new Date().toISOString(), message, ...(redact(fields ?? {}) as object) });
}

export const log = {
  debug: (message: string, fields?: Record<string, unknown>) => write('debug', message, fields),
  info: (message: string, fields?: Record<string, unknown>) => write('info', message, fields),
  warn: (message: string, fields?: Record<string, unknown>) => write('warn', message, fields),
  error: (message: string, fields?: Record<string, unknown>) => write('error', message, fields),
};
