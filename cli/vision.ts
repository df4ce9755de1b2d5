/**
 * `vision`: command-line client of the Vision Analysis Service, built on sdk/index.ts. `runCli()` (called by
 * cli/vision.mjs) wires the process; `main()` is the CLI itself, writing through an Io so tests run it in process.
 * Results are JSON on stdout (pipe into jq), except `runs list`: one line per run (`--json` for whole runs). Progress
 * goes to stderr, only when stderr is a terminal. A closed stdout (`vision runs list | head -1`) ends the CLI quietly.
 * Over 400 lines: one command-line tool, its commands, options and exit codes read in one place (argument parsing is
 * cli/args.ts, what it prints besides JSON cli/output.ts).
 */
import { readFile, stat } from 'node:fs/promises';
import { createInterface } from 'node:readline/promises';
import pkg from '../package.json' with { type: 'json' };
import {
  type AnalyzeParams,
  type InlineSchema,
  type ProgressEvent,
  type RunResponse,
  VisionClient,
  VisionError,
} from '../sdk/index.js';
import {
  didYouMean,
  GLOBAL_OPTIONS,
  nearest,
  oneOf,
  parse,
  parseNumber,
  parsePairs,
  parseTime,
  TIME_FORMS,
  UsageError,
} from './args.js';
import { evaluate } from './eval.js';
import {
  EXIT,
  type Io,
  jsonText,
  type Origin,
  ProgressLine,
  reportError,
  reviewNotice,
  runLine,
  terminalSafe,
  usageTable,
} from './output.js';
import { splitBlocks } from './packet-output.js';
import { listen, webhooks } from './webhooks.js';

const HELP = `vision — client for the Vision Analysis Service

Usage:
  vision analyze <file> --prompt "…" [--schema <id> | --schema-file f.json] [--format json|text]
                 [--split [--schemas a,b]] [--workflow w] [--max-cost 0.50] [--yes] [--no-wait] [--metadata k=v …] [--timeout s]
  vision runs list [--workflow w] [--status queued|completed|failed] [--review needed] [--limit n] [--cursor c]
                   [--json]
  vision runs get <jobId>
  vision verify <jobId> (--accept | --correct field=value …) [--note "…"]
  vision usage [--from <time>] [--to <time>] [--interval hour|day|month] [--workflow w] [--json]
  vision eval DIR [--schema receipt] [--providers a,b] [--map company=merchant] [--min-accuracy 0.9] [--json]
              [--name n] [--workflow w] [--max-cost 0.50] [--yes]
  vision eval --from-verified --workflow W --out DIR [--limit n]
  vision schemas
  vision health
  vision webhooks add <url> [--events run.completed,run.failed] [--description "…"]
  vision webhooks list | rm <id> | deliveries <id>
  vision listen [--port n] [--secret whsec_…] [--events …] [--count n]

Global options:
  --base-url <url>   service address (default: $VISION_BASE_URL)
  --api-key <key>    API key (default: $VISION_API_KEY)
  -h, --help         this help
  --version          the CLI's version

analyze:
  <file> is a .jpg/.jpeg/.png/.heic/.pdf file. --schema names a built-in schema (see \`vision schemas\`);
  --schema-file is an inline schema {label, expectedFields, promptScaffold?}. --format is the run's outputFormat.
  --split (a PDF packet) assigns every page to a document of one of --schemas (default: every built-in schema)
  and prints one block per document; --schema auto classifies the whole file first.
  --metadata k=v sends a string; k:=<json> sends a JSON value (e.g. n:=42). Repeatable.
  Without --no-wait the command polls until the run is final and prints the completed run; with --no-wait it
  prints the queued creation envelope (poll later with \`vision runs get <jobId>\`). On a terminal a progress line
  shows the stage, the pages done of a long document and the time so far. A completed run whose review is needed
  also writes, on stderr after the result, why (the run's review.reasons, one a line).
  When the estimated cost needs confirmation: on a terminal you are asked (y/N), shown the price now and the
  batch price beside it (POST /v1/estimates); otherwise the command fails unless --yes (or --max-cost, a budget)
  is given.
runs list:
  One line per run: id, status, created, workflow, schema, charged, then confidence (completed), error code
  (failed) or stage (queued), and "review needed" while it is. --review needed lists only those (the review
  queue, newest first); a verify takes a run out of it. --json prints the whole answer ({items, nextCursor}) instead.
verify:
  --accept marks the result accepted; --correct field=value (or field:=<json>) records corrections (accepted=false
  unless --accept is also given).
usage:
  A table: one row per workflow and the total (runs by state, charged and refunded USD, reviews, the share
  accepted, mean confidence). --json prints the whole answer instead, with its series per --interval for charts.
  <time> is ${TIME_FORMS}.
eval:
  DIR holds documents (NAME.png|jpg|jpeg|pdf|heic) each beside NAME.json, its expected values. They are uploaded,
  evaluated once per --providers provider (or with the normal plan), asking before spending as analyze does, and
  the report is printed as a table (--json: the whole evaluation). Keys of NAME.json the schema (default receipt)
  does not have are not compared; --map from=to renames them first. Exits 1 when the accuracy is below
  --min-accuracy (a share: 0.9). --from-verified writes such a folder from the workflow's verified runs whose file
  the service still keeps (docs/evaluation.md).
webhooks:
  add prints the endpoint with its signing secret (shown only then); deliveries lists its last 100 attempts.
  Needs a key with the webhooks:manage scope (add: runs:read too, events carry whole runs). docs/webhooks.md
  describes what arrives and how to verify it.
listen:
  A receiver on 127.0.0.1 for trying webhooks on the local stack: registers itself as an endpoint (unless
  --secret is given for one you registered), prints each verified event as one JSON line, and deletes its
  endpoint on Ctrl-C (or after --count events).

Output: JSON on stdout (runs list: lines); errors on stderr as "error: CODE (status): message", with a hint when
there is one. A failed run also prints its envelope on stdout.

Exit codes:
  0    success
  1    eval: the accuracy is below --min-accuracy
  2    usage error (bad arguments, missing --api-key/--base-url, a file that cannot be read)
  3    request rejected by the service (4xx: invalid request, unknown schema, cost confirmation needed, …)
  4    the run ended failed (e.g. PROVIDER_ERROR)
  5    service or network error (5xx, unreachable, --timeout reached)
  130  interrupted (Ctrl-C); a created run keeps going on the service
`;

