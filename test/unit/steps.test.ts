/** chooseSteps (shared/worker/steps.ts): which step each candidate runs, from the estimate's facts and the text layer. */
import type { FileFacts } from '../../shared/file-facts.js';
import { chooseSteps, textLayerOf } from '../../shared/worker/steps.js';

/** Two pages estimated as text (under 8 KiB a page) and the same two pages estimated as scans. */
const SMALL: FileFacts = { mime: 'application/pdf', kind: 'pdf', sizeBytes: 1_300, pages: 2 };
const LARGE: FileFacts = { mime: 'application/pdf', kind: 'pdf', sizeBytes: 400_000, pages: 2 };
const IMAGE: FileFacts = { mime: 'image/png', kind: 'image', sizeBytes: 13_775, width: 800, height: 834, pages: 1 };

const FULL_PAGE = 'Invoice Number: INV-2001\nInvoice Date: 2026-10-15';
const SHORT_PAGE = 'Terms net 30\n\nPage 2';

describe('the text layer', () => {
  test('a short page counts as a page with text, not as a real layer; a blank one as neither', () => {
    expect(textLayerOf([FULL_PAGE, SHORT_PAGE])).toEqual({
      text: `${FULL_PAGE}\n\n${SHORT_PAGE}`,
      complete: false,
      everyPage: true,
    });
    expect(textLayerOf([FULL_PAGE, FULL_PAGE]).complete).toBe(true);
    expect(textLayerOf([FULL_PAGE, '  \n '])).toEqual({ text: `${FULL_PAGE}\n\n`, complete: false, everyPage: false });
    expect(textLayerOf(['', ' '])).toEqual({ text: undefined, complete: false, everyPage: false });
  });
});

describe('the step each candidate runs', () => {
  test('an image: every candidate reads the file; the estimate priced its primary reading it', () => {
    const choice = chooseSteps(IMAGE, ['openai', 'local'], undefined);
    expect([choice.stepFor('openai'), choice.stepFor('local')]).toEqual(['vision', 'vision']);
    expect(choice.cheaperStep('openai')).toBeUndefined();
    expect(choice.planned).toEqual({ provider: 'openai', step: 'vision' });
  });

  test('estimated as text, a short page: the models analyze the whole text, as priced; OCR engines read the file', () => {
    const choice = chooseSteps(SMALL, ['anthropic', 'textract', 'local'], textLayerOf([FULL_PAGE, SHORT_PAGE]));
    expect(choice.planned).toEqual({ provider: 'anthropic', step: 'analyze' });
    expect(choice.stepFor('anthropic')).toBe('analyze');
    expect(choice.documentText).toContain('Terms net 30');
    expect([choice.stepFor('textract'), choice.stepFor('local')]).toEqual(['vision', 'vision']);
  });

  test('estimated as scans, a real layer on every page: the models analyze it (the cheaper step)', () => {
    const choice = chooseSteps(LARGE, ['openai'], textLayerOf([FULL_PAGE, FULL_PAGE]));
    expect(choice.planned).toEqual({ provider: 'openai', step: 'vision' });
    expect(choice.stepFor('openai')).toBe('analyze');
  });

  test('estimated as scans, a short page: read as estimated', () => {
    const choice = chooseSteps(LARGE, ['openai'], textLayerOf([FULL_PAGE, SHORT_PAGE]));
    expect(choice.stepFor('openai')).toBe('vision');
    expect(choice.cheaperStep('openai')).toBeUndefined();
  });

  test('estimated as text, a page with no text: read the pages, or analyze the text there is when that crosses the limit', () => {
    const choice = chooseSteps(SMALL, ['openai', 'local'], textLayerOf([FULL_PAGE, '']));
    expect(choice.stepFor('openai')).toBe('vision');
    expect(choice.cheaperStep('openai')).toBe('analyze');
    expect(choice.cheaperStep('local')).toBeUndefined();
  });

  test('estimated as text, no text at all: nothing to analyze, so no cheaper step', () => {
    const choice = chooseSteps(SMALL, ['openai'], textLayerOf(['', '']));
    expect(choice.stepFor('openai')).toBe('vision');
    expect(choice.cheaperStep('openai')).toBeUndefined();
    expect(choice.documentText).toBeUndefined();
  });

  test('the estimate priced the first candidate with a cost model', () => {
    const choice = chooseSteps(SMALL, ['gemini', 'bedrock'], textLayerOf([FULL_PAGE, FULL_PAGE]));
    expect(choice.planned).toEqual({ provider: 'gemini', step: 'analyze' });
  });
});
