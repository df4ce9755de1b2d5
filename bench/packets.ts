/**
 * Packets (issue 30): the local engine's evidence and the boundary pass over the generated text-layer packets
 * (test/support/packets.ts, seed 30), scored against their truth: boundary precision / recall / F1 and page-class
 * accuracy, overall and per packet that shows one case. Each page's evidence comes through the worker's own path
 * (bench/packets-model.ts `workerSplit`), so the bench scores what a run does. Its targets live here (PACKET_TARGETS).
 */

import { addCounts, countSplit, type SplitCounts, type SplitScore, scoreOf } from '../shared/packets/score.js';
import { registry } from '../shared/registry/registry.js';
import { makePackets } from '../test/support/packets.js';
import { type PacketsModelResult, TIMED_PACKET, workerSplit } from './packets-model.js';
import { round } from './stats.js';

export const PACKET_TARGETS = { boundaryF1: 0.97, pageClassAccuracy: 0.97 } as const;

interface Row {
  metric: string;
  value: string;
  target: string;
  result: 'PASS' | 'MISS' | 'info' | 'ERROR';
}

export interface PacketsResult {
  packets: number;
  pages: number;
  overall: SplitScore;
  /** The five packets that each show one case, by name. */
  cases: Record<string, SplitScore>;
  /** Opening the PDF, each page's local evidence (its text layer read) and the boundary pass, per 100 pages. */
  splitMsPer100Pages: number;
  /** Packets whose split is not exactly the truth: found vs true documents, for a reader to look at. */
  wrong: { name: string; found: string[]; truth: string[] }[];
  /** The worker's evidence path with a fake model, and the timed 100-page packet (./packets-model.ts). */
  model?: PacketsModelResult;
}

const show = (docs: readonly { schemaId: string; pages: { first: number; last: number } }[]) =>
  docs.map((d) => `${d.schemaId} ${d.pages.first}-${d.pages.last}`);

export async function measurePackets(options: { log: (line: string) => void }): Promise<PacketsResult> {
  const packets = makePackets();
  const schemaIds = [...registry.keys()];
  let total: SplitCounts | undefined;
  const cases: Record<string, SplitScore> = {};
  const wrong: PacketsResult['wrong'] = [];
  let [splitMs, pages] = [0, 0];
  for (const packet of packets) {
    const t0 = performance.now();
    const documents = await workerSplit(packet, schemaIds, 'local');
    splitMs += performance.now() - t0;
    pages += packet.pages;
    const counts = countSplit(documents, packet.truth);
    total = total ? addCounts(total, counts) : counts;
    if (!packet.name.startsWith('mix-')) cases[packet.name] = scoreOf(counts);
    if (counts.documentsExact !== counts.documentsTrue || documents.length !== packet.truth.length)
      wrong.push({ name: packet.name, found: show(documents), truth: show(packet.truth) });
  }
  const overall = scoreOf(total as SplitCounts);
  const result: PacketsResult = {
    packets: packets.length,
    pages,
    overall,
    cases,
    splitMsPer100Pages: round((splitMs / pages) * 100, 1),
    wrong,
  };
  options.log(
    `  ${packets.length} packets, ${pages} pages: boundary P ${round(overall.precision, 3)} R ${round(overall.recall, 3)} F1 ${round(overall.f1, 3)}, page class ${round(overall.pageAccuracy, 3)}`,
  );
  for (const w of wrong) options.log(`  ${w.name}: found ${w.found.join(', ')} | truth ${w.truth.join(', ')}`);
  return result;
}

export function packetRows(r: PacketsResult): Row[] {
  const o = r.overall;
  const pass = (ok: boolean): Row['result'] => (ok ? 'PASS' : 'MISS');
  return [
    {
      metric: `packets, local engine on text layers (${r.packets} packets, ${r.pages} pages): boundary F1 (P ${round(o.precision, 3)}, R ${round(o.recall, 3)})`,
      value: String(round(o.f1, 3)),
      target: `≥ ${PACKET_TARGETS.boundaryF1}`,
      result: pass(o.f1 >= PACKET_TARGETS.boundaryF1),
    },
    {
      metric: 'packets: page-class accuracy',
      value: String(round(o.pageAccuracy, 3)),
      target: `≥ ${PACKET_TARGETS.pageClassAccuracy}`,
      result: pass(o.pageAccuracy >= PACKET_TARGETS.pageClassAccuracy),
    },
    {
      metric: 'packets: documents found exactly (pages and class)',
      value: `${o.documentsExact} of ${o.documentsTrue}`,
      target: '—',
      result: 'info',
    },
    ...Object.entries(r.cases).map(
      ([name, s]): Row => ({
        metric: `packets: ${name} (boundary F1 / page class)`,
        value: `${round(s.f1, 3)} / ${round(s.pageAccuracy, 3)}`,
        target: '—',
        result: 'info',
      }),
    ),
    ...(r.model ? modelRows(r.model) : []),
    {
      metric: 'packets: local evidence (text layers read) + boundary pass per 100 pages',
      value: `${r.splitMsPer100Pages} ms`,
      target: '—',
      result: 'info',
    },
  ];
}

/** The fake model's rows: its split of the same packets, and the timed 100-page packet on the local stack. */
function modelRows(m: PacketsModelResult): Row[] {
  const o = m.overall;
  const pass = (ok: boolean): Row['result'] => (ok ? 'PASS' : 'MISS');
  const rows: Row[] = [
    {
      metric: `packets, fake model answering from page text (${m.packets} packets, ${m.pages} pages): boundary F1`,
      value: String(round(o.f1, 3)),
      target: `≥ ${PACKET_TARGETS.boundaryF1}`,
      result: pass(o.f1 >= PACKET_TARGETS.boundaryF1),
    },
    {
      metric: 'packets, fake model: page-class accuracy',
      value: String(round(o.pageAccuracy, 3)),
      target: `≥ ${PACKET_TARGETS.pageClassAccuracy}`,
      result: pass(o.pageAccuracy >= PACKET_TARGETS.pageClassAccuracy),
    },
  ];
  const t = m.timed;
  if (t)
    rows.push({
      metric: `packets: ${t.pages}-page packet on the local stack, model at ${TIMED_PACKET.firstTokenMs} ms + ${TIMED_PACKET.tokensPerSecond} tok/s (${t.documents} documents, F1 ${round(t.f1, 3)}, every page in one: ${t.partition})`,
      value: `${t.status} in ${t.seconds} s`,
      target: `≤ ${TIMED_PACKET.maxSeconds} s`,
      result: pass(t.status === 'completed' && t.partition && t.seconds <= TIMED_PACKET.maxSeconds),
    });
  return rows;
}
