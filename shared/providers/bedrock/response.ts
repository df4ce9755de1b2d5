/**
 * Reading a Bedrock Converse response: the usage meter (a response without counts is priced at its request's bound),
 * the stop reason (refusal, context overflow and truncation end the attempt), the answer's text and result-tool call,
 * and the output a validated result becomes.
 */
import type { ContentBlock, ConverseCommandOutput, TokenUsage } from '@aws-sdk/client-bedrock-runtime';
import { log } from '../../log.js';
import type { ProviderUsage } from '../../task.js';
import { ProviderFailure } from '../../task.js';
import type { ProviderOutput } from '../types.js';
import { type BedrockModel, RESULT_TOOL_NAME, tokenCostMicros } from './profile.js';

/** Tokens used so far by an attempt's requests. */
export class UsageMeter {
  inputTokens = 0;
  outputTokens = 0;
  requests = 0;

  constructor(
    private readonly model: BedrockModel,
    private readonly billableUnits: number,
  ) {}

  /**
   * Adds one response's usage. A response without usage counts (missing, or not numbers) is priced at the request's
   * bound (`bound`: its input and output cap) and logged: Converse always reports them, so this is a broken answer.
   */
  add(usage: TokenUsage | undefined, bound: { input: number; output: number }): void {
    const counted = (n: number | undefined) => n !== undefined && Number.isFinite(n) && n >= 0;
    if (!usage || !counted(usage.inputTokens) || !counted(usage.outputTokens)) {
      log.warn('bedrock: a response without token usage; priced at the request bound', { bound });
      this.requests += 1;
      this.inputTokens += bound.input;
      this.outputTokens += bound.output;
      return;
    }
    this.requests += 1;
    // Cache tokens are counted apart from inputTokens; no request here uses caching, but any reported are billed.
    this.inputTokens +=
      (usage?.inputTokens ?? 0) + (usage?.cacheReadInputTokens ?? 0) + (usage?.cacheWriteInputTokens ?? 0);
    this.outputTokens += usage?.outputTokens ?? 0;
  }

  /** The usage so far, or undefined before any request was answered. */
  usage(): ProviderUsage | undefined {
    if (this.requests === 0) return undefined;
    return {
      billableUnits: this.billableUnits,
      costMicros: tokenCostMicros(this.inputTokens, this.outputTokens, this.model.price),
      inputTokens: this.inputTokens,
      outputTokens: this.outputTokens,
    };
  }
}

export function textOf(content: readonly ContentBlock[]): string {
  return content
    .map((block) => ('text' in block && typeof block.text === 'string' ? block.text : ''))
    .filter((t) => t !== '')
    .join('\n')
    .trim();
}

export type ToolCall = { toolUseId: string; input: unknown } | undefined;

export function toolCallOf(content: readonly ContentBlock[]): ToolCall {
  for (const block of content) {
    if ('toolUse' in block && block.toolUse && block.toolUse.name === RESULT_TOOL_NAME) {
      let value: unknown = block.toolUse.input;
      // The input is a JSON document; a model that emits it as a JSON string is read the same way.
      if (typeof value === 'string') {
        try {
          value = JSON.parse(value);
        } catch {
          // left as the string: validation reports it
        }
      }
      return { toolUseId: block.toolUse.toolUseId ?? 'tooluse', input: value };
    }
  }
  return undefined;
}

/** Refusals, truncation and malformed answers, by stop reason (checked before the content is used). */
export function checkStopReason(
  response: ConverseCommandOutput,
  usage: ProviderUsage | undefined,
  json: boolean,
): void {
  const reason = response.stopReason;
  if (reason === 'guardrail_intervened' || reason === 'content_filtered') {
    throw new ProviderFailure('refusal', `bedrock: the model declined (${reason})`, usage ? { usage } : undefined);
  }
  if (reason === 'model_context_window_exceeded') {
    throw new ProviderFailure(
      'client',
      "bedrock: the document does not fit the model's context window",
      usage ? { usage } : undefined,
    );
  }
  if (reason === 'max_tokens') {
    const what = json ? 'the tool input is incomplete' : 'the text is truncated';
    throw new ProviderFailure(
      'truncated',
      `bedrock: the answer reached maxTokens (${what})`,
      usage ? { usage } : undefined,
    );
  }
}

export function withUsageOption(meter: UsageMeter): { usage: ProviderUsage } | undefined {
  const usage = meter.usage();
  return usage ? { usage } : undefined;
}

export function output(
  result: Record<string, unknown>,
  documentText: string | undefined,
  meter: UsageMeter,
): ProviderOutput {
  const usage = meter.usage();
  if (!usage) throw new ProviderFailure('invalid_output', 'bedrock: no usage reported');
  return { result, ...(documentText ? { documentText } : {}), usage };
}
