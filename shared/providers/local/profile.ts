/** What the planner knows of the local provider (tesseract OCR + pattern extraction), without loading it. */
import { localCost } from '../../pricing/pricing.js';
import { likelyTextLayer } from '../predict.js';
import type { ProviderProfile } from '../types.js';

export const localProfile: ProviderProfile = {
  id: 'local',
  auth: 'none',
  credentialEnv: [],
  // Local OCR can read text (OCR, then pattern extraction) but cannot look at a picture the way a vision model does.
  strategies: ['ocr_then_analyze', 'generic_vision_summary'],
  role: 'ocr_engine',
  // Field extraction by labels and patterns is what it does; an open question gets the text and key-value pairs.
  answers: (task) => task.outputFormat === 'text' || task.fields !== null,
  // Upper bound: every page OCR'd (text-layer pages cost a tenth of that and are refunded).
  maxCostMicros: (facts) => facts.pages * localCost.ocrPageMicros,
  // An analyze step only extracts from text it is given: the text-layer page price (local-provider.ts).
  stepCostMicros: (facts, _task, step) =>
    Math.max(1, facts.pages) * (step === 'analyze' ? localCost.textLayerPageMicros : localCost.ocrPageMicros),
  // The prediction: a PDF that most likely has a text layer (the same guess the language models' step uses) is read
  // from it at the text-layer page price; anything else is OCR'd. A wrong guess is an overrun the service absorbs.
  predictCostMicros: (facts, task, step) =>
    step !== 'analyze' && likelyTextLayer(facts)
      ? Math.max(1, facts.pages) * localCost.textLayerPageMicros
      : localProfile.stepCostMicros(facts, task, step),
};
