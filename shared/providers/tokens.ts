/**
 * How each provider counts the input tokens of what we send: image tokens by each provider's published rule (for the
 * image as our own media preparation sends it), and text by a chars-per-token ratio per tokenizer family. Pure
 * functions, no SDK: the planner predicts with them at creation and the adapters derive their output caps from them.
 *
 * Decisions a reader must not undo:
 * - Each rule is the provider's documented one and is pinned against the documented examples in
 *   test/unit/token-rules.test.ts; where a provider bills differently than documented, calibration (shared/planning/
 *   calibration.ts) corrects the prediction instead of a rule being bent to fit one observation.
 * - Text is counted by a ratio because no tokenizer for these model families ships with the service (none is in
 *   node_modules, and none is published for Claude, Gemini or Nova); the ratios are the providers' own rules of thumb,
 *   and calibration learns how far each key's real counts are from them. docs/pricing.md explains both.
 */

/** Input and output tokens of one request (or one attempt). */
export interface TokenCounts {
  input: number;
  output: number;
}

// ---------------------------------------------------------------------------------------------------------------
// Text
// ---------------------------------------------------------------------------------------------------------------

/** The tokenizer families the providers' models use. */
export type TokenizerFamily = 'openai' | 'anthropic' | 'gemini' | 'nova';

/**
 * Characters per token for prose and for JSON (schemas, tool definitions, JSON answers), per family. OpenAI: "one token
 * is roughly 4 characters of English text"; Gemini: "a token is about 4 characters"; Claude's newer tokenizer makes
 * ~30 % more tokens of the same text than the older one (~3.5 characters); Nova is documented like OpenAI. JSON's
 * punctuation and short keys tokenise denser, about 3 characters a token for every family.
 */
export const CHARS_PER_TOKEN: Readonly<Record<TokenizerFamily, { prose: number; json: number }>> = {
  openai: { prose: 4, json: 3 },
  anthropic: { prose: 3.5, json: 2.8 },
  gemini: { prose: 4, json: 3 },
  nova: { prose: 4, json: 3 },
};

/** Predicted tokens of a prose text (an instruction, a document's text). */
export function proseTokens(text: string | number, family: TokenizerFamily): number {
  const chars = typeof text === 'number' ? text : text.length;
  return Math.ceil(chars / CHARS_PER_TOKEN[family].prose);
}

/** Predicted tokens of a JSON value as sent (a schema, a tool definition, an answer). */
export function jsonTokens(value: unknown, family: TokenizerFamily): number {
  return Math.ceil(JSON.stringify(value).length / CHARS_PER_TOKEN[family].json);
}

// ---------------------------------------------------------------------------------------------------------------
// Images
// ---------------------------------------------------------------------------------------------------------------

/** An image size in pixels. */
export interface Size {
  width: number;
  height: number;
}

/** The size after scaling down (never up) so that the long side is at most `maxLongSide`, rounded as sharp does. */
export function fitLongSide(size: Size, maxLongSide: number): Size {
  const scale = Math.min(1, maxLongSide / Math.max(size.width, size.height, 1));
  return { width: Math.max(1, Math.round(size.width * scale)), height: Math.max(1, Math.round(size.height * scale)) };
}

/**
 * OpenAI's patch rule (GPT-4.1 mini/nano, GPT-5 mini/nano and later small models; images-vision guide, "Calculating
 * costs"): cover the image with 32 px patches; over the budget (1,536), scale it down so that it fits the budget, then
 * shrink it further so its width or height is a whole number of patches; tokens = patches x the model's multiplier.
 * Documented examples: 1024 x 1024 → 1,024 patches; 1800 x 2400 → 1,452 patches.
 */
export function openaiPatchCount(size: Size, budget: number, patchPx = 32): number {
  const raw = Math.ceil(size.width / patchPx) * Math.ceil(size.height / patchPx);
  if (raw <= budget) return raw;
  const shrink = Math.sqrt((budget * patchPx * patchPx) / (size.width * size.height));
  const w = (size.width * shrink) / patchPx;
  const h = (size.height * shrink) / patchPx;
  const whole = Math.min(Math.floor(w) / w, Math.floor(h) / h);
  const width = Math.floor(size.width * shrink * whole + 1e-9);
  const height = Math.floor(size.height * shrink * whole + 1e-9);
  return Math.min(budget, Math.ceil(width / patchPx) * Math.ceil(height / patchPx));
}

