/**
 * Media preparation in the worker, in process (no emulators, no provider):
 *
 * - HEIC: `prepareImage` of a 12-megapixel HEIC (bench/inputs.ts) for a provider that does not take HEIC — OpenAI's
 *   image target (JPEG or PNG, long side 2048 px, 20 MiB) — which decodes it with libheif (WASM, with the SIMD inverse
 *   transform of shared/media/libheif.ts), downscales and encodes a JPEG. The first call also loads sharp and the
 *   libheif WASM module and is reported apart; the figure is the median of the warm calls. The libheif part alone
 *   (container parse + decode, `openHeic` + `decode`) is timed separately, to show where the time goes.
 * - PDF text layer: `pdfTextLayer` of twenty-pages.pdf (what the worker reads before a PDF run, and what the local
 *   provider reads), per page.
 */
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { PROJECT_ROOT } from '../lib/vision-function.js';
import { Deadline } from '../shared/media/deadline.js';
import { openHeic } from '../shared/media/image.js';
import { pdfTextLayer, prepareImage } from '../shared/media/index.js';
import { type LibheifInfo, libheifInfo } from '../shared/media/libheif.js';
import { IMAGE_TARGET } from '../shared/providers/openai/profile.js';
import { HEIC_HEIGHT, HEIC_WIDTH, heic12mp } from './inputs.js';
import { median, round } from './stats.js';

export interface HeicMeasurement {
  /** Set when the HEIC could not be generated (heif-enc missing): nothing was measured. */
  skipped?: string;
  file?: string;
  sizeBytes?: number;
  width: number;
  height: number;
  generated?: boolean;
  generateMs?: number;
  target: { formats: readonly string[]; maxLongSide: number; maxBytes: number };
  /** First call of the process: loads sharp and libheif's WASM too. */
  firstRunMs: number;
  warmMs: number[];
  medianMs: number;
  /** libheif alone (parse + decode to RGB), warm. */
  decodeMs: number[];
  decodeMedianMs: number;
  /** The libheif build and which inverse transform it runs (`simd`: the faster one is in place). */
  libheif?: LibheifInfo;
  output?: { mime: string; width: number; height: number; bytes: number };
}

export interface TextLayerMeasurement {
  file: string;
  pages: number;
  textChars: number;
  firstRunMs: number;
  warmMs: number[];
  medianMs: number;
  perPageMs: number;
}

export interface MediaResult {
  heic: HeicMeasurement;
  textLayer: TextLayerMeasurement;
}

interface Options {
  heicRuns: number;
  textLayerRuns: number;
  log: (line: string) => void;
}

const deadline = (ms = 120_000) => ({ signal: new AbortController().signal, deadlineMs: Date.now() + ms });

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await work();
  return { ms: performance.now() - started, value };
}

async function measureHeic(options: Options): Promise<HeicMeasurement> {
  const target = {
    formats: IMAGE_TARGET.formats,
    maxLongSide: IMAGE_TARGET.maxLongSide,
    maxBytes: IMAGE_TARGET.maxBytes,
  };
  const empty = {
    width: HEIC_WIDTH,
    height: HEIC_HEIGHT,
    target,
    firstRunMs: Number.NaN,
    warmMs: [],
    medianMs: Number.NaN,
  };
  const input = await heic12mp();
  if ('missing' in input) {
    options.log(`  HEIC: skipped, ${input.missing}`);
    return { ...empty, skipped: input.missing, decodeMs: [], decodeMedianMs: Number.NaN };
  }
  options.log(
    `  HEIC input ${path.basename(input.path)}: ${round(input.bytes / 1024 / 1024, 2)} MiB${input.generated ? ` (generated in ${round(input.generateMs / 1000)} s)` : ' (reused)'}`,
  );
  const bytes = new Uint8Array(await readFile(input.path));
  const prepare = () => prepareImage(bytes, 'image/heic', IMAGE_TARGET, deadline());
  const first = await timed(prepare);
  const warm: number[] = [];
  let output = first.value;
  for (let i = 0; i < options.heicRuns; i++) {
    const t = await timed(prepare);
    warm.push(round(t.ms));
    output = t.value;
  }
  const decode: number[] = [];
  for (let i = 0; i < Math.max(1, Math.ceil(options.heicRuns / 2)); i++) {
    const t = await timed(async () => {
      const d = new Deadline(new AbortController().signal, Date.now() + 120_000);
      const heic = await openHeic(bytes, d);
      return heic.decode();
    });
    decode.push(round(t.ms));
  }
  const result: HeicMeasurement = {
    file: path.relative(PROJECT_ROOT, input.path),
    sizeBytes: input.bytes,
    width: HEIC_WIDTH,
    height: HEIC_HEIGHT,
    generated: input.generated,
    generateMs: round(input.generateMs),
    target,
    firstRunMs: round(first.ms),
    warmMs: warm,
    medianMs: round(median(warm)),
    decodeMs: decode,
    decodeMedianMs: round(median(decode)),
    libheif: libheifInfo(),
    output: { mime: output.mime, width: output.width, height: output.height, bytes: output.bytes.byteLength },
  };
  const idct = result.libheif?.idct === 'simd' ? 'SIMD' : `reference (${result.libheif?.reason})`;
  options.log(
    `  HEIC → JPEG: first ${result.firstRunMs} ms, warm median ${result.medianMs} ms (${warm.join(', ')}); libheif decode median ${result.decodeMedianMs} ms (${idct} inverse transform); out ${output.width}x${output.height} ${output.mime}`,
  );
  return result;
}

async function measureTextLayer(options: Options): Promise<TextLayerMeasurement> {
  const file = 'twenty-pages.pdf';
  const bytes = new Uint8Array(await readFile(path.join(PROJECT_ROOT, 'test', 'fixtures', file)));
  const first = await timed(() => pdfTextLayer(bytes, deadline()));
  const warm: number[] = [];
  for (let i = 0; i < options.textLayerRuns; i++)
    warm.push(round((await timed(() => pdfTextLayer(bytes, deadline()))).ms, 2));
  const pages = first.value.length;
  const medianMs = round(median(warm), 2);
  const result = {
    file,
    pages,
    textChars: first.value.reduce((n, p) => n + p.length, 0),
    firstRunMs: round(first.ms),
    warmMs: warm,
    medianMs,
    perPageMs: round(medianMs / Math.max(1, pages), 2),
  };
  options.log(
    `  pdfTextLayer ${file}: first ${result.firstRunMs} ms, warm median ${medianMs} ms = ${result.perPageMs} ms per page`,
  );
  return result;
}

export async function measureMedia(options: Options): Promise<MediaResult> {
  const textLayer = await measureTextLayer(options);
  const heic = await measureHeic(options);
  return { heic, textLayer };
}
