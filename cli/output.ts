/**
 * What the `vision` CLI writes besides JSON: the progress line on a terminal, one line per run for `runs list`, and
 * errors as one line with a hint a person can act on (which variable holds the key, whether the service runs).
 * Not to undo: the progress line redraws itself every second while a run is going, so a long run never looks frozen;
 * and nothing the service sends reaches the terminal raw (`terminalSafe`, `jsonText`): a value can carry document
 * text (a review reason, a file name), and an escape sequence in it would rewrite the screen.
 * Why these outputs: docs/decisions.md#the-clis-output.
 */
import type { ProgressEvent, RunResponse, UsageResponse, UsageRow } from '../sdk/index.js';
import { VisionError } from '../sdk/index.js';
import { didYouMean, UsageError } from './args.js';

export const EXIT = { ok: 0, usage: 2, rejected: 3, runFailed: 4, service: 5, interrupted: 130 } as const;

/** Where the CLI writes, and what it knows about its terminal (the process's, or a test's). */
export interface Io {
  stdout(text: string): void;
  stderr(text: string): void;
  env: Record<string, string | undefined>;
  /** stderr is a terminal: progress is shown. */
  stderrIsTTY: boolean;
  /** stdin and stderr are a terminal: the cost question may be asked. */
  interactive: boolean;
}

/**
 * Control characters but the newline (C0 with tab and CR, DEL, C1) and the bidirectional formatting characters: what
 * must not reach a terminal from a value (an escape sequence, a carriage return over a line, a reordered line).
 */
const UNPRINTABLE = /(?!\n)[\p{Cc}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/gu;

/** `text` with the characters a terminal must not get from a value removed (newlines kept). */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, '');
}

/**
 * `value` as indented JSON (or one line with `indent` 0) and a newline, with every character `printable` would drop
 * escaped as `\uXXXX` instead (JSON.stringify leaves DEL, C1 and the bidi characters raw): parsed back it is the
 * same value, character for character, and on a terminal it is inert.
 */
export function jsonText(value: unknown, indent = 2): string {
  const json = JSON.stringify(value, null, indent) ?? 'null';
  return `${json.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}\n`;
}

/** `io` with every write passed through `printable` (what the CLI prints; the progress line draws on the raw one). */
export function terminalSafe(io: Io): Io {
  return { ...io, stdout: (text) => io.stdout(printable(text)), stderr: (text) => io.stderr(printable(text)) };
}

/** Seconds with one decimal (`12.3s`). */
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

/** The state of an analysis, without the elapsed time (the line adds it each time it is drawn). */
export function describeProgress(event: ProgressEvent): string {
  switch (event.stage) {
    case 'uploading': {
      const pct = event.totalBytes ? Math.round(((event.uploadedBytes ?? 0) / event.totalBytes) * 100) : 0;
      return `uploading ${pct}% (${event.uploadedBytes ?? 0}/${event.totalBytes ?? '?'} bytes)`;
    }
    case 'queued':
    case 'processing': {
      const pages = event.progress ? ` pages ${event.progress.pagesDone}/${event.progress.pagesTotal}` : '';
      return `${event.stage} ${event.jobId ?? ''}${pages}`;
    }
    case 'completed':
      return `completed ${event.jobId ?? ''}`;
  }
}

/**
 * The progress line on stderr: `<state> <elapsed>`, redrawn in place on every event and once a second in between.
 * Nothing at all when stderr is not a terminal.
 */
export class ProgressLine {
  private text: string | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly started: number;

  constructor(
    private readonly write: (text: string) => void,
    private readonly enabled: boolean,
    private readonly now: () => number = Date.now,
  ) {
    this.started = now();
  }

  update(event: ProgressEvent): void {
    if (!this.enabled) return;
    this.text = printable(describeProgress(event));
    this.draw();
    // Once started, the clock keeps ticking until the line ends (unref: it never keeps the process alive).
    this.timer ??= setInterval(() => this.draw(), 1000);
    this.timer.unref?.();
  }

  /** Ends the line (a newline after it), before anything else is written to the terminal. */
  end(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    if (this.text !== undefined) this.write('\n');
    this.text = undefined;
  }

  private draw(): void {
    if (this.text === undefined) return;
    this.write(`\r\x1b[2K${this.text} ${seconds(this.now() - this.started)}`);
  }
}

/** One line per run for `runs list`: id, status, created, workflow, schema, charged, and confidence / error / stage. */
export function runLine(run: RunResponse): string {
  const money = (usd: number) => `$${usd}`;
  const base = [run.jobId, run.status.padEnd(9), run.createdAt, run.workflow ?? '-', run.schemaId ?? '-'];
  switch (run.status) {
    case 'completed':
      return [
        ...base,
        money(run.chargedUsd),
        `confidence ${run.confidence}`,
        ...(run.review?.needed ? ['review needed'] : []),
      ].join('  ');
    case 'failed':
      return [...base, money(run.chargedUsd), run.error.code].join('  ');
    case 'queued': {
      const pages = run.progress ? ` ${run.progress.pagesDone}/${run.progress.pagesTotal} pages` : '';
      return [...base, '-', `${run.stage}${pages}`].join('  ');
    }
    default:
      // A status this CLI does not know yet: what every run has.
      return base.join('  ');
  }
}