const COMMANDS = [
  'analyze',
  'runs',
  'verify',
  'usage',
  'eval',
  'schemas',
  'health',
  'webhooks',
  'listen',
  'help',
] as const;
const STATUSES = ['queued', 'completed', 'failed'] as const;

const globalOptions = GLOBAL_OPTIONS;

/** What one invocation knows beyond its arguments: where it writes, and what a hint or Ctrl-C needs to say. */
interface Context {
  /** Where the CLI prints: every write made printable (output.ts, terminalSafe). */
  io: Io;
  /** The terminal's own stderr, for the progress line's control sequences (its text is made printable itself). */
  rawStderr: (text: string) => void;
  signal: AbortSignal;
  origin: Origin;
  /** Shared with the caller: the run an analysis created, once it exists (Ctrl-C names it). */
  state: { jobId?: string };
  progress?: ProgressLine;
}

function printJson(ctx: Context, value: unknown): void {
  ctx.io.stdout(jsonText(value));
}

function client(ctx: Context, values: { 'base-url'?: string; 'api-key'?: string }): VisionClient {
  const baseUrl = values['base-url'] ?? ctx.io.env.VISION_BASE_URL;
  const apiKey = values['api-key'] ?? ctx.io.env.VISION_API_KEY;
  ctx.origin = {
    baseUrl,
    baseUrlFrom: values['base-url'] !== undefined ? '--base-url' : 'VISION_BASE_URL',
    apiKeyFrom: values['api-key'] !== undefined ? '--api-key' : 'VISION_API_KEY',
  };
  if (!baseUrl) throw new UsageError('no service address: set VISION_BASE_URL or pass --base-url');
  if (!apiKey) throw new UsageError('no API key: set VISION_API_KEY or pass --api-key');
  try {
    return new VisionClient({ baseUrl, apiKey, userAgent: `vision-cli/${pkg.version}` });
  } catch (error) {
    // The SDK refuses an address that is not an http(s) URL.
    throw new UsageError(`${ctx.origin.baseUrlFrom}: ${(error as Error).message.replace(/^VisionClient: /, '')}`);
  }
}

/** Why a path cannot be read, in words (not ENOENT). */
function fileProblem(error: NodeJS.ErrnoException): string {
  switch (error.code) {
    case 'ENOENT':
      return 'no such file';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'is a directory, not a file';
    default:
      return error.message;
  }
}

/** A UsageError naming `label` unless `path` is a readable file. */
async function requireFile(path: string, label: string): Promise<void> {
  const info = await stat(path).catch((error: NodeJS.ErrnoException) => {
    throw new UsageError(`${label}${path}: ${fileProblem(error)}`);
  });
  if (info.isDirectory()) throw new UsageError(`${label}${path}: is a directory, not a file`);
}

