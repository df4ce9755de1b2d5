/**
 * Estimate vs actual after calibration, per provider and fixture: the estimate creation would hold — the calibrated
 * prediction of the step the file most likely needs (`predictAttempt`), calibration learning from the runs before as
 * the service does for one tenant — divided by what a successful attempt is then charged — `priceFor(usage.costMicros)`
 * as the adapter computes it from the usage the provider reports. 40 runs of each, answers varying ±30 %.
 *
 * Each cloud adapter (openai, anthropic, gemini, bedrock, textract) runs for real (its SDK, its request building, its
 * media preparation, its cost function) against a local fake of its API (bench/provider-fakes.ts) that answers with a
 * successful response and realistic usage for the request it received. `local` runs the real local provider.
 * The step is the one the worker runs (shared/worker/steps.ts). The first run of each on an empty calibration table,
 * through the real create-run and worker, is bench/first-run.ts.
 *
 * For each bound the parts it is made of are computed with the profile's own functions (first request input, its
 * output cap, the repair request; Gemini's thinking headroom), so the report can say what dominates.
 * Over 400 lines: the bound's parts per provider (one switch over five cost models) sit beside the simulation whose
 * table they explain.
 */
import { config } from '../shared/config.js';
import type { FileFacts } from '../shared/file-facts.js';
import { inspectUpload } from '../shared/inspect/index.js';
import { likelyStep, predictAttempt } from '../shared/planning/estimate.js';
import {
  addSample,
  addTenantEntry,
  type CalibrationState,
  type DeploymentState,
  tenantFactors,
  usableSample,
} from '../shared/pricing/calibration.js';
import { priceFor } from '../shared/pricing/pricing.js';
import * as anthropic from '../shared/providers/anthropic/profile.js';
import * as bedrock from '../shared/providers/bedrock/profile.js';
import { catalog } from '../shared/providers/catalog.js';
import * as gemini from '../shared/providers/gemini/profile.js';
import { analyzeTextAllowance } from '../shared/providers/language-model.js';
import { shutdownLocalProvider } from '../shared/providers/local/local-provider.js';
import * as openai from '../shared/providers/openai/profile.js';
import { billedPages, textractApiFor, textractPageMicros } from '../shared/providers/textract/profile.js';
import type { ProviderAdapter, ProviderInput } from '../shared/providers/types.js';
import { type ProviderId, type ProviderUsage, type Step, singlePassSteps, type TaskSpec } from '../shared/task.js';
import { chooseSteps, textLayerOf } from '../shared/worker/steps.js';
import {
  benchAdapters,
  ESTIMATE_PROVIDERS,
  FIXTURES,
  type Fixture,
  fakeCaseOf,
  fixtureBytes,
  LANGUAGE_MODELS,
  pageTextsOf,
} from './estimate-fixtures.js';
import { type FakeCase, startProviderFakes, TOKEN_MODEL } from './provider-fakes.js';
import { round } from './stats.js';

/** Runs per language model and fixture, answers varying ±30 % (the issue's 200 simulated runs, and more). */
export const RUNS_PER_CASE = 40;
/** Answers vary uniformly within ±30 % of the fixture's answer. */
const ANSWER_VARIATION = 0.3;
/** The calibration-drift scenario: answers this much longer than before, for this many runs. */
const DRIFT_FACTOR = 1.4;
const DRIFT_RUNS = 60;

/** A deterministic pseudo-random sequence (the same figures run after run). */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

/** What the bound is made of, in micro-dollars (unrounded parts; `repair` takes the rounding). */
export interface BoundParts {
  /** The step whose bound the profile returned (the largest of the steps it covers). */
  step: Step | 'pages';
  firstInput: number;
  firstOutputCap: number;
  repair: number;
  /** Gemini: the thinking headroom inside the output caps (first request and repair). */
  thinkingHeadroom?: number;
  tokens?: { firstInput: number; outputCap: number };
  note?: string;
}

export interface EstimateCase {
  provider: ProviderId;
  file: string;
  task: string;
  /** The step the worker runs for this provider and file. */
  step: Step;
  /** Simulated runs behind the median ratio. */
  runs?: number;
  pages: number;
  estimateCostMicros: number;
  estimatePriceMicros: number;
  actualCostMicros: number;
  actualPriceMicros: number;
  ratio: number;
  /** Gemini: the ratio once its promotion ends (actual at list price, as the estimate always is). */
  listPriceRatio?: number;
  /** The profile's bound for the step actually run (the catalog's bound may cover a larger step), and its ratio. */
  stepBoundMicros?: number;
  stepBoundRatio?: number;
  inputTokens?: number;
  outputTokens?: number;
  requests: number;
  bound?: BoundParts;
  ms: number;
  error?: string;
}

