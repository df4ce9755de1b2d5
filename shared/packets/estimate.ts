/**
 * The estimate of a packet run (contract-v1.2 §3): classifying every page, plus extracting every page at the dearest
 * of the allowed schemas (the service cannot know before the run how the pages divide). Each part is an ordinary
 * plan (shared/planning/plan.ts) of the whole file, so it is calibrated, chunked and priced exactly as other runs.
 * Not to undo: the hold is the sum of both parts; the price is what was done (the worker charges the attempts run).
 */
import type { FileFacts } from '../file-facts.js';
import type { Micros } from '../money.js';
import { type Plan, type PlanOptions, planRun } from '../planning/plan.js';
import { buildTask, registry } from '../registry/registry.js';
import type { ProviderId, TaskSpec } from '../task.js';

/**
 * The classification task a model is given for a packet's pages: one compact answer per page (./evidence.ts). Priced
 * as one array field, whose rows scale with the pages (about a page's evidence each).
 */
export const CLASSIFICATION_TASK: TaskSpec = {
  prompt: 'For each page: how likely each schema is, and whether the page starts a new document.',
  outputFormat: 'json',
  fields: [
    { name: 'pages', type: 'array', required: true, description: 'One entry per page: its classes and signals' },
  ],
  schemaId: null,
  schemaLabel: 'Page classification',
  promptScaffold: null,
  // A compact answer per page: the provider's smaller model where it has one, priced as such (estimate and charge).
  modelTier: 'classification',
};

export interface PacketEstimate {
  /** What is held: classification plus the dearest extraction. */
  estimateMicros: Micros;
  classification: Plan;
  /** The dearest allowed schema's plan for the whole file, and which schema it is. */
  extraction: { schemaId: string; plan: Plan };
}

/**
 * The estimate of splitting (or classifying, `schemaId: "auto"`) a file whose documents may be any of `schemaIds`
 * (registry ids, at least one; the caller has checked them), extracted with the client's `prompt`. Options as
 * `planRun`'s; both parts are field extractions, so `calibrationKeysFor(providers, CLASSIFICATION_TASK)` names every
 * calibration key they read.
 */
export function packetEstimate(
  facts: FileFacts,
  request: { prompt: string; schemaIds: readonly string[] },
  providers: readonly ProviderId[],
  options: PlanOptions = {},
): PacketEstimate {
  const classification = planRun(facts, CLASSIFICATION_TASK, providers, options);
  let extraction: PacketEstimate['extraction'] | undefined;
  for (const schemaId of request.schemaIds) {
    const schema = registry.get(schemaId);
    if (!schema) throw new Error(`packetEstimate: "${schemaId}" is not in the registry`);
    const task = buildTask({ prompt: request.prompt, outputFormat: 'json', schemaId, schema });
    const plan = planRun(facts, task, providers, options);
    if (!extraction || plan.estimateMicros > extraction.plan.estimateMicros) extraction = { schemaId, plan };
  }
  if (!extraction) throw new Error('packetEstimate: no schema allowed');
  return {
    estimateMicros: classification.estimateMicros + extraction.plan.estimateMicros,
    classification,
    extraction,
  };
}
