/**
 * The output caps within the spend limit (shared/providers/output-cap.ts). The first request's: the step's cap shrunk
 * to what the limit leaves after the predicted input, never raised, and a request refused unsent, with the provider's
 * own failure, when too little is left; each language model's request module plans through it with its own parts.
 * A repair's: what the limit leaves after what was spent and the resent input and answer, or none at all.
 */
import type { FileFacts } from '../../../shared/file-facts.js';
import * as anthropic from '../../../shared/providers/anthropic/profile.js';
import { firstAnswerCap as anthropicCap } from '../../../shared/providers/anthropic/request.js';
import * as bedrock from '../../../shared/providers/bedrock/profile.js';
import { firstAnswerCap as bedrockCap } from '../../../shared/providers/bedrock/request.js';
import * as gemini from '../../../shared/providers/gemini/profile.js';
import { firstAnswerCap as geminiCap } from '../../../shared/providers/gemini/request.js';
import * as openai from '../../../shared/providers/openai/profile.js';
import { planRequest } from '../../../shared/providers/openai/request.js';
import {
  type FirstAnswerParts,
  firstAnswerCapWithin,
  MIN_USEFUL_OUTPUT_TOKENS,
  repairCapWithin,
} from '../../../shared/providers/output-cap.js';
import type { TokenCounts } from '../../../shared/providers/tokens.js';
import type { PredictOptions, ProviderInput } from '../../../shared/providers/types.js';
import { buildTask, registry } from '../../../shared/registry/registry.js';
import { ProviderFailure } from '../../../shared/task.js';

const FACTS: FileFacts = { mime: 'image/png', kind: 'image', sizeBytes: 1_000, width: 800, height: 800, pages: 1 };
const TASK = buildTask({
  prompt: 'Extract',
  outputFormat: 'json',
  schemaId: 'receipt',
  schema: registry.get('receipt'),
});
const INPUT: ProviderInput = { bytes: new Uint8Array(1_000), facts: FACTS, task: TASK, step: 'vision' };

/** A provider that predicts 1,000 input tokens and prices input at 1 micro a token, output at 10. */
function parts(stepCap: number, seen: PredictOptions[] = []): FirstAnswerParts {
  return {
    predictTokens: (_facts, _task, _step, options) => {
      seen.push(options);
      return { input: 1_000, output: 50 };
    },
    stepCap,
    cost: (t: TokenCounts) => t.input + 10 * t.output,
    refuse: (message) => new ProviderFailure('client', `test provider: ${message}`),
  };
}

// The input is counted with a 10 % margin: 1,100 tokens, 1,100 micros before any output.
const INPUT_MICROS = 1_100;

test('without a spend limit the cap is the step cap', () => {
  expect(firstAnswerCapWithin(INPUT, undefined, {}, parts(4_000))).toEqual({ cap: 4_000, predictedInput: 1_000 });
});

test('a spend limit shrinks the cap to what it leaves after the predicted input, at the output price', () => {
  const { cap } = firstAnswerCapWithin(INPUT, INPUT_MICROS + 10 * 300, {}, parts(4_000));
  expect(cap).toBe(300);
  // One micro less leaves room for one token less.
  expect(firstAnswerCapWithin(INPUT, INPUT_MICROS + 10 * 300 - 1, {}, parts(4_000)).cap).toBe(299);
});

test('a spend limit never raises the cap above the step cap', () => {
  expect(firstAnswerCapWithin(INPUT, 1_000_000, {}, parts(4_000)).cap).toBe(4_000);
});

test('the prediction is told the environment and the length of the document text it is given', () => {
  const seen: PredictOptions[] = [];
  const env = { SOME_MODEL: 'x' };
  firstAnswerCapWithin({ ...INPUT, step: 'analyze', documentText: 'Total 12.50' }, undefined, env, parts(4_000, seen));
  firstAnswerCapWithin(INPUT, undefined, env, parts(4_000, seen));
  expect(seen).toEqual([{ env, documentTextChars: 11 }, { env }]);
});

