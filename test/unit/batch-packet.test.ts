/**
 * A packet at batch priority through the batch lane (issue 31 point 2), on OpenAI's batch fake (bench/batch-fakes.ts)
 * answering as test/support/packet-model.ts does, with the lane's storage in memory (test/support/batch-lane-memory.ts):
 * the first delivery parks every page's classification (one wave), the next checkpoints them, splits the packet and
 * parks every document's extraction (the second wave), and the third settles once at the batch price, every request
 * sent once; a call that parks first waits for the others of its wave. The estimate holds the batch price.
 */
import { type BatchFakes, type BatchItem, startBatchFakes } from '../../bench/batch-fakes.js';
import { batchApis } from '../../shared/batching/apis.js';
import { runBatcher } from '../../shared/batching/batcher.js';
import { BatchParked } from '../../shared/batching/parked.js';
import { packetEstimate } from '../../shared/packets/estimate.js';
import { seedFactors } from '../../shared/planning/estimate.js';
import type { ProviderAdapter } from '../../shared/providers/types.js';
import { buildTask, registry } from '../../shared/registry/registry.js';
import type { RunRecord } from '../../shared/store/runs.js';
import { batchLaneAdapters } from '../../shared/worker/batch-lane.js';
import { runPacket } from '../../shared/worker/packet-run.js';
import { runItem } from '../support/aws.js';
import { laneMemory, notInline, sendAtOnce } from '../support/batch-lane-memory.js';
import type { RecordedRequest } from '../support/fake-server.js';
import { packetModel } from '../support/packet-model.js';
import { makePackets } from '../support/packets.js';

const SCHEMAS = [...registry.keys()];
const FOUND = makePackets(30, 6).find((p) => p.truth.some((d) => d.schemaId !== 'other') && p.pages <= 8);
if (!FOUND) throw new Error('no small packet with a document to extract in the sample');
const PACKET = FOUND;
const { table, chunks } = laneMemory(PACKET.bytes);
const FACTS = { mime: 'application/pdf' as const, kind: 'pdf' as const, sizeBytes: PACKET.bytes.byteLength };

/** The packet model's answer to a batch item, as the fake wraps it (a Responses API body's JSON text). */
function packetAnswer(item: BatchItem) {
  const reply = packetModel()({ body: item.body } as unknown as RecordedRequest) as {
    json: { output: Array<{ content: Array<{ text: string }> }> };
  };
  return { kind: 'ok' as const, answer: JSON.parse(reply.json.output[0]?.content[0]?.text ?? 'null'), usage: USAGE };
}
const USAGE = { input: 800, output: 60 };

let fakes: BatchFakes;
beforeAll(() => {
  process.env.OPENAI_API_KEY = 'sk-test-batch-packet';
});
beforeEach(async () => {
  fakes = await startBatchFakes({ behaviour: { outcome: packetAnswer } });
  process.env.OPENAI_BASE_URL = `${fakes.url}/v1`;
});
afterEach(() => fakes.close());

const pass = () => runBatcher({ apis: batchApis(), enqueue: async () => {}, limits: sendAtOnce });
const requests = () => [...table.keys()].filter((id) => !id.startsWith('batch#')).sort();

function packetRun(): RunRecord {
  return runItem({
    jobId: 'run_batch_packet',
    priority: 'batch',
    expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    task: buildTask({ prompt: 'Extract', outputFormat: 'json' }),
    file: { ...FACTS, pages: PACKET.pages },
    progress: { pagesTotal: PACKET.pages, pagesDone: 0 },
    candidates: ['openai'],
    strategy: 'direct_multimodal',
    packet: { mode: 'split', schemaIds: SCHEMAS },
    estimateMicros: 1_000_000,
  });
}

test("a packet's classifications park in one delivery, its extractions in the next, and it settles once", async () => {
  const run = packetRun();
  const delivery = () =>
    runPacket(run, PACKET.bytes, {
      adapters: batchLaneAdapters(run, { openai: notInline('openai') }),
      capMicros: 2_000_000,
      factors: seedFactors,
      deadlineMs: Date.now() + 60_000,
    });
  // Wave 1: every page's classification.
  await expect(delivery()).rejects.toBeInstanceOf(BatchParked);
  const pages = requests();
  expect(pages).toHaveLength(PACKET.pages);
  for (let i = 0; i < 3; i++) await pass();
  expect(fakes.batches).toHaveLength(1);

  // Wave 2: the pages' evidence kept, every document's extraction parked.
  await expect(delivery()).rejects.toBeInstanceOf(BatchParked);
  expect([...chunks.values()].filter((c) => Number(c.first) > 0)).toHaveLength(PACKET.pages);
  const documents = requests().filter((id) => !pages.includes(id));
  expect(documents.length).toBeGreaterThan(0);
  for (let i = 0; i < 3; i++) await pass();
  expect(fakes.batches).toHaveLength(2);

  const settlement = await delivery();
  expect(settlement.status).toBe('completed');
  expect(settlement.usage?.requests).toBe(PACKET.pages + documents.length);
  // Every request reached the batch API once.
  const sent = fakes.batches.flatMap((b) => b.items.map((i) => i.customId));
  expect(sent.sort()).toEqual([...pages, ...documents].sort());
  expect(new Set(sent).size).toBe(sent.length);
});

test("a page that parks first does not end the delivery before the other pages' calls have parked", async () => {
  const run = packetRun();
  const parked: number[] = [];
  // Page 1 parks at once, the others a moment later (their requests still being written).
  const slowToPark: ProviderAdapter = {
    id: 'openai',
    invoke: async (input) => {
      const page = input.pages?.first ?? 0;
      if (page > 1) await new Promise((resolve) => setTimeout(resolve, 50));
      parked.push(page);
      throw new BatchParked(`${run.jobId}#openai#analyze#${page}-${page}#classify`);
    },
  };
  const delivery = runPacket(run, PACKET.bytes, {
    adapters: { openai: slowToPark },
    capMicros: 2_000_000,
    factors: seedFactors,
    deadlineMs: Date.now() + 60_000,
  });
  await expect(delivery).rejects.toBeInstanceOf(BatchParked);
  expect(parked.sort((a, b) => a - b)).toEqual(Array.from({ length: PACKET.pages }, (_, i) => i + 1));
});

test('a packet at batch priority is held at the batch price', () => {
  const facts = { ...FACTS, pages: 4, textLayer: true };
  const request = { prompt: 'Extract', schemaIds: SCHEMAS };
  const standard = packetEstimate(facts, request, ['openai'], { priority: 'standard' }).estimateMicros;
  const batch = packetEstimate(facts, request, ['openai'], { priority: 'batch' }).estimateMicros;
  // OpenAI discounts 50 %: half, give or take the rounding of its two parts.
  expect(Math.abs(batch * 2 - standard)).toBeLessThanOrEqual(4);
});
