/**
 * The `textract` provider: Amazon Textract by IAM, one API per task (profile.ts `textractApiFor`, shared with the
 * estimate); sync for images and one-page PDFs, async from S3 otherwise. The SDK makes one attempt; cost is the pages
 * Textract reports, and an async job's pages are billed even when we stop waiting. Its words (with their geometry)
 * are read by words.ts.
 * See docs/decisions.md#textract-adapter.
 * Over 400 lines: Textract's five APIs (sync and async) and their block parsing, one provider read in one place.
 */
import {
  AccessDeniedException,
  AnalyzeDocumentCommand,
  AnalyzeExpenseCommand,
  AnalyzeIDCommand,
  BadDocumentException,
  type Block,
  DetectDocumentTextCommand,
  type DocumentMetadata,
  DocumentTooLargeException,
  type ExpenseDocument,
  type ExpenseField,
  GetDocumentAnalysisCommand,
  GetDocumentTextDetectionCommand,
  GetExpenseAnalysisCommand,
  type IdentityDocument,
  type IdentityDocumentField,
  InternalServerError,
  InvalidParameterException,
  InvalidS3ObjectException,
  LimitExceededException,
  ProvisionedThroughputExceededException,
  StartDocumentAnalysisCommand,
  StartDocumentTextDetectionCommand,
  StartExpenseAnalysisCommand,
  TextractClient,
  TextractServiceException,
  ThrottlingException,
  UnsupportedDocumentException,
} from '@aws-sdk/client-textract';
import { Deadline, type ImageTarget, prepareImage, renderPdfPages } from '../../media/index.js';
import { type FieldSpec, type FieldType, ProviderFailure, type ProviderUsage } from '../../task.js';
import { redactAwsCredentials } from '../aws-credentials.js';
import { coerceText, nameWords } from '../fields.js';
import { extractFields, extractKeyValues } from '../local/extract-fields.js';
import { parseRetryAfterHeader } from '../retry-after.js';
import { normaliseOpenResult } from '../task-prompt.js';
import type { InvokeOptions, ProviderAdapter, ProviderInput, ProviderOutput } from '../types.js';
import {
  billedPages,
  buildQueries,
  type TextractApi,
  type TextractQuery,
  textractApiFor,
  textractPageMicros,
} from './profile.js';
import { textractWords } from './words.js';

/** Synchronous operations take at most 10 MB per document (Textract set quotas; read as 10^7 bytes to be safe). */
export const SYNC_MAX_BYTES = 10_000_000;
/** Textract reads images of at most 10000 pixels on every side. */
export const MAX_SIDE_PIXELS = 10_000;
/** Default delay between two polls of an asynchronous job. */
export const POLL_INTERVAL_MS = 1_000;

/** What the synchronous APIs accept as `Document.Bytes` for an image. */
const IMAGE_TARGET: ImageTarget = {
  formats: ['image/jpeg', 'image/png'],
  maxLongSide: MAX_SIDE_PIXELS,
  maxBytes: SYNC_MAX_BYTES,
};

/** Characters of the first lines that make an open analysis's summary. */
const SUMMARY_MAX_CHARS = 200;

/** What `createTextractProvider` can be given (tests: a short poll interval or their own client). */
export interface TextractProviderOptions {
  /** The client to use; by default one per process, configured from the environment (region, credentials, endpoint). */
  client?: TextractClient;
  /** Delay between polls of an asynchronous job (always capped by the time left). */
  pollIntervalMs?: number;
}

let sharedClient: TextractClient | undefined;

/** The process's Textract client: one attempt per call (the plan retries), endpoint from AWS_ENDPOINT_URL_TEXTRACT. */
function defaultClient(): TextractClient {
  sharedClient ??= new TextractClient({ maxAttempts: 1 });
  return sharedClient;
}

// ---------------------------------------------------------------------------------------------------------------
// Failures
// ---------------------------------------------------------------------------------------------------------------

/** AWS's common (unmodelled) authentication error codes: the SDK has no class for them, only the code. */
const AUTH_ERROR_CODES = new Set([
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'IncompleteSignature',
  'InvalidClientTokenId',
  'MissingAuthenticationToken',
  'ExpiredTokenException',
  'ExpiredToken',
  'SignatureDoesNotMatch',
  // Thrown by the SDK's credential chain when no credentials are found at all.
  'CredentialsProviderError',
]);

interface ErrorWithResponse {
  $metadata?: { httpStatusCode?: number };
  $response?: { headers?: Record<string, string | undefined> };
}

