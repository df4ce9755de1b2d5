/**
 * Bedrock batch inference for the batch lane (contract v1.2 §4): one attempt as a record's `modelInput` in Nova's
 * InvokeModel format (`{schemaVersion, system, messages, inferenceConfig, toolConfig}`, bytes as base64), with the
 * system prompt, instruction, output cap and forced result tool the adapter sends through Converse (./adapter.ts), and
 * a record's `modelOutput` read with the adapter's own response code (./response.ts). The batch API: ./batch-api.ts.
 * Not to undo:
 * - InvokeModel format, not Converse: a Converse-type batch job refuses `toolConfig` (docs/pricing.md §6). InvokeModel
 *   takes no `document` block, so a PDF read from the file goes as its pages' images (at most MAX_PDF_PAGE_IMAGES).
 * - No repair: a second request would need a second job. A result that does not match the schema fails the attempt,
 *   and the run falls back as for any other failed attempt.
 */

import type { ContentBlock, ConverseCommandOutput } from '@aws-sdk/client-bedrock-runtime';
import { Deadline, prepareImage, renderPdfPages } from '../../media/index.js';
import { ProviderFailure } from '../../task.js';
import type { BatchCodec } from '../batch-codec.js';
import { base64, isPlainObject } from '../common.js';
import { analyzeText, givenText, textTokenBound } from '../language-model.js';
import { answerErrors } from '../result-validation.js';
import { normaliseOpenResult, resultFromAnswer } from '../task-prompt.js';
import type { ProviderInput, ProviderOutput } from '../types.js';
import { clientFailure } from './failures.js';
import {
  documentTextBlock,
  IMAGE_TARGET,
  instructionFor,
  outputTokenCap,
  promptTokenBound,
  RESULT_TOOL_NAME,
  resultToolSpec,
  SYSTEM_PROMPT,
  usesResultTool,
} from './profile.js';
import { firstAnswerCap, pdfText, pricedModel } from './request.js';
import { checkStopReason, output, textOf, toolCallOf, UsageMeter, withUsageOption } from './response.js';

/** Nova takes at most 20 images in one request: a PDF of more pages is not sent through a batch (it falls back). */
export const MAX_PDF_PAGE_IMAGES = 20;

const attemptDeadline = () => {
  const signal = new AbortController().signal;
  return new Deadline(signal, Date.now() + 60_000, 'bedrock');
};

/** The file as InvokeModel image blocks: the prepared image, or a PDF's pages rendered. */
async function imageBlocks(input: ProviderInput): Promise<Array<Record<string, unknown>>> {
  if (input.bytes.byteLength === 0) throw new ProviderFailure('unreadable_file', 'bedrock: the file is empty');
  const deadline = attemptDeadline();
  const block = (image: { mime: string; bytes: Uint8Array }) => ({
    image: { format: image.mime === 'image/png' ? 'png' : 'jpeg', source: { bytes: base64(image.bytes) } },
  });
  if (input.facts.kind === 'pdf') {
    if (input.facts.pages > MAX_PDF_PAGE_IMAGES) {
      throw clientFailure(`a batch request takes at most ${MAX_PDF_PAGE_IMAGES} page images`);
    }
    return (await renderPdfPages(input.bytes, IMAGE_TARGET, deadline)).map(block);
  }
  try {
    return [block(await prepareImage(input.bytes, input.facts.mime, IMAGE_TARGET, deadline))];
  } catch (error) {
    if (error instanceof ProviderFailure) throw error;
    throw clientFailure('the image cannot be prepared for Bedrock', error);
  }
}

export const bedrockBatchCodec: BatchCodec = {
  id: 'bedrock',
  async line(input, options) {
    const env = options.env ?? process.env;
    const model = pricedModel(env);
    const { task, facts, step } = input;
    const fromText = givenText(input) !== undefined;
    const json = usesResultTool(task, step);
    // The spend limit as the adapter applies it (at list price: the discount only lowers what the answer costs).
    const maxTokens = firstAnswerCap(input, model.price, options.maxCostMicros, env);
    const instruction = instructionFor(task, step);
    const content = fromText
      ? [{ text: `${documentTextBlock(analyzeText(input.documentText ?? '', facts.pages))}\n\n${instruction}` }]
      : [...(await imageBlocks(input)), { text: instruction }];
    const tool = resultToolSpec(task);
    return {
      model: model.id,
      body: {
        schemaVersion: 'messages-v1',
        system: [{ text: SYSTEM_PROMPT }],
        messages: [{ role: 'user', content }],
        inferenceConfig: { maxTokens, temperature: 0 },
        ...(json
          ? { toolConfig: { tools: [{ toolSpec: tool }], toolChoice: { tool: { name: RESULT_TOOL_NAME } } } }
          : {}),
      },
    };
  },

  async parse(body, input, options = {}): Promise<ProviderOutput> {
    const env = options.env ?? process.env;
    const model = pricedModel(env);
    const { task, facts, step } = input;
    if (!isPlainObject(body))
      throw new ProviderFailure('invalid_output', 'bedrock: the batch answer is not a response');
    // Nova's InvokeModel answer has Converse's shape: {output: {message}, stopReason, usage}.
    const response = body as unknown as ConverseCommandOutput;
    const fromText = givenText(input) !== undefined;
    const json = usesResultTool(task, step);
    const meter = new UsageMeter(model, Math.max(1, facts.pages));
    const sentTextBytes = fromText ? textTokenBound(analyzeText(input.documentText ?? '', facts.pages)) : undefined;
    meter.add(response.usage, {
      input: promptTokenBound(facts, task, step, sentTextBytes),
      output: outputTokenCap(facts, task, step, model.price),
    });
    checkStopReason(response, meter.usage(), json);
    const content: ContentBlock[] | undefined = response.output?.message?.content;
    const usage = withUsageOption(meter);
    if (!Array.isArray(content))
      throw new ProviderFailure('invalid_output', 'bedrock: the answer has no message', usage);
    if (!json) {
      const text = textOf(content);
      if (text === '') throw new ProviderFailure('invalid_output', 'bedrock: the answer is empty', usage);
      return output({ text }, fromText ? input.documentText : text, meter);
    }
    const call = toolCallOf(content);
    const errors = call ? answerErrors(task, call.input) : [`no call of the ${RESULT_TOOL_NAME} tool`];
    if (errors.length > 0) {
      const why = errors.slice(0, 3).join('; ');
      throw new ProviderFailure('invalid_output', `bedrock: the batch result does not match the schema: ${why}`, usage);
    }
    const value = call?.input as Record<string, unknown>;
    if (task.fields !== null) {
      const documentText = fromText
        ? input.documentText
        : facts.kind === 'pdf'
          ? await pdfText(input, attemptDeadline())
          : undefined;
      return output(resultFromAnswer(task.fields, value), documentText, meter);
    }
    const readText = typeof value.text === 'string' ? value.text : undefined;
    return output(normaliseOpenResult(value), fromText ? input.documentText : readText, meter);
  },
};
