/**
 * The local OCR engine (PaddleOCR models on onnxruntime) under a deadline, without racing a real clock against real
 * inference: onnxruntime is replaced by sessions whose runs wait until the test answers them, and the attempt's
 * deadline fires (through its abort signal) while detection runs. Decoding (sharp) stays real.
 */
import { jest } from '@jest/globals';
import * as mupdf from 'mupdf';
import type { InvokeOptions, ProviderInput } from '../../shared/providers/types.js';
import type { TaskSpec } from '../../shared/task.js';
import { failureOf } from '../support/failures.js';

interface PendingRun {
  dims: number[];
  resolve: (out: Record<string, { data: Float32Array; dims: number[] }>) => void;
}
const pending: PendingRun[] = [];

async function runsAsked(count: number): Promise<void> {
  while (pending.length < count) await new Promise((resolve) => setImmediate(resolve));
}

jest.unstable_mockModule('onnxruntime-node', () => ({
  InferenceSession: {
    create: async () => ({
      outputNames: ['out'],
      run: (feeds: Record<string, { dims: number[] }>) =>
        new Promise((resolve) => pending.push({ dims: feeds.x?.dims ?? [], resolve })),
      release: async () => {},
    }),
  },
  Tensor: class {
    constructor(
      readonly type: string,
      readonly data: Float32Array,
      readonly dims: number[],
    ) {}
  },
}));

const { localProvider, shutdownLocalProvider } = await import('../../shared/providers/local/local-provider.js');

afterAll(async () => {
  await shutdownLocalProvider();
});

const task: TaskSpec = {
  prompt: 'Transcribe',
  outputFormat: 'text',
  fields: null,
  schemaId: null,
  schemaLabel: null,
  promptScaffold: null,
};

function input(): ProviderInput {
  const pixmap = new mupdf.Pixmap(mupdf.ColorSpace.DeviceGray, [0, 0, 200, 100], false);
  pixmap.clear(255);
  const bytes = pixmap.asPNG().slice();
  return {
    bytes,
    facts: { mime: 'image/png', kind: 'image', sizeBytes: bytes.byteLength, pages: 1 },
    task,
    step: 'vision',
  };
}

function attempt(): { controller: AbortController; options: InvokeOptions } {
  const controller = new AbortController();
  return { controller, options: { signal: controller.signal, deadlineMs: Date.now() + 600_000 } };
}

/** An empty detection map for a run's input: no text anywhere. */
function noText(run: PendingRun): void {
  const [, , h = 0, w = 0] = run.dims;
  run.resolve({ out: { data: new Float32Array(h * w), dims: [1, 1, h, w] } });
}

describe('local OCR engine: a deadline during inference', () => {
  test('fails that attempt with a timeout, and the next page is read', async () => {
    const first = attempt();
    const failed = failureOf(localProvider.invoke(input(), first.options));
    await runsAsked(1);
    first.controller.abort();
    expect(await failed).toMatchObject({ kind: 'timeout' });

    // The run the deadline left behind finishes on its own; the engine is not stuck behind it.
    noText(pending[0] as PendingRun);
    const next = localProvider.invoke(input(), attempt().options);
    await runsAsked(2);
    noText(pending[1] as PendingRun);
    const out = await next;
    expect(out.result).toEqual({ text: '' });
    expect(out.usage.billableUnits).toBe(1);
  });
});
