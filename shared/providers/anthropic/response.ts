/**
 * Reading an Anthropic Messages API response: its usage (recorded before anything else is checked, so every failure
 * carries it), its text and tool calls, the verdict on the result tool's input (refusal and truncation end the
 * attempt; a missing or invalid call is repairable), and the output a validated input becomes.
 */
import type { ContentBlockParam } from '@anthropic-ai/sdk/resources/messages/messages.js';
import type { ProviderUsage, TaskSpec } from '../../task.js';
import { isPlainObject } from '../common.js';
import { givenText } from '../language-model.js';
import { answerErrors } from '../result-validation.js';
import { normaliseOpenResult, resultFromAnswer } from '../task-prompt.js';
import type { ProviderInput, ProviderOutput } from '../types.js';
import type { Attempt } from './failures.js';
import { RESULT_TOOL_NAME, type RequestTokens } from './profile.js';

export interface ToolCall {
  id: string;
  name: string;
  input: unknown;
}

export interface ParsedResponse {
  stopReason: string | null;
  refusal: string | undefined;
  /** The assistant turn to echo in a repair request (text and tool calls only). */
  echo: ContentBlockParam[];
  toolCalls: ToolCall[];
}

function tokenCount(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** The usage of a response body, or undefined when it has none the API promises (input and output token counts). */
export function parseUsage(body: Record<string, unknown>): RequestTokens | undefined {
  const usage = body.usage;
  if (!isPlainObject(usage)) return undefined;
  const inputTokens = tokenCount(usage.input_tokens);
  const outputTokens = tokenCount(usage.output_tokens);
  if (inputTokens === undefined || outputTokens === undefined) return undefined;
  const split = isPlainObject(usage.cache_creation) ? usage.cache_creation : undefined;
  const split5m = tokenCount(split?.ephemeral_5m_input_tokens);
  const split1h = tokenCount(split?.ephemeral_1h_input_tokens);
  const writes = tokenCount(usage.cache_creation_input_tokens) ?? 0;
  const hasSplit = split5m !== undefined || split1h !== undefined;
  return {
    inputTokens,
    outputTokens,
    cacheWrite5mTokens: split5m ?? 0,
    cacheWrite1hTokens: split1h ?? 0,
    // Without the TTL split every cache write is priced at the dearer 1 h rate.
    cacheWriteTokens: hasSplit ? Math.max(0, writes - (split5m ?? 0) - (split1h ?? 0)) : writes,
    cacheReadTokens: tokenCount(usage.cache_read_input_tokens) ?? 0,
  };
}

/** Reads the parts of a Messages API response the adapter needs; anything missing is the caller's invalid output. */
export function parseContent(body: Record<string, unknown>): ParsedResponse | undefined {
  if (!Array.isArray(body.content)) return undefined;
  const echo: ContentBlockParam[] = [];
  const toolCalls: ToolCall[] = [];
  for (const block of body.content) {
    if (!isPlainObject(block)) return undefined;
    if (block.type === 'text' && typeof block.text === 'string' && block.text !== '') {
      echo.push({ type: 'text', text: block.text });
    } else if (block.type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string') {
      toolCalls.push({ id: block.id, name: block.name, input: block.input });
      echo.push({ type: 'tool_use', id: block.id, name: block.name, input: block.input });
    }
  }
  const details = isPlainObject(body.stop_details) ? body.stop_details : undefined;
  const refusal =
    details?.type === 'refusal'
      ? [details.category, details.explanation].filter((s) => typeof s === 'string' && s !== '').join(': ')
      : undefined;
  return {
    stopReason: typeof body.stop_reason === 'string' ? body.stop_reason : null,
    refusal,
    echo,
    toolCalls,
  };
}

/** A response's usage (recorded on the attempt first) and content; a body without either is invalid output. */
export function readResponse(response: unknown, attempt: Attempt): { usage: RequestTokens; parsed: ParsedResponse } {
  if (!isPlainObject(response)) throw attempt.fail('invalid_output', 'the response is not a JSON object');
  const usage = parseUsage(response);
  if (!usage) throw attempt.fail('invalid_output', 'the response carries no token usage');
  attempt.requests.push(usage);
  const parsed = parseContent(response);
  if (!parsed) throw attempt.fail('invalid_output', 'the response has no readable content');
  return { usage, parsed };
}

export type Verdict = { ok: true; value: Record<string, unknown> } | { ok: false; errors: string[] };

/** Checks a response: refusal and truncation end the attempt; a missing or invalid tool call is repairable. */
export function judge(parsed: ParsedResponse, task: TaskSpec, maxTokens: number, attempt: Attempt): Verdict {
  if (parsed.stopReason === 'refusal') {
    throw attempt.fail('refusal', `the model declined the request${parsed.refusal ? ` (${parsed.refusal})` : ''}`);
  }
  if (parsed.stopReason === 'max_tokens' || parsed.stopReason === 'model_context_window_exceeded') {
    throw attempt.fail('truncated', `the answer was cut off (${parsed.stopReason}, max_tokens ${maxTokens})`);
  }
  const call = parsed.toolCalls.find((c) => c.name === RESULT_TOOL_NAME);
  if (!call) return { ok: false, errors: [`no ${RESULT_TOOL_NAME} call was made (stop_reason ${parsed.stopReason})`] };
  const errors = answerErrors(task, call.input);
  if (errors.length > 0 || !isPlainObject(call.input)) {
    return { ok: false, errors: errors.length > 0 ? errors : ['$: expected object'] };
  }
  return { ok: true, value: call.input };
}

/** The output for a validated tool input. */
export function outputFor(
  value: Record<string, unknown>,
  task: TaskSpec,
  input: ProviderInput,
  usage: ProviderUsage,
): ProviderOutput {
  const given = givenText(input);
  if (task.outputFormat === 'text') {
    const text = typeof value.text === 'string' ? value.text : '';
    return { result: { text }, documentText: given ?? text, usage };
  }
  if (task.fields !== null) {
    // Exactly the schema's field names, values as the model gave them (the worker coerces types).
    const result = resultFromAnswer(task.fields, value);
    return given === undefined ? { result, usage } : { result, documentText: given, usage };
  }
  const text = typeof value.text === 'string' ? value.text : undefined;
  const documentText = given ?? text;
  const result = normaliseOpenResult(value);
  return documentText === undefined ? { result, usage } : { result, documentText, usage };
}
