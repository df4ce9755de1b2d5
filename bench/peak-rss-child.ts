/**
 * Child process of the peak-RSS measurement (bench/memory.ts): `node --import tsx bench/peak-rss-child.ts <pdf>`.
 * Imports the shared media and inspection modules, then reads the PDF and runs, in this order, `inspectUpload` (as the
 * create-run handler does, through a range reader), `pdfTextLayer` (as the worker does before a PDF run) and
 * `renderPdfPages` of the first page (as a vision provider's request would). After each step it records the process's
 * resident set (VmRSS) and its high-water mark (VmHWM, from /proc/self/status) and `process.resourceUsage().maxRSS`.
 * Prints one JSON object on stdout.
 */
import { readFile } from 'node:fs/promises';
import { config } from '../shared/config.js';
import { inspectUpload } from '../shared/inspect/index.js';
import { pdfTextLayer, renderPdfPages } from '../shared/media/index.js';
import { IMAGE_TARGET } from '../shared/providers/openai/profile.js';

interface Mark {
  step: string;
  ms: number;
  rssKb: number;
  hwmKb: number;
  maxRssKb: number;
}

async function statusKb(): Promise<{ rssKb: number; hwmKb: number }> {
  const text = await readFile('/proc/self/status', 'utf8').catch(() => '');
  const field = (name: string): number =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? Number.NaN);
  return { rssKb: field('VmRSS'), hwmKb: field('VmHWM') };
}

async function main(): Promise<void> {
  const file = process.argv[2];
  if (!file) throw new Error('usage: peak-rss-child.ts <pdf>');
  const marks: Mark[] = [];
  const mark = async (step: string, started: number) => {
    marks.push({
      step,
      ms: Math.round((performance.now() - started) * 10) / 10,
      ...(await statusKb()),
      maxRssKb: process.resourceUsage().maxRSS,
    });
  };
  const deadline = () => ({ signal: new AbortController().signal, deadlineMs: Date.now() + 300_000 });

  await mark('modules imported (baseline)', performance.now());
  let started = performance.now();
  // The Buffer itself (a Uint8Array), as the worker holds the object body: no second copy.
  const bytes = await readFile(file);
  await mark('file read into memory', started);

  started = performance.now();
  const facts = await inspectUpload(
    async (start, end) => bytes.subarray(start, end + 1),
    bytes.byteLength,
    config.limits,
  );
  await mark('inspectUpload', started);

  started = performance.now();
  const texts = await pdfTextLayer(bytes, deadline());
  await mark('pdfTextLayer (every page)', started);

  started = performance.now();
  const [page] = await renderPdfPages(bytes, IMAGE_TARGET, deadline(), [0]);
  await mark('renderPdfPages (first page)', started);

  const final = await statusKb();
  process.stdout.write(
    `${JSON.stringify({
      sizeBytes: bytes.byteLength,
      facts,
      textPages: texts.length,
      textChars: texts.reduce((n, t) => n + t.length, 0),
      rendered: page ? { mime: page.mime, width: page.width, height: page.height, bytes: page.bytes.byteLength } : null,
      marks,
      peakKb: Math.max(final.hwmKb, process.resourceUsage().maxRSS),
      vmHwmKb: final.hwmKb,
      maxRssKb: process.resourceUsage().maxRSS,
    })}\n`,
  );
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
