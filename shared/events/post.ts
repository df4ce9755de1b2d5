/**
 * One webhook POST, defensively: to the address url-safety.ts checked (pinned, whatever DNS answers now), within one
 * overall deadline (a receiver that accepts and then stalls or trickles is cut off), redirects never followed (a 3xx
 * is a failed try), at most webhookSettings.responseReadMaxBytes of the answer read (the connection is dropped after
 * that) and at most responseStoredMaxBytes of it returned. Never throws: every failure is an outcome.
 * Not to undo: a failure is recorded as a coarse class only (DeliveryError): the tenant reads it, and `connection
 * refused` against `host unreachable`, or a TLS error's code, would let it probe which hosts and ports answer.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction, Socket } from 'node:net';
import { webhookSettings } from '../infra/resources.js';
import type { SafeTarget } from './url-safety.js';

/**
 * Why a try failed, coarsely: no TCP connection (or it dropped), the TLS handshake failed, no answer in time (the
 * host's lookup included), the URL no longer passes the check (url-safety.ts), or the receiver's status.
 */
export type DeliveryError = 'connect_failed' | 'tls_error' | 'timeout' | 'url_refused' | `http_${number}`;

export interface PostOutcome {
  /** A 2xx answer within the deadline. */
  ok: boolean;
  statusCode: number | null;
  /** Why the try failed; null when ok. */
  error: DeliveryError | null;
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
    // How far the connection got: an error between the TCP connection and the end of the handshake is TLS's.
    let phase: 'connecting' | 'handshake' | 'connected' = 'connecting';
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
      // A redirect is a failed try like any other status: never followed.
      const error = ok ? null : (`http_${code}` as const);
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
      else finish({ ok: false, statusCode: null, error: 'timeout', response: '' });
    }, timeoutMs);
    req.on('socket', (socket: Socket) => {
      const tls = target.url.protocol === 'https:';
      socket.once('connect', () => {
        phase = tls ? 'handshake' : 'connected';
      });
      if (tls) socket.once('secureConnect', () => (phase = 'connected'));
    });
    req.on('error', () => {
      const error = phase === 'handshake' ? 'tls_error' : 'connect_failed';
      finish({ ok: false, statusCode: null, error, response: '' });
    });
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
