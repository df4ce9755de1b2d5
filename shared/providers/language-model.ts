/**
 * What the language-model providers (openai, anthropic, gemini, bedrock) share: whether an `analyze` request was given
 * a document's text and how much of it it carries per page, the bound on the tokens a text can become, and the profile
 * shape they have in common (`languageModelProfile`); their output caps within the spend limit are ./output-cap.ts's.
 * No SDK: profiles (and so the API's estimate) use it as the adapters do.
 * Each provider folder names its parts alike: profile.ts exports `modelId`, `pricesFor`, `ModelPrices`,
 * `IMAGE_TARGET`, `REPAIR_ERROR_MAX_CHARS`, `outputTokenCap`, `predictTokens` and `predictedTokenCostMicros`.
 * Not to undo:
 * - The allowance is per page of the document and the adapter cuts to it, so the estimate's bound holds whatever text
 *   a layer or an OCR step yields. A dense page of prose is ~4 KB. (OpenAI states its own in tokens: its profile.)
 * - The token bound is the text's UTF-8 bytes: a byte-level tokenizer never makes more tokens than bytes, whereas one
 *   character can be several tokens (CJK, emoji).
 */
import type { Micros } from '../money.js';
import { singlePassSteps } from '../task.js';
import { truncateUtf8 } from './task-prompt.js';
import type { ProviderInput, ProviderProfile } from './types.js';

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

/**
 * The text an `analyze` step was given by an earlier step (a chained plan's OCR), or undefined: the step then reads
 * the file itself.
 */
export function givenText(input: Pick<ProviderInput, 'step' | 'documentText'>): string | undefined {
  return input.step === 'analyze' ? input.documentText : undefined;
}

/** An upper bound of the tokens a text becomes: its UTF-8 length. */
export function textTokenBound(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/**
 * A language model's `maxCostMicros`: the largest of its step bounds over the steps a single-step plan may run on the
 * file (`vision`, and for a PDF also `analyze`; never `ocr`, which only a chained plan runs and holds on its own).
 */
export function singlePassCostMicros(
  stepCostMicros: ProviderProfile['stepCostMicros'],
): ProviderProfile['maxCostMicros'] {
  return (facts, task, options): Micros =>
    Math.max(...singlePassSteps(facts).map((step) => stepCostMicros(facts, task, step, options)));
}

/** What a language model's profile says of its own: who it is, how it is reached, and its cost model. */
export type LanguageModelParts = Pick<
  ProviderProfile,
  'id' | 'auth' | 'credentialEnv' | 'stepCostMicros' | 'outputFits' | 'predictTokens' | 'tokenCostMicros' | 'available'
>;

/**
 * A language model's profile: it reads pixels and text alike, so it runs every strategy in one pass (and serves both
 * steps of OCR-then-analyze), it always answers the task itself, and its `maxCostMicros` is the single-pass bound.
 */
export function languageModelProfile<Parts extends LanguageModelParts>(parts: Parts): ProviderProfile & Parts {
  return {
    ...parts,
    strategies: ['direct_multimodal', 'ocr_then_analyze', 'generic_vision_summary'],
    role: 'language_model',
    answers: () => true,
    maxCostMicros: singlePassCostMicros(parts.stepCostMicros),
  };
}
