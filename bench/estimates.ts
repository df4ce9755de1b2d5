/**
 * Estimate vs actual, per provider and fixture: what the planner holds for one attempt — `priceFor(maxCostMicros)`
 * from the provider's catalog profile — divided by what a successful attempt is then charged — `priceFor(usage.costMicros)`
 * as the adapter computes it from the usage the provider reports.
 *
 * Each cloud adapter (openai, anthropic, gemini, bedrock, textract) runs for real (its SDK, its request building, its
 * media preparation, its cost function) against a local fake of its API (bench/provider-fakes.ts) that answers with a
 * successful response and realistic usage for the request it received. `local` runs the real local provider.
 *
 * The step is the one the worker runs (shared/worker/process-run.ts): a PDF whose every page has a text layer is
 * given to the language models as text (`analyze`); Textract and local read the file (`vision`); images are `vision`.
 *
 * For each bound the parts it is made of are computed with the profile's own functions (first request input, its
 * output cap, the repair request; Gemini's thinking headroom), so the report can say what dominates.
 */
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { TextractClient } from '@aws-sdk/client-textract';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { PROJECT_ROOT } from '../lib/vision-function.js';
import { config } from '../shared/config.js';
import type { FileFacts } from '../shared/file-facts.js';
import { inspectUpload } from '../shared/inspect/index.js';
import { hasTextLayer, pdfTextLayer } from '../shared/media/index.js';
import { likelyStep, predictAttempt } from '../shared/planning/estimate.js';
import { addSample, type CalibrationState, factorsFrom, usableSample } from '../shared/pricing/calibration.js';
import { priceFor } from '../shared/pricing/pricing.js';
import { createAnthropicProvider } from '../shared/providers/anthropic/adapter.js';
import {
  anthropicModelId,
  anthropicModelPrices,
  outputTokenCap as anthropicOutputCap,
  promptTokenBound as anthropicPromptBound,
  requestCostMicros,
} from '../shared/providers/anthropic/profile.js';
import { createBedrockProvider } from '../shared/providers/bedrock/adapter.js';
import {
  ANALYZE_TEXT_BYTES_PER_PAGE,
  bedrockInputTokenBound,
  bedrockOutputTokenCap,
  resolveBedrockModel,
} from '../shared/providers/bedrock/profile.js';
import { catalog } from '../shared/providers/catalog.js';
import { createGeminiProvider } from '../shared/providers/gemini/adapter.js';
import {
  geminiModel,
  outputTokenCap as geminiOutputCap,
  promptTokenBound as geminiPromptBound,
  mediaTokenBound,
  modelPricing,
  THINKING_HEADROOM_TOKENS,
} from '../shared/providers/gemini/profile.js';
import { localProvider, shutdownLocalProvider } from '../shared/providers/local/local-provider.js';
import { createOpenAIProvider } from '../shared/providers/openai/adapter.js';
import {
  attemptTokenBounds,
  type OpenAIModelPrices,
  openaiModel,
  openaiPricing,
  pricesFor,
} from '../shared/providers/openai/profile.js';
import { createTextractProvider } from '../shared/providers/textract/adapter.js';
import { billedPages, textractApiFor, textractPageMicros } from '../shared/providers/textract/profile.js';
import type { ProviderAdapter, ProviderInput } from '../shared/providers/types.js';
import { buildTask, registry } from '../shared/registry/registry.js';
import { type ProviderId, type ProviderUsage, type Step, singlePassSteps, type TaskSpec } from '../shared/task.js';
import { type ExpenseField, type FakeCase, startProviderFakes, TOKEN_MODEL } from './provider-fakes.js';
import { round } from './stats.js';

export const ESTIMATE_PROVIDERS: readonly ProviderId[] = [
  'openai',
  'anthropic',
  'gemini',
  'bedrock',
  'textract',
  'local',
];
const LANGUAGE_MODELS: ReadonlySet<ProviderId> = new Set(['openai', 'anthropic', 'gemini', 'bedrock']);

