/**
 * OpenAI's text tokens without its tokenizer at run time. A text we write ourselves (the system instructions, the
 * document framing, a registry schema's scaffold and JSON schema, the open-analysis and text schemas, the transcription
 * task) has its exact o200k_base count in token-counts.gen.ts, computed at build time by `npm run gen:tokens`
 * (scripts/gen-tokens.ts); any other text (the client's prompt, an inline schema or scaffold) is predicted by the rule
 * measured against o200k, `openaiTextTokens` (../tokens.ts).
 *
 * Decisions a reader must not undo:
 * - Texts are looked up by their SHA-256, not by a name: a fixed text edited without regenerating falls back to the
 *   rule (a little high), never to another text's count; test/unit/openai-text-tokens.test.ts fails until it is
 *   regenerated. A client cannot make its text pass for one of ours without a SHA-256 preimage.
 * - gpt-tokenizer is never imported here or by anything the handlers load: importing it costs ~1 s and its o200k
 *   table 2.4 MB of bundle (docs/decisions.md, "Text tokens").
 */
import { createHash } from 'node:crypto';
import { openaiTextTokens } from '../tokens.js';
import { O200K_COUNTS } from './token-counts.gen.js';

/** The key a fixed text's count is kept under: the first 16 hex digits of its UTF-8 SHA-256. */
export function textKey(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16);
}

/** The exact o200k count of a text we wrote, or undefined for any other text. */
export function fixedTextTokens(text: string): number | undefined {
  const key = textKey(text);
  return Object.hasOwn(O200K_COUNTS, key) ? O200K_COUNTS[key] : undefined;
}

/** Tokens of a text as OpenAI counts it: exact for our own texts, the measured rule for the client's. */
export function textTokens(text: string): number {
  if (text === '') return 0;
  return fixedTextTokens(text) ?? openaiTextTokens(text);
}
