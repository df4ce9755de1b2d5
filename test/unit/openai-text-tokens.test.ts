/**
 * OpenAI's text tokens against OpenAI's own tokenizer (gpt-tokenizer, o200k_base; loaded here, never at run time):
 * the build-time counts of our fixed texts are current, a request's texts are predicted as o200k counts them, and the
 * measured rule for the client's own text over-counts the corpus (test/support/text-corpus.ts) within stated bounds.
 */
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { countFixedTexts, openaiFixedTexts } from '../../scripts/gen-tokens.js';
import {
  documentTextBlock,
  OCR_TASK,
  predictedTextTokens,
  SYSTEM_INSTRUCTIONS,
  taskForStep,
} from '../../shared/providers/openai/profile.js';
import { fixedTextTokens, textTokens } from '../../shared/providers/openai/text-tokens.js';
import { O200K_COUNTS } from '../../shared/providers/openai/token-counts.gen.js';
import { buildInstruction, instructionPieces, resultJsonSchema } from '../../shared/providers/task-prompt.js';
import { openaiTextTokens } from '../../shared/providers/tokens.js';
import { buildTask, registry } from '../../shared/registry/registry.js';
import type { Step, TaskSpec } from '../../shared/task.js';
import {
  corpusScaffolds,
  corpusSchemas,
  ENGLISH_PROMPTS,
  FIXTURE_PROMPTS,
  MULTILINGUAL_PROMPTS,
  textCorpus,
} from '../support/text-corpus.js';

/** What OpenAI counts for a step's texts: the system instructions, the instruction and the schema as sent. */
function o200kTextTokens(task: TaskSpec, step: Step): number {
  const asked = taskForStep(task, step);
  return (
    countTokens(SYSTEM_INSTRUCTIONS) +
    countTokens(buildInstruction(asked)) +
    countTokens(JSON.stringify(resultJsonSchema(asked)))
  );
}

const registryTask = (schemaId: string, prompt: string): TaskSpec =>
  buildTask({ prompt, outputFormat: 'json', schemaId, schema: registry.get(schemaId) });

describe('the build-time counts of our own texts', () => {
  test('are o200k_base counts of the texts the adapter sends today (else run `npm run gen:tokens`)', () => {
    expect(O200K_COUNTS).toEqual(countFixedTexts());
  });

  test('cover every text of a registry-schema, open, text or transcription request but the client prompt', () => {
    const prompt = 'Extract it, please';
    const tasks = [
      ...[...registry.keys()].map((id) => registryTask(id, prompt)),
      buildTask({ prompt, outputFormat: 'json' }),
      buildTask({ prompt, outputFormat: 'text' }),
    ];
    for (const task of tasks) {
      for (const step of ['vision', 'analyze', 'ocr'] as const) {
        const asked = taskForStep(task, step);
        const ours = [
          SYSTEM_INSTRUCTIONS,
          JSON.stringify(resultJsonSchema(asked)),
          ...instructionPieces(asked).filter((piece) => piece !== prompt),
        ];
        expect(ours.filter((text) => fixedTextTokens(text) === undefined)).toEqual([]);
      }
    }
    expect(fixedTextTokens(documentTextBlock(''))).toBe(countTokens(documentTextBlock('')));
    expect(fixedTextTokens(OCR_TASK.prompt)).toBe(countTokens(OCR_TASK.prompt));
  });

  test('a fixed text edited without regenerating falls back to the measured rule, not to a stale count', () => {
    const edited = `${SYSTEM_INSTRUCTIONS} Be brief.`;
    expect(fixedTextTokens(edited)).toBeUndefined();
    expect(textTokens(edited)).toBe(openaiTextTokens(edited));
    expect(openaiFixedTexts().length).toBe(Object.keys(O200K_COUNTS).length);
  });
});

describe("a request's text tokens as OpenAI counts them", () => {
  // The instruction is one string on the wire and a sum of pieces in the prediction: each seam between a fixed piece
  // and the client's prompt can move the count by about a token.
  test.each([...registry.keys()])('registry schema %s: our texts exactly, within a token per seam', (schemaId) => {
    const prompt = 'Extract every line item. Use null for a value the document does not show.';
    const task = registryTask(schemaId, prompt);
    const seams = instructionPieces(task).length - 1;
    for (const step of ['vision', 'analyze'] as const) {
      const ours = predictedTextTokens(task, step) - openaiTextTokens(prompt);
      expect(Math.abs(ours - (o200kTextTokens(task, step) - countTokens(prompt)))).toBeLessThanOrEqual(seams);
    }
  });

  test('the transcription an ocr step asks for is counted exactly, within a token for its seam', () => {
    const task = registryTask('receipt', 'whatever the client asked');
    expect(Math.abs(predictedTextTokens(task, 'ocr') - o200kTextTokens(task, 'ocr'))).toBeLessThanOrEqual(1);
  });

  test("an inline schema and a long prompt are counted by the measured rule, never under o200k's count", () => {
    const task = buildTask({
      prompt: ENGLISH_PROMPTS[0] as string,
      outputFormat: 'json',
      schema: {
        label: 'Delivery note',
        expectedFields: ['deliveryNoteNumber', { name: 'deliveryDate', type: 'date', required: true }],
        promptScaffold: 'Read {fields} off this delivery note. {prompt}',
      },
    });
    const actual = o200kTextTokens(task, 'vision');
    const predicted = predictedTextTokens(task, 'vision');
    expect(predicted).toBeGreaterThanOrEqual(actual);
    expect(predicted).toBeLessThanOrEqual(actual * 1.2);
  });
});

describe("the measured rule for the client's own text (corpus: test/support/text-corpus.ts)", () => {
  const ratio = (texts: readonly string[]) =>
    texts.reduce((sum, text) => sum + openaiTextTokens(text), 0) /
    texts.reduce((sum, text) => sum + countTokens(text), 0);

  test('over-counts the corpus as a whole by 0–20 %', () => {
    const all = textCorpus().map(({ text }) => text);
    expect(ratio(all)).toBeGreaterThanOrEqual(1);
    expect(ratio(all)).toBeLessThanOrEqual(1.2);
  });

  test.each([
    ['the fixture prompts', () => FIXTURE_PROMPTS],
    ['longer English prompts', () => ENGLISH_PROMPTS],
    ['prompts in 18 other languages', () => Object.values(MULTILINGUAL_PROMPTS)],
    ['JSON schemas', corpusSchemas],
    ['scaffolds with their fields', corpusScaffolds],
  ])('does not under-count %s taken together', (_, texts) => {
    expect(ratio(texts())).toBeGreaterThanOrEqual(1);
  });

  test('under-counts no single text by more than 30 % (the worst: Polish, −26 %)', () => {
    const under = textCorpus().filter(({ text }) => openaiTextTokens(text) < 0.7 * countTokens(text));
    expect(under.map(({ label }) => label)).toEqual([]);
  });

  test('Chinese, Japanese and Korean, ~1.2–1.6 characters a token, are not counted as English', () => {
    for (const language of ['zh', 'ja', 'ko']) {
      const text = MULTILINGUAL_PROMPTS[language] as string;
      expect(openaiTextTokens(text)).toBeGreaterThanOrEqual(countTokens(text));
    }
  });
});
