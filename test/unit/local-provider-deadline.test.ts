/**
 * The local provider's deadline handling during OCR with its fallback engine (tesseract.js, used where onnxruntime's
 * binary cannot load: here it is made to fail), without racing a real clock against real OCR: tesseract.js is
 * replaced by an engine whose recognitions wait until the test answers them, and the attempt's deadline fires (through
 * its abort signal, the same watch a passing deadline trips) at the moment OCR has started. So the outcome does not
 * depend on how fast the machine is. Decoding (sharp, mupdf) stays real.
 */
import { jest } from '@jest/globals';
import * as mupdf from 'mupdf';
import type { SupportedMime } from '../../shared/file-facts.js';
import { localCost } from '../../shared/pricing/pricing.js';
import type { InvokeOptions, ProviderInput } from '../../shared/providers/types.js';
import type { TaskSpec } from '../../shared/task.js';
import { failureOf } from '../support/failures.js';

/** One recognition the fake engine was asked for: the test settles it. */
interface PendingRecognition {
  worker: number;
  resolve: (result: { data: { text: string; confidence: number } }) => void;
}

const pending: PendingRecognition[] = [];
const terminated: number[] = [];
let workersCreated = 0;
let onRecognize: (() => void) | null = null;

/** Waits (on the event loop, not a clock) until `count` recognitions have been asked for in all. */
async function recognitionsAsked(count: number): Promise<void> {
  while (pending.length < count) await new Promise((resolve) => setImmediate(resolve));
}

jest.unstable_mockModule('tesseract.js', () => ({
  default: {
    OEM: { LSTM_ONLY: 1 },
    createWorker: async () => {
      const id = ++workersCreated;
      return {
        recognize: () =>
          new Promise((resolve) => {
            pending.push({ worker: id, resolve });
            onRecognize?.();
          }),
        terminate: async () => {
          terminated.push(id);
        },
      };
    },
  },
}));

jest.unstable_mockModule('onnxruntime-node', () => ({
  InferenceSession: {
    create: async () => {
      throw new Error('onnxruntime-node: no binary for this platform');
    },
  },
  Tensor: class {},
}));

const { localProvider, shutdownLocalProvider } = await import('../../shared/providers/local/local-provider.js');

afterAll(async () => {
  await shutdownLocalProvider();
});

beforeEach(() => {
  pending.length = 0;
  onRecognize = null;
});

const task: TaskSpec = {
  prompt: 'Transcribe',
  outputFormat: 'text',
  fields: null,
  schemaId: null,
  schemaLabel: null,
  promptScaffold: null,
};

function pdfPage(doc: mupdf.PDFDocument, content: string, resources: Record<string, unknown>): void {
  doc.insertPage(-1, doc.addPage([0, 0, 612, 792], 0, doc.addObject(resources), content));
}

/** A PDF of a text-layer page followed by a scanned (image-only) page, built with mupdf. */
function textThenScanPdf(): Uint8Array {
  const doc = new mupdf.PDFDocument();
  const font = doc.addSimpleFont(new mupdf.Font('Helvetica'));
  pdfPage(doc, 'BT /F1 16 Tf 72 720 Td (Invoice Number: INV-2001) Tj ET', { Font: { F1: font } });
  const scan = new mupdf.Pixmap(mupdf.ColorSpace.DeviceGray, [0, 0, 400, 400], false);
  scan.clear(255);
  pdfPage(doc, 'q 612 0 0 792 0 0 cm /Im0 Do Q', { XObject: { Im0: doc.addImage(new mupdf.Image(scan)) } });
  return doc.saveToBuffer('').asUint8Array().slice();
}

/** A small white PNG. */
function png(): Uint8Array {
  const pixmap = new mupdf.Pixmap(mupdf.ColorSpace.DeviceGray, [0, 0, 200, 100], false);
  pixmap.clear(255);
  return pixmap.asPNG().slice();
}

function input(bytes: Uint8Array, mime: SupportedMime, pages: number): ProviderInput {
  const kind = mime === 'application/pdf' ? 'pdf' : 'image';
  return { bytes, facts: { mime, kind, sizeBytes: bytes.byteLength, pages }, task, step: 'vision' };
}

function attempt(): { controller: AbortController; options: InvokeOptions } {
  const controller = new AbortController();
  return { controller, options: { signal: controller.signal, deadlineMs: Date.now() + 600_000 } };
}

const answer = (text: string) => ({ data: { text, confidence: 90 } });

describe('local provider: a deadline during OCR', () => {
  test('fails that attempt with a timeout; the job queued behind it is re-run on a fresh worker and succeeds', async () => {
    const short = attempt();
    const long = attempt();
    const shortRun = failureOf(localProvider.invoke(input(png(), 'image/png', 1), short.options));
    const longRun = localProvider.invoke(input(png(), 'image/png', 1), long.options);
    await recognitionsAsked(2);
    const firstWorker = pending[0]?.worker;

    short.controller.abort();
    const failure = await shortRun;
    expect(failure.kind).toBe('timeout');
    expect(failure.message).toContain('running OCR');
    // The overrunning job's worker is terminated, so nothing else waits behind it.
    expect(terminated).toContain(firstWorker);

    await recognitionsAsked(3);
    const rerun = pending[2];
    expect(rerun?.worker).not.toBe(firstWorker);
    rerun?.resolve(answer('TOTAL 42.50'));
    const output = await longRun;
    expect(output.result).toEqual({ text: 'TOTAL 42.50' });
  });

  test('part-way through a PDF reports the usage of the pages already read', async () => {
    const run = attempt();
    onRecognize = () => run.controller.abort();
    const failure = await failureOf(localProvider.invoke(input(textThenScanPdf(), 'application/pdf', 2), run.options));
    expect(failure.kind).toBe('timeout');
    // Page 1 came from the text layer and is billed; page 2 was being OCR'd when the deadline struck and is not.
    expect(failure.usage).toEqual({ billableUnits: 1, costMicros: localCost.textLayerPageMicros });
  });

  test('a later job after an overrun gets a working engine', async () => {
    const run = attempt();
    const output = localProvider.invoke(input(png(), 'image/png', 1), run.options);
    await recognitionsAsked(1);
    pending[0]?.resolve(answer('ACME'));
    expect((await output).result).toEqual({ text: 'ACME' });
  });
});
