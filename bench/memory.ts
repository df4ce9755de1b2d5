/**
 * Peak resident memory for the largest PDF the service accepts: a scanned PDF at the upload limit (100 MiB by default) (bench/inputs.ts) is inspected,
 * its text layer read and its first page rendered in a fresh `node` process (bench/peak-rss-child.ts, loaded through
 * tsx), whose peak RSS (VmHWM / `process.resourceUsage().maxRSS`) is the figure. A fresh process, so nothing an
 * earlier phase allocated (emulator clients, OCR workers, WASM heaps) is counted.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../lib/vision-function.js';
import { ENV } from '../shared/infra/env.js';
import { pdfAtLimit } from './inputs.js';
import { round } from './stats.js';

const run = promisify(execFile);

export interface MemoryResult {
  file: string;
  sizeBytes: number;
  sizeMiB: number;
  pages: number;
  generated: boolean;
  generateMs: number;
  peakMiB: number;
  baselineMiB: number;
  marks: { step: string; ms: number; rssMiB: number; hwmMiB: number }[];
  child: Record<string, unknown>;
}

interface ChildReport {
  sizeBytes: number;
  facts: { pages: number };
  marks: { step: string; ms: number; rssKb: number; hwmKb: number; maxRssKb: number }[];
  peakKb: number;
}

export async function measurePeakRss(options: { log: (line: string) => void }): Promise<MemoryResult> {
  const input = await pdfAtLimit();
  options.log(
    `  PDF input ${path.basename(input.path)}: ${round(input.bytes / 1024 / 1024, 2)} MiB, ${input.pages} pages${input.generated ? ` (generated in ${round(input.generateMs / 1000)} s)` : ' (reused)'}`,
  );
  const child = path.join(PROJECT_ROOT, 'bench', 'peak-rss-child.ts');
  const { stdout } = await run(process.execPath, ['--import', 'tsx', child, input.path], {
    cwd: PROJECT_ROOT,
    maxBuffer: 16 * 1024 * 1024,
    timeout: 300_000,
    env: { ...process.env, [ENV.logLevel]: 'warn' },
  });
  const line = stdout.trim().split('\n').at(-1) ?? '';
  const report = JSON.parse(line) as ChildReport;
  const mib = (kb: number) => round(kb / 1024, 1);
  const result: MemoryResult = {
    file: path.relative(PROJECT_ROOT, input.path),
    sizeBytes: report.sizeBytes,
    sizeMiB: round(report.sizeBytes / 1024 / 1024, 2),
    pages: report.facts.pages,
    generated: input.generated,
    generateMs: round(input.generateMs),
    peakMiB: mib(report.peakKb),
    baselineMiB: mib(report.marks[0]?.rssKb ?? Number.NaN),
    marks: report.marks.map((m) => ({ step: m.step, ms: m.ms, rssMiB: mib(m.rssKb), hwmMiB: mib(m.hwmKb) })),
    child: report as unknown as Record<string, unknown>,
  };
  for (const m of result.marks)
    options.log(`  ${m.step}: ${m.ms} ms, RSS ${m.rssMiB} MiB, peak so far ${m.hwmMiB} MiB`);
  return result;
}