async function askYesNo(ctx: Context, question: string): Promise<boolean> {
  ctx.progress?.end();
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(question);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

/**
 * The question asked before a run over the confirmation threshold: its price now and, beside it, the batch price
 * (POST /v1/estimates) when the service can give it. Without it (an older service, a key without runs:read) the
 * question names the one price creation answered.
 */
async function costQuestion(
  vision: VisionClient,
  params: AnalyzeParams,
  asked: { estimatedCostUsd: number; thresholdUsd: number; uploadId: string },
): Promise<string> {
  const { prompt, schemaId, schema, outputFormat } = params;
  const prices = await vision
    .estimate({ uploadId: asked.uploadId, prompt, schemaId, schema, outputFormat })
    .catch(() => undefined);
  const batch = prices
    ? ` As a batch (within ${prices.batch.expiresWithinHours} hours) it would cost ${prices.batch.estimatedCostUsd} USD.`
    : '';
  return (
    `Estimated cost ${asked.estimatedCostUsd} USD exceeds the confirmation threshold ${asked.thresholdUsd} USD.` +
    `${batch} Run it now? [y/N] `
  );
}

async function analyze(ctx: Context, args: string[]): Promise<number> {
  const { values, positionals } = parse(
    {
      args,
      options: {
        ...globalOptions,
        prompt: { type: 'string', short: 'p' },
        schema: { type: 'string' },
        'schema-file': { type: 'string' },
        split: { type: 'boolean' },
        schemas: { type: 'string' },
        format: { type: 'string' },
        workflow: { type: 'string' },
        'max-cost': { type: 'string' },
        yes: { type: 'boolean', short: 'y' },
        'no-wait': { type: 'boolean' },
        metadata: { type: 'string', multiple: true },
        timeout: { type: 'string' },
      },
      allowPositionals: true,
    },
    ['file'],
  );
  if (values.help) return help(ctx);
  const file = positionals[0] as string;
  if (values.prompt === undefined || values.prompt.trim() === '') throw new UsageError('missing --prompt "…"');
  if (values.schema !== undefined && values['schema-file'] !== undefined) {
    throw new UsageError('give either --schema or --schema-file, not both');
  }
  if (values.split && (values.schema !== undefined || values['schema-file'] !== undefined)) {
    throw new UsageError('--split chooses a schema per document: give --schemas a,b instead of --schema');
  }
  if (values.schemas !== undefined && !values.split && values.schema !== 'auto') {
    throw new UsageError('--schemas is only for --split or --schema auto');
  }
  const format = oneOf(values.format, ['json', 'text'], '--format');
  const maxCostUsd = parseNumber(values['max-cost'], '--max-cost');
  const timeoutSeconds = parseNumber(values.timeout, '--timeout');
  const metadata = parsePairs(values.metadata, '--metadata');
  await requireFile(file, '');
  let schema: InlineSchema | undefined;
  const schemaFile = values['schema-file'];
  if (schemaFile !== undefined) {
    await requireFile(schemaFile, '--schema-file ');
    try {
      schema = JSON.parse(await readFile(schemaFile, 'utf8')) as InlineSchema;
    } catch (error) {
      throw new UsageError(`--schema-file ${schemaFile}: not valid JSON (${(error as Error).message})`);
    }
  }
  const vision = client(ctx, values);

  const params: AnalyzeParams = { prompt: values.prompt };
  if (values.schema !== undefined) params.schemaId = values.schema;
  if (schema !== undefined) params.schema = schema;
  if (values.split) params.split = true;
  if (values.schemas !== undefined) params.schemaIds = values.schemas.split(',').map((id) => id.trim());
  if (format !== undefined) params.outputFormat = format;
  if (values.workflow !== undefined) params.workflow = values.workflow;
  if (metadata !== undefined) params.metadata = metadata;
  if (maxCostUsd !== undefined) params.maxCostUsd = maxCostUsd;
  if (values.yes) params.confirmCost = true;

  const progress = new ProgressLine(ctx.rawStderr, ctx.io.stderrIsTTY);
  ctx.progress = progress;
  const options = {
    signal: ctx.signal,
    ...(timeoutSeconds !== undefined ? { timeoutMs: timeoutSeconds * 1000 } : {}),
    onProgress: (event: ProgressEvent) => {
      if (event.jobId) ctx.state.jobId = event.jobId;
      progress.update(event);
    },
    ...(ctx.io.interactive && !values.yes
      ? {
          confirmCost: async (asked: { estimatedCostUsd: number; thresholdUsd: number; uploadId: string }) =>
            askYesNo(ctx, await costQuestion(vision, params, asked)),
        }
      : {}),
  };
  try {
    const out = values['no-wait']
      ? await vision.submit(file, params, options)
      : await vision.analyze(file, params, options);
    progress.end();
    const blocks = values.split && 'status' in out ? splitBlocks(out as RunResponse) : undefined;
    if (blocks !== undefined) ctx.io.stdout(blocks);
    else printJson(ctx, out);
    ctx.io.stderr(reviewNotice(out));
    return EXIT.ok;
  } catch (error) {
    if (error instanceof VisionError && error.code === 'COST_CONFIRMATION_REQUIRED') {
      progress.end();
      const { estimatedCostUsd, thresholdUsd } = error.details ?? {};
      ctx.io.stderr(
        `error: COST_CONFIRMATION_REQUIRED (402): the estimated cost ${String(estimatedCostUsd)} USD exceeds the ` +
          `confirmation threshold ${String(thresholdUsd)} USD.\n` +
          (ctx.io.interactive
            ? 'Not confirmed; nothing was run.\n'
            : 'Not running interactively: re-run with --yes to confirm, or --max-cost <usd> to set a budget.\n'),
      );
      return EXIT.rejected;
    }
    throw error;
  }
}

async function runs(ctx: Context, args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'list') {
    const { values } = parse(
      {
        args: rest,
        options: {
          ...globalOptions,
          workflow: { type: 'string' },
          status: { type: 'string' },
          review: { type: 'string' },
          limit: { type: 'string' },
          cursor: { type: 'string' },
          json: { type: 'boolean' },
        },
        allowPositionals: true,
      },
      [],
    );
    if (values.help) return help(ctx);
    const status = oneOf(values.status, STATUSES, '--status');
    const review = oneOf(values.review, ['needed'], '--review');
    const limit = parseNumber(values.limit, '--limit');
    const answer = await client(ctx, values).listRuns({
      workflow: values.workflow,
      status,
      review,
      limit,
      cursor: values.cursor,
    });
    if (values.json) {
      printJson(ctx, answer);
      return EXIT.ok;
    }
    ctx.io.stdout(answer.items.map((run) => `${runLine(run)}\n`).join(''));
    // Said whether or not stderr is a terminal: an empty stdout alone reads like a CLI that did nothing.
    if (answer.items.length === 0) {
      const filtered = values.workflow !== undefined || status !== undefined || values.cursor !== undefined;
      ctx.io.stderr(
        review
          ? `no runs need review${filtered ? ' with these filters' : ': the review queue is empty'}\n`
          : `no runs${filtered ? ' with these filters' : ''}\n`,
      );
    }
    if (ctx.io.stderrIsTTY && answer.nextCursor)
      ctx.io.stderr(`more: vision runs list --cursor ${answer.nextCursor}\n`);
    return EXIT.ok;
  }
  if (sub === 'get') {
    const { values, positionals } = parse({ args: rest, options: globalOptions, allowPositionals: true }, ['jobId']);
    if (values.help) return help(ctx);
    printJson(ctx, await client(ctx, values).getRun(positionals[0] as string));
    return EXIT.ok;
  }
  if (sub === undefined || sub.startsWith('-')) throw new UsageError('missing runs subcommand: list or get');
  const near = nearest(sub, ['list', 'get']);
  throw new UsageError(`unknown command "runs ${sub}"${near ? `; did you mean "runs ${near}"?` : ''}`);
}

