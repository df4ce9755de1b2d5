/**
 * Reading an OpenAI Responses API object: the parts this adapter uses (zod), its usage recorded before any check so
 * every later failure carries it, a failed, incomplete or refused answer as its failure, and the answer checked
 * against the result schema and shaped into the envelope's result.
 */
import * as z from 'zod';
import type { FailureKind, ProviderFailure, Step, TaskSpec } from '../../task.js';
import { isPlainObject, redact } from '../common.js';
import { answerErrors } from '../result-validation.js';
import { normaliseOpenResult, resultFromAnswer } from '../task-prompt.js';
import type { ProviderOutput } from '../types.js';
import { failedResponseKind, MESSAGE_MAX_CHARS } from './failures.js';
import type { TokenUsage } from './profile.js';
import type { TokenLogprob } from './value-confidence.js';

const count = z.number().int().nonnegative();

/** The parts of a Responses API object this adapter reads (anything else in the body is ignored). */
export const responseSchema = z.object({
  object: z.literal('response'),
  status: z.string().nullish(),
  output: z.array(
    z.object({
      type: z.string(),
      phase: z.string().nullish(),
      content: z
        .array(
          z.object({
            type: z.string(),
            text: z.string().optional(),
            refusal: z.string().optional(),
            logprobs: z.array(z.object({ token: z.string(), logprob: z.number() })).nullish(),
          }),
        )
        .nullish(),
    }),
  ),
  usage: z
    .object({
      input_tokens: count,
      output_tokens: count,
      input_tokens_details: z.object({ cached_tokens: count.nullish() }).nullish(),
    })
    .nullish(),
  incomplete_details: z.object({ reason: z.string().nullish() }).nullish(),
  error: z.object({ code: z.string().nullish(), message: z.string().nullish() }).nullish(),
});

export interface Answer {
  text: string;
  /** Null when logprobs were not requested or not returned. */
  logprobs: TokenLogprob[] | null;
}

/** What reading a response needs from its attempt: the key to redact, the cap asked, where usage goes, how to fail. */
export interface ResponseContext {
  apiKey: string;
  cap: number;
  usages: TokenUsage[];
  fail: (kind: FailureKind, message: string) => ProviderFailure;
}

/** Reads a response: its usage is recorded first, so that every later failure carries it. */
export function readResponse(raw: unknown, logprobsAsked: boolean, context: ResponseContext): Answer {
  const { apiKey, cap, usages, fail } = context;
  const parsed = responseSchema.safeParse(raw);
  if (!parsed.success) throw fail('invalid_output', 'openai: the response is not a Responses API object');
  const response = parsed.data;
  if (response.usage) {
    usages.push({
      inputTokens: response.usage.input_tokens,
      cachedInputTokens: response.usage.input_tokens_details?.cached_tokens ?? 0,
      outputTokens: response.usage.output_tokens,
    });
  }
  const status = response.status ?? 'completed';
  if (status === 'failed') {
    const code = response.error?.code;
    const detail = redact(response.error?.message ?? 'no detail', [apiKey], MESSAGE_MAX_CHARS);
    throw fail(failedResponseKind(code), `openai: the response failed${code ? ` (${code})` : ''}: ${detail}`);
  }
  if (status === 'incomplete') {
    const reason = response.incomplete_details?.reason ?? 'unknown';
    if (reason === 'content_filter') throw fail('refusal', 'openai: the answer was stopped by content filtering');
    // Cut at max_output_tokens: asking again with the same cap would be cut again (a chunked run splits).
    if (reason === 'max_output_tokens') {
      throw fail('truncated', `openai: the answer is incomplete (${reason}); output cap ${cap} tokens`);
    }
    throw fail('invalid_output', `openai: the answer is incomplete (${reason}); output cap ${cap} tokens`);
  }
  if (status !== 'completed') throw fail('invalid_output', `openai: unexpected response status "${status}"`);
  if (!response.usage) throw fail('invalid_output', 'openai: the response reports no usage');

  // Intermediate commentary (newer models) is not the answer.
  const parts = response.output
    .filter((item) => item.type === 'message' && item.phase !== 'commentary')
    .flatMap((item) => item.content ?? []);
  const refusal = parts.find((p) => p.type === 'refusal');
  if (refusal)
    throw fail('refusal', `openai: the model refused: ${redact(refusal.refusal ?? '', [apiKey], MESSAGE_MAX_CHARS)}`);
  const texts = parts.filter((p) => p.type === 'output_text');
  const logprobs = logprobsAsked && texts.some((p) => p.logprobs) ? texts.flatMap((p) => p.logprobs ?? []) : null;
  return { text: texts.map((p) => p.text ?? '').join(''), logprobs };
}

/** At most this many schema problems are quoted back to the model (the message is bounded in the estimate too). */
const PROBLEMS_QUOTED = 5;

/** Parses the model's answer and checks it against the schema: the object, or the reason it is not acceptable. */
export function checkAnswer(text: string, task: TaskSpec): { value: Record<string, unknown> } | { error: string } {
  if (text.trim() === '') return { error: 'the answer is empty' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { error: `the answer is not valid JSON (${error instanceof Error ? error.message : String(error)})` };
  }
  // One more than is quoted, to know whether there are more.
  const problems = answerErrors(task, value, PROBLEMS_QUOTED + 1);
  if (problems.length > 0) {
    const more = problems.length > PROBLEMS_QUOTED ? ' (and more)' : '';
    return { error: `${problems.slice(0, PROBLEMS_QUOTED).join('; ')}${more}` };
  }
  return isPlainObject(value) ? { value } : { error: 'the answer is not a JSON object' };
}

/** The envelope's result and the document text from a validated answer. */
export function shapeOutput(
  task: TaskSpec,
  step: Step,
  value: Record<string, unknown>,
  readText: string | undefined,
): Pick<ProviderOutput, 'result' | 'documentText'> {
  const text = typeof value.text === 'string' ? value.text : undefined;
  if (step === 'ocr') return { result: { text: text ?? '' }, documentText: text };
  if (task.outputFormat === 'text') return { result: { text: text ?? '' }, documentText: readText ?? text };
  if (task.fields !== null) return { result: resultFromAnswer(task.fields, value), documentText: readText };
  return { result: normaliseOpenResult(value), documentText: readText ?? text };
}
