/**
 * One webhook POST, defensively: to the address url-safety.ts checked (pinned, whatever DNS answers now), within one
 * overall deadline (a receiver that accepts and then stalls or trickles is cut off), redirects never followed (a 3xx
 * is a failed try), at most webhookSettings.responseReadMaxBytes of the answer read (the connection is dropped after
 * that) and at most responseStoredMaxBytes of it returned. Never throws: every failure is an outcome.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { webhookSettings } from '../infra/resources.js';
import type { SafeTarget } from './url-safety.js';

export interface PostOutcome {
  /** A 2xx answer within the deadline. */
  ok: boolean;
  statusCode: number | null;
  /** Why the try failed, in a few words; null when ok. */
  error: string | null;
  latencyMs: number;
  /** The start of the answer, at most responseStoredMaxBytes (cut at a character boundary). */
  response: string;
}

/** The first `maxBytes` of `bytes` as UTF-8 text, never splitting a character. */
export function excerpt(bytes: Buffer, maxBytes: number): string {
  if (bytes.length <= maxBytes) return bytes.toString('utf8');
  let end = maxBytes;
  // Back off continuation bytes (10xxxxxx) so the cut falls before a character's first byte.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}

function errorText(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
      return 'connection reset';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    default:
      return code ? `network error (${code})` : 'network error';
  }
}

export async function postWebhook(
  target: SafeTarget,
  body: string,
  headers: Record<string, string>,
  options: { timeoutMs?: number } = {},
): Promise<PostOutcome> {
  const timeoutMs = options.timeoutMs ?? webhookSettings.timeoutMs;
  const started = Date.now();
  const pinned: LookupFunction = (_host, lookupOptions, callback) => {
    if ((lookupOptions as { all?: boolean }).all) {
      (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [
        { address: target.address, family: target.family },
      ]);
    } else {
      callback(null, target.address, target.family);
    }
  };
  const request = target.url.protocol === 'https:' ? httpsRequest : httpRequest;

  return new Promise<PostOutcome>((resolve) => {
    let settled = false;
    // The answer so far: its status once the headers came, and the bytes read of its body.
    let status: number | null = null;
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (outcome: Omit<PostOutcome, 'latencyMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...outcome, latencyMs: Date.now() - started });
      req.destroy();
    };
    // Judged by the status: a receiver that answered 2xx in time and then trickles its body has still accepted.
    const answered = (code: number) => {
      const ok = code >= 200 && code < 300;
      const error = ok ? null : code >= 300 && code < 400 ? 'redirect not followed' : `HTTP ${code}`;
      const response = excerpt(Buffer.concat(chunks), webhookSettings.responseStoredMaxBytes);
      finish({ ok, statusCode: code, error, response });
    };
    const req = request(target.url, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      lookup: pinned,
      // No connection reuse: every try resolves and checks again, and no pooled socket outlives its deadline.
      agent: false,
    });
    const timer = setTimeout(() => {
      if (status !== null) answered(status);
      else finish({ ok: false, statusCode: null, error: `timeout after ${timeoutMs} ms`, response: '' });
    }, timeoutMs);
    req.on('error', (error) => finish({ ok: false, statusCode: null, error: errorText(error), response: '' }));
    req.on('response', (res: IncomingMessage) => {
      const code = res.statusCode ?? 0;
      status = code;
      res.on('data', (chunk: Buffer) => {
        const room = webhookSettings.responseReadMaxBytes - size;
        chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
        size += Math.min(chunk.length, room);
        // Enough read: the rest of a large answer is never downloaded (finish drops the connection).
        if (size >= webhookSettings.responseReadMaxBytes) answered(code);
      });
      res.on('end', () => answered(code));
      res.on('error', () => answered(code));
      res.on('aborted', () => answered(code));
    });
    req.end(body);
  });
}