interface Fixture {
  file: string;
  label: string;
  task: TaskSpec;
  answer: Record<string, unknown>;
  /** Lines per page for Textract, when the file has no text layer to take them from (images). */
  lines?: string[];
  expense: ExpenseField[];
}

const RECEIPT_LINES = [
  'ACME HARDWARE',
  'Date: 2026-11-02',
  'Invoice Number: INV-1042',
  'Subtotal: 38.50',
  'Tax: 4.00',
  'Total: 42.50',
  'Thank you',
];
const RECEIPT_ANSWER = {
  merchant: 'ACME HARDWARE',
  date: '2026-11-02',
  subtotal: 38.5,
  tax: 4,
  total: 42.5,
  currency: null,
};
const RECEIPT_EXPENSE: ExpenseField[] = [
  { type: 'VENDOR_NAME', text: 'ACME HARDWARE' },
  { type: 'INVOICE_RECEIPT_DATE', text: '2026-11-02' },
  { type: 'SUBTOTAL', text: '38.50' },
  { type: 'TAX', text: '4.00' },
  { type: 'TOTAL', text: '42.50' },
];

function schemaTask(schemaId: string, prompt: string): TaskSpec {
  return buildTask({ prompt, outputFormat: 'json', schemaId, schema: registry.get(schemaId) });
}

/** A summary of realistic length for a text-output task: summaryBaseTokens + summaryTokensPerPage per page. */
function summary(pages: number): string {
  const tokens = TOKEN_MODEL.summaryBaseTokens + TOKEN_MODEL.summaryTokensPerPage * pages;
  const sentence =
    'The document sets out the payment terms of the vendor: invoices are due within thirty days, late payments ' +
    'accrue one percent interest per month, and goods remain the vendor’s property until paid. ';
  let text = '';
  while (text.length < tokens * TOKEN_MODEL.proseCharsPerToken) text += sentence;
  return text.slice(0, tokens * TOKEN_MODEL.proseCharsPerToken).trim();
}

