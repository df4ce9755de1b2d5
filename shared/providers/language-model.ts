/**
 * What the language-model providers (openai, anthropic, gemini, bedrock) share about a document's text: how much of
 * it an `analyze` request carries per page, and the bound on the tokens a text can become. No SDK: profiles (and so
 * the API's estimate) use it as the adapters do.
 * Not to undo:
 * - The allowance is per page of the document and the adapter cuts to it, so the estimate's bound holds whatever text
 *   a layer or an OCR step yields. A dense page of prose is ~4 KB. (OpenAI states its own in tokens: its profile.)
 * - The token bound is the text's UTF-8 bytes: a byte-level tokenizer never makes more tokens than bytes, whereas one
 *   character can be several tokens (CJK, emoji).
 */
import { truncateUtf8 } from './task-prompt.js';

/** UTF-8 bytes of another step's text an `analyze` step sends per page of the document (the rest is cut). */
export const ANALYZE_TEXT_BYTES_PER_PAGE = 6_000;

/** The most UTF-8 bytes of text an `analyze` step sends for a document of `pages` pages. */
export function analyzeTextAllowance(pages: number): number {
  return ANALYZE_TEXT_BYTES_PER_PAGE * Math.max(1, pages);
}

/** The text as sent: cut to the allowance for `pages` pages, on a character boundary. */
export function analyzeText(documentText: string, pages: number): string {
  return truncateUtf8(documentText, analyzeTextAllowance(pages));
}

/** An upper bound of the tokens a text becomes: its UTF-8 length. */
export function textTokenBound(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