test("a limit that leaves fewer than the useful minimum refuses the request unsent, with the provider's failure", () => {
  const atMinimum = INPUT_MICROS + 10 * MIN_USEFUL_OUTPUT_TOKENS;
  expect(firstAnswerCapWithin(INPUT, atMinimum, {}, parts(4_000)).cap).toBe(MIN_USEFUL_OUTPUT_TOKENS);
  expect(() => firstAnswerCapWithin(INPUT, atMinimum - 1, {}, parts(4_000))).toThrow(
    new ProviderFailure('client', 'test provider: the request would cross the run spend limit (not sent)'),
  );
  // A step cap under the minimum is refused as well, with or without a limit.
  expect(() => firstAnswerCapWithin(INPUT, 1_000_000, {}, parts(MIN_USEFUL_OUTPUT_TOKENS - 1))).toThrow(
    ProviderFailure,
  );
});

describe('a repair', () => {
  const cost = (t: TokenCounts) => t.input + 10 * t.output;
  // The first request sent 900 tokens and got 100 back: the repair resends 1,000, counted as 1,100 with the margin.
  const first = { input: 900, output: 100 };

  test('without a spend limit it may use the whole cap', () => {
    expect(repairCapWithin(4_000, undefined, 5_000, first, cost)).toBe(4_000);
  });

  test('its cap is what the limit leaves after what was spent and the resent input, at the output price', () => {
    expect(repairCapWithin(4_000, 2_000 + 1_100 + 10 * 300, 2_000, first, cost)).toBe(300);
    expect(repairCapWithin(4_000, 1_000_000, 2_000, first, cost)).toBe(4_000);
  });

  test('none is sent when the cap left is under the first answer or the useful minimum', () => {
    // Room for 99 tokens: less than the 100 the first answer took, so a corrected one would be cut short.
    expect(repairCapWithin(4_000, 2_000 + 1_100 + 10 * 99, 2_000, first, cost)).toBeUndefined();
    expect(repairCapWithin(4_000, 2_000 + 1_100 + 10 * 100, 2_000, first, cost)).toBe(100);
    const short = { input: 1_000, output: 0 };
    expect(repairCapWithin(4_000, 1_100 + 10 * (MIN_USEFUL_OUTPUT_TOKENS - 1), 0, short, cost)).toBeUndefined();
    expect(repairCapWithin(4_000, 1_100 + 10 * MIN_USEFUL_OUTPUT_TOKENS, 0, short, cost)).toBe(
      MIN_USEFUL_OUTPUT_TOKENS,
    );
  });
});

describe("each language model refuses with its own words (the request module's parts)", () => {
  const refusal = (run: () => unknown): ProviderFailure => {
    try {
      run();
    } catch (error) {
      if (error instanceof ProviderFailure) return error;
      throw error;
    }
    throw new Error('not refused');
  };
  const env = {};

  test.each([
    [
      'anthropic',
      () => anthropicCap(INPUT, anthropic.pricesFor(anthropic.modelId(env)) as anthropic.ModelPrices, 1, env),
      'anthropic provider: the request would cross the run spend limit (not sent)',
    ],
    [
      'gemini',
      () => {
        const prices = gemini.pricesFor(gemini.modelId(env)) as gemini.ModelPrices;
        return geminiCap(INPUT, prices, prices, 1, env);
      },
      'gemini: the request would cross the run spend limit (not sent)',
    ],
    [
      'bedrock',
      () => bedrockCap(INPUT, bedrock.pricesFor(bedrock.modelId(env)) as bedrock.ModelPrices, 1, env),
      'bedrock: the request would cross the run spend limit (not sent)',
    ],
    [
      'openai',
      () => planRequest(INPUT, 1, openai.pricesFor(openai.modelId(env)) as openai.ModelPrices, env),
      'openai: the request would cross the run spend limit (not sent)',
    ],
  ])('%s', (_name, run, message) => {
    const failure = refusal(run);
    expect(failure.kind).toBe('client');
    expect(failure.message).toBe(message);
  });
});
