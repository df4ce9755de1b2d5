/**
 * The output caps a language model's requests carry within the attempt's spend limit (InvokeOptions.maxCostMicros):
 * the first request's from its predicted input, a repair's from what the attempt already spent. One rule for openai,
 * anthropic, gemini and bedrock; each brings its own prediction, step cap, prices and failure.
 * Not to undo:
 * - The input is counted with a safety margin (predictions are ratios of characters), and a cap under
 *   MIN_USEFUL_OUTPUT_TOKENS refuses the request unsent: a request the limit cannot pay for is never made.
 * - The spend limit only lowers the step's own cap, never raises it (the estimate's bound is built on that cap).
 */
import type { FileFacts } from '../file-facts.js';
import type { ProviderFailure, Step, TaskSpec } from '../task.js';
import type { TokenCounts } from './tokens.js';
import type { PredictOptions, ProviderInput } from './types.js';

/** Input predictions are ratios of characters; the spend limit counts this much more input to be safe. */
const INPUT_SAFETY = 1.1;

/** The fewest output tokens worth a request: below it the answer could not be complete, so the request is not sent. */
export const MIN_USEFUL_OUTPUT_TOKENS = 16;

/**
 * The output cap a request may carry when the attempt may cost at most `maxCostMicros` more: what remains after the
 * request's input (its prediction, with a safety margin) at the output price, never above `cap`. Without a limit,
 * `cap`. The spend limit (docs/pricing.md): a request can then not push the run past SERVICE_MAX_OVERRUN_RATIO x its
 * estimate by its output.
 */
function outputCapWithin(
  cap: number,
  maxCostMicros: number | undefined,
  inputTokens: number,
  cost: (tokens: TokenCounts) => number,
): number {
  if (maxCostMicros === undefined) return cap;
  const input = Math.ceil(inputTokens * INPUT_SAFETY);
  const fixed = cost({ input, output: 0 });
  const perToken = cost({ input, output: 1 }) - fixed;
  if (!(perToken > 0)) return cap;
  return Math.max(0, Math.min(cap, Math.floor((maxCostMicros - fixed) / perToken)));
}

/** What a provider brings to its first request's cap: its own prediction, step cap, prices and failure. */
export interface FirstAnswerParts {
  /** The provider's prediction of a request's tokens (its profile's `predictTokens`). */
  predictTokens: (facts: FileFacts, task: TaskSpec, step: Step, options: PredictOptions) => TokenCounts;
  /** The step's own output cap (its profile's `outputTokenCap`). */
  stepCap: number;
  /** What some tokens cost, in micros, at the prices the provider holds the request to. */
  cost: (tokens: TokenCounts) => number;
  /** The provider's failure for a request refused unsent, given why. */
  refuse: (message: string) => ProviderFailure;
}

/** The first request's output cap, and the input tokens it was predicted to send. */
export interface FirstAnswerCap {
  cap: number;
  predictedInput: number;
}

/**
 * The first request's output cap within the spend limit: what the limit leaves after the request's predicted input
 * (the document text's length when it is given), never above the step's own cap. Throws the provider's refusal (not
 * sent) when that leaves fewer than MIN_USEFUL_OUTPUT_TOKENS.
 */
export function firstAnswerCapWithin(
  request: Pick<ProviderInput, 'facts' | 'task' | 'step' | 'documentText'>,
  maxCostMicros: number | undefined,
  env: NodeJS.ProcessEnv,
  parts: FirstAnswerParts,
): FirstAnswerCap {
  const predictedInput = parts.predictTokens(request.facts, request.task, request.step, {
    env,
    ...(request.documentText !== undefined ? { documentTextChars: request.documentText.length } : {}),
  }).input;
  const cap = outputCapWithin(parts.stepCap, maxCostMicros, predictedInput, parts.cost);
  if (cap < MIN_USEFUL_OUTPUT_TOKENS) {
    throw parts.refuse('the request would cross the run spend limit (not sent)');
  }
  return { cap, predictedInput };
}

/**
 * A repair request's output cap within the spend limit, or undefined when the attempt may not send one: the repair
 * resends the first request's input and answer (`first`), so its cap is what the limit leaves after what the attempt
 * already spent and that input, never above `cap`. Undefined when that is under MIN_USEFUL_OUTPUT_TOKENS or under the
 * first answer's own length (a corrected answer would be cut short).
 */
export function repairCapWithin(
  cap: number,
  maxCostMicros: number | undefined,
  spentMicros: number,
  first: TokenCounts,
  cost: (tokens: TokenCounts) => number,
): number | undefined {
  const left = maxCostMicros === undefined ? undefined : maxCostMicros - spentMicros;
  const repairCap = outputCapWithin(cap, left, first.input + first.output, cost);
  return repairCap < Math.max(MIN_USEFUL_OUTPUT_TOKENS, first.output) ? undefined : repairCap;
}