/** Tokens of an image under the patch rule: patches x multiplier, rounded up. */
export function openaiPatchTokens(size: Size, budget: number, multiplier: number): number {
  return Math.ceil(openaiPatchCount(size, budget) * multiplier - 1e-9);
}

/**
 * OpenAI's tile rule (GPT-4o, GPT-4.1, GPT-5 and the o-series at detail "high"): fit in a 2048 x 2048 square, scale
 * down so that the short side is at most 768 px, count 512 px tiles; tokens = base + tiles x per tile. Documented
 * examples (GPT-4o: base 85, 170 a tile): 1024 x 1024 → 765; 2048 x 4096 → 1,105.
 */
export function openaiTileTokens(size: Size, baseTokens: number, tileTokens: number): number {
  const fitted = fitLongSide(size, 2048);
  const scale = Math.min(1, 768 / Math.min(fitted.width, fitted.height));
  const width = Math.round(fitted.width * scale);
  const height = Math.round(fitted.height * scale);
  return baseTokens + Math.ceil(width / 512) * Math.ceil(height / 512) * tileTokens;
}

/** Anthropic's image budget: an image over ~1,600 tokens (1.15 megapixels) is scaled down before it is read. */
export const ANTHROPIC_MAX_IMAGE_TOKENS = 1600;

/**
 * Anthropic's rule (vision guide, "Evaluate image size"): tokens = width x height / 750, after Anthropic scales the
 * image down (aspect kept) until its long side is at most 1568 px and it is at most ~1,600 tokens. Documented examples:
 * 200 x 200 → ~54; 1000 x 1000 → ~1,334; 1092 x 1092 → ~1,590.
 */
export function anthropicImageTokens(size: Size): number {
  const fitted = fitLongSide(size, 1568);
  const tokens = (fitted.width * fitted.height) / 750;
  return Math.ceil(Math.min(tokens, ANTHROPIC_MAX_IMAGE_TOKENS));
}

/**
 * Amazon Nova (Nova user guide, "Image understanding"): Nova rescales each image to its closest supported aspect ratio
 * and bills by the resulting area; the guide publishes approximate counts, which this function interpolates linearly by
 * area (and extends at the last segment's rate). Documented examples: 900 x 450 ~800; 900 x 900 ~1,300;
 * 1400 x 900 ~1,800; 1800 x 900 ~2,400; 1300 x 1300 ~2,600. Small images are scaled up to a ~896 px long side first.
 */
export function novaImageTokens(size: Size): number {
  const NOVA_MIN_LONG_SIDE = 896;
  const long = Math.max(size.width, size.height, 1);
  const up = long < NOVA_MIN_LONG_SIDE ? NOVA_MIN_LONG_SIDE / long : 1;
  const area = size.width * up * (size.height * up);
  const [first, ...rest] = NOVA_AREA_TOKENS;
  let previous = first as readonly [number, number];
  if (area <= previous[0]) return Math.ceil((area / previous[0]) * previous[1]);
  let segment: readonly [readonly [number, number], readonly [number, number]] = [previous, previous];
  for (const point of rest) {
    segment = [previous, point];
    if (area <= point[0]) break;
    previous = point;
  }
  const [[a0, t0], [a1, t1]] = segment;
  return Math.ceil(t0 + ((area - a0) * (t1 - t0)) / (a1 - a0));
}

/** Nova's published examples as (area in pixels, tokens), by area. */
const NOVA_AREA_TOKENS: ReadonlyArray<readonly [number, number]> = [
  [900 * 450, 800],
  [900 * 900, 1300],
  [1400 * 900, 1800],
  [1800 * 900, 2400],
  [1300 * 1300, 2600],
];

/**
 * Gemini 3 (media-resolution guide, "Token counts"): a media part costs a fixed number of tokens per resolution level,
 * whatever its size: an image at the default (high) 1,120; a PDF page at the default (medium) 560.
 */
export const GEMINI3_MEDIA_TOKENS = {
  image: { low: 280, medium: 560, high: 1120 },
  pdfPage: { low: 280, medium: 560, high: 1120 },
} as const;
