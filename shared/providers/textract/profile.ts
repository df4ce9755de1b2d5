/**
 * What the planner knows about Amazon Textract without loading its SDK: which Textract API serves a task, how many
 * pages that API bills for a file, and so the upper bound of one attempt's cost. The adapter routes with the same
 * functions, so the estimate and the call cannot disagree.
 *
 * Textract bills per page processed, at a price that depends on the API (pricing.json), and nothing else: no tokens,
 * no output cap. An attempt's cost is therefore known before the call, up to the page count Textract reports, which
 * for our files is the page count the inspection found.
 */
import type { FileFacts } from '../../file-facts.js';
import type { ImageTarget } from '../../media/index.js';
import { type Micros, usdToMicrosCeil } from '../../money.js';
import type { FieldSpec, Step, TaskSpec } from '../../task.js';
// zod/mini like the contract (see shared/contract.ts): the create-run handler loads this profile to estimate.
import * as z from '../../zod.js';
import { nameWords } from '../fields.js';
import type { ProviderProfile } from '../types.js';
import raw from './pricing.json' with { type: 'json' };

const pricingFile = z.object({
  $comment: z.optional(z.string()),
  currency: z.literal('USD'),
  region: z.string().check(z.minLength(1)),
  model: z.string().check(z.minLength(1)),
  pageUsd: z.object({
    detectText: z.number().check(z.positive()),
    expense: z.number().check(z.positive()),
    identity: z.number().check(z.positive()),
    queries: z.number().check(z.positive()),
  }),
  tiers: z.string().check(z.minLength(1)),
  source: z.string().check(z.minLength(1)),
  date: z.iso.date(),
});

/** The validated price list; a malformed pricing.json fails at import, not mid-run. */
export const textractPricing = pricingFile.parse(raw);

/** The Textract API family an attempt uses (sync or async form, chosen by the file). */
export type TextractApi = 'detect_text' | 'expense' | 'identity' | 'queries';

/** Cost per page in micros, by API. */
export const textractPageMicros: Readonly<Record<TextractApi, Micros>> = {
  detect_text: usdToMicrosCeil(textractPricing.pageUsd.detectText),
  expense: usdToMicrosCeil(textractPricing.pageUsd.expense),
  identity: usdToMicrosCeil(textractPricing.pageUsd.identity),
  queries: usdToMicrosCeil(textractPricing.pageUsd.queries),
};

