/**
 * The hostile-PDF corpus (test/support/pdf-bombs.ts) through the API's inspector and the worker's renderer, each file
 * in a fresh `node` process (test/support/hostile-pdf-child.ts): time of the reading alone (median of `runs`) and peak
 * RSS over a process that loads the same modules and reads nothing. The worst case over the corpus is the figure.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { pdfBombs } from '../test/support/pdf-bombs.js';
import { median } from './stats.js';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CHILD = path.join(ROOT, 'test', 'support', 'hostile-pdf-child.ts');

export interface HostileReading {
  file: string;
  reader: 'inspect' | 'render';
  sizeBytes: number;
  medianMs: number;
  /** Peak RSS over the baseline process (same modules, nothing read), MiB; the largest of the runs. */
  peakOverBaselineMiB: number;
  outcome: string;
}

export interface HostilePdfsResult {
  files: number;
  baselineMiB: number;
  readings: HostileReading[];
  worstInspect: { ms: HostileReading; memory: HostileReading };
  worstRender: { ms: HostileReading; memory: HostileReading };
}

async function child(mode: string, file: string): Promise<{ ms: number; maxRssMiB: number; outcome: string }> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', CHILD, mode, file], {
    cwd: ROOT,
    timeout: 120_000,
    maxBuffer: 1 << 20,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}');
}

const worst = (readings: HostileReading[], by: (r: HostileReading) => number): HostileReading =>
  readings.reduce((a, b) => (by(b) > by(a) ? b : a));

export async function measureHostilePdfs(options: {
  runs: number;
  log: (line: string) => void;
}): Promise<HostilePdfsResult> {
  const dir = await mkdtemp(path.join(tmpdir(), 'bench-hostile-'));
  try {
    const bombs = pdfBombs();
    for (const bomb of bombs) await writeFile(path.join(dir, `${bomb.name}.pdf`), bomb.build());
    const first = path.join(dir, `${bombs[0]?.name}.pdf`);
    const baselines: number[] = [];
    for (let i = 0; i < options.runs; i++) baselines.push((await child('baseline', first)).maxRssMiB);
    const baselineMiB = median(baselines);
    const readings: HostileReading[] = [];
    for (const bomb of bombs) {
      const file = path.join(dir, `${bomb.name}.pdf`);
      const readers: ('inspect' | 'render')[] = bomb.render ? ['inspect', 'render'] : ['inspect'];
      for (const reader of readers) {
        // The renderer's figures are reported, not checked: one process each keeps the phase short.
        const samples = [];
        for (let i = 0; i < (reader === 'inspect' ? options.runs : 1); i++) samples.push(await child(reader, file));
        const reading: HostileReading = {
          file: bomb.name,
          reader,
          sizeBytes: (await stat(file)).size,
          medianMs: Math.round(median(samples.map((s) => s.ms)) * 10) / 10,
          peakOverBaselineMiB: Math.round((Math.max(...samples.map((s) => s.maxRssMiB)) - baselineMiB) * 10) / 10,
          outcome: samples[0]?.outcome.slice(0, 120) ?? '',
        };
        readings.push(reading);
        options.log(
          `  ${reader.padEnd(7)} ${bomb.name.padEnd(24)} ${String(reading.medianMs).padStart(7)} ms ${String(reading.peakOverBaselineMiB).padStart(6)} MiB  ${reading.outcome.slice(0, 70)}`,
        );
      }
    }
    const inspect = readings.filter((r) => r.reader === 'inspect');
    const render = readings.filter((r) => r.reader === 'render');
    return {
      files: bombs.length,
      baselineMiB: Math.round(baselineMiB * 10) / 10,
      readings,
      worstInspect: { ms: worst(inspect, (r) => r.medianMs), memory: worst(inspect, (r) => r.peakOverBaselineMiB) },
      worstRender: { ms: worst(render, (r) => r.medianMs), memory: worst(render, (r) => r.peakOverBaselineMiB) },
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
