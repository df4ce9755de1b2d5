/**
 * What the language-model providers share (shared/providers/language-model.ts): an `analyze` step's text allowance
 * per page, the text cut to it on a character boundary, and the UTF-8 bound on a text's tokens.
 */
import {
  ANALYZE_TEXT_BYTES_PER_PAGE,
  analyzeText,
  analyzeTextAllowance,
  textTokenBound,
} from '../../../shared/providers/language-model.js';

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

test('the token bound is the UTF-8 length: more than the characters for CJK and emoji', () => {
  expect(textTokenBound('total')).toBe(5);
  expect(textTokenBound('合計')).toBe(6);
  expect(textTokenBound('😀')).toBe(4);
});