/**
 * `usage` as a person reads it: the period, then one row per workflow and the total (runs by state, money charged
 * and refunded to the micro-dollar, reviews, the share accepted, the mean confidence). `--json` prints the whole
 * answer instead, with its series for charts.
 */
export function usageTable(usage: UsageResponse): string {
  const header = [
    'workflow',
    'runs',
    'completed',
    'failed',
    'queued',
    'charged',
    'refunded',
    'reviewed',
    'accepted',
    'confidence',
  ];
  const cells = (label: string, row: UsageRow) => [
    label,
    String(row.runs),
    String(row.completed),
    String(row.failed),
    String(row.queued),
    `$${row.chargedUsd}`,
    `$${row.refundedUsd}`,
    String(row.verified),
    row.acceptanceRate === null ? '-' : `${Math.round(row.acceptanceRate * 100)}%`,
    row.meanConfidence === null ? '-' : row.meanConfidence.toFixed(2),
  ];
  const rows = [
    header,
    ...usage.workflows.map((row) => cells(row.workflow ?? '(none)', row)),
    cells('total', usage.totals),
  ];
  const widths = header.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  // The workflow left-aligned, every number right-aligned under its heading.
  const line = (row: string[]) =>
    row
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[0] ?? 0) : cell.padStart(widths[column] ?? 0)))
      .join('  ')
      .trimEnd();
  const period = `usage from ${usage.from} to ${usage.to}`;
  const none = usage.workflows.length === 0 ? ['no runs in this period'] : [];
  return `${[period, ...none, ...rows.map(line)].join('\n')}\n`;
}

/**
 * What `analyze` writes on stderr after a completed run whose review is needed: why, one reason a line (the fields a
 * person should check). Empty for any other run.
 */
export function reviewNotice(run: RunResponse): string {
  if (run.status !== 'completed' || !run.review?.needed) return '';
  const reasons = run.review.reasons.length > 0 ? run.review.reasons : ['(no reason given)'];
  return `review needed for run ${run.jobId}:\n${reasons.map((reason) => `  - ${reason}\n`).join('')}`;
}

/** Where the address and the key came from, for hints. */
export interface Origin {
  baseUrl: string | undefined;
  baseUrlFrom: string;
  apiKeyFrom: string;
}

/** Writes the error the way a person reads it (one line, then a hint when there is one) and returns the exit code. */
export function reportError(error: unknown, io: Io, origin: Origin, currentJobId: string | undefined): number {
  if (error instanceof UsageError) {
    io.stderr(`error: ${error.message}\nRun "vision --help" for usage.\n`);
    return EXIT.usage;
  }
  if (!(error instanceof VisionError)) {
    io.stderr(`error: ${(error as Error)?.stack ?? String(error)}\n`);
    return EXIT.service;
  }
  if (error.code === 'ABORTED') {
    const timedOut = error.details?.reason === 'timeout';
    const jobId = error.jobId ?? currentJobId;
    io.stderr(
      `${timedOut ? 'error: timed out' : 'interrupted'}${jobId ? `; run ${jobId} continues on the service (vision runs get ${jobId})` : ''}\n`,
    );
    return timedOut ? EXIT.service : EXIT.interrupted;
  }
  // A bad argument the SDK found (a file it cannot read, say): the message is the whole story.
  if (error.code === 'INVALID_ARGUMENT') {
    io.stderr(`error: ${error.message}\n`);
    return EXIT.usage;
  }
  if (error.run) io.stdout(jsonText(error.run));
  const where = error.requestId ? ` [request ${error.requestId}]` : '';
  const status = error.status ? ` (${error.status})` : '';
  io.stderr(`error: ${error.code}${status}: ${error.message}${where}\n`);
  const hint = hintFor(error, origin);
  if (hint !== undefined) io.stderr(`hint: ${hint}\n`);
  else if (error.details && Object.keys(error.details).length > 0) {
    io.stderr(`details: ${jsonText(error.details, 0)}`);
  }
  // The run was created and goes on whatever failed here (polling, say): never leave the user without its id.
  if (error.jobId && !error.run) {
    io.stderr(`run ${error.jobId} continues on the service (vision runs get ${error.jobId})\n`);
  }
  if (error.run) return EXIT.runFailed;
  if (error.status >= 400 && error.status < 500) return EXIT.rejected;
  return EXIT.service;
}

function hintFor(error: VisionError, origin: Origin): string | undefined {
  const details = error.details ?? {};
  switch (error.code) {
    case 'UNAUTHORIZED':
      return `the service refused the API key from ${origin.apiKeyFrom}: check it, or pass another with --api-key`;
    case 'UNKNOWN_SCHEMA': {
      const known = Array.isArray(details.knownSchemaIds) ? details.knownSchemaIds.map(String) : [];
      const typo = didYouMean(String(details.schemaId ?? ''), known).replace(/^; /, '');
      return `${typo ? `${typo} ` : ''}known schemas: ${known.join(', ')} (vision schemas)`;
    }
    case 'NETWORK_ERROR': {
      const where = origin.baseUrl ?? 'the address given';
      if (details.cause === 'ECONNREFUSED') {
        return `nothing answers at ${where} (from ${origin.baseUrlFrom}): is the service running there? (npm start runs it locally)`;
      }
      if (details.cause === 'ENOTFOUND' || details.cause === 'EAI_AGAIN') {
        return `the host of ${where} (from ${origin.baseUrlFrom}) is not found: check the address`;
      }
      return undefined;
    }
    default:
      return undefined;
  }
}
