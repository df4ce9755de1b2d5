/**
 * Reading a Gemini response: the tokens it reports (the request's bound when it reports none), the first candidate's
 * answer (a blocked prompt or a safety stop is a refusal, a cut answer says why), and the JSON answer checked against
 * the task's result and shaped into the envelope's result.
 */
import type { GenerateContentResponse, Part } from '@google/genai';
import type { ProviderUsage, TaskSpec } from '../../task.js';
import { ProviderFailure } from '../../task.js';
import { isPlainObject } from '../common.js';
import { answerErrors } from '../result-validation.js';
import { normaliseOpenResult, resultFromAnswer } from '../task-prompt.js';

/**
 * Finish reasons of an answer cut short: the output cap, or the per-request token limit (CONTINUATION: the API could
 * go on with a continuation token, which this adapter does not follow up: automaticContinuation is off).
 */
export const CUT_REASONS: ReadonlySet<string> = new Set(['MAX_TOKENS', 'CONTINUATION']);

/** Finish reasons (and prompt block reasons) that mean the model declined or was stopped by a safety system. */
export const REFUSAL_REASONS: ReadonlySet<string> = new Set([
  'SAFETY',
  'RECITATION',
  'PROHIBITED_CONTENT',
  'BLOCKLIST',
  'SPII',
  'IMAGE_SAFETY',
  'IMAGE_PROHIBITED_CONTENT',
  'IMAGE_RECITATION',
  'LANGUAGE',
]);

/** Parses the model's JSON answer (tolerating a Markdown code fence); the error says why it is not JSON. */
export function parseJsonAnswer(text: string): { value: unknown } | { error: string } {
  const trimmed = text
    .trim()
    .replace(/^```(?:json)?\s*/i, '')
    .replace(/\s*```$/, '');
  if (trimmed === '') return { error: 'the answer is empty' };
  try {
    return { value: JSON.parse(trimmed) as unknown };
  } catch {
    return { error: 'the answer is not valid JSON' };
  }
}

/** The envelope's result for a validated answer: exactly the field names, the open-analysis object, or `{text}`. */
export function shapeAnswer(task: TaskSpec, value: Record<string, unknown>): Record<string, unknown> {
  if (task.outputFormat === 'text') return { text: value.text };
  if (task.fields !== null) return resultFromAnswer(task.fields, value);
  return normaliseOpenResult({ summary: value.summary, text: value.text, keyValues: value.keyValues });
}

/** Tokens one response reported (or, when it reported none, the request's upper bound: never an understatement). */
export interface ReportedTokens {
  input: number;
  /** The part of `input` served from Gemini's context cache (billed at the cached rate). */
  cachedInput: number;
  output: number;
}

export function countsOf(response: GenerateContentResponse, fallback: ReportedTokens): ReportedTokens {
  const usage = response.usageMetadata;
  if (!usage || (usage.promptTokenCount === undefined && usage.candidatesTokenCount === undefined)) return fallback;
  return {
    input: (usage.promptTokenCount ?? 0) + (usage.toolUsePromptTokenCount ?? 0),
    // Implicit caching: a request that repeats a recent prefix (a repair resends the document first) has those
    // tokens counted in promptTokenCount and again in cachedContentTokenCount, billed at the cached rate.
    cachedInput: usage.cachedContentTokenCount ?? 0,
    // Thinking tokens are billed as output.
    output: (usage.candidatesTokenCount ?? 0) + (usage.thoughtsTokenCount ?? 0),
  };
}

export interface Answer {
  text: string;
  finishReason: string | undefined;
  /** The model's turn as returned (thought signatures included), for the repair conversation. */
  modelParts: Part[];
  avgLogprobs: number | undefined;
}

export function isCut(answer: Answer): boolean {
  return answer.finishReason !== undefined && CUT_REASONS.has(answer.finishReason);
}

export function cutWhy(answer: Answer, cap: number): string {
  return answer.finishReason === 'MAX_TOKENS'
    ? `at the ${cap}-token output cap`
    : `${answer.finishReason}: the per-request token limit`;
}

/** The first candidate's answer; a blocked prompt or a safety stop is a refusal, a missing candidate invalid output. */
export function readAnswer(response: GenerateContentResponse, usage: () => ProviderUsage): Answer {
  const blockReason = response.promptFeedback?.blockReason;
  if (blockReason && blockReason !== 'BLOCKED_REASON_UNSPECIFIED') {
    throw new ProviderFailure('refusal', `gemini: the request was blocked (${blockReason})`, { usage: usage() });
  }
  const candidate = Array.isArray(response.candidates) ? response.candidates[0] : undefined;
  if (typeof candidate !== 'object' || candidate === null) {
    throw new ProviderFailure('invalid_output', 'gemini: the response has no candidate', { usage: usage() });
  }
  const finishReason = typeof candidate.finishReason === 'string' ? candidate.finishReason : undefined;
  if (finishReason && REFUSAL_REASONS.has(finishReason)) {
    throw new ProviderFailure('refusal', `gemini: generation stopped (${finishReason})`, { usage: usage() });
  }
  const parts: Part[] = Array.isArray(candidate.content?.parts) ? candidate.content.parts : [];
  // Thought summaries are not part of the answer (they are only returned when asked for, which this adapter is not).
  const modelParts = parts.filter((p) => typeof p === 'object' && p !== null && p.thought !== true);
  const text = modelParts.map((p) => (typeof p.text === 'string' ? p.text : '')).join('');
  const avgLogprobs = typeof candidate.avgLogprobs === 'number' ? candidate.avgLogprobs : undefined;
  return { text, finishReason, modelParts, avgLogprobs };
}

/** At most this many schema problems are quoted (the repair message is bounded by REPAIR_MESSAGE_MAX_TOKENS). */
export const PROBLEMS_QUOTED = 3;

/** Parses a JSON answer and checks what coercion to the task's result cannot fix (answerErrors). */
export function judge(task: TaskSpec, text: string): { value: Record<string, unknown> } | { error: string } {
  const parsed = parseJsonAnswer(text);
  if ('error' in parsed) return parsed;
  const problems = answerErrors(task, parsed.value, PROBLEMS_QUOTED);
  if (problems.length > 0) return { error: problems.join('; ') };
  return isPlainObject(parsed.value) ? { value: parsed.value } : { error: 'the answer is not a JSON object' };
}
