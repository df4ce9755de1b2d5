/**
 * Plumbing every provider adapter shares: scrubbing secrets from the text that goes into a failure, and the small JSON
 * and byte helpers. No SDK, no I/O. Redaction is one function for every provider, so a credential shape learnt for one
 * is scrubbed from all (docs/decisions.md#secrets-never-leave-an-adapter).
 */

/** True for a JSON object: not null, not an array. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The bytes as base64 (a view into a larger buffer is encoded as the view, not the whole buffer). */
export function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** The text cut to `max` characters, an ellipsis marking the cut. */
export function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** Secrets shorter than this are not searched for: a test placeholder such as "test" would blank ordinary words. */
const MIN_SECRET_CHARS = 8;

/** Credential shapes scrubbed even when their values are unknown: AWS key ids, bearer tokens, SigV4 parts, API keys. */
const CREDENTIAL_SHAPES: ReadonlyArray<readonly [RegExp, string]> = [
  [/\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{12,}\b/g, '[redacted]'],
  [/\bBearer\s+\S+/gi, 'Bearer [redacted]'],
  [/\b(Signature|Credential|X-Amz-Security-Token|X-Amz-Signature|X-Amz-Credential)=[^\s,&"']+/gi, '$1=[redacted]'],
  [/\bsk-[A-Za-z0-9_*-]{6,}/g, 'sk-[redacted]'],
  // Google API keys (Gemini): "AIza" and 35 more characters.
  [/\bAIza[0-9A-Za-z_-]{20,}/g, '[redacted]'],
];

/**
 * Removes every given secret and every known credential shape from text a provider sent back (error messages,
 * refusals), before it goes into a ProviderFailure and from there into logs and attempts; then cuts it to `maxChars`
 * when given (after redaction, so a cut never leaves part of a secret behind).
 */
export function redact(text: string, secrets: Iterable<string | undefined>, maxChars?: number): string {
  let out = text;
  for (const secret of secrets) {
    if (secret && secret.length >= MIN_SECRET_CHARS) out = out.split(secret).join('[redacted]');
  }
  for (const [shape, replacement] of CREDENTIAL_SHAPES) out = out.replace(shape, replacement);
  return maxChars === undefined ? out : truncate(out, maxChars);
}