function failureKindOf(error: unknown, status: number | undefined): ProviderFailure['kind'] {
  if (
    error instanceof ProvisionedThroughputExceededException ||
    error instanceof ThrottlingException ||
    error instanceof LimitExceededException
  )
    return 'rate_limited';
  if (error instanceof AccessDeniedException) return 'auth';
  if (
    error instanceof InvalidParameterException ||
    error instanceof UnsupportedDocumentException ||
    error instanceof BadDocumentException ||
    error instanceof DocumentTooLargeException ||
    error instanceof InvalidS3ObjectException
  )
    return 'client';
  if (error instanceof InternalServerError) return 'server';
  if (error instanceof Error && AUTH_ERROR_CODES.has(error.name)) return 'auth';
  if (status === 401 || status === 403) return 'auth';
  if (status === 429) return 'rate_limited';
  if (status !== undefined && status >= 400 && status < 500) return 'client';
  return 'server';
}

/**
 * The one place SDK errors become ProviderFailures. `billed` is what the call costs if Textract did the work: it is
 * carried by a timeout (the work may well have finished) and by an answer we could not read; with `jobStarted` (an
 * async job is running and will be billed whatever happens to our polling) it is carried by every failure.
 */
function toFailure(
  error: unknown,
  operation: string,
  deadline: Deadline,
  billed?: ProviderUsage,
  jobStarted = false,
): ProviderFailure {
  const carried = (kind: ProviderFailure['kind']) =>
    billed && (jobStarted || kind === 'timeout' || kind === 'invalid_output') ? { usage: billed } : {};
  if (error instanceof ProviderFailure) {
    const extra = carried(error.kind);
    if (error.usage !== undefined || !('usage' in extra)) return error;
    return new ProviderFailure(error.kind, error.message, {
      ...extra,
      cause: error,
      ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}),
    });
  }
  const detail = error instanceof Error ? `${error.name}: ${redactAwsCredentials(error.message)}` : 'unknown error';
  if (deadline.expired()) {
    return new ProviderFailure('timeout', `textract: deadline passed during ${operation}`, {
      ...carried('timeout'),
      cause: error,
    });
  }
  const meta = (error ?? {}) as ErrorWithResponse;
  const status = meta.$metadata?.httpStatusCode;
  // A 2xx whose body the SDK could not parse: Textract answered, but not with what the API promises.
  if (!(error instanceof TextractServiceException) && status !== undefined && status >= 200 && status < 300) {
    return new ProviderFailure('invalid_output', `textract: ${operation} returned an unreadable body (${detail})`, {
      ...carried('invalid_output'),
      cause: error,
    });
  }
  const kind = failureKindOf(error, status);
  const retryAfterMs =
    kind === 'rate_limited' ? parseRetryAfterHeader(meta.$response?.headers?.['retry-after']) : undefined;
  return new ProviderFailure(kind, `textract: ${operation} failed (${detail})`, {
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    ...carried(kind),
    cause: error,
  });
}

/**
 * Textract returns one expense or identity document per page it read, so an empty list means nothing was read (a
 * mock such as LocalStack's answers that way): invalid output, and the plan moves on, rather than an all-null result.
 */
function nonEmpty<T>(list: T[] | undefined): list is T[] {
  return Array.isArray(list) && list.length > 0;
}

function invalidOutput(message: string, usage?: ProviderUsage): ProviderFailure {
  return new ProviderFailure('invalid_output', `textract: ${message}`, usage ? { usage } : undefined);
}

// ---------------------------------------------------------------------------------------------------------------
// Reading the response
// ---------------------------------------------------------------------------------------------------------------

/** What an attempt read, whichever API read it. */
interface Reading {
  /** Pages Textract processed (what it bills). */
  pages: number;
  /** Text-detection and analysis blocks (PAGE, LINE, WORD, QUERY, QUERY_RESULT …). */
  blocks: Block[];
  expense: ExpenseDocument[];
  identity: IdentityDocument[];
}

function pagesOf(metadata: DocumentMetadata | undefined, fallback: number): number {
  const pages = metadata?.Pages;
  return typeof pages === 'number' && Number.isInteger(pages) && pages > 0 ? pages : fallback;
}

function usageFor(api: TextractApi, pages: number): ProviderUsage {
  return { billableUnits: pages, costMicros: pages * textractPageMicros[api] };
}

/** LINE blocks as text: lines in reading order (Textract's), pages separated by a blank line. */
function linesText(blocks: readonly Block[]): string {
  const pages = new Map<number, string[]>();
  for (const block of blocks) {
    if (block.BlockType !== 'LINE' || !block.Text) continue;
    const page = block.Page ?? 1;
    const lines = pages.get(page) ?? [];
    lines.push(block.Text);
    pages.set(page, lines);
  }
  return [...pages.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, lines]) => lines.join('\n'))
    .join('\n\n');
}

