/**
 * Packets with a language model (issue 30): (1) the worker's evidence path (shared/worker/packet-evidence.ts, one
 * classification call per page through the attempt loop) with a fake model answering each page from its text
 * (test/support/packet-model.ts), over the same generated packets as the local engine, scored against their truth;
 * (2) a packet of at least 100 pages on the local stack against the fake OpenAI server timed like a real model (500 ms
 * to the first token, 80 tokens/s), from creation to completion. Targets: PACKET_TARGETS and ≤ 15 s.
 */
import * as mupdf from 'mupdf';
import { Deadline, PdfFile } from '../shared/media/index.js';
import { type PacketDocument, splitPacket } from '../shared/packets/boundaries.js';
import { localPageEvidence } from '../shared/packets/local-evidence.js';
import { checkPartition } from '../shared/packets/result.js';
import { addCounts, countSplit, type SplitCounts, type SplitScore, scoreOf } from '../shared/packets/score.js';
import type { ProviderAdapter, ProviderOutput } from '../shared/providers/types.js';
import { registry } from '../shared/registry/registry.js';
import type { RunRecord } from '../shared/store/runs.js';
import { PacketCheckpoints } from '../shared/worker/packet-checkpoints.js';
import { gatherEvidence } from '../shared/worker/packet-evidence.js';
import { PacketSpend } from '../shared/worker/packet-spend.js';
import { startStack } from '../test/integration/stack.js';
import { startFakeServer } from '../test/support/fake-server.js';
import { packetModel, wordsOfText } from '../test/support/packet-model.js';
import { makePackets, type Packet, type TruthDocument } from '../test/support/packets.js';
import { round } from './stats.js';

export const TIMED_PACKET = { minPages: 100, maxSeconds: 15, firstTokenMs: 500, tokensPerSecond: 80 } as const;
const KEY = 'vk_bench_packets_model_0123456789';

export interface PacketsModelResult {
  packets: number;
  pages: number;
  overall: SplitScore;
  timed: { pages: number; documents: number; seconds: number; status: string; partition: boolean; f1: number } | null;
}

/** A fake model in process: each page classified from its text by the rules the local engine applies to words. */
function textModel(schemaIds: readonly string[]): ProviderAdapter {
  return {
    id: 'openai',
    async invoke(input): Promise<ProviderOutput> {
      const evidence = localPageEvidence(1, wordsOfText(input.documentText ?? ''), schemaIds);
      return { result: { pages: [evidence] }, usage: { billableUnits: 1, costMicros: 10 } };
    },
  };
}

/**
 * The packet split as the worker does it: every page's evidence through the worker's path (shared/worker/
 * packet-evidence.ts: the local engine's from the page's words when the plan starts with `local`, a classification
 * call per page when it starts with a model), then the boundary pass.
 */
export async function workerSplit(
  packet: Packet,
  schemaIds: readonly string[],
  candidate: 'local' | 'openai',
): Promise<PacketDocument[]> {
  const file = {
    mime: 'application/pdf' as const,
    kind: 'pdf' as const,
    sizeBytes: packet.bytes.byteLength,
    pages: packet.pages,
  };
  const run = { jobId: `bench-${packet.name}`, candidates: [candidate], file } as unknown as RunRecord;
  const pdf = await PdfFile.open(
    packet.bytes,
    new Deadline(new AbortController().signal, Date.now() + 60_000, 'bench'),
  );
  try {
    const { pages } = await gatherEvidence({
      run,
      bytes: packet.bytes,
      pdf,
      schemaIds,
      adapters: candidate === 'openai' ? { openai: textModel(schemaIds) } : {},
      capMicros: Number.MAX_SAFE_INTEGER,
      spend: new PacketSpend(),
      saved: PacketCheckpoints.unsaved(),
      deadlineMs: Date.now() + 60_000,
    });
    return splitPacket(pages, schemaIds);
  } finally {
    pdf.close();
  }
}

/** Packets joined into one of at least `minPages` pages, with its truth. */
export function joinPackets(
  packets: readonly Packet[],
  minPages: number,
): { bytes: Uint8Array; pages: number; truth: TruthDocument[] } {
  const out = new mupdf.PDFDocument();
  const truth: TruthDocument[] = [];
  let pages = 0;
  for (const packet of packets) {
    if (pages >= minPages) break;
    const source = mupdf.Document.openDocument(packet.bytes, 'application/pdf') as mupdf.PDFDocument;
    for (let i = 0; i < packet.pages; i++) out.graftPage(-1, source, i);
    for (const d of packet.truth)
      truth.push({ schemaId: d.schemaId, pages: { first: d.pages.first + pages, last: d.pages.last + pages } });
    pages += packet.pages;
  }
  return { bytes: out.saveToBuffer('compress=yes').asUint8Array().slice(), pages, truth };
}

