/**
 * The batch fakes' shared state (bench/batch-fakes.ts): what a test configures, each submitted batch and its items,
 * the helpers every provider's wire format uses, and the context each provider's routes (./openai.ts, ./anthropic.ts,
 * ./gemini.ts, ./bedrock.ts) are built with, so their lifecycles (polling, partial failure, expiry) stay alike.
 */
import type { RecordedRequest, ScriptedResponse } from '../../test/support/fake-server.js';

export type BatchProvider = 'openai' | 'anthropic' | 'gemini' | 'bedrock';

/** One request of a submitted batch, as the fake received it. */
export interface BatchItem {
  provider: BatchProvider;
  batchId: string;
  /** custom_id (OpenAI, Anthropic), metadata.key (Gemini), recordId (Bedrock). */
  customId: string;
  /** The request body the item carries (Responses, Messages, GenerateContent or the model's InvokeModel body). */
  body: Record<string, unknown>;
}

export type ItemOutcome =
  | { kind: 'ok'; answer: unknown; usage?: { input: number; output: number } }
  | { kind: 'error'; status: number; message: string };

export interface BatchFakeBehaviour {
  outcome: (item: BatchItem) => ItemOutcome;
  /** Status reads answered "in progress" before a batch ends (default 1). */
  pollsBeforeEnd: number;
  /** The batch ends expired: the provider's window passed. */
  expire: boolean;
  /** With `expire`, or once the batch is cancelled: how many items (in order) were done before it ended (default 0). */
  doneBeforeExpiry: number;
  /**
   * Bedrock refuses a job of fewer records (ValidationException), as its default quota "minimum number of records
   * per batch inference job" does (default 100, https://docs.aws.amazon.com/general/latest/gr/bedrock.html).
   */
  bedrockMinRecords: number;
}

/** Where Bedrock reads its input and writes its output (s3:// URIs). */
export interface ObjectStorage {
  read(uri: string): Promise<string>;
  write(uri: string, body: string): Promise<void>;
}

export interface Batch {
  provider: BatchProvider;
  id: string;
  items: BatchItem[];
  polls: number;
  createdAt: Date;
  /** Set once the batch ended: each item's outcome, or `expired` for an item never run (not done in time, cancelled). */
  results?: Array<ItemOutcome | 'expired'>;
  /** Its cancel was accepted (Bedrock: StopModelInvocationJob): the next status read ends it. */
  cancelled?: boolean;
  /** Bedrock: where it writes and its model. */
  outputUri?: string;
  inputFile?: string;
  model?: string;
  /** Gemini: its input came as a file, so its answers go out as one (`responsesFile`). */
  geminiFileOutput?: boolean;
  /** OpenAI: its input, output and error files. */
  inputFileId?: string;
}

export const seconds = (d: Date) => Math.floor(d.getTime() / 1000);
export const jsonl = (lines: unknown[]) => lines.map((l) => JSON.stringify(l)).join('\n') + (lines.length ? '\n' : '');
export type Answered = Extract<ItemOutcome, { kind: 'ok' }>;
export const usageOf = (item: BatchItem, outcome: Extract<ItemOutcome, { kind: 'ok' }>) =>
  outcome.usage ?? {
    input: Math.ceil(JSON.stringify(item.body).length / 4),
    output: Math.ceil(JSON.stringify(outcome.answer).length / 3),
  };
export const hasTools = (body: Record<string, unknown>) => Array.isArray(body.tools) && body.tools.length > 0;
export const toolName = (body: Record<string, unknown>): string => {
  const tool = (body.tools as Array<{ name?: string; toolSpec?: { name?: string } }>)[0];
  return tool?.name ?? tool?.toolSpec?.name ?? 'record_result';
};
export const text = (answer: unknown) => (typeof answer === 'string' ? answer : JSON.stringify(answer));

/** What each provider's routes are built with: the fake's state and its lifecycle. */
export interface FakeContext {
  behaviour(): BatchFakeBehaviour;
  storage: ObjectStorage;
  /** Uploaded and produced files by id (OpenAI's files, Gemini's Files API). */
  files: Map<string, string>;
  batches: Map<string, Batch>;
  submit(provider: BatchProvider, id: string, items: BatchItem[], extra?: Partial<Batch>): Batch;
  /** Counts a status read; true once the batch ended (after `pollsBeforeEnd` reads, or the first after a cancel). */
  poll(batch: Batch): Promise<boolean>;
  /**
   * Cancels a running batch, as the four APIs do: it ends at its next status read, its first `doneBeforeExpiry` items
   * answered (and billed), the others never run. False when it already ended (each API refuses that).
   */
  cancel(batch: Batch): boolean;
  /** Ends a batch now: the first `done` items get their outcome, the others are never processed. */
  endBatch(batch: Batch, done: number): Promise<void>;
  expired(batch: Batch): boolean;
  counts(batch: Batch): { ok: number; failed: number; expired: number };
  notFound(what: string): ScriptedResponse;
  /** The test's answer to a path no batch API has (a provider's synchronous API on the same base URL). */
  otherwise(req: RecordedRequest): ScriptedResponse | Promise<ScriptedResponse>;
}

/** A provider's routes: (request, its path without the query, the fake's base URL). */
export type Route = (req: RecordedRequest, path: string, base: string) => Promise<ScriptedResponse>;