function mean(values: readonly number[]): number | undefined {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return undefined;
  return finite.reduce((sum, v) => sum + v, 0) / finite.length;
}

/** Blocks of every expense document, each once (documents of one file share pages). */
function expenseBlocks(documents: readonly ExpenseDocument[]): Block[] {
  const seen = new Set<string>();
  const out: Block[] = [];
  for (const block of documents.flatMap((d) => d.Blocks ?? [])) {
    if (block.Id !== undefined) {
      if (seen.has(block.Id)) continue;
      seen.add(block.Id);
    }
    out.push(block);
  }
  return out;
}

function expenseFields(documents: readonly ExpenseDocument[]): ExpenseField[] {
  return documents.flatMap((d) => d.SummaryFields ?? []);
}

function identityFields(documents: readonly IdentityDocument[]): IdentityDocumentField[] {
  return documents.flatMap((d) => d.IdentityDocumentFields ?? []);
}

/** The text Textract read: its LINE blocks, or (when an API returned none) its fields as `Label: value` lines. */
function documentTextOf(reading: Reading): string {
  const blocks = [...reading.blocks, ...expenseBlocks(reading.expense)];
  const identityTexts = reading.identity.map((d) => linesText(d.Blocks ?? [])).filter((t) => t !== '');
  const text = [linesText(blocks), ...identityTexts].filter((t) => t !== '').join('\n\n');
  if (text !== '') return text;
  const fieldLines = [
    ...expenseFields(reading.expense).map((f) => [f.LabelDetection?.Text ?? f.Type?.Text, f.ValueDetection?.Text]),
    ...identityFields(reading.identity).map((f) => [f.Type?.Text, f.ValueDetection?.Text]),
  ]
    .filter(([label, value]) => label && value)
    .map(([label, value]) => `${label}: ${value}`);
  return fieldLines.join('\n');
}

/**
 * Mean LINE confidence / 100 (Textract's recognition confidence); when an API returned no lines, the mean confidence
 * of the values it extracted; 0 when nothing was read at all (a blank page).
 */
function confidenceOf(reading: Reading): number {
  const lines = [
    ...reading.blocks,
    ...expenseBlocks(reading.expense),
    ...reading.identity.flatMap((d) => d.Blocks ?? []),
  ].filter((b) => b.BlockType === 'LINE');
  const values = [
    ...expenseFields(reading.expense).map((f) => f.ValueDetection?.Confidence),
    ...identityFields(reading.identity).map((f) => f.ValueDetection?.Confidence),
  ].filter((c): c is number => typeof c === 'number');
  const score = mean(lines.map((b) => b.Confidence ?? Number.NaN)) ?? mean(values) ?? 0;
  return Math.min(1, Math.max(0, score / 100));
}

// ---------------------------------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------------------------------

/** A value Textract read, in the field's type (dates as ISO when the notation is unambiguous); null when it is not one. */
function typed(raw: string | undefined, type: FieldType): unknown {
  const text = raw?.trim();
  // Textract answers with one piece of text; a list cannot be read from it without guessing (nor can an object).
  if (!text || type === 'array') return null;
  return coerceText(text, type);
}

function summaryOf(text: string): string {
  let summary = '';
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '') continue;
    if (summary !== '' && summary.length + trimmed.length + 2 > SUMMARY_MAX_CHARS) break;
    summary = summary === '' ? trimmed : `${summary}; ${trimmed}`;
  }
  return summary.slice(0, SUMMARY_MAX_CHARS);
}

/** Open analysis: the first lines as the summary, the text, and its `Label: value` lines as key-values. */
function openResult(text: string): Record<string, unknown> {
  const keyValues = Object.entries(extractKeyValues(text)).map(([key, value]) => ({ key, value }));
  return normaliseOpenResult({ summary: summaryOf(text), text, keyValues });
}

/** A field's name as an AWS type name: `dateOfIssue` → `DATE_OF_ISSUE`. */
function typeKey(name: string): string {
  return nameWords(name).join('_').toUpperCase();
}