/** A failed run's error with only its attempts that did not succeed (a long run's list hides the one that failed). */
function failureOf(error: unknown): string {
  const e = (error ?? {}) as { details?: { attempts?: { outcome?: string }[] } };
  const attempts = (e.details?.attempts ?? []).filter((a) => a.outcome !== 'succeeded');
  return JSON.stringify({ ...e, details: { ...e.details, attempts } }).slice(0, 1500);
}

export async function timedRun(log: (line: string) => void): Promise<PacketsModelResult['timed']> {
  const joined = joinPackets(makePackets(31, 60), TIMED_PACKET.minPages);
  const fake = await startFakeServer(
    packetModel({ firstTokenMs: TIMED_PACKET.firstTokenMs, tokensPerSecond: TIMED_PACKET.tokensPerSecond }),
  );
  const stack = await startStack({
    VISION_DEV_API_KEYS: `bench-packets:${KEY}`,
    VISION_PROVIDERS: 'openai',
    OPENAI_API_KEY: 'sk-bench-packets-0123456789',
    OPENAI_BASE_URL: `${fake.url}/v1`,
    LOCAL_RATE_LIMIT_RPS: '1000',
    LOCAL_RATE_LIMIT_BURST: '1000',
  });
  try {
    const api = (route: string, init?: RequestInit) =>
      fetch(`${stack.info.baseUrl}${route}`, {
        ...init,
        headers: { 'x-api-key': KEY, 'content-type': 'application/json', ...init?.headers },
      });
    const presign = (await (
      await api('/v1/uploads/presign', {
        method: 'POST',
        body: JSON.stringify({ fileName: 'packet-100.pdf', contentLength: joined.bytes.length }),
      })
    ).json()) as { uploadId: string; uploadUrl: string };
    await fetch(presign.uploadUrl, { method: 'PUT', body: new Blob([new Uint8Array(joined.bytes)]) });
    const started = performance.now();
    const created = (await (
      await api('/v1/runs', {
        method: 'POST',
        body: JSON.stringify({ uploadId: presign.uploadId, prompt: 'Extract', split: true, confirmCost: true }),
      })
    ).json()) as { jobId?: string; error?: unknown };
    if (!created.jobId) throw new Error(`create failed: ${JSON.stringify(created.error)}`);
    for (;;) {
      const run = (await (await api(`/v1/runs/${created.jobId}`)).json()) as Record<string, unknown>;
      if (run.status === 'completed' || run.status === 'failed') {
        const seconds = round((performance.now() - started) / 1000, 1);
        const documents =
          (run.result as { documents?: { index: number; schemaId: string; pages: { first: number; last: number } }[] })
            ?.documents ?? [];
        const f1 = scoreOf(countSplit(documents, joined.truth)).f1;
        const partition = documents.length > 0 && checkPartition(documents, joined.pages) === null;
        log(
          `  ${joined.pages}-page packet, timed model: ${String(run.status)} in ${seconds} s, ${documents.length} documents, F1 ${round(f1, 3)}` +
            (run.status === 'failed' ? ` ${failureOf(run.error)}` : ''),
        );
        return { pages: joined.pages, documents: documents.length, seconds, status: String(run.status), partition, f1 };
      }
      if (performance.now() - started > 300_000) throw new Error('the 100-page packet is not final after 300 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await stack.stop();
    await fake.close();
  }
}

export async function measurePacketsModel(options: {
  log: (line: string) => void;
  timed?: boolean;
}): Promise<PacketsModelResult> {
  const packets = makePackets();
  const schemaIds = [...registry.keys()];
  let total: SplitCounts | undefined;
  let pages = 0;
  for (const packet of packets) {
    const counts = countSplit(await workerSplit(packet, schemaIds, 'openai'), packet.truth);
    total = total ? addCounts(total, counts) : counts;
    pages += packet.pages;
  }
  const overall = scoreOf(total as SplitCounts);
  options.log(
    `  fake model from page text: boundary F1 ${round(overall.f1, 3)}, page class ${round(overall.pageAccuracy, 3)}`,
  );
  const timed = options.timed === false ? null : await timedRun(options.log);
  return { packets: packets.length, pages, overall, timed };
}