/** Synchronous AnalyzeDocument takes at most 15 queries per page (Textract set quotas); larger schemas are not queried. */
export const MAX_QUERIES = 15;
/** AnalyzeID takes one or two document pages (front and back): a PDF's first two pages are all it can read. */
export const IDENTITY_MAX_PAGES = 2;
/** Query text and alias: 1–200 characters of printable ASCII (the API's pattern); anything else is rejected. */
const QUERY_MAX_LENGTH = 200;
const QUERY_DISALLOWED = /[^a-zA-Z0-9\s!"#$%'&()*+,\-./:;=?@[\\\]^_`{|}~><]/g;
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

/** One Textract query: the question asked, and the alias its answer comes back under. */
export interface TextractQuery {
  field: string;
  text: string;
  alias: string;
}

function sanitiseQueryText(text: string): string {
  return text.replace(QUERY_DISALLOWED, ' ').replace(/\s+/g, ' ').trim().slice(0, QUERY_MAX_LENGTH).trim();
}

/**
 * One query per field a query can answer: a question built from the field's name and description ("What is the
 * invoice number?"), aliased by the field name when the API accepts it as an alias (else `field<N>`). Array and object
 * fields are skipped (a query answers with one piece of text), as are fields whose name and description hold no
 * character the API accepts.
 */
export function buildQueries(fields: readonly FieldSpec[]): TextractQuery[] {
  const queries: TextractQuery[] = [];
  const aliases = new Set<string>();
  fields.forEach((field, index) => {
    if (field.type === 'array' || field.type === 'object') return;
    // A name in another script would be mangled by the ASCII-only pattern: ask by its description alone then.
    const words = PRINTABLE_ASCII.test(field.name) ? sanitiseQueryText(nameWords(field.name).join(' ')) : '';
    const description = field.description ? sanitiseQueryText(field.description) : '';
    const subject = words && description ? `${words} (${description})` : words || description;
    if (!subject) return;
    const text = sanitiseQueryText(`What is the ${subject}?`);
    let alias = field.name;
    for (let n = index; sanitiseQueryText(alias) !== alias || aliases.has(alias); n++) alias = `field${n}`;
    aliases.add(alias);
    queries.push({ field: field.name, text, alias });
  });
  return queries;
}

/**
 * The API that serves a task: plain text detection for OCR, text output and open analysis; AnalyzeExpense for the
 * receipt and invoice schemas; AnalyzeID for identity documents; QUERIES for any other schema of at most MAX_QUERIES
 * fields; text detection (then rule-based extraction) for a larger schema.
 */
export function textractApiFor(task: TaskSpec, step: Step = 'vision'): TextractApi {
  if (step === 'ocr' || task.outputFormat === 'text' || task.fields === null) return 'detect_text';
  if (task.schemaId === 'receipt' || task.schemaId === 'invoice') return 'expense';
  if (task.schemaId === 'id_document') return 'identity';
  if (task.fields.length <= MAX_QUERIES && buildQueries(task.fields).length > 0) return 'queries';
  return 'detect_text';
}

/** Pages an API bills for a file: every page of a PDF (AnalyzeID: at most two), one for an image. */
export function billedPages(facts: FileFacts, api: TextractApi): number {
  if (facts.kind !== 'pdf') return 1;
  const pages = Math.max(1, facts.pages);
  return api === 'identity' ? Math.min(IDENTITY_MAX_PAGES, pages) : pages;
}

/**
 * Upper bound of one attempt: the pages the task's API bills × its page price, or text detection of every page when
 * that is more (an OCR step of the same task reads all pages of a PDF that AnalyzeID would read two of).
 */
function textractMaxCostMicros(facts: FileFacts, task: TaskSpec): Micros {
  const api = textractApiFor(task);
  return Math.max(
    billedPages(facts, api) * textractPageMicros[api],
    billedPages(facts, 'detect_text') * textractPageMicros.detect_text,
  );
}

/** Synchronous operations take at most 10 MB per document (Textract set quotas; read as 10^7 bytes to be safe). */
export const SYNC_MAX_BYTES = 10_000_000;

/** Textract reads images of at most 10000 pixels on every side. */
export const MAX_SIDE_PIXELS = 10_000;

/** What the synchronous APIs accept as `Document.Bytes` for an image. */
export const IMAGE_TARGET: ImageTarget = {
  formats: ['image/jpeg', 'image/png'],
  maxLongSide: MAX_SIDE_PIXELS,
  maxBytes: SYNC_MAX_BYTES,
};

/** Textract's catalog entry (the catalog adds `available`: see the adapter's report; IAM has no key variable). */
export const textractProfile: ProviderProfile = {
  id: 'textract',
  auth: 'iam',
  // IAM: no key variable; availability is AWS credentials or a role (`hasAwsCredentials`), wired in the catalog.
  credentialEnv: [],
  // Textract reads text and fills fields from the page's words; it does not look at a picture like a vision model.
  strategies: ['ocr_then_analyze', 'generic_vision_summary'],
  role: 'ocr_engine',
  // A transcription, or fields one of its analysis APIs extracts (expense, identity, queries); an open question or a
  // large schema gets text detection and rule-based extraction only.
  answers: (task) => task.outputFormat === 'text' || (task.fields !== null && textractApiFor(task) !== 'detect_text'),
  maxCostMicros: textractMaxCostMicros,
  // An OCR step is text detection of every page; any other step is bounded as the task's own API.
  stepCostMicros: (facts, task, step) =>
    step === 'ocr'
      ? billedPages(facts, 'detect_text') * textractPageMicros.detect_text
      : textractMaxCostMicros(facts, task),
};
