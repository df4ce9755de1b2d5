/**
 * `vision`: command-line client of the Vision Analysis Service, built on sdk/index.ts.
 * Results are JSON on stdout (pipe into jq); progress goes to stderr, and only when stderr is a terminal.
 * Over 400 lines: one command-line tool, its commands, options and exit codes read in one place.
 */
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline/promises';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { type AnalyzeParams, type InlineSchema, type ProgressEvent, VisionClient, VisionError } from '../sdk/index.js';

const EXIT = { ok: 0, usage: 2, rejected: 3, runFailed: 4, service: 5, interrupted: 130 } as const;

const HELP = `vision — client for the Vision Analysis Service

Usage:
  vision analyze <file> --prompt "…" [--schema <id> | --schema-file f.json] [--format json|text]
                 [--workflow w] [--max-cost 0.50] [--yes] [--no-wait] [--metadata k=v …] [--timeout s]
  vision runs list [--workflow w] [--status queued|completed|failed] [--limit n] [--cursor c]
  vision runs get <jobId>
  vision verify <jobId> (--accept | --correct field=value …) [--note "…"]
  vision usage [--from 2025-01-01T00:00:00Z] [--to …]
  vision schemas
  vision health

Global options:
  --base-url <url>   service address (default: $VISION_BASE_URL)
  --api-key <key>    API key (default: $VISION_API_KEY)
  -h, --help         this help

analyze:
  <file> is a .jpg/.jpeg/.png/.heic/.pdf file. --schema names a built-in schema (see \`vision schemas\`);
  --schema-file is an inline schema {label, expectedFields, promptScaffold?}. --format is the run's outputFormat.
  --metadata k=v sends a string; k:=<json> sends a JSON value (e.g. n:=42). Repeatable.
  Without --no-wait the command polls until the run is final and prints the completed run; with --no-wait it
  prints the queued creation envelope (poll later with \`vision runs get <jobId>\`).
  When the estimated cost needs confirmation: on a terminal you are asked (y/N); otherwise the command fails
  unless --yes (or --max-cost, a budget) is given.
verify:
  --accept marks the result accepted; --correct field=value (or field:=<json>) records corrections (accepted=false
  unless --accept is also given).

Output: the JSON response on stdout; errors on stderr as "error: CODE (status): message".
A failed run also prints its envelope on stdout.

Exit codes:
  0    success
  2    usage error (bad arguments, missing --api-key/--base-url)
  3    request rejected by the service (4xx: invalid request, unknown schema, cost confirmation needed, …)
  4    the run ended failed (e.g. PROVIDER_ERROR)
  5    service or network error (5xx, unreachable, --timeout reached)
  130  interrupted (Ctrl-C); a created run keeps going on the service
`;

class UsageError extends Error {}