/** Expense SummaryField types for the receipt and invoice registry fields, most specific first (`TYPE@GROUP`). */
const EXPENSE_TYPES: Readonly<Record<string, readonly string[]>> = {
  merchant: ['VENDOR_NAME', 'NAME@VENDOR'],
  vendor: ['VENDOR_NAME', 'NAME@VENDOR'],
  date: ['INVOICE_RECEIPT_DATE'],
  invoiceDate: ['INVOICE_RECEIPT_DATE'],
  dueDate: ['DUE_DATE'],
  invoiceNumber: ['INVOICE_RECEIPT_ID'],
  subtotal: ['SUBTOTAL'],
  tax: ['TAX'],
  total: ['TOTAL', 'AMOUNT_PAID', 'AMOUNT_DUE'],
  totalDue: ['AMOUNT_DUE', 'TOTAL'],
};
/** Where the currency of a receipt or invoice is best read: the amounts that carry one, the total first. */
const CURRENCY_SOURCES = ['TOTAL', 'AMOUNT_DUE', 'AMOUNT_PAID', 'SUBTOTAL', 'TAX'];

function expenseMatches(field: ExpenseField, candidate: string): boolean {
  const [type, group] = candidate.split('@');
  if (field.Type?.Text !== type) return false;
  return group === undefined || (field.GroupProperties ?? []).some((g) => g.Types?.includes(group));
}

function bestExpense(fields: readonly ExpenseField[], match: (f: ExpenseField) => boolean): ExpenseField | undefined {
  let best: ExpenseField | undefined;
  for (const f of fields) {
    if (!match(f) || !f.ValueDetection?.Text?.trim()) continue;
    if (best === undefined || (f.ValueDetection.Confidence ?? 0) > (best.ValueDetection?.Confidence ?? 0)) best = f;
  }
  return best;
}

/**
 * AnalyzeExpense's normalised SummaryFields onto the schema: the registry's receipt and invoice fields by type, the
 * currency from the amounts' currency code, any other field by its AWS type name or its printed label.
 */
function expenseResult(fields: readonly FieldSpec[], documents: readonly ExpenseDocument[]): Record<string, unknown> {
  const summary = expenseFields(documents);
  const result: Record<string, unknown> = {};
  for (const field of fields) {
    if (field.name === 'currency') {
      const withCode = summary.filter((f) => f.Currency?.Code);
      const source =
        CURRENCY_SOURCES.map((type) => withCode.find((f) => f.Type?.Text === type)).find((f) => f !== undefined) ??
        withCode[0];
      result[field.name] = source?.Currency?.Code ?? null;
      continue;
    }
    const words = nameWords(field.name).join('');
    const candidates: ((f: ExpenseField) => boolean)[] = [
      ...(EXPENSE_TYPES[field.name] ?? []).map((c) => (f: ExpenseField) => expenseMatches(f, c)),
      (f) => f.Type?.Text === typeKey(field.name),
      (f) => nameWords(f.LabelDetection?.Text ?? '').join('') === words,
    ];
    let value: ExpenseField | undefined;
    for (const candidate of candidates) {
      value = bestExpense(summary, candidate);
      if (value) break;
    }
    result[field.name] = typed(value?.ValueDetection?.Text, field.type);
  }
  return result;
}

/** Identity field type as a key: AWS documents `FIRST_NAME`, its examples show `first name`. */
function identityType(field: IdentityDocumentField): string {
  return (field.Type?.Text ?? '')
    .trim()
    .toUpperCase()
    .replace(/[\s-]+/g, '_');
}

/** The best value of an identity field type: dates from their normalised form, else the text as read. */
function identityValue(fields: readonly IdentityDocumentField[], type: string): string | undefined {
  let best: IdentityDocumentField | undefined;
  for (const f of fields) {
    if (identityType(f) !== type || !f.ValueDetection?.Text?.trim()) continue;
    if (best === undefined || (f.ValueDetection.Confidence ?? 0) > (best.ValueDetection?.Confidence ?? 0)) best = f;
  }
  const normalised = best?.ValueDetection?.NormalizedValue?.Value;
  if (normalised && /^\d{4}-\d{2}-\d{2}/.test(normalised)) return normalised.slice(0, 10);
  return best?.ValueDetection?.Text?.trim();
}

/** The issuing state of a machine-readable zone (ICAO 9303: characters 3–5 of the first line), e.g. `USA`. */
function mrzIssuingState(mrz: string | undefined): string | undefined {
  const match = /^[A-Z][A-Z0-9<]([A-Z<]{3})/.exec((mrz ?? '').replace(/\s+/g, '').toUpperCase());
  const code = match?.[1]?.replace(/</g, '');
  return code ? code : undefined;
}

const ID_TYPES: Readonly<Record<string, string>> = {
  documentType: 'ID_TYPE',
  documentNumber: 'DOCUMENT_NUMBER',
  dateOfBirth: 'DATE_OF_BIRTH',
  expiryDate: 'EXPIRATION_DATE',
};

