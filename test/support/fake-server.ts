/**
 * A local HTTP server that speaks whatever provider API a test scripts: every request is recorded (method, path,
 * headers, parsed body) and answered by the test's handler (status, headers, JSON or raw body, optional delay).
 * Provider SDKs are pointed at it through their base-URL / endpoint overrides, so adapters are tested over the wire.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  rawBody: Buffer;
  /** Parsed JSON body, or undefined when the body is not JSON. */
  body: unknown;
}

export interface ScriptedResponse {
  status?: number;
  headers?: Record<string, string>;
  /** Serialised as JSON unless `raw` is given. */
  json?: unknown;
  raw?: string | Buffer;
  /** Milliseconds to wait before answering (to provoke timeouts). */
  delayMs?: number;
  /** Resets the connection instead of answering (ECONNRESET on the client). */
  reset?: boolean;
}

export type Responder = (request: RecordedRequest) => ScriptedResponse | Promise<ScriptedResponse>;

export interface FakeServer {
  url: string;
  requests: RecordedRequest[];
  /** Replaces the responder for the following requests. */
  respond(responder: Responder): void;
  close(): Promise<void>;
}

async function readAll(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startFakeServer(
  initial: Responder = () => ({ status: 500, json: { error: 'no responder' } }),
): Promise<FakeServer> {
  let responder = initial;
  const requests: RecordedRequest[] = [];
  const server: Server = createServer((req, res) => {
    void (async () => {
      const rawBody = await readAll(req);
      let body: unknown;
      try {
        body = rawBody.length > 0 ? JSON.parse(rawBody.toString('utf8')) : undefined;
      } catch {
        body = undefined;
      }
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      const recorded = { method: req.method ?? 'GET', path: req.url ?? '/', headers, rawBody, body };
      requests.push(recorded);
      const answer = await responder(recorded);
      // The wait ends early when the client hangs up (an aborted call), so no timer outlives the test.
      if (answer.delayMs) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, answer.delayMs);
          res.once('close', () => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      if (res.destroyed) return;
      if (answer.reset) {
        req.socket.resetAndDestroy();
        return;
      }
      const payload = answer.raw ?? (answer.json === undefined ? '' : JSON.stringify(answer.json));
      res.writeHead(answer.status ?? 200, {
        ...(answer.raw === undefined ? { 'content-type': 'application/json' } : {}),
        ...answer.headers,
      });
      res.end(payload);
    })();
  });
  // A provider's endpoint keeps an idle connection open far longer than the gaps between a test's calls. Node's 5 s
  // default closed it just as an SDK reused it: an ECONNRESET the adapter reports as a `server` failure, which under
  // load failed a single-provider run before any request arrived (grounding.test.ts, bedrock). close() ends them all.
  server.keepAliveTimeout = 10 * 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    respond: (next) => {
      responder = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