const FIXTURES: Fixture[] = [
  {
    file: 'receipt.png',
    label: 'receipt schema',
    task: schemaTask('receipt', 'Extract the receipt'),
    answer: RECEIPT_ANSWER,
    lines: RECEIPT_LINES,
    expense: RECEIPT_EXPENSE,
  },
  {
    file: 'text.pdf',
    label: 'invoice schema',
    task: schemaTask('invoice', 'Extract the invoice'),
    answer: {
      invoiceNumber: 'INV-2001',
      invoiceDate: '2026-10-15',
      dueDate: null,
      vendor: 'Globex Ltd',
      totalDue: 1250,
      currency: null,
    },
    expense: [
      { type: 'INVOICE_RECEIPT_ID', text: 'INV-2001' },
      { type: 'INVOICE_RECEIPT_DATE', text: '2026-10-15' },
      { type: 'VENDOR_NAME', text: 'Globex Ltd' },
      { type: 'AMOUNT_DUE', text: '1250.00' },
    ],
  },
  {
    file: 'twenty-pages.pdf',
    label: 'text output',
    task: buildTask({ prompt: 'Summarise the document', outputFormat: 'text' }),
    answer: { text: summary(20) },
    expense: [],
  },
  {
    file: 'receipt.heic',
    label: 'receipt schema',
    task: schemaTask('receipt', 'Extract the receipt'),
    answer: RECEIPT_ANSWER,
    lines: RECEIPT_LINES,
    expense: RECEIPT_EXPENSE,
  },
  {
    file: 'scanned.pdf',
    label: 'receipt schema',
    task: schemaTask('receipt', 'Extract the receipt'),
    answer: RECEIPT_ANSWER,
    lines: RECEIPT_LINES,
    expense: RECEIPT_EXPENSE,
  },
  {
    file: 'business-card.png',
    label: 'generic prompt',
    task: buildTask({ prompt: 'Describe this picture', outputFormat: 'json' }),
    answer: {
      summary:
        'A business card of Jane Doe, Head of Engineering at Example Corp, with an e-mail address and a phone number.',
      text: 'Jane Doe\nHead of Engineering\nExample Corp\njane.doe@example.com\n+1 555 0100',
      keyValues: [
        { key: 'name', value: 'Jane Doe' },
        { key: 'title', value: 'Head of Engineering' },
        { key: 'company', value: 'Example Corp' },
        { key: 'email', value: 'jane.doe@example.com' },
        { key: 'phone', value: '+1 555 0100' },
      ],
    },
    lines: ['Jane Doe', 'Head of Engineering', 'Example Corp', 'jane.doe@example.com', '+1 555 0100'],
    expense: [],
  },
];

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
        pricesFor(openaiModel()) ?? (openaiPricing.models[openaiPricing.defaultModel] as OpenAIModelPrices);
      const step = boundingStep('openai', facts, task);
      const { call } = attemptTokenBounds(facts, task, step, prices);
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
      const prices = anthropicModelPrices(anthropicModelId());
      if (!prices) return undefined;
      const step = boundingStep('anthropic', facts, task);
      const cap = anthropicOutputCap(facts, task, step, prices);
      const first = Math.min(anthropicPromptBound(facts, task, step), prices.contextWindowTokens);
      const firstInput = requestCostMicros(prices, { inputTokens: first, outputTokens: 0 });
      const firstOutputCap = requestCostMicros(prices, { inputTokens: first, outputTokens: cap }) - firstInput;
      return {
        step,
        firstInput,
        firstOutputCap,
        repair: total - firstInput - firstOutputCap,
        tokens: { firstInput: first, outputCap: cap },
      };
    }
    case 'gemini': {
      const pricing = modelPricing(geminiModel());
      if (!pricing) return undefined;
      const step = boundingStep('gemini', facts, task);
      const cap = geminiOutputCap(task, step, facts.pages, pricing);
      const input = geminiPromptBound(task, step) + mediaTokenBound(facts, step, pricing);
      const firstInput = input * pricing.inputPerMTokUsd;
      const firstOutputCap = cap * pricing.outputPerMTokUsd;
      return {
        step,
        firstInput,
        firstOutputCap,
        repair: total - firstInput - firstOutputCap,
        thinkingHeadroom: 2 * Math.min(cap, THINKING_HEADROOM_TOKENS) * pricing.outputPerMTokUsd,
        tokens: { firstInput: input, outputCap: cap },
      };
    }
    case 'bedrock': {
      const model = resolveBedrockModel(process.env);
      if (!model) return undefined;
      const step = boundingStep('bedrock', facts, task);
      const textBytes = step === 'analyze' ? ANALYZE_TEXT_BYTES_PER_PAGE * Math.max(1, facts.pages) : undefined;
      const input = bedrockInputTokenBound(facts, task, step, textBytes);
      const cap = bedrockOutputTokenCap(facts, task, step, model.price);
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

const MODEL_VARIABLES = ['OPENAI_MODEL', 'ANTHROPIC_MODEL', 'GEMINI_MODEL', 'BEDROCK_MODEL_ID'] as const;

export async function measureEstimates(options: { log: (line: string) => void }): Promise<EstimatesResult> {
  const fakes = await startProviderFakes();
  // The adapters see the same model choice the profiles (which read process.env) estimate with.
  const models: NodeJS.ProcessEnv = {};
  for (const name of MODEL_VARIABLES) if (process.env[name]) models[name] = process.env[name];
  const credentials = {
    accessKeyId: 'AKIABENCHFAKE0000000',
    secretAccessKey: 'bench-fake-secret-access-key-0000000000',
  };
  const adapters: Record<ProviderId, ProviderAdapter> = {
    openai: createOpenAIProvider({
      env: { ...models, OPENAI_API_KEY: 'sk-bench-fake', OPENAI_BASE_URL: `${fakes.url}/v1` },
    }),
    anthropic: createAnthropicProvider({
      env: { ...models, ANTHROPIC_API_KEY: 'sk-ant-bench-fake', ANTHROPIC_BASE_URL: fakes.url },
    }),
    gemini: createGeminiProvider({ env: { ...models, GEMINI_API_KEY: 'bench-fake-key', GEMINI_BASE_URL: fakes.url } }),
    bedrock: createBedrockProvider({
      env: { ...models, AWS_REGION: 'us-east-1' },
      client: new BedrockRuntimeClient({
        region: 'us-east-1',
        endpoint: fakes.url,
        credentials,
        maxAttempts: 1,
        requestHandler: new NodeHttpHandler({ connectionTimeout: 5_000 }),
      }),
    }),
    textract: createTextractProvider({
      client: new TextractClient({ region: 'us-east-1', endpoint: fakes.url, credentials, maxAttempts: 1 }),
      pollIntervalMs: 10,
    }),
    local: localProvider,
  };
  const cases: EstimateCase[] = [];
  // Calibration as the service keeps it (shared/pricing/calibration.ts), in memory: it learns as the runs settle.
  const states = new Map<string, CalibrationState>();
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
    if (usableSample(sample)) states.set(sample.key, addSample(states.get(sample.key), sample));
  };
  let drift: EstimatesResult['simulation']['drift'] = { provider: 'openai', file: '', runsToRecover: null, ratios: [] };
  /**
   * OpenAI on the picture with a generic prompt (its answer is ~40 % of its price), calibrated; then its answers turn
   * 40 % longer: how many runs until the estimate is right again.
   */
  const driftScenario = async (): Promise<EstimatesResult['simulation']['drift']> => {
    const fixture = FIXTURES.find((f) => f.file === 'business-card.png') as Fixture;
    const bytes = new Uint8Array(await readFile(path.join(PROJECT_ROOT, 'test', 'fixtures', fixture.file)));
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
      const estimate = priceFor(
        predictAttempt(provider, facts, fixture.task, 'vision', factorsFrom(states))?.costMicros ?? 0,
      );
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
      const bytes = new Uint8Array(await readFile(path.join(PROJECT_ROOT, 'test', 'fixtures', fixture.file)));
      const facts = await inspectUpload(
        async (start, end) => bytes.subarray(start, end + 1),
        bytes.byteLength,
        config.limits,
      );
      const deadline = () => ({ signal: new AbortController().signal, deadlineMs: Date.now() + 120_000 });
      // As the worker does: the full text layer when every page has one.
      const layer = facts.kind === 'pdf' ? await pdfTextLayer(bytes, deadline()) : [];
      const documentText = layer.length > 0 && layer.every(hasTextLayer) ? layer.join('\n\n') : undefined;
      const pageLines = fixture.lines
        ? [fixture.lines]
        : layer.map((p) => p.split('\n').filter((l) => l.trim() !== ''));

      for (const provider of ESTIMATE_PROVIDERS) {
        const step: Step = documentText !== undefined && LANGUAGE_MODELS.has(provider) ? 'analyze' : 'vision';
        const input: ProviderInput = {
          bytes,
          facts,
          task: fixture.task,
          step,
          source: { bucket: 'bench-uploads', key: `bench/${fixture.file}` },
          ...(documentText !== undefined ? { documentText } : {}),
        };
        const fakeCase: FakeCase = {
          answer: fixture.answer,
          textOutput: fixture.task.outputFormat === 'text',
          pages: facts.pages,
          ...(step === 'analyze' && documentText !== undefined ? { documentText } : {}),
          pageLines,
          expense: fixture.expense,
        };
        // The estimate as creation makes it: the calibrated prediction of the step the file most likely needs.
        const estimateNow = () =>
          priceFor(
            predictAttempt(provider, facts, fixture.task, likelyStep(provider, facts), factorsFrom(states))
              ?.costMicros ?? 0,
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