async function verify(ctx: Context, args: string[]): Promise<number> {
  const { values, positionals } = parse(
    {
      args,
      options: {
        ...globalOptions,
        accept: { type: 'boolean' },
        correct: { type: 'string', multiple: true },
        note: { type: 'string' },
      },
      allowPositionals: true,
    },
    ['jobId'],
  );
  if (values.help) return help(ctx);
  const corrections = parsePairs(values.correct, '--correct');
  if (!values.accept && corrections === undefined) throw new UsageError('missing --accept or --correct field=value');
  const body: Parameters<VisionClient['verify']>[1] = { accepted: values.accept === true };
  if (corrections !== undefined) body.corrections = corrections;
  if (values.note !== undefined) body.note = values.note;
  printJson(ctx, await client(ctx, values).verify(positionals[0] as string, body));
  return EXIT.ok;
}

async function usage(ctx: Context, args: string[]): Promise<number> {
  const { values } = parse(
    {
      args,
      options: {
        ...globalOptions,
        from: { type: 'string' },
        to: { type: 'string' },
        interval: { type: 'string' },
        workflow: { type: 'string' },
        json: { type: 'boolean' },
      },
      allowPositionals: true,
    },
    [],
  );
  if (values.help) return help(ctx);
  // Checked here, before any request: the service's own refusal would not say which forms it takes.
  const from = parseTime(values.from, '--from');
  const to = parseTime(values.to, '--to');
  if (from !== undefined && to !== undefined && Date.parse(from) >= Date.parse(to)) {
    throw new UsageError(`--from (${from}) must be before --to (${to})`);
  }
  const interval = oneOf(values.interval, ['hour', 'day', 'month'], '--interval');
  const answer = await client(ctx, values).usage({ from, to, interval, workflow: values.workflow });
  if (values.json) printJson(ctx, answer);
  else ctx.io.stdout(usageTable(answer));
  return EXIT.ok;
}

