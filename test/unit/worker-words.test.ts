/**
 * The words a run's provider read survive the worker's flows: a chained plan's answer carries its OCR step's words
 * (shared/worker/chain.ts); a run in page chunks keeps every chunk's words, offset to the whole document
 * (chunked.ts → merge.ts), without putting them in its checkpoints, and a resumed run's replayed chunks get theirs from
 * the text layer when the evidence is collected (evidence.ts). DynamoDB is mocked at the client, adapters scripted.
 */
import { DynamoDBDocumentClient, QueryCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import type { PageWords } from '../../shared/fields/types.js';
import { planRun } from '../../shared/planning/plan.js';
import type { ProviderAdapter, ProviderInput, ProviderOutput } from '../../shared/providers/types.js';
import type { ChunkCheckpoint } from '../../shared/store/chunks.js';
import type { RunRecord } from '../../shared/store/runs.js';
import type { TaskSpec } from '../../shared/task.js';
import { tryChain } from '../../shared/worker/chain.js';
import { runChunks } from '../../shared/worker/chunked.js';
import { collectEvidenceWords } from '../../shared/worker/evidence.js';
import { fixture, runItem, tableName } from '../support/aws.js';

const ddb = mockClient(DynamoDBDocumentClient);
const PDF = fixture('twenty-pages.pdf');
const FACTS = { mime: 'application/pdf' as const, kind: 'pdf' as const, sizeBytes: PDF.byteLength, pages: 20 };
const TASK: TaskSpec = {
  prompt: 'List the sections',
  outputFormat: 'json',
  fields: [{ name: 'sections', type: 'array', required: false }],
  schemaId: null,
  schemaLabel: 'Sections',
  promptScaffold: null,
};

beforeEach(() => {
  ddb.reset();
});

/** The 20-page fixture in chunks of 5 pages, planned as creation plans it. */
function run(): RunRecord {
  const plan = planRun(FACTS, TASK, ['local'], { explicitOrder: true });
  return runItem({
    task: TASK,
    file: FACTS,
    candidates: plan.candidates,
    estimateMicros: plan.estimateMicros,
    chunkPages: 5,
    progress: { pagesTotal: 20, pagesDone: 0 },
  });
}

function arrange(record: RunRecord, checkpoints: ChunkCheckpoint[] = []): void {
  ddb.on(TransactWriteCommand).resolves({});
  ddb.on(QueryCommand, { TableName: tableName('runChunks') }).resolves({
    Items: checkpoints.map((c) => ({ ...c, jobId: record.jobId, answer: JSON.stringify(c.output), expiresAtEpoch: 1 })),
  });
}

/** Answers each chunk with one word per page, numbered as an adapter numbers them: within the PDF it was given. */
const adapter: ProviderAdapter = {
  id: 'local',
  async invoke(input: ProviderInput): Promise<ProviderOutput> {
    const first = input.pages?.first ?? 1;
    const words: PageWords[] = Array.from({ length: input.facts.pages }, (_, i) => ({
      page: i + 1,
      source: 'tesseract',
      words: [{ text: `printed-on-${first + i}`, bbox: [0.1, 0.1, 0.2, 0.12], confidence: 0.9 }],
    }));
    return {
      result: { sections: [`Section ${first}`] },
      words,
      usage: { billableUnits: input.facts.pages, costMicros: 10 },
    };
  },
};

async function execute(record: RunRecord) {
  return runChunks({
    run: record,
    bytes: PDF,
    adapters: { local: adapter },
    capMicros: Number.MAX_SAFE_INTEGER,
    deadlineMs: Date.now() + 120_000,
    concurrency: 2,
  });
}

test("a 20-page run's page 13 words say page 13; no checkpoint stores words", async () => {
  const record = run();
  arrange(record);
  const outcome = await execute(record);
  if (outcome.status !== 'completed') throw new Error(`run ${outcome.status}`);

  const words = outcome.merged.words ?? [];
  expect(words.map((p) => p.page)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  expect(words.find((p) => p.page === 13)?.words[0]?.text).toBe('printed-on-13');
  expect(words.every((p) => p.words[0]?.text === `printed-on-${p.page}`)).toBe(true);

  const stored = ddb
    .commandCalls(TransactWriteCommand)
    .flatMap((c) => c.args[0].input.TransactItems ?? [])
    .filter((i) => i.Put?.TableName === tableName('runChunks'))
    .map((i) => String(i.Put?.Item?.answer));
  expect(stored).toHaveLength(4);
  expect(stored.some((answer) => answer.includes('printed-on'))).toBe(false);
});

test("a resumed run's replayed chunks have no words until the text layer gives them theirs", async () => {
  const record = run();
  const done: ChunkCheckpoint = {
    first: 1,
    last: 5,
    provider: 'local',
    output: { result: { sections: ['Section 1'] }, billableUnits: 5 },
    attempts: [{ provider: 'local', step: 'vision', outcome: 'succeeded', latencyMs: 3 }],
    requests: 1,
    costMicros: 10,
  };
  arrange(record, [done]);
  const outcome = await execute(record);
  if (outcome.status !== 'completed') throw new Error(`run ${outcome.status}`);
  expect(outcome.merged.words?.map((p) => p.page)).toEqual(Array.from({ length: 15 }, (_, i) => i + 6));

  const words = await collectEvidenceWords({
    bytes: PDF,
    facts: FACTS,
    output: { words: outcome.merged.words ?? [] },
    deadlineMs: Date.now() + 60_000,
  });
  expect(words.map((p) => `${p.page}:${p.source}`)).toEqual([
    ...[1, 2, 3, 4, 5].map((page) => `${page}:text-layer`),
    ...Array.from({ length: 15 }, (_, i) => `${i + 6}:tesseract`),
  ]);
  expect(words[2]?.words.slice(0, 2).map((w) => w.text)).toEqual(['Section', '3']);
});

test("a chained plan's answer carries the words its OCR step read", async () => {
  const scan = fixture('scanned.pdf');
  const facts = { mime: 'application/pdf' as const, kind: 'pdf' as const, sizeBytes: scan.byteLength, pages: 1 };
  const read: PageWords[] = [
    { page: 1, source: 'textract', words: [{ text: '42.50', bbox: [0.2, 0.76, 0.35, 0.79], confidence: 0.99 }] },
  ];
  const ocr: ProviderAdapter = {
    id: 'textract',
    invoke: async () => ({
      result: { text: 'Total: 42.50' },
      words: read,
      usage: { billableUnits: 1, costMicros: 1500 },
    }),
  };
  const model: ProviderAdapter = {
    id: 'openai',
    invoke: async () => ({ result: { total: 42.5 }, usage: { billableUnits: 1, costMicros: 700 } }),
  };
  const chained = runItem({ ocrCandidates: ['textract'], candidates: ['openai'], file: facts });
  const outcome = await tryChain(
    chained,
    ['textract'],
    {
      adapters: { textract: ocr, openai: model },
      input: { bytes: scan, facts, task: chained.task },
      capMicros: Number.MAX_SAFE_INTEGER,
      deadlineMs: Date.now() + 60_000,
    },
    undefined,
  );
  expect(outcome.output?.result).toEqual({ total: 42.5 });
  expect(outcome.output?.words).toEqual(read);
});
