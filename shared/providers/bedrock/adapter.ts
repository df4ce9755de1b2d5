/**
 * The `bedrock` provider: Amazon Bedrock's Converse API with a Nova vision model. Credentials and endpoint are the
 * SDK's; HTTP/1.1; SDK retries off (the plan retries) and every request bound to the attempt's deadline; JSON through
 * a forced tool with one repair; AWS text redacted before it reaches a failure. See docs/decisions.md#bedrock-adapter.
 * The request is built by ./request.ts, the response read by ./response.ts, failures mapped by ./failures.ts.
 */
import {
  BedrockRuntimeClient,
  type ContentBlock,
  ConverseCommand,
  type ConverseCommandInput,
  type ConverseCommandOutput,
  type Message,
} from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { Deadline } from '../../media/index.js';
import { ProviderFailure } from '../../task.js';
import { analyzeText, givenText, textTokenBound } from '../language-model.js';
import { repairCapWithin } from '../output-cap.js';
import { answerErrors } from '../result-validation.js';
import { normaliseOpenResult, resultFromAnswer } from '../task-prompt.js';
import type { InvokeOptions, ProviderAdapter, ProviderInput, ProviderOutput } from '../types.js';
import { failureFor, withUsage } from './failures.js';
import {
  documentTextBlock,
  instructionFor,
  predictedTokenCostMicros,
  promptTokenBound,
  RESULT_TOOL_NAME,
  SYSTEM_PROMPT,
  usesResultTool,
} from './profile.js';
import { firstAnswerCap, mediaBlock, pdfText, pricedModel, quoteErrors, replayable, resultTool } from './request.js';
import { checkStopReason, output, textOf, toolCallOf, UsageMeter, withUsageOption } from './response.js';

/** Connection setup allowance; the rest of the attempt's time is the request timeout. */
const CONNECTION_TIMEOUT_MS = 5_000;

/** Options of `createBedrockProvider`. */
export interface BedrockProviderOptions {
  /** Where BEDROCK_MODEL_ID and AWS_REGION are read (credentials and endpoint come from the SDK's default chain). */
  env?: NodeJS.ProcessEnv;
  /** The SDK client to use (default: one created on first use, HTTP/1.1, SDK retries off). */
  client?: BedrockRuntimeClient;
}

/** Builds the SDK client: HTTP/1.1 keep-alive handler, SDK retries off, Region from `env` when set there. */
export function createBedrockClient(env: NodeJS.ProcessEnv = process.env): BedrockRuntimeClient {
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
  return new BedrockRuntimeClient({
    ...(region ? { region } : {}),
    maxAttempts: 1,
    requestHandler: new NodeHttpHandler({ connectionTimeout: CONNECTION_TIMEOUT_MS }),
  });
}

