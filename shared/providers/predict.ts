/**
 * What a task will most likely make a language model write, and how much text a document most likely carries: the
 * output-token prediction and the task kinds calibration is kept by. Pure functions of the task and the file's facts
 * (and, in the worker, of the text layer once it is read). No SDK: the API predicts with it at creation.
 *
 * Decisions a reader must not undo:
 * - A prediction is the expected size, never a bound: calibration (shared/pricing/calibration.ts) scales it by a high
 *   percentile of what runs really used, and the spend limit (shared/worker/attempts.ts) bounds what a run may cost.
 * - Figures here are in "answer tokens" of a ~4-characters-a-token tokenizer; each provider adds its own framing (a
 *   tool call's wrapper, Gemini's thinking) in its profile.
 */
import type { FileFacts } from '../file-facts.js';
import type { FieldSpec, Step, TaskSpec } from '../task.js';

/** The task kinds calibration is kept by (with the provider and the step): a few keys, each with many runs. */
export type TaskKind = 'fields' | 'open' | 'text' | 'summary';

/** Words that ask for a short text about the document rather than the document's text itself. */
const SUMMARY_WORDS = /\b(summar|describe|description|overview|gist|abstract|tl;?dr|brief|explain|what is|what's)/i;

/** The kind of answer a task asks for. */
export function taskKind(task: TaskSpec): TaskKind {
  if (task.outputFormat === 'json') return task.fields === null ? 'open' : 'fields';
  return SUMMARY_WORDS.test(task.prompt) ? 'summary' : 'text';
}

/** Text tokens a typical business page carries in its text layer (or that OCR reads off a scanned page). */
export const PAGE_TEXT_TOKENS = 500;
/**
 * A PDF whose pages average at most this many bytes is most likely text: a scanned page is an image, rarely under
 * 10 KB even as 1-bit G4 and usually 50-500 KB; a text page is a few KB of content streams. Set low on purpose: a text
 * PDF with embedded fonts over it is estimated as a scan (too high, refunded), while the opposite mistake would
 * estimate a scan as text (too low, and its model call might not fit the spend limit).
 */
export const TEXT_PDF_MAX_BYTES_PER_PAGE = 8 * 1024;

/**
 * Whether a PDF most likely has a text layer on every page, from its facts alone: creation reads headers only, so the
 * size per page is the signal (a declared file's `textLayer`, when given, is taken as it is). The worker knows for
 * sure and runs the step that fits; a wrong guess here is a less accurate estimate, bounded by the spend limit. Reading the first pages' font resources at inspection would be a
 * better signal (docs/pricing.md, "Limits").
 */
export function likelyTextLayer(facts: FileFacts): boolean {
  if (facts.kind === 'pdf' && facts.textLayer !== undefined) return facts.textLayer;
  return facts.kind === 'pdf' && facts.sizeBytes / Math.max(1, facts.pages) <= TEXT_PDF_MAX_BYTES_PER_PAGE;
}

/** The step a single-step plan most likely runs a language model for on this file (the worker decides for sure). */
export function likelyLanguageModelStep(facts: FileFacts): Step {
  return likelyTextLayer(facts) ? 'analyze' : 'vision';
}

/** Tokens of the document's text: the text actually given when known (4 characters a token), else per page. */
export function documentTextTokens(facts: FileFacts, documentTextChars?: number): number {
  return documentTextChars !== undefined
    ? Math.ceil(documentTextChars / 4)
    : Math.max(1, facts.pages) * PAGE_TEXT_TOKENS;
}

/** Rows an array field holds per page (line items, transactions): a typical invoice or statement page. */
export const ROWS_PER_PAGE = 8;
const ROW_TOKENS = 24;

/** Tokens of one field's key and value in a JSON answer. */
function fieldTokens(field: FieldSpec, pages: number): number {
  const key = Math.ceil(field.name.length / 3) + 2;
  switch (field.type) {
    case 'string':
      return key + 8;
    case 'number':
    case 'integer':
      return key + 3;
    case 'date':
      return key + 5;
    case 'boolean':
      return key + 1;
    case 'object':
      return key + 24;
    case 'array':
      return key + ROWS_PER_PAGE * ROW_TOKENS * pages;
  }
}

/** A summary: a paragraph, and a sentence or two more per page. */
const SUMMARY_BASE_TOKENS = 120;
const SUMMARY_TOKENS_PER_PAGE = 25;
/**
 * An open analysis repeats the legible text and adds a summary and key-value pairs: a sentence or two of summary and
 * the JSON around it (~120 tokens; a business card's whole answer is ~130, a receipt's ~170), plus pairs per page.
 */
const OPEN_BASE_TOKENS = 120;
const OPEN_KEY_VALUE_TOKENS_PER_PAGE = 80;
/** A picture with little text: what an open analysis of an image says besides the text. */
const PICTURE_TEXT_TOKENS = 60;

/**
 * The answer's predicted size in tokens for a step of a task: a field extraction by its fields (array fields by rows
 * per page); a transcription by the document's text (known, or per page); a summary by a paragraph plus a little per
 * page; an open analysis by the legible text plus a summary and key-value pairs. An `ocr` step always transcribes.
 */
export function predictAnswerTokens(
  facts: FileFacts,
  task: TaskSpec,
  step: Step,
  options: { documentTextChars?: number } = {},
): number {
  const pages = Math.max(1, facts.pages);
  const kind: TaskKind = step === 'ocr' ? 'text' : taskKind(task);
  const text =
    facts.kind === 'image' && options.documentTextChars === undefined
      ? PICTURE_TEXT_TOKENS
      : documentTextTokens(facts, options.documentTextChars);
  switch (kind) {
    case 'fields':
      return 2 + (task.fields ?? []).reduce((sum, f) => sum + fieldTokens(f, pages), 0);
    case 'text':
      return 5 + text;
    case 'summary':
      return SUMMARY_BASE_TOKENS + SUMMARY_TOKENS_PER_PAGE * pages;
    case 'open':
      return OPEN_BASE_TOKENS + text + OPEN_KEY_VALUE_TOKENS_PER_PAGE * pages;
  }
}

/** The calibration key of an attempt: provider, task kind and step (`openai:fields:vision`). */
export function calibrationKey(provider: string, task: TaskSpec, step: Step): string {
  return `${provider}:${step === 'ocr' ? 'text' : taskKind(task)}:${step}`;
}
