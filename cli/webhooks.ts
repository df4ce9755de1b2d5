/**
 * `vision webhooks add|list|rm|deliveries` and `vision listen` (docs/webhooks.md). `listen` is a receiver on this
 * machine for trying webhooks against the local stack: it registers itself (unless given a --secret), prints each
 * verified event as one JSON line on stdout, and deletes its endpoint when it stops. Not to undo: it listens before
 * it registers (the endpoint's URL needs its port) and answers 503 until the registration gives it the secret. A deployed service cannot reach
 * 127.0.0.1: there, point an https endpoint at your own receiver instead.
 */
import { createServer } from 'node:http';
import { type VisionClient, verifyWebhook, WebhookSignatureError } from '../sdk/index.js';
import { GLOBAL_OPTIONS, nearest, parse, parseNumber, UsageError } from './args.js';
import { EXIT, type Io, jsonText } from './output.js';

const EVENT_TYPES = ['run.completed', 'run.failed'] as const;
type EventType = (typeof EVENT_TYPES)[number];

/** Makes the client from the global options (the CLI's own `client`). */
export type ClientFor = (values: { 'base-url'?: string | undefined; 'api-key'?: string | undefined }) => VisionClient;

function printJson(io: Io, value: unknown): void {
  io.stdout(jsonText(value));
}

function eventTypes(value: string | undefined): EventType[] | undefined {
  if (value === undefined) return undefined;
  const types = value.split(',').map((s) => s.trim());
  for (const type of types) {
    if (!(EVENT_TYPES as readonly string[]).includes(type)) {
      throw new UsageError(`--events: unknown event type "${type}"; known: ${EVENT_TYPES.join(', ')}`);
    }
  }
  return types as EventType[];
}

export async function webhooks(io: Io, args: string[], clientFor: ClientFor, help: () => number): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'add') {
    const { values, positionals } = parse(
      {
        args: rest,
        options: { ...GLOBAL_OPTIONS, events: { type: 'string' }, description: { type: 'string' } },
        allowPositionals: true,
      },
      ['url'],
    );
    if (values.help) return help();
    const created = await clientFor(values).createWebhook({
      url: positionals[0] as string,
      events: eventTypes(values.events),
      description: values.description,
    });
    printJson(io, created);
    if (io.stderrIsTTY) io.stderr('keep the secret: it is shown only now (verify deliveries with it)\n');
    return EXIT.ok;
  }
  if (sub === 'list' || sub === 'rm' || sub === 'deliveries') {
    const { values, positionals } = parse(
      { args: rest, options: GLOBAL_OPTIONS, allowPositionals: true },
      sub === 'list' ? [] : ['id'],
    );
    if (values.help) return help();
    const vision = clientFor(values);
    if (sub === 'list') printJson(io, await vision.listWebhooks());
    else if (sub === 'deliveries') printJson(io, await vision.listWebhookDeliveries(positionals[0] as string));
    else {
      await vision.deleteWebhook(positionals[0] as string);
      if (io.stderrIsTTY) io.stderr(`deleted ${positionals[0]}\n`);
    }
    return EXIT.ok;
  }
  if (sub === undefined || sub.startsWith('-')) {
    throw new UsageError('missing webhooks subcommand: add, list, rm or deliveries');
  }
  const near = nearest(sub, ['add', 'list', 'rm', 'deliveries']);
  throw new UsageError(`unknown command "webhooks ${sub}"${near ? `; did you mean "webhooks ${near}"?` : ''}`);
}

/** Most bytes of a delivery the receiver reads (a run's result is at most a few MB). */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

export async function listen(
  io: Io,
  args: string[],
  clientFor: ClientFor,
  signal: AbortSignal,
  help: () => number,
): Promise<number> {
  const { values } = parse(
    {
      args,
      options: {
        ...GLOBAL_OPTIONS,
        port: { type: 'string' },
        secret: { type: 'string' },
        events: { type: 'string' },
        count: { type: 'string' },
      },
      allowPositionals: true,
    },
    [],
  );
  if (values.help) return help();
  const port = parseNumber(values.port, '--port') ?? 0;
  const count = parseNumber(values.count, '--count');
  if (values.secret !== undefined && !/^whsec_[A-Za-z0-9_-]{16,}$/.test(values.secret)) {
    throw new UsageError('--secret: a webhook secret is whsec_ and the characters registration printed');
  }
  const types = eventTypes(values.events);
  // Registering needs the service; listening with a given secret does not.
  const vision = values.secret === undefined ? clientFor(values) : undefined;

  // Unknown until the registration answers: until then every delivery is refused 503 (nothing can be verified).
  let secret: string | undefined = values.secret;
  let received = 0;
  let interrupted = false;
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => {
      if (secret === undefined) {
        res.writeHead(503, { 'retry-after': '1' }).end('not registered yet');
        io.stderr('refused a delivery: the endpoint is not registered yet\n');
        return;
      }
      const header = req.headers['vision-signature'];
      try {
        const event = verifyWebhook(Buffer.concat(chunks), typeof header === 'string' ? header : undefined, secret);
        res.writeHead(204).end();
        // An endpoint registered elsewhere (--secret) may send more types than --events asks for: taken, not shown.
        if (types !== undefined && !(types as readonly string[]).includes(event.type)) {
          io.stderr(`ignored a ${event.type} event (--events ${types.join(',')})\n`);
          return;
        }
        io.stdout(jsonText(event, 0));
        received++;
        if (count !== undefined && received >= count) finish();
      } catch (error) {
        if (error instanceof WebhookSignatureError || error instanceof SyntaxError) {
          const reason = error instanceof WebhookSignatureError ? error.reason : 'not JSON';
          res.writeHead(400).end(reason);
          io.stderr(`refused a delivery: ${reason}\n`);
        } else {
          res.writeHead(500).end();
          io.stderr(`refused a delivery: ${(error as Error).message}\n`);
        }
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE' || error.code === 'EACCES'
          ? new UsageError(
              `--port ${port}: ${error.code === 'EADDRINUSE' ? 'already in use' : 'not allowed'} on 127.0.0.1`,
            )
          : error,
      ),
    );
    server.listen(port, '127.0.0.1', resolve);
  });
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : port}/`;

  let webhookId: string | undefined;
  try {
    if (vision) {
      const created = await vision.createWebhook({ url, events: types });
      webhookId = created.id;
      secret = created.secret;
    }
    io.stderr(`listening on ${url}${webhookId ? ` (webhook ${webhookId})` : ''}; Ctrl-C to stop\n`);
    signal.addEventListener('abort', () => finish(), { once: true });
    if (!signal.aborted) await done;
    // Stopped by Ctrl-C rather than by --count: the documented 130, so a script can tell the two apart.
    if (signal.aborted) interrupted = true;
  } finally {
    server.closeAllConnections();
    server.close();
    if (vision && webhookId) {
      // Its own endpoint goes with it (a fresh signal: the interrupted one is aborted).
      await vision.deleteWebhook(webhookId).catch((error: unknown) => {
        io.stderr(`could not delete webhook ${webhookId}: ${(error as Error).message}\n`);
      });
      io.stderr(`deleted webhook ${webhookId}\n`);
    }
  }
  return interrupted ? EXIT.interrupted : EXIT.ok;
}
