/**
 * Scripted OpenAI Responses API answers for the fake provider server (./fake-server.ts), as the integration tests
 * need them: a completed answer whose output text is a JSON value, and a per-page transcriber for the 20-page
 * fixture (its pages each begin with "Section <n>").
 */
import type { RecordedRequest, ScriptedResponse } from './fake-server.js';

/** A completed Responses API answer whose output text is `answer` as JSON, with the usage given. */
export function openaiAnswer(
  answer: unknown,
  usage: { input: number; output: number },
  options: { delayMs?: number; model?: string } = {},
): ScriptedResponse {
  return {
    status: 200,
    ...(options.delayMs !== undefined ? { delayMs: options.delayMs } : {}),
    json: {
      id: 'resp_fake',
      object: 'response',
      created_at: 1_795_000_000,
      status: 'completed',
      error: null,
      incomplete_details: null,
      model: options.model ?? 'gpt-5.4-mini',
      output: [
        {
          id: 'msg_fake',
          type: 'message',
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', annotations: [], logprobs: [], text: JSON.stringify(answer) }],
        },
      ],
      usage: {
        input_tokens: usage.input,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: usage.output,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: usage.input + usage.output,
      },
    },
  };
}

/** The 20-page fixture's page a request is for, from the "Section <n>" its text begins with. */
export function pageOf(request: RecordedRequest): number | undefined {
  const match = /Section (\d+)/.exec(JSON.stringify(request.body));
  return match ? Number(match[1]) : undefined;
}

/** A responder answering each page's request with "Transcribed page <n>" after `delayMs`. */
export function transcribePages(delayMs: number): (request: RecordedRequest) => ScriptedResponse {
  return (request) =>
    openaiAnswer({ text: `Transcribed page ${pageOf(request)}` }, { input: 900, output: 40 }, { delayMs });
}
