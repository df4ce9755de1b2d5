/**
 * What an Anthropic Messages API request is made of: the file (an image prepared by shared/media, or a PDF document
 * block within the API's page and size limits), or an `analyze` step's text cut to its allowance; the forced result
 * tool; and the repair turns. The adapter sends what this builds.
 */
import type {
  ContentBlockParam,
  MessageCreateParamsNonStreaming,
  MessageParam,
  ToolResultBlockParam,
} from '@anthropic-ai/sdk/resources/messages/messages.js';
import { prepareImage } from '../../media/index.js';
import type { TaskSpec } from '../../task.js';
import { ProviderFailure } from '../../task.js';
import { base64 } from '../common.js';
import { analyzeText, givenText } from '../language-model.js';
import { firstAnswerCapWithin } from '../output-cap.js';
import type { InvokeOptions, ProviderInput } from '../types.js';
import { type Attempt, LABEL } from './failures.js';
import {
  IMAGE_TARGET,
  instructionFor,
  MAX_PDF_PAGES,
  type ModelPrices,
  outputTokenCap,
  pdfFitsRequest,
  predictTokens,
  REPAIR_ERROR_MAX_CHARS,
  REPAIR_PREFIX,
  RESULT_TOOL_NAME,
  requestCostMicros,
  resultTool,
} from './profile.js';
import type { ParsedResponse } from './response.js';

/**
 * The first request's `max_tokens` within the spend limit (../output-cap.ts), at `prices`. The adapter and the batch
 * line (./batch.ts) plan alike.
 */
export function firstAnswerCap(
  input: ProviderInput,
  prices: ModelPrices,
  maxCostMicros: number | undefined,
  env: NodeJS.ProcessEnv,
): number {
  return firstAnswerCapWithin(input, maxCostMicros, env, {
    predictTokens,
    stepCap: outputTokenCap(input.facts, input.task, input.step, prices),
    cost: (t) => requestCostMicros(prices, { inputTokens: t.input, outputTokens: t.output }),
    refuse: (message) => new ProviderFailure('client', `${LABEL}: ${message}`),
  }).cap;
}

/** The body of one `messages.create` call: the result tool forced, thinking off (forced tool use requires it). */
export function requestBody(
  model: string,
  task: TaskSpec,
  maxTokens: number,
  messages: MessageParam[],
): MessageCreateParamsNonStreaming {
  return {
    model,
    max_tokens: maxTokens,
    messages,
    tools: [resultTool(task)],
    tool_choice: { type: 'tool', name: RESULT_TOOL_NAME, disable_parallel_tool_use: true },
    // Forced tool use is refused with thinking on, and Haiku 5.5 thinks by default.
    thinking: { type: 'disabled' },
  };
}

/** The content block that carries the file: an image block (prepared by shared/media) or a PDF document block. */
export async function fileBlock(
  input: ProviderInput,
  attempt: Attempt,
  options: InvokeOptions,
): Promise<ContentBlockParam> {
  if (input.bytes.byteLength === 0) throw attempt.fail('unreadable_file', 'the file is empty');
  if (input.facts.mime === 'application/pdf') {
    if (input.facts.pages > MAX_PDF_PAGES) {
      throw attempt.fail(
        'client',
        `the PDF has ${input.facts.pages} pages, over the API's ${MAX_PDF_PAGES} per request`,
      );
    }
    if (!pdfFitsRequest(input.bytes.byteLength)) {
      throw attempt.fail(
        'client',
        `the PDF (${input.bytes.byteLength} bytes) does not fit the API's 32 MB request limit`,
      );
    }
    return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: base64(input.bytes) } };
  }
  let prepared: Awaited<ReturnType<typeof prepareImage>>;
  try {
    prepared = await prepareImage(input.bytes, input.facts.mime, IMAGE_TARGET, options);
  } catch (error) {
    if (error instanceof ProviderFailure) throw error;
    if (options.signal.aborted || Date.now() >= options.deadlineMs) {
      throw attempt.fail('timeout', 'deadline passed while preparing the image');
    }
    throw attempt.fail(
      'client',
      `the image cannot be prepared: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (prepared.mime !== 'image/jpeg' && prepared.mime !== 'image/png') {
    throw attempt.fail('client', `image preparation returned ${prepared.mime}, which this adapter does not send`);
  }
  return { type: 'image', source: { type: 'base64', media_type: prepared.mime, data: base64(prepared.bytes) } };
}

/** The first user turn: the file (or, for an analyze step, the given document text), then the instruction. */
export async function firstTurn(
  input: ProviderInput,
  task: TaskSpec,
  attempt: Attempt,
  options: InvokeOptions,
): Promise<MessageParam> {
  const instruction: ContentBlockParam = { type: 'text', text: instructionFor(task) };
  const given = givenText(input);
  if (given !== undefined) {
    // Cut to what the estimate holds per page (promptTokenBound), so a dense text never bills past the run's hold.
    const allowed = analyzeText(given, input.facts.pages);
    const text = allowed.trim() === '' ? '(the document has no legible text)' : allowed;
    return { role: 'user', content: [{ type: 'text', text: `<document>\n${text}\n</document>` }, instruction] };
  }
  return { role: 'user', content: [await fileBlock(input, attempt, options), instruction] };
}

/** The repair turns: the model's own answer, then our error result for each tool call and the errors as text. */
export function repairTurns(parsed: ParsedResponse, errors: string[]): MessageParam[] {
  const errorText = `${REPAIR_PREFIX}${errors.map((e) => `- ${e}`).join('\n')}`.slice(
    0,
    REPAIR_PREFIX.length + REPAIR_ERROR_MAX_CHARS,
  );
  const results: ToolResultBlockParam[] = parsed.toolCalls.map((call) => ({
    type: 'tool_result',
    tool_use_id: call.id,
    is_error: true,
    content: call.name === RESULT_TOOL_NAME ? errorText : `Unknown tool ${call.name}; only ${RESULT_TOOL_NAME} exists.`,
  }));
  const reply: ContentBlockParam[] = results.length > 0 ? results : [{ type: 'text', text: errorText }];
  const echo: ContentBlockParam[] = parsed.echo.length > 0 ? parsed.echo : [{ type: 'text', text: '(no answer)' }];
  return [
    { role: 'assistant', content: echo },
    { role: 'user', content: reply },
  ];
}
