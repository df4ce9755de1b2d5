/**
 * What the local S3 emulator (fauxqs) leaves out of S3's answer to a presigned read, added back in front of it.
 * S3 answers a GET with the headers its `response-*` query parameters name (file-url signs `response-content-type`
 * with the type found by inspection, and `response-content-disposition: inline`); fauxqs ignores them and answers with
 * whatever Content-Type the PUT sent, which the emulator does not check against the signature. Without this, an HTML
 * file PUT as `text/html` to an upload address would run as a page of the storage origin in the dashboard's preview.
 * Every answer also says `X-Content-Type-Options: nosniff` (real S3 cannot; there the forced type suffices).
 */

/** S3's response-header overrides for GetObject, by query parameter. */
const OVERRIDES: Readonly<Record<string, string>> = {
  'response-content-type': 'content-type',
  'response-content-disposition': 'content-disposition',
  'response-content-language': 'content-language',
  'response-content-encoding': 'content-encoding',
  'response-cache-control': 'cache-control',
  'response-expires': 'expires',
};

/** The part of the emulator's fastify app this needs: a hook run on every answer before it is sent. */
export interface HookableApp {
  addHook(
    name: 'onSend',
    hook: (
      request: { method: string; query: unknown },
      reply: { statusCode: number; header(name: string, value: string): unknown },
      payload: unknown,
    ) => Promise<unknown>,
  ): unknown;
}

/** Makes the emulator answer reads as S3 does (the overrides) and never let a browser sniff a type. */
export function addS3ReadHeaders(app: HookableApp): void {
  app.addHook('onSend', async (request, reply, payload) => {
    reply.header('x-content-type-options', 'nosniff');
    const read = request.method === 'GET' || request.method === 'HEAD';
    if (read && reply.statusCode >= 200 && reply.statusCode < 300) {
      const query = (request.query ?? {}) as Record<string, unknown>;
      for (const [parameter, header] of Object.entries(OVERRIDES)) {
        const value = query[parameter];
        if (typeof value === 'string' && value !== '') reply.header(header, value);
      }
    }
    return payload;
  });
}