/**
 * AnalyzeID's normalised fields onto the schema: the registry's identity fields by type, the full name from its parts,
 * the issuing country from the MRZ (AnalyzeID has no country field; without an MRZ it stays null), any other field by
 * its AWS type name (`placeOfBirth` → PLACE_OF_BIRTH).
 */
function identityResult(fields: readonly FieldSpec[], documents: readonly IdentityDocument[]): Record<string, unknown> {
  const all = identityFields(documents);
  const result: Record<string, unknown> = {};
  for (const field of fields) {
    let raw: string | undefined;
    if (field.name === 'fullName') {
      const parts = ['FIRST_NAME', 'MIDDLE_NAME', 'LAST_NAME', 'SUFFIX']
        .map((type) => identityValue(all, type))
        .filter((part): part is string => part !== undefined && part !== '');
      raw = parts.length > 0 ? parts.join(' ') : undefined;
    } else if (field.name === 'issuingCountry') {
      raw = mrzIssuingState(identityValue(all, 'MRZ_CODE'));
    } else {
      raw = identityValue(all, ID_TYPES[field.name] ?? typeKey(field.name));
    }
    result[field.name] = typed(raw, field.type);
  }
  return result;
}

/** The best QUERY_RESULT per query alias (a multi-page job answers once per page; the most confident wins). */
function queryAnswers(blocks: readonly Block[]): Map<string, { text: string; confidence: number }> {
  const byId = new Map<string, Block>();
  for (const block of blocks) if (block.Id !== undefined) byId.set(block.Id, block);
  const answers = new Map<string, { text: string; confidence: number }>();
  for (const block of blocks) {
    const alias = block.Query?.Alias;
    if (block.BlockType !== 'QUERY' || alias === undefined) continue;
    for (const relation of block.Relationships ?? []) {
      if (relation.Type !== 'ANSWER') continue;
      for (const id of relation.Ids ?? []) {
        const answer = byId.get(id);
        const text = answer?.Text?.trim();
        if (answer?.BlockType !== 'QUERY_RESULT' || !text) continue;
        const confidence = answer.Confidence ?? 0;
        const current = answers.get(alias);
        if (current === undefined || confidence > current.confidence) answers.set(alias, { text, confidence });
      }
    }
  }
  return answers;
}

function queryResult(
  fields: readonly FieldSpec[],
  queries: readonly TextractQuery[],
  blocks: readonly Block[],
): Record<string, unknown> {
  const answers = queryAnswers(blocks);
  const result: Record<string, unknown> = {};
  for (const field of fields) {
    const query = queries.find((q) => q.field === field.name);
    result[field.name] = typed(query ? answers.get(query.alias)?.text : undefined, field.type);
  }
  return result;
}

