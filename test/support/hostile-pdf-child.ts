/**
 * Runs one reader over one PDF of the hostile corpus in a process of its own, so that its time and peak memory are
 * its own: `node --import tsx test/support/hostile-pdf-child.ts <inspect|render|baseline> <file.pdf>` (the test runs
 * it bundled, test/support/node-bundle.ts). Prints one JSON line: {ms, maxRssMiB, outcome}. The renderer is the
 * worker's (mupdf): its text layer of every page, then page 1.
 */
import { readFileSync } from 'node:fs';
import { inspectUpload } from '../../shared/inspect/index.js';
import { pdfTextLayer, renderPdfPages } from '../../shared/media/pdf.js';

const [mode, file] = process.argv.slice(2);
if (file === undefined || (mode !== 'inspect' && mode !== 'render' && mode !== 'baseline')) {
  throw new Error(`usage: hostile-pdf-child.ts <inspect|render|baseline> <file.pdf>; got ${mode} ${file}`);
}
const bytes = new Uint8Array(readFileSync(file));
const limits = { imageMaxBytes: 20 << 20, imageMaxPixels: 100_000_000, pdfMaxBytes: 50 << 20, pdfMaxPages: 200 };

async function run(): Promise<string> {
  if (mode === 'baseline') return 'nothing read';
  if (mode === 'inspect') {
    const facts = await inspectUpload(async (s, e) => bytes.subarray(s, e + 1), bytes.byteLength, limits);
    return `pages ${facts.pages}`;
  }
  const deadline = { signal: new AbortController().signal, deadlineMs: Date.now() + 60_000 };
  const text = await pdfTextLayer(bytes, deadline);
  const images = await renderPdfPages(
    bytes,
    { formats: ['image/jpeg'], maxLongSide: 1568, maxBytes: 5 << 20 },
    deadline,
    [0],
  );
  return `pages ${text.length}, page 1 rendered ${images[0]?.width}x${images[0]?.height}`;
}

// Modules are loaded before the clock starts: the figure is the reading, not the import.
const started = performance.now();
let outcome: string;
try {
  outcome = await run();
} catch (error) {
  const e = error as { code?: string; kind?: string; details?: { reason?: string }; message?: string };
  outcome = `${e.code ?? e.kind ?? 'error'}${e.details?.reason ? ` (${e.details.reason})` : ''}: ${e.message ?? ''}`;
}
const ms = performance.now() - started;
// VmHWM, this process's own peak: getrusage's maxRSS also counts the parent's peak from before the exec.
const hwmKiB = Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'latin1'))?.[1] ?? Number.NaN);
process.stdout.write(`${JSON.stringify({ ms, maxRssMiB: hwmKiB / 1024, outcome })}\n`);
