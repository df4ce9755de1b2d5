/**
 * The `textract` provider: Amazon Textract by IAM, one API per task (profile.ts `textractApiFor`, shared with the
 * estimate); sync for images and one-page PDFs, async from S3 otherwise. The SDK makes one attempt; cost is the pages
 * Textract reports, and an async job's pages are billed even when we stop waiting. Its words (with their geometry)
 * are read by words.ts.
 * See docs/decisions.md#textract-adapter.
 * Calls and job polling are in ./calls.ts, the result mapping in ./results.ts, failures in ./failures.ts.
 */
import {
  AnalyzeDocumentCommand,
  AnalyzeExpenseCommand,
  AnalyzeIDCommand,
  type Block,
  DetectDocumentTextCommand,
  GetDocumentAnalysisCommand,
  GetDocumentTextDetectionCommand,
  GetExpenseAnalysisCommand,
  StartDocumentAnalysisCommand,
  StartDocumentTextDetectionCommand,
  StartExpenseAnalysisCommand,
  TextractClient,
} from '@aws-sdk/client-textract';
import { Deadline, prepareImage, renderPdfPages } from '../../media/index.js';
import { ProviderFailure, type ProviderUsage } from '../../task.js';
import type { InvokeOptions, ProviderAdapter, ProviderInput, ProviderOutput } from '../types.js';
import { Attempt } from './calls.js';
import { invalidOutput, nonEmpty } from './failures.js';
import {
  billedPages,
  buildQueries,
  IMAGE_TARGET,
  MAX_SIDE_PIXELS,
  SYNC_MAX_BYTES,
  type TextractApi,
  type TextractQuery,
  textractApiFor,
} from './profile.js';
import { confidenceOf, documentTextOf, pagesOf, type Reading, resultFor, usageFor } from './results.js';
import { textractWords } from './words.js';

/** Default delay between two polls of an asynchronous job. */
export const POLL_INTERVAL_MS = 1_000;

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
// Reading the document
// ---------------------------------------------------------------------------------------------------------------

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