const globalOptions = {
  'base-url': { type: 'string' },
  'api-key': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const progressEnabled = process.stderr.isTTY === true;
let progressLineOpen = false;
function progress(text: string): void {
  if (!progressEnabled) return;
  process.stderr.write(`\r\x1b[2K${text}`);
  progressLineOpen = true;
}
function endProgress(): void {
  if (progressLineOpen) process.stderr.write('\n');
  progressLineOpen = false;
}

function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** k=v → string; k:=json → parsed JSON value. */
function parsePairs(pairs: string[] | undefined, flag: string): Record<string, unknown> | undefined {
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

function parseNumber(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new UsageError(`${flag} expects a number, got "${value}"`);
  return n;
}

function client(values: { 'base-url'?: string; 'api-key'?: string }): VisionClient {
  const baseUrl = values['base-url'] ?? process.env.VISION_BASE_URL;
  const apiKey = values['api-key'] ?? process.env.VISION_API_KEY;
  if (!baseUrl) throw new UsageError('no service address: set VISION_BASE_URL or pass --base-url');
  if (!apiKey) throw new UsageError('no API key: set VISION_API_KEY or pass --api-key');
  try {
    return new VisionClient({ baseUrl, apiKey });
  } catch (error) {
    // The SDK refuses an address that is not an http(s) URL.
    throw new UsageError((error as Error).message.replace(/^VisionClient: /, ''));
  }
}

function parse<const T extends ParseArgsConfig>(config: T, positionals: number): ReturnType<typeof parseArgs<T>> {
  let parsed: ReturnType<typeof parseArgs<T>>;
  try {
    parsed = parseArgs(config);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const count = (parsed.positionals as string[] | undefined)?.length ?? 0;
  if (!(parsed.values as { help?: boolean }).help && count !== positionals) {
    throw new UsageError(
      positionals === 0
        ? `unexpected argument: ${(parsed.positionals as string[]).join(' ')}`
        : `expected ${positionals} argument(s), got ${count}`,
    );
  }
  return parsed;
}

async function askYesNo(question: string): Promise<boolean> {
  endProgress();
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(question);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

function describeProgress(event: ProgressEvent): string {
  const secs = `${(event.elapsedMs / 1000).toFixed(1)}s`;
  switch (event.stage) {
    case 'uploading': {
      const pct = event.totalBytes ? Math.round(((event.uploadedBytes ?? 0) / event.totalBytes) * 100) : 0;
      return `uploading ${pct}% (${event.uploadedBytes ?? 0}/${event.totalBytes ?? '?'} bytes) ${secs}`;
    }
    case 'queued':
      return `queued ${event.jobId ?? ''} ${secs}`;
    case 'processing':
      return `processing ${event.jobId ?? ''} ${secs}`;
    case 'completed':
      return `completed ${event.jobId ?? ''} ${secs}`;
  }
}

async function analyze(args: string[], signal: AbortSignal): Promise<number> {
  const { values, positionals } = parse(
    {
      args: args,
      options: {
        ...globalOptions,
        ...{
          prompt: { type: 'string', short: 'p' },
          schema: { type: 'string' },
          'schema-file': { type: 'string' },
          format: { type: 'string' },
          workflow: { type: 'string' },
          'max-cost': { type: 'string' },
          yes: { type: 'boolean', short: 'y' },
          'no-wait': { type: 'boolean' },
          metadata: { type: 'string', multiple: true },
          timeout: { type: 'string' },
        },
      },
      allowPositionals: true,
    },
    1,
  );
  if (values.help) return help();
  const file = positionals[0] as string;
  if (values.prompt === undefined || values.prompt.trim() === '') throw new UsageError('analyze needs --prompt');
  if (values.schema !== undefined && values['schema-file'] !== undefined) {
    throw new UsageError('give either --schema or --schema-file, not both');
  }
  if (values.format !== undefined && values.format !== 'json' && values.format !== 'text') {
    throw new UsageError('--format must be json or text');
  }
  const maxCostUsd = parseNumber(values['max-cost'], '--max-cost');
  const timeoutSeconds = parseNumber(values.timeout, '--timeout');
  const metadata = parsePairs(values.metadata, '--metadata');
  let schema: InlineSchema | undefined;
  if (values['schema-file'] !== undefined) {
    try {
      schema = JSON.parse(await readFile(values['schema-file'], 'utf8')) as InlineSchema;
    } catch (error) {
      throw new UsageError(`--schema-file ${values['schema-file']}: ${(error as Error).message}`);
    }
  }
  const vision = client(values);

  const params: AnalyzeParams = { prompt: values.prompt };
  if (values.schema !== undefined) params.schemaId = values.schema;
  if (schema !== undefined) params.schema = schema;
  if (values.format !== undefined) params.outputFormat = values.format as 'json' | 'text';
  if (values.workflow !== undefined) params.workflow = values.workflow;
  if (metadata !== undefined) params.metadata = metadata;
  if (maxCostUsd !== undefined) params.maxCostUsd = maxCostUsd;
  if (values.yes) params.confirmCost = true;

  const interactive = process.stdin.isTTY === true && process.stderr.isTTY === true;
  const options = {
    signal,
    ...(timeoutSeconds !== undefined ? { timeoutMs: timeoutSeconds * 1000 } : {}),
    onProgress: (event: ProgressEvent) => {
      if (event.jobId) currentJobId = event.jobId;
      progress(describeProgress(event));
    },
    ...(interactive && !values.yes
      ? {
          confirmCost: ({ estimatedCostUsd, thresholdUsd }: { estimatedCostUsd: number; thresholdUsd: number }) =>
            askYesNo(
              `Estimated cost ${estimatedCostUsd} USD exceeds the confirmation threshold ${thresholdUsd} USD. Run it? [y/N] `,
            ),
        }
      : {}),
  };
  try {
    if (values['no-wait']) {
      const created = await vision.submit(file, params, options);
      endProgress();
      printJson(created);
      return EXIT.ok;
    }
    const run = await vision.analyze(file, params, options);
    endProgress();
    printJson(run);
    return EXIT.ok;
  } catch (error) {
    if (error instanceof VisionError && error.code === 'COST_CONFIRMATION_REQUIRED') {
      endProgress();
      const d = error.details ?? {};
      process.stderr.write(
        `error: COST_CONFIRMATION_REQUIRED (402): the estimated cost ${String(d.estimatedCostUsd)} USD exceeds the ` +
          `confirmation threshold ${String(d.thresholdUsd)} USD.\n` +
          (interactive
            ? 'Not confirmed; nothing was run.\n'
            : 'Not running interactively: re-run with --yes to confirm, or --max-cost <usd> to set a budget.\n'),
      );
      return EXIT.rejected;
    }
    throw error;
  }
}

async function runs(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'list') {
    const { values } = parse(
      {
        args: rest,
        options: {
          ...globalOptions,
          ...{
            workflow: { type: 'string' },
            status: { type: 'string' },
            limit: { type: 'string' },
            cursor: { type: 'string' },
          },
        },
        allowPositionals: true,
      },
      0,
    );
    if (values.help) return help();
    if (values.status !== undefined && !['queued', 'completed', 'failed'].includes(values.status)) {
      throw new UsageError('--status must be queued, completed or failed');
    }
    const limit = parseNumber(values.limit, '--limit');
    const query: Parameters<VisionClient['listRuns']>[0] = {};
    if (values.workflow !== undefined) query.workflow = values.workflow;
    if (values.status !== undefined) query.status = values.status as 'queued' | 'completed' | 'failed';
    if (limit !== undefined) query.limit = limit;
    if (values.cursor !== undefined) query.cursor = values.cursor;
    printJson(await client(values).listRuns(query));
    return EXIT.ok;
  }
  if (sub === 'get') {
    const { values, positionals } = parse(
      { args: rest, options: { ...globalOptions, ...{} }, allowPositionals: true },
      1,
    );
    if (values.help) return help();
    printJson(await client(values).getRun(positionals[0] as string));
    return EXIT.ok;
  }
  throw new UsageError(sub ? `unknown command: runs ${sub}` : 'runs needs a subcommand: list or get');
}

async function verify(args: string[]): Promise<number> {
  const { values, positionals } = parse(
    {
      args: args,
      options: {
        ...globalOptions,
        ...{ accept: { type: 'boolean' }, correct: { type: 'string', multiple: true }, note: { type: 'string' } },
      },
      allowPositionals: true,
    },
    1,
  );
  if (values.help) return help();
  const corrections = parsePairs(values.correct, '--correct');
  if (!values.accept && corrections === undefined)
    throw new UsageError('verify needs --accept or --correct field=value');
  const body: Parameters<VisionClient['verify']>[1] = { accepted: values.accept === true };
  if (corrections !== undefined) body.corrections = corrections;
  if (values.note !== undefined) body.note = values.note;
  printJson(await client(values).verify(positionals[0] as string, body));
  return EXIT.ok;
}

async function usage(args: string[]): Promise<number> {
  const { values } = parse(
    {
      args: args,
      options: { ...globalOptions, ...{ from: { type: 'string' }, to: { type: 'string' } } },
      allowPositionals: true,
    },
    0,
  );
  if (values.help) return help();
  const query: Parameters<VisionClient['usage']>[0] = {};
  if (values.from !== undefined) query.from = values.from;
  if (values.to !== undefined) query.to = values.to;
  printJson(await client(values).usage(query));
  return EXIT.ok;
}

async function simple(args: string[], call: (c: VisionClient) => Promise<unknown>): Promise<number> {
  const { values } = parse({ args: args, options: { ...globalOptions, ...{} }, allowPositionals: true }, 0);
  if (values.help) return help();
  printJson(await call(client(values)));
  return EXIT.ok;
}

function help(): number {
  process.stdout.write(HELP);
  return EXIT.ok;
}

let currentJobId: string | undefined;

export async function main(argv: string[], signal: AbortSignal): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case undefined:
      case '-h':
      case '--help':
      case 'help':
        return help();
      case 'analyze':
        return await analyze(rest, signal);
      case 'runs':
        return await runs(rest);
      case 'verify':
        return await verify(rest);
      case 'usage':
        return await usage(rest);
      case 'schemas':
        return await simple(rest, (c) => c.schemas());
      case 'health':
        return await simple(rest, (c) => c.health());
      default:
        throw new UsageError(`unknown command: ${command}`);
    }
  } catch (error) {
    endProgress();
    return report(error);
  }
}

