/**
 * What a Bedrock Converse request is made of: the media block (an image prepared by shared/media, or the PDF as a
 * document within Bedrock's size limit), the PDF's text layer for grounding, the forced result tool, and what a
 * repair turn replays and quotes.
 */
import type { ContentBlock, Tool, ToolInputSchema } from '@aws-sdk/client-bedrock-runtime';
import { type Deadline, pdfTextLayer, prepareImage } from '../../media/index.js';
import { ProviderFailure } from '../../task.js';
import { truncate } from '../common.js';
import { firstAnswerCapWithin } from '../output-cap.js';
import type { ProviderInput } from '../types.js';
import { clientFailure } from './failures.js';
import {
  type BedrockModel,
  configuredModel,
  IMAGE_TARGET,
  MAX_PDF_BYTES,
  type ModelPrices,
  modelId,
  outputTokenCap,
  predictedTokenCostMicros,
  predictTokens,
  REPAIR_ERROR_MAX_CHARS,
  resultToolSpec,
} from './profile.js';

/**
 * The first request's maxTokens within the spend limit (../output-cap.ts), the adapter's Converse request and a batch
 * record alike, at the configured model's list price.
 */
export function firstAnswerCap(
  input: ProviderInput,
  price: ModelPrices,
  maxCostMicros: number | undefined,
  env: NodeJS.ProcessEnv,
): number {
  return firstAnswerCapWithin(input, maxCostMicros, env, {
    predictTokens,
    stepCap: outputTokenCap(input.facts, input.task, input.step, price),
    cost: (t) => predictedTokenCostMicros(t, { env }),
    refuse: (message) => clientFailure(message),
  }).cap;
}

/** The configured model with its prices; a model without a row in the price table fails (client), unsent. */
export function pricedModel(env: NodeJS.ProcessEnv): BedrockModel {
  const model = configuredModel(env);
  if (!model) throw clientFailure(`BEDROCK_MODEL_ID ${modelId(env)} has no price in infra/bedrock-pricing.json`);
  return model;
}

/** The media content block for the file: a prepared image, or the PDF as a document. */
export async function mediaBlock(input: ProviderInput, deadline: Deadline): Promise<ContentBlock> {
  if (input.bytes.byteLength === 0) throw new ProviderFailure('unreadable_file', 'bedrock: the file is empty');
  if (input.facts.kind === 'pdf') {
    if (input.bytes.byteLength > MAX_PDF_BYTES) {
      const mb = (input.bytes.byteLength / 1_000_000).toFixed(1);
      throw clientFailure(`the PDF is ${mb} MB, over Bedrock's ${MAX_PDF_BYTES / 1_000_000} MB document limit`);
    }
    // The name is shown to the model and restricted by Converse (letters, digits, single spaces, hyphens, brackets).
    return { document: { format: 'pdf', name: 'document', source: { bytes: input.bytes } } };
  }
  try {
    const image = await prepareImage(input.bytes, input.facts.mime, IMAGE_TARGET, deadline);
    return { image: { format: image.mime === 'image/png' ? 'png' : 'jpeg', source: { bytes: image.bytes } } };
  } catch (error) {
    if (error instanceof ProviderFailure) throw error;
    deadline.check('preparing the image');
    throw clientFailure('the image cannot be prepared for Bedrock', error);
  }
}

/** The PDF's text layer joined, or undefined (best effort: a failure only means no grounding text). */
export async function pdfText(input: ProviderInput, deadline: Deadline): Promise<string | undefined> {
  try {
    const pages = await pdfTextLayer(input.bytes, deadline);
    const text = pages
      .map((p) => p.trim())
      .filter((p) => p !== '')
      .join('\n\n');
    return text === '' ? undefined : text;
  } catch {
    return undefined;
  }
}

/** The result tool as the SDK types it (the schema is plain JSON, so it is a valid SDK document value). */
export function resultTool(task: ProviderInput['task']): Tool {
  const spec = resultToolSpec(task);
  const json = spec.inputSchema.json as ToolInputSchema.JsonMember['json'];
  return { toolSpec: { name: spec.name, description: spec.description, inputSchema: { json } } };
}

/** The assistant turn to replay in a repair request: its text and tool calls (other blocks are not echoed back). */
export function replayable(content: readonly ContentBlock[]): ContentBlock[] {
  const kept = content.filter((block) => ('text' in block && block.text) || ('toolUse' in block && block.toolUse));
  return kept.length > 0 ? kept : [{ text: '(no answer)' }];
}

export function quoteErrors(errors: readonly string[]): string {
  const text = errors.map((e) => `- ${e}`).join('\n');
  return truncate(text, REPAIR_ERROR_MAX_CHARS);
}
