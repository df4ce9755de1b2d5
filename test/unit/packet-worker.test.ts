/**
 * The worker's packet run (shared/worker/packet-run.ts): evidence for every page (the local engine's, or a model's
 * per-page classification call), the split, one extraction per document that is not `other` with its schema, and
 * one settlement whose documents are a partition of the pages; each page's evidence and each document's answer kept
 * as a checkpoint, so that a delivery redone after a crash asks nothing again and counts everything once. Adapters are
 * scripted; the chunk store is an in-memory table behind a mocked DynamoDB client; page previews are not stored (S3
 * mocked at the client).
 * Over 400 lines: every path of a packet run (split, out of time, scans, crash, auto) shares the one in-memory chunk
 * store and scripted models above; splitting it would mean a support module for them (a next step).
 */
import { S3Client } from '@aws-sdk/client-s3';
import {
  DynamoDBDocumentClient,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { jest } from '@jest/globals';
import { mockClient } from 'aws-sdk-client-mock';
import { localPageEvidence } from '../../shared/packets/local-evidence.js';
import { checkPartition } from '../../shared/packets/result.js';
import { countSplit, scoreOf } from '../../shared/packets/score.js';
import { seedFactors } from '../../shared/planning/estimate.js';
import type { ProviderAdapter, ProviderInput, ProviderOutput } from '../../shared/providers/types.js';
import { buildTask, registry } from '../../shared/registry/registry.js';
import type { RunRecord } from '../../shared/store/runs.js';
import { ProviderFailure, type ProviderId } from '../../shared/task.js';
import { MIN_CHUNK_MS, RunIncomplete } from '../../shared/worker/chunked.js';
import { CLASSIFY_MARKER, parseAnswer } from '../../shared/worker/packet-evidence.js';
import { runPacket } from '../../shared/worker/packet-run.js';
import { fixture, runItem } from '../support/aws.js';
import { wordsOfText } from '../support/packet-model.js';
import { makePackets } from '../support/packets.js';
import { textAndScansPdf } from '../support/text-and-scans-pdf.js';

// Read at first use (shared/config.ts): two calls of a run at once, so that a crash leaves pages not yet asked.
process.env.SERVICE_PROVIDER_CONCURRENCY = '2';

mockClient(S3Client).resolves({});
const ddb = mockClient(DynamoDBDocumentClient);
/** The chunk store: every item written, by run. */
const chunkItems = new Map<string, Record<string, unknown>[]>();

beforeEach(() => {
  ddb.reset();
  chunkItems.clear();
  ddb.on(QueryCommand).callsFake((query: QueryCommandInput) => {
    const jobId = String(query.ExpressionAttributeValues?.[':jobId']);
    const items = [...(chunkItems.get(jobId) ?? [])].sort((a, b) => Number(a.first) - Number(b.first));
    return { Items: items };
  });
  ddb.on(TransactWriteCommand).callsFake((write: TransactWriteCommandInput) => {
    for (const item of write.TransactItems ?? []) {
      const put = item.Put?.Item;
      if (!put) continue;
      const items = chunkItems.get(String(put.jobId)) ?? [];
      if (items.some((i) => i.first === put.first)) throw new Error('a checkpoint written twice');
      chunkItems.set(String(put.jobId), [...items, put]);
    }
    return {};
  });
});

const SCHEMAS = [...registry.keys()];
const FOUND = makePackets(30, 6).find((p) => p.truth.length >= 3 && p.truth.some((d) => d.schemaId === 'other'));
if (!FOUND) throw new Error('no packet with an `other` document in the sample');
const PACKET = FOUND;
const shapes = (documents: readonly { schemaId: string; pages: { first: number; last: number } }[]) =>
  documents.map((d) => ({ schemaId: d.schemaId, pages: d.pages }));

let runs = 0;

/** A queued split run of PACKET (its own jobId: runs do not share checkpoints). */
function packetRun(candidates: ProviderId[], overrides: Partial<RunRecord> = {}): RunRecord {
  const facts = {
    mime: 'application/pdf' as const,
    kind: 'pdf' as const,
    sizeBytes: PACKET.bytes.byteLength,
    pages: PACKET.pages,
  };
  runs += 1;
  return runItem({
    jobId: `run_packet_${runs}`,
    task: buildTask({ prompt: 'Extract', outputFormat: 'json' }),
    file: facts,
    progress: { pagesTotal: facts.pages, pagesDone: 0 },
    candidates,
    packet: { mode: 'split', schemaIds: SCHEMAS },
    estimateMicros: 1_000_000,
    ...overrides,
  });
}

interface Recorded extends ProviderAdapter {
  calls: ProviderInput[];
}

/**
 * A model that classifies from the page's text (as the local engine would) and extracts nothing; 50 micros a call,
 * answered after `delayMs` (calls overlap as a real model's do).
 */
function model(id: ProviderId, broken = false, delayMs = 0): Recorded {
  const calls: ProviderInput[] = [];
  return {
    id,
    calls,
    async invoke(input): Promise<ProviderOutput> {
      calls.push(input);
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      const usage = { billableUnits: 1, costMicros: 50 };
      if (!input.task.prompt.startsWith(CLASSIFY_MARKER)) return { result: {}, usage };
      if (broken) return { result: { pages: ['not evidence'] }, usage };
      const words = wordsOfText(input.documentText ?? '');
      return { result: { pages: [localPageEvidence(1, words, SCHEMAS)] }, usage };
    },
  };
}

const input = (adapters: Partial<Record<ProviderId, ProviderAdapter>>) => ({
  adapters,
  capMicros: 1_000_000,
  factors: seedFactors,
  deadlineMs: Date.now() + 60_000,
});

function documentsOf(settlement: Awaited<ReturnType<typeof runPacket>>) {
  if (settlement.status !== 'completed') throw new Error(`run ${settlement.status}`);
  return (
    settlement.result as {
      documents: {
        index: number;
        schemaId: string;
        pages: { first: number; last: number };
        classification: { confidence: number };
        result?: unknown;
      }[];
    }
  ).documents;
}

/** Each call as what it asked: `classify p` or `extract first-last`. */
const asked = (calls: readonly ProviderInput[]) =>
  calls.map((c) =>
    c.task.prompt.startsWith(CLASSIFY_MARKER)
      ? `classify ${c.pages?.first}`
      : `extract ${c.pages?.first}-${c.pages?.last}`,
  );

/**
 * A run redone after its first delivery stopped: the split the run had uninterrupted, every page classified and every
 * document extracted once over both deliveries, each call paid once in the one settlement.
 */
function expectEachCallOnce(
  settlement: Awaited<ReturnType<typeof runPacket>>,
  calls: readonly ProviderInput[],
  expected: ReturnType<typeof documentsOf>,
) {
  const extracted = expected.filter((d) => d.schemaId !== 'other').length;
  expect(shapes(documentsOf(settlement))).toEqual(shapes(expected));
  const all = asked(calls);
  expect(new Set(all).size).toBe(all.length);
  expect(all).toHaveLength(PACKET.pages + extracted);
  expect(settlement.usage?.costMicros).toBe(50 * (PACKET.pages + extracted));
  expect(settlement.usage?.requests).toBe(PACKET.pages + extracted);
  expect(settlement.attempts).toHaveLength(PACKET.pages + extracted);
}

describe('a split run', () => {
  test('the local engine: a partition close to the truth, one extraction per non-other document', async () => {
    const local = model('local');
    const settlement = await runPacket(packetRun(['local']), PACKET.bytes, input({ local }));
    const documents = documentsOf(settlement);
    expect(checkPartition(documents, PACKET.pages)).toBeNull();
    // The local engine's split, scored against the packet's truth (the bench scores all 40 packets).
    const score = scoreOf(countSplit(shapes(documents), PACKET.truth));
    expect(score.f1).toBeGreaterThanOrEqual(0.8);
    expect(score.pageAccuracy).toBeGreaterThanOrEqual(0.8);
    const extracted = documents.filter((d) => d.schemaId !== 'other');
    // Evidence is the local engine's own (no calls); each document is one call with its own pages and schema.
    expect(local.calls).toHaveLength(extracted.length);
    expect(local.calls.map((c) => [c.pages, c.task.schemaId])).toEqual(extracted.map((d) => [d.pages, d.schemaId]));
    expect(documents.filter((d) => d.schemaId === 'other').every((d) => d.result === undefined)).toBe(true);
    expect(settlement.usage?.costMicros).toBe(50 * extracted.length);
    // The run is as sure as its least sure document, of its class and of its fields: this model extracts nothing,
    // so however sure the classes are (an `other` page needs no review), the run is not.
    for (const other of documents.filter((d) => d.schemaId === 'other')) {
      expect(other.classification.confidence).toBeGreaterThanOrEqual(0.8);
    }
    expect(settlement.status === 'completed' && settlement.confidence).toBe(0);
  });

  test('a language model: one classification call per page, then one per document, all in the price', async () => {
    const openai = model('openai');
    const settlement = await runPacket(packetRun(['openai']), PACKET.bytes, input({ openai }));
    const documents = documentsOf(settlement);
    expect(checkPartition(documents, PACKET.pages)).toBeNull();
    // The model answers by the local engine's rules from the text: the split it leads to is the local engine's.
    const local = documentsOf(await runPacket(packetRun(['local']), PACKET.bytes, input({ local: model('local') })));
    expect(shapes(documents)).toEqual(shapes(local));
    const classified = openai.calls.filter((c) => c.task.prompt.startsWith(CLASSIFY_MARKER));
    expect(classified.map((c) => c.pages?.first).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(
      Array.from({ length: PACKET.pages }, (_, i) => i + 1),
    );
    const extracted = documents.filter((d) => d.schemaId !== 'other').length;
    expect(openai.calls).toHaveLength(PACKET.pages + extracted);
    expect(settlement.usage?.costMicros).toBe(50 * (PACKET.pages + extracted));
    expect(settlement.attempts).toHaveLength(PACKET.pages + extracted);
  });

  test('a model reads a page as rows: a continued table and an unnumbered first page split as the truth', async () => {
    const packet = makePackets().find((p) => p.name === 'invoice-continued');
    if (!packet) throw new Error('no invoice-continued packet');
    const openai = model('openai');
    const run = packetRun(['openai'], {
      file: { ...packetRun([]).file, sizeBytes: packet.bytes.byteLength, pages: packet.pages },
    });
    const documents = documentsOf(await runPacket(run, packet.bytes, input({ openai })));
    expect(shapes(documents)).toEqual(packet.truth);
    // What the model was given for a continued table's page: each row's cells on one line, apart by a wide gap.
    const continued = openai.calls.find((c) => c.task.prompt.startsWith(CLASSIFY_MARKER) && c.pages?.first === 2);
    expect(continued?.documentText?.split('\n')[0]).toMatch(/^\S.*\S {2,}\d+ {2,}[\d,.]+ {2,}[\d,.]+$/);
  });

  test('a malformed classification answer: the page gets the local engine evidence, still a partition', async () => {
    const openai = model('openai', true);
    const documents = documentsOf(await runPacket(packetRun(['openai']), PACKET.bytes, input({ openai })));
    expect(checkPartition(documents, PACKET.pages)).toBeNull();
    const local = documentsOf(await runPacket(packetRun(['local']), PACKET.bytes, input({ local: model('local') })));
    expect(shapes(documents)).toEqual(shapes(local));
  });

  test('a document every candidate failed: the run fails and says which document', async () => {
    const failingExtraction: ProviderAdapter = {
      id: 'local',
      async invoke() {
        throw new ProviderFailure('server', 'down');
      },
    };
    const settlement = await runPacket(packetRun(['local']), PACKET.bytes, input({ local: failingExtraction }));
    expect(settlement.status).toBe('failed');
    if (settlement.status === 'failed') expect(settlement.error.message).toMatch(/document \d+ \(pages \d+-\d+\)/);
  });

  test('the spend limit holds across documents: a call that would cross it is not made', async () => {
    const local = model('local');
    const run = packetRun(['local'], { estimateMicros: 1 });
    const settlement = await runPacket(run, PACKET.bytes, { ...input({ local }), capMicros: 0 });
    expect(settlement.status).toBe('failed');
    expect(local.calls).toHaveLength(0);
  });
});

describe('a split run with scanned pages', () => {
  test('the local engine classifies a page without a text layer from the words its OCR reads there', async () => {
    // Page 1 an invoice with a text layer; pages 2 and 3 scans of a receipt and a business card (images only).
    const scans = await textAndScansPdf();
    const local = model('local');
    const run = packetRun(['local'], {
      file: { ...packetRun([]).file, sizeBytes: scans.bytes.byteLength, pages: scans.pages },
    });
    const documents = documentsOf(await runPacket(run, scans.bytes, input({ local })));
    // Without OCR the scans are blank pages and join the invoice: one document of pages 1-3.
    expect(documents.map((d) => d.pages)).toEqual([
      { first: 1, last: 1 },
      { first: 2, last: 2 },
      { first: 3, last: 3 },
    ]);
    expect(documents[0]?.schemaId).toBe('invoice');
    // The receipt scan prints an "Invoice Number" too: either reading is one a person would make of it.
    expect(['receipt', 'invoice']).toContain(documents[1]?.schemaId);
    expect(documents[2]?.schemaId).toBe('business_card');
  }, 60_000);
});

describe('a scanned document is grounded', () => {
  /** An adapter that classifies as `model` does and reads the card's e-mail address (printed on the page-3 scan). */
  function cardReader(id: ProviderId): Recorded {
    const inner = model(id);
    return {
      ...inner,
      async invoke(call, options) {
        const output = await inner.invoke(call, options);
        const scan = { 2: 'receipt', 3: 'business_card' }[call.pages?.first ?? 0];
        if (call.task.prompt.startsWith(CLASSIFY_MARKER) && !call.documentText && scan !== undefined) {
          // A model reads a scanned page from its image.
          return { ...output, result: { pages: [{ page: 1, classes: { [scan]: 0.9 }, startCue: true }] } };
        }
        if (call.task.prompt.startsWith(CLASSIFY_MARKER) || call.task.schemaId !== 'business_card') return output;
        return { ...output, result: { name: 'Jane Doe', email: 'jane.doe@example.com' } };
      },
    };
  }

  test.each([
    ['the local engine: on the words OCR read to classify it', 'local'],
    ['a language model: on the words local OCR reads on it for its fields', 'openai'],
  ] as const)(
    '%s',
    async (_, provider) => {
      const scans = await textAndScansPdf();
      const run = packetRun([provider], {
        file: { ...packetRun([]).file, sizeBytes: scans.bytes.byteLength, pages: scans.pages },
      });
      const settlement = await runPacket(run, scans.bytes, input({ [provider]: cardReader(provider) }));
      const card = documentsOf(settlement).find((d) => d.pages.first === 3) as unknown as {
        schemaId: string;
        fields: Record<string, { page?: number; bbox?: number[]; confidence: number }>;
      };
      expect(card).toBeDefined();
      // The e-mail address stands on the scanned page 3 of the packet, boxed where OCR read it.
      expect(card.fields.email?.page).toBe(3);
      expect(card.fields.email?.bbox).toHaveLength(4);
    },
    90_000,
  );
});

describe('a split run redone after a crash', () => {
  /** A crash seam that throws once, after the `at`-th checkpoint is written. */
  function crashAfter(at: number) {
    let written = 0;
    return () => {
      written += 1;
      if (written === at) throw new Error(`simulated crash after checkpoint ${at}`);
    };
  }

  test.each([
    ['while the pages are classified', 2],
    ['while the documents are extracted', PACKET.pages + 1],
  ])('%s: the redelivery asks only what no checkpoint kept; the settlement counts every call once', async (_, at) => {
    const expected = documentsOf(
      await runPacket(packetRun(['openai']), PACKET.bytes, input({ openai: model('openai') })),
    );
    const extracted = expected.filter((d) => d.schemaId !== 'other').length;
    const openai = model('openai', false, 5);
    const run = packetRun(['openai']);
    await expect(runPacket(run, PACKET.bytes, input({ openai }), crashAfter(at))).rejects.toThrow('simulated crash');
    const first = asked(openai.calls);
    // The crash is real: the first delivery stopped short.
    expect(first.length).toBeLessThan(PACKET.pages + extracted);

    expectEachCallOnce(await runPacket(run, PACKET.bytes, input({ openai })), openai.calls, expected);
  });

  test('the spend limit counts what the crashed delivery spent: with no room left past it, nothing more is asked', async () => {
    // Dear calls: what the first delivery spends dwarfs any one call's predicted bound.
    const dear = (): Recorded => {
      const inner = model('openai', false, 5);
      return {
        ...inner,
        async invoke(input, options) {
          const output = await inner.invoke(input, options);
          return { ...output, usage: { ...output.usage, costMicros: 1_000_000 } };
        },
      };
    };
    const openai = dear();
    const run = packetRun(['openai']);
    await expect(runPacket(run, PACKET.bytes, input({ openai }), crashAfter(2))).rejects.toThrow('simulated crash');
    const before = openai.calls.length;
    const spent = 1_000_000 * before;
    const settlement = await runPacket(run, PACKET.bytes, { ...input({ openai }), capMicros: spent + 1 });
    expect(openai.calls).toHaveLength(before);
    expect(settlement.usage?.costMicros).toBe(spent);
  });
});

describe('a split run out of time', () => {
  test('stops starting calls before the deadline, hands itself back; the next delivery goes on, nothing asked twice', async () => {
    const expected = documentsOf(
      await runPacket(packetRun(['openai']), PACKET.bytes, input({ openai: model('openai') })),
    );
    // Two calls at a time; once the third has answered, the clock jumps to within MIN_CHUNK_MS of the deadline.
    const realNow = Date.now;
    let late = 0;
    const clock = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + late);
    const inner = model('openai', false, 20);
    const openai: Recorded = {
      ...inner,
      async invoke(call, options) {
        const output = await inner.invoke(call, options);
        if (inner.calls.length >= 3 && late === 0) late = 60_000 - MIN_CHUNK_MS + 1_000;
        return output;
      },
    };
    const run = packetRun(['openai']);
    const handedBack = await runPacket(run, PACKET.bytes, input({ openai })).catch((error: unknown) => error);
    clock.mockRestore();
    expect(handedBack).toBeInstanceOf(RunIncomplete);
    const first = openai.calls.length;
    expect(first).toBeGreaterThan(0);
    expect(first).toBeLessThan(PACKET.pages);
    // What it asked is kept: one checkpoint per page it classified.
    expect(chunkItems.get(run.jobId)).toHaveLength(first);
    expect((handedBack as RunIncomplete).pagesLeft).toBe(PACKET.pages - first);

    expectEachCallOnce(await runPacket(run, PACKET.bytes, input({ openai })), openai.calls, expected);
  });

  test('an auto run classified with too little time left for its extraction hands itself back first', async () => {
    const bytes = fixture('invoice.pdf');
    runs += 1;
    const run = runItem({
      jobId: `run_auto_late_${runs}`,
      task: buildTask({ prompt: 'Extract', outputFormat: 'json' }),
      schemaId: 'auto',
      file: { mime: 'application/pdf', kind: 'pdf', sizeBytes: bytes.byteLength, pages: 1 },
      candidates: ['openai'],
      packet: { mode: 'auto', schemaIds: SCHEMAS },
      estimateMicros: 1_000_000,
    });
    // Time for the page's classification (it starts with MIN_CHUNK_MS left), none for the extraction after it.
    const openai = model('openai', false, 300);
    const short = { ...input({ openai }), deadlineMs: Date.now() + MIN_CHUNK_MS + 200 };
    await expect(runPacket(run, bytes, short)).rejects.toBeInstanceOf(RunIncomplete);
    expect(openai.calls.map((c) => c.task.prompt.startsWith(CLASSIFY_MARKER))).toEqual([true]);
    const settlement = await runPacket(run, bytes, input({ openai }));
    // The next delivery asks only the extraction, with the class the first one kept.
    expect(openai.calls.map((c) => c.task.schemaId)).toEqual([null, 'invoice']);
    expect(settlement.usage?.costMicros).toBe(100);
  });
});

describe('schemaId auto', () => {
  /** A queued `auto` run of a fixture file among every registry schema. */
  function autoRun(name: string, candidates: ProviderId[]) {
    const bytes = fixture(name);
    const image = name.endsWith('.png');
    const facts = image
      ? { mime: 'image/png' as const, kind: 'image' as const, sizeBytes: bytes.byteLength, pages: 1 }
      : { mime: 'application/pdf' as const, kind: 'pdf' as const, sizeBytes: bytes.byteLength, pages: 1 };
    runs += 1;
    const run = runItem({
      jobId: `run_auto_${runs}`,
      task: buildTask({ prompt: 'Extract', outputFormat: 'json' }),
      schemaId: 'auto',
      file: facts,
      candidates,
      packet: { mode: 'auto', schemaIds: SCHEMAS },
      estimateMicros: 1_000_000,
    });
    return { run, bytes };
  }

  /** The class an `auto` settlement records, and the task it records with it. */
  function classifiedOf(settlement: Awaited<ReturnType<typeof runPacket>>) {
    if (settlement.status !== 'completed') throw new Error(`run ${settlement.status}`);
    return settlement.classified;
  }

  test('a PDF: classified from its pages, extracted once with the chosen schema, the class recorded', async () => {
    const { run, bytes } = autoRun('invoice.pdf', ['local']);
    const local = model('local');
    const classified = classifiedOf(await runPacket(run, bytes, input({ local })));
    expect(local.calls).toHaveLength(1);
    expect(local.calls[0]?.task.schemaId).toBe('invoice');
    expect(classified?.schemaId).toBe('invoice');
    expect(classified?.task).toEqual(
      buildTask({ prompt: run.prompt, outputFormat: 'json', schemaId: 'invoice', schema: registry.get('invoice') }),
    );
    // Measured as a split document's: the same file split is one invoice of the same confidence.
    const split = documentsOf(
      await runPacket(
        { ...autoRun('invoice.pdf', ['local']).run, packet: { mode: 'split', schemaIds: SCHEMAS } },
        bytes,
        input({ local: model('local') }),
      ),
    );
    expect(split).toHaveLength(1);
    expect(classified?.confidence).toBe(split[0]?.classification.confidence);
  });

  test('an image with the local engine: classified from the words OCR reads on it, then extracted', async () => {
    const { run, bytes } = autoRun('business-card.png', ['local']);
    const local = model('local');
    const settlement = await runPacket(run, bytes, input({ local }));
    const classified = classifiedOf(settlement);
    expect(classified?.schemaId).toBe('business_card');
    // One extraction call, of the whole image with the card's schema; the classification cost nothing.
    expect(local.calls.map((c) => [c.task.schemaId, c.facts.kind, c.pages])).toEqual([
      ['business_card', 'image', undefined],
    ]);
    expect(settlement.usage?.costMicros).toBe(50);
  }, 60_000);

  test('an image with a language model: one classification call on the image, one extraction, both priced', async () => {
    const { run, bytes } = autoRun('receipt.png', ['openai']);
    const calls: ProviderInput[] = [];
    const openai: ProviderAdapter = {
      id: 'openai',
      async invoke(call) {
        calls.push(call);
        const usage = { billableUnits: 1, costMicros: 50 };
        if (!call.task.prompt.startsWith(CLASSIFY_MARKER)) return { result: { total: 12.5 }, usage };
        return { result: { pages: [{ page: 1, classes: { receipt: 0.9, invoice: 0.2 }, startCue: true }] }, usage };
      },
    };
    const settlement = await runPacket(run, bytes, input({ openai }));
    const classified = classifiedOf(settlement);
    expect(classified?.schemaId).toBe('receipt');
    // The model was given the image itself (no pages of a PDF, no text), then asked with the receipt schema.
    expect(calls.map((c) => [c.task.prompt.startsWith(CLASSIFY_MARKER), c.task.schemaId, c.facts.kind])).toEqual([
      [true, null, 'image'],
      [false, 'receipt', 'image'],
    ]);
    expect(calls[0]?.bytes).toBe(bytes);
    expect(calls[0]?.documentText).toBeUndefined();
    expect(settlement.usage?.costMicros).toBe(100);
    expect(settlement.attempts).toHaveLength(2);
  });

  test('an image that looks like none of the schemas: classed, its review needed for the classification', async () => {
    const { run, bytes } = autoRun('receipt.png', ['openai']);
    const openai: ProviderAdapter = {
      id: 'openai',
      async invoke(call) {
        const usage = { billableUnits: 1, costMicros: 50 };
        if (!call.task.prompt.startsWith(CLASSIFY_MARKER)) return { result: {}, usage };
        return { result: { pages: [{ page: 1, classes: { other: 0.95, receipt: 0.1 } }] }, usage };
      },
    };
    const settlement = await runPacket(run, bytes, input({ openai }));
    const classified = classifiedOf(settlement);
    expect(classified?.schemaId).toBe('receipt');
    expect(classified?.confidence).toBeLessThan(0.5);
    if (settlement.status !== 'completed') throw new Error('not completed');
    expect(settlement.review?.needed).toBe(true);
    expect(settlement.review?.reasons.join(' ')).toMatch(/classification: below/);
  });
});

test('parseAnswer takes the page entry, fills what a compact answer leaves out, refuses what is not evidence', () => {
  expect(parseAnswer({ pages: [{ classes: { invoice: 0.9 }, startCue: true }] }, 7)).toMatchObject({
    page: 7,
    classes: { invoice: 0.9 },
    startCue: true,
    blank: false,
    ids: [],
  });
  expect(parseAnswer({ pages: [{ classes: { invoice: 3 } }] }, 1)).toBeNull();
  expect(parseAnswer({ pages: ['x'] }, 1)).toBeNull();
});