function resultFor(
  input: ProviderInput,
  api: TextractApi,
  reading: Reading,
  text: string,
  queries: readonly TextractQuery[],
): Record<string, unknown> {
  const { task } = input;
  if (input.step === 'ocr' || task.outputFormat === 'text') return { text };
  if (task.fields === null) return openResult(text);
  switch (api) {
    case 'expense':
      return expenseResult(task.fields, reading.expense);
    case 'identity':
      return identityResult(task.fields, reading.identity);
    case 'queries':
      return queryResult(task.fields, queries, reading.blocks);
    case 'detect_text':
      // A schema too large for queries: Textract's text, then the same rules the local provider applies.
      return extractFields(text, task.fields);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Calls
// ---------------------------------------------------------------------------------------------------------------

interface AsyncJobPage {
  JobStatus?: string;
  StatusMessage?: string;
  NextToken?: string;
  DocumentMetadata?: DocumentMetadata;
}

/** One attempt: the client, the deadline, and an abort signal that fires when the deadline passes. */
class Attempt {
  private readonly controller = new AbortController();
  private readonly cancelWatch: () => void;

  constructor(
    readonly client: TextractClient,
    readonly deadline: Deadline,
    private readonly pollIntervalMs: number,
  ) {
    this.cancelWatch = deadline.watch(() => this.controller.abort());
  }

  /** Stops the deadline watch. */
  finish(): void {
    this.cancelWatch();
  }

  /**
   * One SDK call within the deadline, its errors mapped. `billed`: what the call costs if Textract did the work;
   * `jobStarted`: an async job is running, so any failure carries `billed`.
   */
  async call<T>(
    operation: string,
    send: (options: { abortSignal: AbortSignal }) => Promise<T>,
    billed?: ProviderUsage,
    jobStarted = false,
  ): Promise<T> {
    try {
      this.deadline.check(`starting ${operation}`);
      return await send({ abortSignal: this.controller.signal });
    } catch (error) {
      throw toFailure(error, operation, this.deadline, billed, jobStarted);
    }
  }

  /** Waits before the next poll: `ms` (the poll interval by default), or less when the deadline is nearer. */
  private async pause(billed: ProviderUsage, ms = this.pollIntervalMs): Promise<void> {
    const stage = 'waiting for the Textract job';
    let timer: NodeJS.Timeout | undefined;
    try {
      this.deadline.check(stage);
      const wait = Math.min(ms, this.deadline.remainingMs());
      await this.deadline.race(
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, wait);
        }),
        stage,
      );
    } catch (error) {
      throw toFailure(error, stage, this.deadline, billed, true);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * One Get request of a running job. A throttled poll does not stop the job (it runs, and is billed, regardless):
   * it is asked again after Retry-After or the poll interval, within the deadline.
   */
  private async poll<P>(
    operation: string,
    fetch: (options: { abortSignal: AbortSignal }) => Promise<P>,
    billed: ProviderUsage,
  ): Promise<P> {
    for (;;) {
      try {
        return await this.call(operation, fetch, billed, true);
      } catch (error) {
        if (!(error instanceof ProviderFailure) || error.kind !== 'rate_limited') throw error;
        await this.pause(billed, error.retryAfterMs);
      }
    }
  }

  /**
   * Starts an async job and returns every page of its results: polls until the job leaves IN_PROGRESS, then follows
   * NextToken. From the start on the job's pages are billed, so every failure carries `billed` — except a FAILED job,
   * which Textract does not charge for.
   */
  async job<P extends AsyncJobPage>(
    name: string,
    start: (options: { abortSignal: AbortSignal }) => Promise<{ JobId?: string }>,
    get: (jobId: string, nextToken: string | undefined, options: { abortSignal: AbortSignal }) => Promise<P>,
    billed: ProviderUsage,
  ): Promise<P[]> {
    // A Start that times out may have started the job: the timeout carries its pages.
    const { JobId: jobId } = await this.call(`Start${name}`, start, billed);
    if (!jobId) throw invalidOutput(`Start${name} returned no JobId`);
    let first: P;
    for (;;) {
      const page = await this.poll(`Get${name}`, (o) => get(jobId, undefined, o), billed);
      if (page.JobStatus === 'IN_PROGRESS') {
        await this.pause(billed);
        continue;
      }
      if (page.JobStatus === 'FAILED') {
        // Textract's own reason, e.g. "Request has unsupported document format".
        throw new ProviderFailure(
          'server',
          `textract: the ${name} job failed: ${redactAwsCredentials(page.StatusMessage ?? 'no reason given')}`,
        );
      }
      if (page.JobStatus !== 'SUCCEEDED' && page.JobStatus !== 'PARTIAL_SUCCESS') {
        throw invalidOutput(`Get${name} returned job status ${String(page.JobStatus)}`, billed);
      }
      first = page;
      break;
    }
    const pages = [first];
    const seen = new Set<string>();
    for (let token = first.NextToken; token; token = pages.at(-1)?.NextToken) {
      if (seen.has(token)) throw invalidOutput(`Get${name} repeated a NextToken`, billed);
      seen.add(token);
      const next = token;
      pages.push(await this.poll(`Get${name}`, (o) => get(jobId, next, o), billed));
    }
    return pages;
  }
}

/** How the document reaches Textract. */
type Delivery =
  | { kind: 'bytes'; bytes: Uint8Array }
  | { kind: 's3'; bucket: string; key: string; versionId?: string | undefined }
  | { kind: 'pages'; pages: Uint8Array[] };

async function deliveryFor(input: ProviderInput, api: TextractApi, options: InvokeOptions): Promise<Delivery> {
  const { facts } = input;
  if (facts.kind === 'pdf') {
    if (api === 'identity') {
      // AnalyzeID has no async form and takes at most two pages, as images: the front and back of the document.
      const indexes = [...Array(billedPages(facts, 'identity')).keys()];
      const rendered = await renderPdfPages(input.bytes, IMAGE_TARGET, options, indexes);
      return { kind: 'pages', pages: rendered.map((page) => page.bytes) };
    }
    if (facts.pages <= 1 && input.bytes.byteLength <= SYNC_MAX_BYTES) return { kind: 'bytes', bytes: input.bytes };
    if (!input.source) {
      throw new ProviderFailure(
        'client',
        `textract: this PDF (${facts.pages} pages, ${input.bytes.byteLength} bytes) can only be read by the asynchronous API, from S3, and no S3 location was given`,
      );
    }
    return { kind: 's3', bucket: input.source.bucket, key: input.source.key, versionId: input.source.versionId };
  }
  // Textract reads every in-plane rotation, so EXIF orientation need not be applied: a JPEG or PNG within the limits
  // is sent as uploaded (no generation loss); anything else (HEIC, too large) is converted within them.
  const withinLimits =
    (facts.mime === 'image/jpeg' || facts.mime === 'image/png') &&
    input.bytes.byteLength <= SYNC_MAX_BYTES &&
    facts.width !== undefined &&
    facts.height !== undefined &&
    Math.max(facts.width, facts.height) <= MAX_SIDE_PIXELS;
  if (withinLimits) return { kind: 'bytes', bytes: input.bytes };
  const prepared = await prepareImage(input.bytes, facts.mime, IMAGE_TARGET, options);
  return { kind: 'bytes', bytes: prepared.bytes };
}

function requirePageBlock(blocks: readonly Block[], operation: string, usage: ProviderUsage): void {
  if (!blocks.some((b) => b.BlockType === 'PAGE')) {
    throw invalidOutput(`${operation} returned no PAGE block: the document was not read`, usage);
  }
}

async function read(
  attempt: Attempt,
  api: TextractApi,
  delivery: Delivery,
  queries: readonly TextractQuery[],
  expectedPages: number,
): Promise<Reading> {
  const empty: Reading = { pages: expectedPages, blocks: [], expense: [], identity: [] };
  const billed = usageFor(api, expectedPages);

  if (delivery.kind === 'pages') {
    const out = await attempt.call(
      'AnalyzeID',
      (o) =>
        attempt.client.send(new AnalyzeIDCommand({ DocumentPages: delivery.pages.map((Bytes) => ({ Bytes })) }), o),
      billed,
    );
    const pages = pagesOf(out.DocumentMetadata, delivery.pages.length);
    if (!nonEmpty(out.IdentityDocuments))
      throw invalidOutput('AnalyzeID returned no IdentityDocuments', usageFor(api, pages));
    return { ...empty, pages, identity: out.IdentityDocuments };
  }

  if (delivery.kind === 'bytes') {
    const Document = { Bytes: delivery.bytes };
    switch (api) {
      case 'identity': {
        const out = await attempt.call(
          'AnalyzeID',
          (o) => attempt.client.send(new AnalyzeIDCommand({ DocumentPages: [Document] }), o),
          billed,
        );
        const pages = pagesOf(out.DocumentMetadata, 1);
        if (!nonEmpty(out.IdentityDocuments))
          throw invalidOutput('AnalyzeID returned no IdentityDocuments', usageFor(api, pages));
        return { ...empty, pages, identity: out.IdentityDocuments };
      }
      case 'expense': {
        const out = await attempt.call(
          'AnalyzeExpense',
          (o) => attempt.client.send(new AnalyzeExpenseCommand({ Document }), o),
          billed,
        );
        const pages = pagesOf(out.DocumentMetadata, 1);
        if (!nonEmpty(out.ExpenseDocuments))
          throw invalidOutput('AnalyzeExpense returned no ExpenseDocuments', usageFor(api, pages));
        return { ...empty, pages, expense: out.ExpenseDocuments };
      }
      case 'queries': {
        const out = await attempt.call(
          'AnalyzeDocument',
          (o) =>
            attempt.client.send(
              new AnalyzeDocumentCommand({
                Document,
                FeatureTypes: ['QUERIES'],
                QueriesConfig: { Queries: queries.map(({ text, alias }) => ({ Text: text, Alias: alias })) },
              }),
              o,
            ),
          billed,
        );
        const pages = pagesOf(out.DocumentMetadata, 1);
        requirePageBlock(out.Blocks ?? [], 'AnalyzeDocument', usageFor(api, pages));
        return { ...empty, pages, blocks: out.Blocks ?? [] };
      }
      case 'detect_text': {
        const out = await attempt.call(
          'DetectDocumentText',
          (o) => attempt.client.send(new DetectDocumentTextCommand({ Document }), o),
          billed,
        );
        const pages = pagesOf(out.DocumentMetadata, 1);
        requirePageBlock(out.Blocks ?? [], 'DetectDocumentText', usageFor(api, pages));
        return { ...empty, pages, blocks: out.Blocks ?? [] };
      }
    }
  }

  // The version creation inspected, when the bucket keeps versions: a later PUT to the same key is not read.
  const version = delivery.versionId !== undefined ? { Version: delivery.versionId } : {};
  const DocumentLocation = { S3Object: { Bucket: delivery.bucket, Name: delivery.key, ...version } };
  switch (api) {
    case 'identity':
      // Unreachable: deliveryFor renders PDFs for AnalyzeID, which has no asynchronous form.
      throw new ProviderFailure('client', 'textract: AnalyzeID cannot read a document from S3 asynchronously');
    case 'expense': {
      const results = await attempt.job(
        'ExpenseAnalysis',
        (o) => attempt.client.send(new StartExpenseAnalysisCommand({ DocumentLocation }), o),
        (JobId, NextToken, o) => attempt.client.send(new GetExpenseAnalysisCommand({ JobId, NextToken }), o),
        billed,
      );
      const pages = pagesOf(results[0]?.DocumentMetadata, expectedPages);
      if (
        !results.every((r) => Array.isArray(r.ExpenseDocuments)) ||
        !results.some((r) => nonEmpty(r.ExpenseDocuments))
      ) {
        throw invalidOutput('GetExpenseAnalysis returned no ExpenseDocuments', usageFor(api, pages));
      }
      return { ...empty, pages, expense: results.flatMap((r) => r.ExpenseDocuments ?? []) };
    }
    case 'queries': {
      const results = await attempt.job(
        'DocumentAnalysis',
        (o) =>
          attempt.client.send(
            new StartDocumentAnalysisCommand({
              DocumentLocation,
              FeatureTypes: ['QUERIES'],
              // Without Pages a query is asked of page 1 only.
              QueriesConfig: {
                Queries: queries.map(({ text, alias }) => ({ Text: text, Alias: alias, Pages: ['*'] })),
              },
            }),
            o,
          ),
        (JobId, NextToken, o) => attempt.client.send(new GetDocumentAnalysisCommand({ JobId, NextToken }), o),
        billed,
      );
      const pages = pagesOf(results[0]?.DocumentMetadata, expectedPages);
      const blocks = results.flatMap((r) => r.Blocks ?? []);
      requirePageBlock(blocks, 'GetDocumentAnalysis', usageFor(api, pages));
      return { ...empty, pages, blocks };
    }
    case 'detect_text': {
      const results = await attempt.job(
        'DocumentTextDetection',
        (o) => attempt.client.send(new StartDocumentTextDetectionCommand({ DocumentLocation }), o),
        (JobId, NextToken, o) => attempt.client.send(new GetDocumentTextDetectionCommand({ JobId, NextToken }), o),
        billed,
      );
      const pages = pagesOf(results[0]?.DocumentMetadata, expectedPages);
      const blocks = results.flatMap((r) => r.Blocks ?? []);
      requirePageBlock(blocks, 'GetDocumentTextDetection', usageFor(api, pages));
      return { ...empty, pages, blocks };
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The adapter
// ---------------------------------------------------------------------------------------------------------------

/** Builds the Textract adapter (tests pass a client or a short poll interval; the worker uses `textractProvider`). */
export function createTextractProvider(options: TextractProviderOptions = {}): ProviderAdapter {
  const pollIntervalMs = options.pollIntervalMs ?? POLL_INTERVAL_MS;

  async function invoke(input: ProviderInput, invokeOptions: InvokeOptions): Promise<ProviderOutput> {
    const deadline = new Deadline(invokeOptions.signal, invokeOptions.deadlineMs, 'textract');
    deadline.check('starting');
    if (input.bytes.byteLength === 0) throw new ProviderFailure('unreadable_file', 'textract: the file is empty');

    const api = textractApiFor(input.task, input.step);
    const queries = api === 'queries' && input.task.fields ? buildQueries(input.task.fields) : [];
    const delivery = await deliveryFor(input, api, invokeOptions);
    const expectedPages = delivery.kind === 'pages' ? delivery.pages.length : billedPages(input.facts, api);

    const attempt = new Attempt(options.client ?? defaultClient(), deadline, pollIntervalMs);
    let reading: Reading;
    try {
      reading = await read(attempt, api, delivery, queries, expectedPages);
    } finally {
      attempt.finish();
    }

    const text = documentTextOf(reading);
    return {
      result: resultFor(input, api, reading, text, queries),
      documentText: text,
      nativeConfidence: confidenceOf(reading),
      words: textractWords(reading.blocks, reading.expense, reading.identity),
      usage: usageFor(api, reading.pages),
    };
  }

  return { id: 'textract', invoke };
}

/** The worker's Textract adapter (process-wide client from the environment, 1 s polling). */
export const textractProvider: ProviderAdapter = createTextractProvider();
