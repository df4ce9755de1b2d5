/**
 * Sending to the Gemini API: the SDK loaded on first use, one `generateContent` call within the attempt's deadline
 * (its response headers kept for a 429's wait), and the parts that carry the document (an earlier step's text cut
 * to its allowance, the PDF inline, or the image prepared by shared/media).
 */
import type { Content, GenerateContentConfig, GenerateContentResponse, GoogleGenAI, Part } from '@google/genai';
import { type Deadline, prepareImage } from '../../media/index.js';
import { ProviderFailure } from '../../task.js';
import { base64, redact } from '../common.js';
import { analyzeText, givenText } from '../language-model.js';
import { firstAnswerCapWithin } from '../output-cap.js';
import type { InvokeOptions, ProviderInput } from '../types.js';
import { apiFailure, describe, errorName, isAbortError } from './failures.js';
import {
  IMAGE_TARGET,
  MAX_PDF_BYTES,
  type ModelPrices,
  outputTokenCap,
  predictTokens,
  type TokenRates,
} from './profile.js';

/**
 * The first request's output cap within the spend limit (../output-cap.ts), the adapter's request and a batch line
 * alike: the step's cap is `pricing`'s model's, the cost is at `rates` (the adapter's are the rates billed now, which
 * may be a promotion's; a batch line's are the list price, since a batch answer is priced at it).
 */
export function firstAnswerCap(
  input: ProviderInput,
  pricing: ModelPrices,
  rates: TokenRates,
  maxCostMicros: number | undefined,
  env: NodeJS.ProcessEnv,
): number {
  return firstAnswerCapWithin(input, maxCostMicros, env, {
    predictTokens,
    stepCap: outputTokenCap(input.facts, input.task, input.step, pricing),
    cost: (t) => t.input * rates.inputPerMTokUsd + t.output * rates.outputPerMTokUsd,
    refuse: (message) => new ProviderFailure('client', `gemini: ${message}`),
  }).cap;
}

export type GenAiModule = typeof import('@google/genai');

let genaiModule: Promise<GenAiModule> | undefined;

/** Loads the SDK once, on first use. */
export function loadGenAi(): Promise<GenAiModule> {
  genaiModule ??= import('@google/genai').catch((error: unknown) => {
    genaiModule = undefined;
    throw error;
  });
  return genaiModule;
}

export interface Attempt {
  genai: GenAiModule;
  client: GoogleGenAI;
  model: string;
  apiKey: string;
  deadline: Deadline;
  signal: AbortSignal;
  config: GenerateContentConfig;
}

/** Sends one generateContent request within the attempt's deadline; every error comes out as a ProviderFailure. */
export async function send(attempt: Attempt, contents: Content[]): Promise<GenerateContentResponse> {
  attempt.deadline.check('sending the request');
  const captured: { headers?: Headers } = {};
  // A fetch that remembers the response headers: the SDK's ApiError keeps only status and body, and a 429's
  // Retry-After lives in the headers.
  const fetchRecordingHeaders: typeof fetch = async (url, init) => {
    const response = await fetch(url, init);
    captured.headers = response.headers;
    return response;
  };
  const request = attempt.client.models.generateContent({
    model: attempt.model,
    contents,
    config: {
      ...attempt.config,
      abortSignal: attempt.signal,
      httpOptions: { timeout: Math.max(1, attempt.deadline.remainingMs()), fetch: fetchRecordingHeaders },
    },
  });
  try {
    return await attempt.deadline.race(request, 'waiting for the Gemini API');
  } catch (error) {
    request.catch(() => {}); // abandoned after a timeout: its later rejection must not go unhandled
    if (error instanceof ProviderFailure) throw error;
    if (attempt.deadline.expired() || isAbortError(error)) {
      throw new ProviderFailure('timeout', 'gemini: deadline passed while waiting for the Gemini API');
    }
    if (error instanceof attempt.genai.ApiError) {
      throw apiFailure(error.status, error.message, captured.headers, attempt.apiKey);
    }
    // The SDK parses the body with Response.json(): a body that is not JSON surfaces as a SyntaxError.
    if (errorName(error) === 'SyntaxError') {
      throw new ProviderFailure('invalid_output', 'gemini: the API answered with a body that is not JSON');
    }
    throw new ProviderFailure('server', `gemini: request failed: ${redact(describe(error), [attempt.apiKey])}`);
  }
}

/** The parts that carry the document: the text another step read, the PDF inline, or the prepared image inline. */
export async function documentParts(input: ProviderInput, options: InvokeOptions, deadline: Deadline): Promise<Part[]> {
  const given = givenText(input);
  if (given !== undefined) {
    const text = analyzeText(given, input.facts.pages);
    return [{ text: `Document text (read from the file):\n"""\n${text}\n"""` }];
  }
  if (input.bytes.byteLength === 0) throw new ProviderFailure('unreadable_file', 'gemini: the file is empty');
  if (input.facts.mime === 'application/pdf') {
    if (input.bytes.byteLength > MAX_PDF_BYTES) {
      const mb = (input.bytes.byteLength / 1_000_000).toFixed(1);
      throw new ProviderFailure(
        'client',
        `gemini: the PDF is ${mb} MB; the Gemini API takes PDFs up to ${MAX_PDF_BYTES / 1_000_000} MB inline`,
      );
    }
    return [{ inlineData: { mimeType: 'application/pdf', data: base64(input.bytes) } }];
  }
  try {
    const image = await prepareImage(input.bytes, input.facts.mime, IMAGE_TARGET, options);
    return [{ inlineData: { mimeType: image.mime, data: base64(image.bytes) } }];
  } catch (error) {
    if (error instanceof ProviderFailure) throw error;
    if (deadline.expired()) throw deadline.failure('preparing the image');
    throw new ProviderFailure('client', 'gemini: the image cannot be prepared', { cause: error });
  }
}
