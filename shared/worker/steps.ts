/**
 * Which step each candidate of a single-step plan runs on a file, for a whole run or one page chunk: the step the
 * estimate priced whenever the file allows it (contract v1.2 §5). Pure: the worker reads the pages' text layer and
 * asks here; the estimate's step comes from the file's facts alone (planning/estimate.ts `likelyStep`).
 * Not to undo:
 * - A PDF the estimate took for text (`analyze`) is given to the models as text whenever every page has some: a last
 *   page with only "Terms net 30" is still a text page, and reading the pages as images instead cost 3x the estimate.
 * - Where a page has no text at all, the models would rather read the pages (`vision`), but only within the spend
 *   limit: if that would cross it they analyze the text there is, the step the estimate priced (`cheaperStep`).
 * - The estimate's own attempt (`planned`) is never skipped for the spend limit (./attempts.ts).
 */
import type { FileFacts } from '../file-facts.js';
import { hasTextLayer } from '../media/index.js';
import { likelyStep } from '../planning/estimate.js';
import { catalog } from '../providers/catalog.js';
import type { ProviderId, Step } from '../task.js';

/** What tryCandidates is told about steps (its `stepFor`, `cheaperStep` and `planned`), and the text `analyze` reads. */
export interface StepChoice {
  stepFor: (provider: ProviderId) => Step;
  cheaperStep: (provider: ProviderId) => Step | undefined;
  planned?: { provider: ProviderId; step: Step };
  /** The document's text layer, when any page has one: what an `analyze` step is given. */
  documentText?: string;
}

/** The text layer read page by page: every page's text, and whether each has a real one (`hasTextLayer`). */
export interface TextLayer {
  /** Every page's text, joined (undefined when no page has any text). */
  text: string | undefined;
  /** Every page has a real text layer: nothing on it needs reading from pixels (what lets a chain skip its OCR). */
  complete: boolean;
  /** Every page has some text, however short. */
  everyPage: boolean;
}

/** The text layer of a PDF from its pages' texts (as `pdfTextLayer` or `PdfFile.text` give them). */
export function textLayerOf(pages: readonly string[]): TextLayer {
  const texts = pages.map((page) => page.trim());
  const some = texts.some((t) => t !== '');
  return {
    text: some ? texts.join('\n\n') : undefined,
    complete: texts.length > 0 && texts.every(hasTextLayer),
    everyPage: texts.length > 0 && texts.every((t) => t !== ''),
  };
}

/**
 * The steps of a single-step plan's candidates on a file whose facts are `facts` (as the estimate saw them: the run's,
 * or a chunk's share of them) and whose text layer is `layer` (undefined for an image or an unreadable layer).
 * OCR engines and `local` read the file themselves (`vision`). A language model analyzes the text when the layer reads
 * every page, or when the estimate priced `analyze` and every page has some text; otherwise it reads the pages, with
 * the estimate's `analyze` of the text there is as its cheaper step.
 */
export function chooseSteps(
  facts: FileFacts,
  candidates: readonly ProviderId[],
  layer: TextLayer | undefined,
): StepChoice {
  const primary = candidates.find((id) => catalog[id] !== undefined);
  const planned = primary === undefined ? undefined : { provider: primary, step: likelyStep(primary, facts) };
  const isModel = (provider: ProviderId) => catalog[provider]?.role === 'language_model';
  const text = layer?.text;
  const pricedAsText = (provider: ProviderId) => likelyStep(provider, facts) === 'analyze';
  const readsText = (provider: ProviderId) =>
    text !== undefined && layer !== undefined && (layer.complete || (pricedAsText(provider) && layer.everyPage));
  return {
    stepFor: (provider) => (isModel(provider) && readsText(provider) ? 'analyze' : 'vision'),
    cheaperStep: (provider) =>
      isModel(provider) && text !== undefined && pricedAsText(provider) ? 'analyze' : undefined,
    ...(planned ? { planned } : {}),
    ...(text !== undefined ? { documentText: text } : {}),
  };
}