/** A bedrock adapter over its own client (tests make one per case so that credentials are re-read). */
export function createBedrockProvider(options: BedrockProviderOptions = {}): ProviderAdapter {
  const env = options.env ?? process.env;
  let client = options.client;

  async function send(request: ConverseCommandInput, deadline: Deadline): Promise<ConverseCommandOutput> {
    deadline.check('sending a request');
    client ??= createBedrockClient(env);
    try {
      return await client.send(new ConverseCommand(request), {
        abortSignal: deadline.requestSignal(),
        requestTimeout: Math.max(1, deadline.remainingMs()),
      });
    } catch (error) {
      throw failureFor(error, deadline, env);
    }
  }

  async function invoke(input: ProviderInput, options: InvokeOptions): Promise<ProviderOutput> {
    const deadline = new Deadline(options.signal, options.deadlineMs, 'bedrock');
    deadline.check('starting');
    const model = pricedModel(env);
    const { task, facts } = input;
    const step = input.step;
    const fromText = givenText(input) !== undefined;
    const json = usesResultTool(task, step);
    const billableUnits = Math.max(1, facts.pages);
    const meter = new UsageMeter(model, billableUnits);

    const instruction = instructionFor(task, step);
    const content: ContentBlock[] = fromText
      ? [{ text: `${documentTextBlock(analyzeText(input.documentText ?? '', input.facts.pages))}\n\n${instruction}` }]
      : [await mediaBlock(input, deadline), { text: instruction }];
    // For a PDF schema extraction, read the text layer alongside the model call: it grounds the extracted values.
    const groundingText =
      !fromText && json && task.fields !== null && facts.kind === 'pdf' ? pdfText(input, deadline) : undefined;

    const sentTextBytes = fromText ? textTokenBound(analyzeText(input.documentText ?? '', facts.pages)) : undefined;
    // The spend limit: each request's output cap is what the attempt's allowance leaves after its input.
    const cost = (t: { input: number; output: number }) => predictedTokenCostMicros(t, { env });
    const maxTokens = firstAnswerCap(input, model.price, options.maxCostMicros, env);
    const base: Omit<ConverseCommandInput, 'messages'> = {
      modelId: model.id,
      system: [{ text: SYSTEM_PROMPT }],
      inferenceConfig: { maxTokens, temperature: 0 },
      ...(json ? { toolConfig: { tools: [resultTool(task)], toolChoice: { tool: { name: RESULT_TOOL_NAME } } } } : {}),
    };
    const question: Message = { role: 'user', content };

    const first = await send({ ...base, messages: [question] }, deadline);
    meter.add(first.usage, { input: promptTokenBound(facts, task, step, sentTextBytes), output: maxTokens });
    checkStopReason(first, meter.usage(), json);
    const firstContent = first.output?.message?.content;
    if (!Array.isArray(firstContent)) {
      throw new ProviderFailure('invalid_output', 'bedrock: the response has no message', withUsageOption(meter));
    }

    if (!json) {
      const text = textOf(firstContent);
      if (text === '')
        throw new ProviderFailure('invalid_output', 'bedrock: the answer is empty', withUsageOption(meter));
      // The document's text: the OCR text an analyze step was given, else what the model read out (OCR, text answers).
      return output({ text }, fromText ? input.documentText : text, meter);
    }

    let call = toolCallOf(firstContent);
    let errors = call ? answerErrors(task, call.input) : [`no call of the ${RESULT_TOOL_NAME} tool`];
    if (errors.length > 0) {
      // A repair that could cross the spend limit is skipped: the attempt fails as the repair would have.
      const repairCap = repairCapWithin(
        maxTokens,
        options.maxCostMicros,
        meter.usage()?.costMicros ?? 0,
        { input: meter.inputTokens, output: meter.outputTokens },
        cost,
      );
      if (repairCap === undefined) {
        throw new ProviderFailure(
          'invalid_output',
          'bedrock: the result does not match the schema; a repair would cross the run spend limit',
          withUsageOption(meter),
        );
      }
      const feedback = `Your answer does not match the ${RESULT_TOOL_NAME} input schema:\n${quoteErrors(errors)}\nCall the ${RESULT_TOOL_NAME} tool again with a complete, corrected input.`;
      const repair: Message = {
        role: 'user',
        content: call
          ? [{ toolResult: { toolUseId: call.toolUseId, content: [{ text: feedback }] } }]
          : [{ text: feedback }],
      };
      let second: ConverseCommandOutput;
      try {
        second = await send(
          {
            ...base,
            inferenceConfig: { maxTokens: repairCap, temperature: 0 },
            messages: [question, { role: 'assistant', content: replayable(firstContent) }, repair],
          },
          deadline,
        );
      } catch (error) {
        throw withUsage(failureFor(error, deadline, env), meter.usage());
      }
      meter.add(second.usage, {
        input: promptTokenBound(facts, task, step, sentTextBytes) + meter.outputTokens + 4000,
        output: repairCap,
      });
      checkStopReason(second, meter.usage(), json);
      const secondContent = second.output?.message?.content;
      call = Array.isArray(secondContent) ? toolCallOf(secondContent) : undefined;
      errors = call ? answerErrors(task, call.input) : [`no call of the ${RESULT_TOOL_NAME} tool`];
      if (errors.length > 0) {
        throw new ProviderFailure(
          'invalid_output',
          `bedrock: the result does not match the schema after one repair: ${errors.slice(0, 3).join('; ')}`,
          withUsageOption(meter),
        );
      }
    }
    // Validated: an object of the result schema.
    const value = call?.input as Record<string, unknown>;
    if (task.fields !== null) {
      const result = resultFromAnswer(task.fields, value);
      const documentText = fromText ? input.documentText : await groundingText;
      return output(result, documentText, meter);
    }
    const open = normaliseOpenResult(value);
    const readText = typeof value.text === 'string' ? value.text : undefined;
    return output(open, fromText ? input.documentText : readText, meter);
  }

  return { id: 'bedrock', invoke };
}

/** The worker's bedrock adapter (process environment, one client per container). */
export const bedrockProvider: ProviderAdapter = createBedrockProvider();
