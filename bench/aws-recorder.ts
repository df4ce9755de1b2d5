/**
 * Records the AWS calls a benchmark makes: per command, how many, the time spent in them and the bytes sent and
 * received. SDK clients get two middlewares (time around the whole call, bytes from the serialized request and the
 * response's length); S3 requests sent with `fetch` through a presigned address are recorded by a wrapper around
 * `fetch`. Bytes are what shows a bigger item or a wider write without timing noise (docs/decisions.md#worker-overhead-benchmark).
 */

export interface CallTotals {
  calls: number;
  ms: number;
  bytesOut: number;
  bytesIn: number;
}

export type CallRecord = Map<string, CallTotals>;

export interface AwsCalls {
  /** Per command name: summed over the measured runs and divided by the number of runs. */
  perRun: Record<string, CallTotals>;
  totalMsPerRun: number;
  /** Request and response bytes per run, every command together (HTTP bodies; headers not counted). */
  bytesOutPerRun: number;
  bytesInPerRun: number;
}

/** One SDK call: when it started and ended, in ms from the origin given to `takeSteps`. */
export interface CallStep {
  name: string;
  start: number;
  end: number;
}

export interface AwsRecorder {
  /** Returns the calls recorded since the last take and starts a new record. */
  take(): CallRecord;
  /** With `keepSteps`: the SDK calls since the last take of steps, in the order they ended, timed from `origin`. */
  takeSteps(origin: number): CallStep[];
  /** Puts the real `fetch` back. */
  stop(): void;
}

type Next = (args: unknown) => Promise<unknown>;
interface Stack {
  add(
    middleware: (next: Next, context: { commandName?: string }) => Next,
    options: { step: 'initialize' | 'finalizeRequest'; name: string; override: boolean },
  ): void;
}
interface HttpArgs {
  request?: { headers?: Record<string, string> };
}
interface HttpResult {
  response?: { headers?: Record<string, string> };
}

const PRESIGNED_NAMES: Record<string, string> = { GET: 'GetObject', HEAD: 'HeadObject', PUT: 'PutObject' };

const round = (value: number): number => Math.round(value * 100) / 100;
const length = (headers: Record<string, string> | undefined): number => Number(headers?.['content-length'] ?? 0) || 0;

/**
 * Starts recording the calls of `clients` (SDK clients, or document clients sharing their client's stack) and the
 * `fetch` requests to `s3Endpoint`.
 */
export function recordAwsCalls(
  clients: unknown[],
  options: { s3Endpoint?: string; keepSteps?: boolean } = {},
): AwsRecorder {
  const { s3Endpoint, keepSteps = false } = options;
  let calls: CallRecord = new Map();
  let steps: CallStep[] = [];
  const entry = (name: string): CallTotals => {
    const found = calls.get(name) ?? { calls: 0, ms: 0, bytesOut: 0, bytesIn: 0 };
    calls.set(name, found);
    return found;
  };
  for (const client of clients as { middlewareStack: Stack }[]) {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const started = performance.now();
        try {
          return await next(args);
        } finally {
          const name = String(context.commandName ?? 'unknown');
          const e = entry(name);
          const ended = performance.now();
          e.calls += 1;
          e.ms += ended - started;
          if (keepSteps) steps.push({ name, start: started, end: ended });
        }
      },
      { step: 'initialize', name: 'benchTiming', override: true },
    );
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const result = (await next(args)) as HttpResult;
        const e = entry(String(context.commandName ?? 'unknown'));
        e.bytesOut += length((args as HttpArgs).request?.headers);
        e.bytesIn += length(result.response?.headers);
        return result;
      },
      { step: 'finalizeRequest', name: 'benchBytes', override: true },
    );
  }
  const realFetch = globalThis.fetch;
  if (s3Endpoint) {
    globalThis.fetch = async (input, init) => {
      const url = input instanceof Request ? input.url : String(input);
      if (!url.startsWith(s3Endpoint)) return realFetch(input, init);
      const started = performance.now();
      const e = entry(`${PRESIGNED_NAMES[init?.method ?? 'GET'] ?? init?.method} (presigned)`);
      try {
        const response = await realFetch(input, init);
        e.bytesOut += init?.body instanceof Blob ? init.body.size : 0;
        e.bytesIn += Number(response.headers.get('content-length') ?? 0) || 0;
        return response;
      } finally {
        e.calls += 1;
        e.ms += performance.now() - started;
      }
    };
  }
  return {
    take: () => {
      const taken = calls;
      calls = new Map();
      return taken;
    },
    takeSteps: (origin) => {
      const taken = steps.map((s) => ({ name: s.name, start: s.start - origin, end: s.end - origin }));
      steps = [];
      return taken;
    },
    stop: () => {
      globalThis.fetch = realFetch;
    },
  };
}

/** The calls of `records` per run: one record per run, or the record of `runs` runs made together. */
export function perRun(records: CallRecord[], runs = records.length): AwsCalls {
  const sum: CallRecord = new Map();
  for (const record of records) {
    for (const [name, v] of record) {
      const e = sum.get(name) ?? { calls: 0, ms: 0, bytesOut: 0, bytesIn: 0 };
      sum.set(name, {
        calls: e.calls + v.calls,
        ms: e.ms + v.ms,
        bytesOut: e.bytesOut + v.bytesOut,
        bytesIn: e.bytesIn + v.bytesIn,
      });
    }
  }
  const n = Math.max(1, runs);
  const out: AwsCalls['perRun'] = {};
  const total = { ms: 0, bytesOut: 0, bytesIn: 0 };
  for (const [name, v] of sum) {
    out[name] = {
      calls: round(v.calls / n),
      ms: round(v.ms / n),
      bytesOut: Math.round(v.bytesOut / n),
      bytesIn: Math.round(v.bytesIn / n),
    };
    total.ms += v.ms;
    total.bytesOut += v.bytesOut;
    total.bytesIn += v.bytesIn;
  }
  return {
    perRun: out,
    totalMsPerRun: round(total.ms / n),
    bytesOutPerRun: Math.round(total.bytesOut / n),
    bytesInPerRun: Math.round(total.bytesIn / n),
  };
}