async function simple(ctx: Context, args: string[], call: (c: VisionClient) => Promise<unknown>): Promise<number> {
  const { values } = parse({ args, options: globalOptions, allowPositionals: true }, []);
  if (values.help) return help(ctx);
  printJson(ctx, await call(client(ctx, values)));
  return EXIT.ok;
}

/** The error for an option given where the command belongs. */
function misplacedOption(option: string): string {
  const name = option.replace(/=.*$/, '');
  if (Object.keys(globalOptions).some((known) => `--${known}` === name)) {
    return `${name} goes after the command: vision <command> ${name} …`;
  }
  const near = nearest(name, ['--help', '--version']);
  return `unknown option ${name}${near ? `; did you mean ${near}?` : ' (vision --help lists the commands)'}`;
}

function help(ctx: Context): number {
  ctx.io.stdout(HELP);
  return EXIT.ok;
}

/** Runs one command line; resolves with the exit code. `state.jobId` names the run an analysis created, once it exists. */
export async function main(
  argv: string[],
  terminal: Io,
  signal: AbortSignal,
  state: { jobId?: string } = {},
): Promise<number> {
  const origin: Origin = { baseUrl: undefined, baseUrlFrom: 'VISION_BASE_URL', apiKeyFrom: 'VISION_API_KEY' };
  const io = terminalSafe(terminal);
  const ctx: Context = { io, rawStderr: terminal.stderr, signal, origin, state };
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case undefined:
      case '-h':
      case '--help':
      case 'help':
        return help(ctx);
      case '--version':
        io.stdout(`vision ${pkg.version}\n`);
        return EXIT.ok;
      case 'analyze':
        return await analyze(ctx, rest);
      case 'runs':
        return await runs(ctx, rest);
      case 'verify':
        return await verify(ctx, rest);
      case 'usage':
        return await usage(ctx, rest);
      case 'eval':
        return await evaluate(
          {
            io,
            signal,
            clientFor: (values) => client(ctx, values),
            help: () => help(ctx),
            ask: (q) => askYesNo(ctx, q),
          },
          rest,
        );
      case 'schemas':
        return await simple(ctx, rest, (c) => c.schemas());
      case 'health':
        return await simple(ctx, rest, (c) => c.health());
      case 'webhooks':
        return await webhooks(
          io,
          rest,
          (values) => client(ctx, values),
          () => help(ctx),
        );
      case 'listen':
        return await listen(
          io,
          rest,
          (values) => client(ctx, values),
          signal,
          () => help(ctx),
        );
      default:
        if (command.startsWith('-')) throw new UsageError(misplacedOption(command));
        throw new UsageError(`unknown command "${command}"${didYouMean(command, COMMANDS)}`);
    }
  } catch (error) {
    ctx.progress?.end();
    return reportError(error, io, ctx.origin, ctx.state.jobId);
  }
}

/** The `vision` process: standard streams, Ctrl-C, a closed stdout, the exit code. */
export async function runCli(): Promise<void> {
  // A reader that stops early (`vision runs list | head -1`) closes the pipe: nothing more to say, and no trace.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(EXIT.ok);
    throw error;
  });
  process.stderr.on('error', () => undefined);
  const io: Io = {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
    env: process.env,
    stderrIsTTY: process.stderr.isTTY === true,
    interactive: process.stdin.isTTY === true && process.stderr.isTTY === true,
  };
  const state: { jobId?: string } = {};
  const controller = new AbortController();
  let interrupts = 0;
  process.on('SIGINT', () => {
    interrupts++;
    if (interrupts > 1) process.exit(EXIT.interrupted);
    controller.abort(new DOMException('interrupted', 'AbortError'));
    // Non-analyze commands do not poll; make sure Ctrl-C always ends the process.
    setTimeout(() => {
      if (state.jobId) process.stderr.write(`\ninterrupted; run ${state.jobId} continues on the service\n`);
      process.exit(EXIT.interrupted);
    }, 2000).unref();
  });
  process.exitCode = await main(process.argv.slice(2), io, controller.signal, state);
}
