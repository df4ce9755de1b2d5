/**
 * What the language-model providers share (shared/providers/language-model.ts): an `analyze` step's text allowance
 * per page, the text cut to it on a character boundary, which step is given text, the UTF-8 bound on a text's tokens,
 * and the common profile.
 */

import type { FileFacts } from '../../../shared/file-facts.js';
import {
  ANALYZE_TEXT_BYTES_PER_PAGE,
  analyzeText,
  analyzeTextAllowance,
  givenText,
  languageModelProfile,
  textTokenBound,
} from '../../../shared/providers/language-model.js';
import type { Step, TaskSpec } from '../../../shared/task.js';

test('the allowance is per page of the document, and a document has at least one page', () => {
  expect(analyzeTextAllowance(3)).toBe(3 * ANALYZE_TEXT_BYTES_PER_PAGE);
  expect(analyzeTextAllowance(0)).toBe(ANALYZE_TEXT_BYTES_PER_PAGE);
});

test('a text within the allowance is sent whole; a longer one is cut on a character boundary', () => {
  expect(analyzeText('short', 1)).toBe('short');
  // 5,999 ASCII bytes then a 4-byte emoji: the emoji would cross 6,000 bytes, so it is left out whole.
  const text = `${'a'.repeat(ANALYZE_TEXT_BYTES_PER_PAGE - 1)}😀 and more`;
  const sent = analyzeText(text, 1);
  expect(sent).toBe('a'.repeat(ANALYZE_TEXT_BYTES_PER_PAGE - 1));
  expect(textTokenBound(sent)).toBeLessThanOrEqual(ANALYZE_TEXT_BYTES_PER_PAGE);
});

test('only an analyze step is given text: any other step reads the file, whatever text it carries', () => {
  expect(givenText({ step: 'analyze', documentText: 'Total 12.50' })).toBe('Total 12.50');
  expect(givenText({ step: 'analyze', documentText: '' })).toBe('');
  expect(givenText({ step: 'analyze' })).toBeUndefined();
  expect(givenText({ step: 'vision', documentText: 'Total 12.50' })).toBeUndefined();
  expect(givenText({ step: 'ocr', documentText: 'Total 12.50' })).toBeUndefined();
});

test('the token bound is the UTF-8 length: more than the characters for CJK and emoji', () => {
  expect(textTokenBound('total')).toBe(5);
  expect(textTokenBound('合計')).toBe(6);
  expect(textTokenBound('😀')).toBe(4);
});

test('a language-model profile runs every strategy, answers itself, and holds the dearest single-pass step', () => {
  const stepMicros: Record<Step, number> = { vision: 300, analyze: 500, ocr: 9_000 };
  const profile = languageModelProfile({
    id: 'openai',
    auth: 'api-key',
    credentialEnv: ['OPENAI_API_KEY'],
    stepCostMicros: (_facts, _task, step) => stepMicros[step],
  });
  const task = { outputFormat: 'text', fields: null } as unknown as TaskSpec;
  const image = { mime: 'image/png', kind: 'image', sizeBytes: 10, pages: 1 } as FileFacts;
  const pdf = { mime: 'application/pdf', kind: 'pdf', sizeBytes: 10, pages: 2 } as FileFacts;
  expect(profile.strategies).toEqual(['direct_multimodal', 'ocr_then_analyze', 'generic_vision_summary']);
  expect(profile.role).toBe('language_model');
  expect(profile.answers(task)).toBe(true);
  // An image runs `vision` only; a PDF may also run `analyze`; `ocr` is only ever a chained plan's own hold.
  expect(profile.maxCostMicros(image, task)).toBe(300);
  expect(profile.maxCostMicros(pdf, task)).toBe(500);
});