function report(error: unknown): number {
  if (error instanceof UsageError) {
    process.stderr.write(`error: ${error.message}\nRun "vision --help" for usage.\n`);
    return EXIT.usage;
  }
  if (error instanceof VisionError) {
    if (error.code === 'ABORTED') {
      const timedOut = error.details?.reason === 'timeout';
      process.stderr.write(
        `${timedOut ? 'error: timed out' : 'interrupted'}${error.jobId ? `; run ${error.jobId} continues on the service (vision runs get ${error.jobId})` : ''}\n`,
      );
      return timedOut ? EXIT.service : EXIT.interrupted;
    }
    if (error.run) printJson(error.run);
    const where = error.requestId ? ` [request ${error.requestId}]` : '';
    const status = error.status ? ` (${error.status})` : '';
    process.stderr.write(`error: ${error.code}${status}: ${error.message}${where}\n`);
    if (error.details && Object.keys(error.details).length > 0) {
      process.stderr.write(`details: ${JSON.stringify(error.details)}\n`);
    }
    // The run was created and goes on whatever failed here (polling, say): never leave the user without its id.
    if (error.jobId && !error.run) {
      process.stderr.write(`run ${error.jobId} continues on the service (vision runs get ${error.jobId})\n`);
    }
    if (error.run) return EXIT.runFailed;
    if (error.code === 'INVALID_ARGUMENT') return EXIT.usage;
    if (error.status >= 400 && error.status < 500) return EXIT.rejected;
    return EXIT.service;
  }
  process.stderr.write(`error: ${(error as Error)?.stack ?? String(error)}\n`);
  return EXIT.service;
}

const controller = new AbortController();
let interrupts = 0;
process.on('SIGINT', () => {
  interrupts++;
  if (interrupts > 1) process.exit(EXIT.interrupted);
  controller.abort(new DOMException('interrupted', 'AbortError'));
  // Non-analyze commands do not poll; make sure Ctrl-C always ends the process.
  setTimeout(() => {
    endProgress();
    if (currentJobId) process.stderr.write(`interrupted; run ${currentJobId} continues on the service\n`);
    process.exit(EXIT.interrupted);
  }, 2000).unref();
});

process.exitCode = await main(process.argv.slice(2), controller.signal);