export interface EstimatesResult {
  assumptions: typeof TOKEN_MODEL;
  cases: EstimateCase[];
  /** The simulated runs of the language models, answers varying ±30 %, calibration learning as it goes. */
  simulation: {
    runs: number;
    /** Share of runs whose price exceeded their estimate. */
    overEstimateShare: number;
    /** Absorbed ÷ charged over those runs. */
    absorbedOverCharged: number;
    /** Calibration drift: answers 40 % longer; runs until the estimate ÷ price is back within 1.0–1.5 for good. */
    drift: { provider: ProviderId; file: string; runsToRecover: number | null; ratios: number[] };
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The parts of each bound
// ---------------------------------------------------------------------------------------------------------------

/** The step whose bound is the catalog's (the largest of the steps a single-step plan may run on this file). */
function boundingStep(provider: ProviderId, facts: FileFacts, task: TaskSpec): Step {
  const bound = (step: Step) => catalog[provider]?.stepCostMicros(facts, task, step) ?? 0;
  return singlePassSteps(facts).reduce((a, b) => (bound(b) > bound(a) ? b : a));
}

function boundParts(provider: ProviderId, facts: FileFacts, task: TaskSpec, total: number): BoundParts | undefined {
  switch (provider) {
    case 'openai': {
      const prices =
        openai.pricesFor(openai.modelId()) ??
        (openai.openaiPricing.models[openai.openaiPricing.defaultModel] as openai.ModelPrices);
      const step = boundingStep('openai', facts, task);
      const { call } = openai.attemptTokenBounds(facts, task, step, prices);
      const firstInput = call.input * prices.inputPerMTokUsd;
      const firstOutputCap = call.output * prices.outputPerMTokUsd;
      return {
        step,
        firstInput,
        firstOutputCap,
        repair: total - firstInput - firstOutputCap,
        tokens: { firstInput: call.input, outputCap: call.output },
      };
    }
    case 'anthropic': {
      const prices = anthropic.pricesFor(anthropic.modelId());
      if (!prices) return undefined;
      const step = boundingStep('anthropic', facts, task);
      const cap = anthropic.outputTokenCap(facts, task, step, prices);
      const first = Math.min(anthropic.promptTokenBound(facts, task, step), prices.contextWindowTokens);
      const firstInput = anthropic.requestCostMicros(prices, { inputTokens: first, outputTokens: 0 });
      const firstOutputCap =
        anthropic.requestCostMicros(prices, { inputTokens: first, outputTokens: cap }) - firstInput;
      return {
        step,
        firstInput,
        firstOutputCap,
        repair: total - firstInput - firstOutputCap,
        tokens: { firstInput: first, outputCap: cap },
      };
    }
    case 'gemini': {
      const pricing = gemini.pricesFor(gemini.modelId());
      if (!pricing) return undefined;
      const step = boundingStep('gemini', facts, task);
      const cap = gemini.outputTokenCap(facts, task, step, pricing);
      const input = gemini.promptTokenBound(task, step) + gemini.mediaTokenBound(facts, step, pricing);
      const firstInput = input * pricing.inputPerMTokUsd;
      const firstOutputCap = cap * pricing.outputPerMTokUsd;
      return {
        step,
        firstInput,
        firstOutputCap,
        repair: total - firstInput - firstOutputCap,
        thinkingHeadroom: 2 * Math.min(cap, gemini.THINKING_HEADROOM_TOKENS) * pricing.outputPerMTokUsd,
        tokens: { firstInput: input, outputCap: cap },
      };
    }
    case 'bedrock': {
      const model = bedrock.configuredModel(process.env);
      if (!model) return undefined;
      const step = boundingStep('bedrock', facts, task);
      const textBytes = step === 'analyze' ? analyzeTextAllowance(facts.pages) : undefined;
      const input = bedrock.promptTokenBound(facts, task, step, textBytes);
      const cap = bedrock.outputTokenCap(facts, task, step, model.price);
      const firstInput = input * model.price.inputUsdPer1kTokens * 1000;
      const firstOutputCap = cap * model.price.outputUsdPer1kTokens * 1000;
      return {
        step,
        firstInput,
        firstOutputCap,
        repair: total - firstInput - firstOutputCap,
        tokens: { firstInput: input, outputCap: cap },
      };
    }
    case 'textract': {
      const api = textractApiFor(task);
      return {
        step: 'pages',
        firstInput: total,
        firstOutputCap: 0,
        repair: 0,
        note: `${billedPages(facts, api)} page(s) x ${textractPageMicros[api]} µ$ (${api})`,
      };
    }
    case 'local':
      return {
        step: 'pages',
        firstInput: total,
        firstOutputCap: 0,
        repair: 0,
        note: `${facts.pages} page(s) x OCR price`,
      };
  }
}

/** The profile's bound for one attempt of the step the worker actually runs (information). */
function stepBoundMicros(
  provider: ProviderId,
  facts: FileFacts,
  task: TaskSpec,
  step: Step,
  documentText: string | undefined,
): number | undefined {
  // Bounded for the text this step was really given (bedrock's bound follows it; the others hold their allowance).
  const documentTextBytes =
    step === 'analyze' ? (documentText === undefined ? undefined : Buffer.byteLength(documentText)) : undefined;
  return catalog[provider]?.stepCostMicros(
    facts,
    task,
    step,
    documentTextBytes === undefined ? {} : { documentTextBytes },
  );
}

// ---------------------------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------------------------

export async function measureEstimates(options: { log: (line: string) => void }): Promise<EstimatesResult> {
  const fakes = await startProviderFakes();
  const adapters = benchAdapters(fakes.url);
  const cases: EstimateCase[] = [];
  // Calibration as the service keeps it for one tenant (shared/pricing/calibration.ts), in memory: it learns as the
  // runs settle, in the tenant's own window and (its one entry) in the deployment's.
  const states = new Map<string, CalibrationState>();
  const deployment = new Map<string, DeploymentState>();
  const factorsNow = () => tenantFactors({ tenant: 'bench', own: states, deployment });
  const rand = random(17);
  const simulated = { runs: 0, over: 0, charged: 0, absorbed: 0 };
  const learn = (provider: ProviderId, facts: FileFacts, task: TaskSpec, step: Step, usage: ProviderUsage) => {
    const predicted = predictAttempt(provider, facts, task, step);
    if (!predicted?.tokens || !predicted.key || usage.inputTokens === undefined || usage.outputTokens === undefined)
      return;
    const sample = {
      key: predicted.key,
      predicted: predicted.tokens,
      actual: { input: usage.inputTokens, output: usage.outputTokens },
    };
    if (!usableSample(sample)) return;
    states.set(sample.key, addSample(states.get(sample.key), sample));
    deployment.set(sample.key, addTenantEntry(deployment.get(sample.key), 'bench', sample));
  };
  let drift: EstimatesResult['simulation']['drift'] = { provider: 'openai', file: '', runsToRecover: null, ratios: [] };
  /**
   * OpenAI on the picture with a generic prompt (its answer is ~40 % of its price), calibrated; then its answers turn
   * 40 % longer: how many runs until the estimate is right again.
   */
  const driftScenario = async (): Promise<EstimatesResult['simulation']['drift']> => {
    const fixture = FIXTURES.find((f) => f.file === 'business-card.png') as Fixture;
    const bytes = await fixtureBytes(fixture.file);
    const facts = await inspectUpload(
      async (start, end) => bytes.subarray(start, end + 1),
      bytes.byteLength,
      config.limits,
    );
    const provider: ProviderId = 'openai';
    const ratios: number[] = [];
    for (let run = 0; run < DRIFT_RUNS; run += 1) {
      fakes.use({
        answer: fixture.answer,
        textOutput: false,
        pages: 1,
        pageLines: [fixture.lines ?? []],
        expense: fixture.expense,
        lengthFactor: DRIFT_FACTOR * (1 + ANSWER_VARIATION * (2 * rand() - 1)),
      });
      const estimate = priceFor(predictAttempt(provider, facts, fixture.task, 'vision', factorsNow())?.costMicros ?? 0);
      const output = await adapters[provider].invoke(
        { bytes, facts, task: fixture.task, step: 'vision' },
        { signal: new AbortController().signal, deadlineMs: Date.now() + 120_000 },
      );
      ratios.push(round(estimate / priceFor(output.usage.costMicros), 3));
      learn(provider, facts, fixture.task, 'vision', output.usage);
    }
    // Back for good: from this run on, the median of every 5 consecutive runs is within 1.0–1.5.
    const within = (i: number) => {
      const m = median(ratios.slice(i, i + 5));
      return m >= 1 && m <= 1.5;
    };
    let recovered: number | null = null;
    for (let i = 0; i + 5 <= ratios.length; i += 1) {
      let ok = true;
      for (let j = i; j + 5 <= ratios.length; j += 1) ok &&= within(j);
      if (ok) {
        recovered = i;
        break;
      }
    }
    return { provider, file: fixture.file, runsToRecover: recovered, ratios };
  };

  try {
    for (const fixture of FIXTURES) {
      const bytes = await fixtureBytes(fixture.file);
      const facts = await inspectUpload(
        async (start, end) => bytes.subarray(start, end + 1),
        bytes.byteLength,
        config.limits,
      );
      const deadline = () => ({ signal: new AbortController().signal, deadlineMs: Date.now() + 120_000 });
      // As the worker does (shared/worker/steps.ts): the step from the estimate's facts and the text layer.
      const pageTexts = await pageTextsOf(bytes, facts.kind === 'pdf');
      const layer = facts.kind === 'pdf' ? textLayerOf(pageTexts) : undefined;
      const fakeCase: FakeCase = fakeCaseOf(fixture, facts.pages, pageTexts);

      for (const provider of ESTIMATE_PROVIDERS) {
        const choice = chooseSteps(facts, [provider], layer);
        const step = choice.stepFor(provider);
        const documentText = step === 'analyze' ? choice.documentText : undefined;
        const input: ProviderInput = {
          bytes,
          facts,
          task: fixture.task,
          step,
          source: { bucket: 'bench-uploads', key: `bench/${fixture.file}` },
          ...(documentText !== undefined ? { documentText } : {}),
        };
        // The estimate as creation makes it: the calibrated prediction of the step the file most likely needs.
        const estimateNow = () =>
          priceFor(
            predictAttempt(provider, facts, fixture.task, likelyStep(provider, facts), factorsNow())?.costMicros ?? 0,
          );
        const estimateCostMicros = catalog[provider]?.maxCostMicros(facts, fixture.task) ?? Number.NaN;
        const base = {
          provider,
          file: fixture.file,
          task: fixture.label,
          step,
          pages: facts.pages,
          estimateCostMicros,
          estimatePriceMicros: estimateNow(),
        };
        const started = performance.now();
        const runs = LANGUAGE_MODELS.has(provider) ? RUNS_PER_CASE : 1;
        const ratios: number[] = [];
        let last:
          | { output: Awaited<ReturnType<ProviderAdapter['invoke']>>; estimate: number; requests: number }
          | undefined;
        try {
          for (let run = 0; run < runs; run += 1) {
            const lengthFactor = LANGUAGE_MODELS.has(provider) ? 1 + ANSWER_VARIATION * (2 * rand() - 1) : 1;
            fakes.use({ ...fakeCase, lengthFactor });
            fakes.take();
            const estimate = estimateNow();
            const output = await adapters[provider].invoke(input, deadline());
            const price = priceFor(output.usage.costMicros);
            ratios.push(estimate / price);
            if (LANGUAGE_MODELS.has(provider)) {
              simulated.runs += 1;
              simulated.charged += Math.min(price, estimate);
              simulated.absorbed += Math.max(0, price - estimate);
              if (price > estimate) simulated.over += 1;
              learn(provider, facts, fixture.task, step, output.usage);
            }
            last = { output, estimate, requests: fakes.take().requests };
          }
          const output = last?.output;
          if (!output || !last) throw new Error('no run');
          const ms = round((performance.now() - started) / runs);
          const actualPriceMicros = priceFor(output.usage.costMicros);
          const c: EstimateCase = {
            ...base,
            estimatePriceMicros: last.estimate,
            actualCostMicros: output.usage.costMicros,
            actualPriceMicros,
            ratio: round(median(ratios), 2),
            runs,
            ...(output.usage.inputTokens !== undefined ? { inputTokens: output.usage.inputTokens } : {}),
            ...(output.usage.outputTokens !== undefined ? { outputTokens: output.usage.outputTokens } : {}),
            requests: last.requests,
            ms,
          };
          const stepBound = stepBoundMicros(provider, facts, fixture.task, step, documentText);
          if (stepBound !== undefined) {
            c.stepBoundMicros = stepBound;
            c.stepBoundRatio = round(priceFor(stepBound) / actualPriceMicros, 2);
          }
          const bound = boundParts(provider, facts, fixture.task, estimateCostMicros);
          if (bound) c.bound = bound;
          cases.push(c);
          options.log(
            `  ${provider} ${fixture.file} (${step}): estimate ÷ price, median of ${runs}: ${c.ratio}` +
              `${c.inputTokens !== undefined ? ` (tokens in ${c.inputTokens}, out ${c.outputTokens})` : ''}`,
          );
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          cases.push({
            ...base,
            actualCostMicros: Number.NaN,
            actualPriceMicros: Number.NaN,
            ratio: Number.NaN,
            requests: fakes.take().requests,
            ms: round(performance.now() - started),
            error: message.slice(0, 500),
          });
          options.log(`  ${provider} ${fixture.file}: FAILED ${message.slice(0, 300)}`);
        }
      }
    }
    drift = await driftScenario();
  } finally {
    await fakes.close();
    await shutdownLocalProvider();
  }
  return {
    assumptions: TOKEN_MODEL,
    cases,
    simulation: {
      runs: simulated.runs,
      overEstimateShare: simulated.runs === 0 ? 0 : round(simulated.over / simulated.runs, 4),
      absorbedOverCharged: simulated.charged === 0 ? 0 : round(simulated.absorbed / simulated.charged, 4),
      drift,
    },
  };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}
