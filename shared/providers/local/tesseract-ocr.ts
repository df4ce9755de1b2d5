/**
 * The local provider's second OCR engine: tesseract.js, in one long-lived worker thread per process, for a platform
 * where PaddleOCR's onnxruntime cannot load (paddle-ocr.ts). It reads a grey page into its text, its mean word
 * confidence and its words with their boxes (ocr-words.ts). The model comes from the installed packages, never a CDN.
 * Not to undo: a running recognition cannot be cancelled inside tesseract, so a job that overruns its deadline
 * terminates the worker (the other jobs on it run once more on a fresh one), and a crashed thread fails its jobs
 * rather than the process.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Worker as ThreadWorker } from 'node:worker_threads';
import type Tesseract from 'tesseract.js';
import type { EvidenceWord } from '../../fields/types.js';
import type { Deadline } from '../../media/deadline.js';
import { ProviderFailure } from '../../task.js';
import { tesseractWords } from './ocr-words.js';
import type { GreyImage } from './paddle-geometry.js';

const require = createRequire(import.meta.url);

/** Local paths for tesseract.js, resolved from the installed packages (never a CDN). */
function tesseractPaths(): { langPath: string; workerPath: string } {
  const engDir = path.dirname(require.resolve('@tesseract.js-data/eng/package.json'));
  return {
    // LSTM-only integer model (2.9 MB gz), the one tesseract.js itself would fetch for OEM.LSTM_ONLY.
    langPath: path.join(engDir, '4.0.0_best_int'),
    // Explicit so that bundling tesseract.js (which moves its __dirname) cannot break the worker thread's script.
    workerPath: require.resolve('tesseract.js/src/worker-script/node/index.js'),
  };
}

export interface TesseractResult {
  text: string;
  /** Tesseract's mean word confidence, 0–100. */
  confidence: number;
  /** The words with their boxes, relative to the image. */
  words: EvidenceWord[];
}

/** Fails a recognition whose worker was terminated under it (by another job's overrun, a crash or a shutdown). */
class WorkerStopped extends Error {
  constructor(
    readonly reason: string,
    /** False on shutdown: the job must not start a new worker. */
    readonly retryable: boolean,
  ) {
    super(reason);
  }
}

class TesseractEngine {
  private worker: Promise<Tesseract.Worker> | null = null;
  /** Rejecters of the recognitions in flight on the current worker, failed at once when it is terminated. */
  private readonly inFlight = new Set<(error: WorkerStopped) => void>();

  /** Recognises one image; a job whose worker was restarted under it is run once more on the fresh worker. */
  async recognize(image: GreyImage, deadline: Deadline): Promise<TesseractResult> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.recognizeOnce(image, deadline);
      } catch (error) {
        if (!(error instanceof WorkerStopped)) throw error;
        if (error.retryable && attempt < 2) continue;
        throw new ProviderFailure('server', `local provider: OCR stopped: ${error.reason}`);
      }
    }
  }

  private async recognizeOnce(image: GreyImage, deadline: Deadline): Promise<TesseractResult> {
    const worker = await deadline.race(this.get(), 'starting OCR');
    deadline.check('running OCR');
    return new Promise<TesseractResult>((resolve, reject) => {
      let done = false;
      const finish = (): boolean => {
        if (done) return false;
        done = true;
        cancelWatch();
        this.inFlight.delete(stop);
        return true;
      };
      const stop = (reason: WorkerStopped): void => {
        if (finish()) reject(reason);
      };
      // A running job cannot be cancelled inside tesseract: on overrun, terminate the worker so that nothing queues
      // behind it (the other jobs on it are re-run on a fresh worker) and fail this one with a timeout.
      const cancelWatch = deadline.watch(() => {
        if (!finish()) return;
        void this.reset(new WorkerStopped('another OCR job overran its deadline', true));
        reject(deadline.failure('running OCR'));
      });
      this.inFlight.add(stop);
      // `blocks`: the recognition tree, for the words' boxes (tesseract.js returns only text by default).
      pngOf(image)
        .then((png) => worker.recognize(png, {}, { text: true, blocks: true }))
        .then(
          (result) => {
            if (!finish()) return;
            const { text, confidence, blocks } = result.data;
            resolve({ text, confidence, words: tesseractWords(blocks, image) });
          },
          (error: unknown) => {
            if (finish()) {
              reject(new ProviderFailure('server', `local provider: OCR failed: ${String(error)}`, { cause: error }));
            }
          },
        );
    });
  }

  /** Terminates the worker (if any) and fails the recognitions still running on it with `reason`. */
  async reset(reason: WorkerStopped): Promise<void> {
    const current = this.worker;
    this.worker = null;
    for (const fail of [...this.inFlight]) fail(reason);
    this.inFlight.clear();
    if (current !== null) {
      try {
        await (await current).terminate();
      } catch {
        // A worker that failed to start has nothing to terminate.
      }
    }
  }

  private get(): Promise<Tesseract.Worker> {
    if (this.worker === null) {
      const created = createTesseractWorker(() => {
        if (this.worker === created) void this.reset(new WorkerStopped('the OCR worker thread stopped', true));
      });
      this.worker = created;
      created.catch(() => {
        if (this.worker === created) this.worker = null;
      });
    }
    return this.worker;
  }
}

async function createTesseractWorker(onThreadExit: () => void): Promise<Tesseract.Worker> {
  const { default: tesseract } = await import('tesseract.js');
  const { langPath, workerPath } = tesseractPaths();
  let initialising = true;
  let failInit: (error: Error) => void = () => {};
  const initFailed = new Promise<never>((_, reject) => {
    failInit = reject;
  });
  const worker = await Promise.race([
    tesseract.createWorker('eng', tesseract.OEM.LSTM_ONLY, {
      langPath,
      workerPath,
      gzip: true,
      // 'none': read the model from langPath every start; never write a cache copy into the working directory.
      cacheMethod: 'none',
      // Without an errorHandler tesseract.js rethrows job errors from its message listener (an uncaught exception),
      // and a failure while loading the language would leave createWorker pending forever.
      errorHandler: (error: unknown) => {
        if (initialising) failInit(new Error(`OCR worker failed to start: ${String(error)}`));
      },
    }),
    initFailed,
  ]);
  initialising = false;
  // tesseract.js sets `onerror` on the node Worker, which node ignores: listen for real so that a crashed thread
  // fails its jobs instead of crashing the process (an 'error' event without a listener throws).
  const thread = (worker as unknown as { worker?: ThreadWorker }).worker;
  thread?.on('error', onThreadExit);
  thread?.on('exit', onThreadExit);
  return worker;
}

const engine = new TesseractEngine();

/** Recognises one grey page with the process's tesseract worker (started on first use). */
export function tesseractRead(image: GreyImage, deadline: Deadline): Promise<TesseractResult> {
  return engine.recognize(image, deadline);
}

/** Terminates the process's tesseract worker, failing the recognitions on it (not re-run); a later read starts one. */
export async function stopTesseract(): Promise<void> {
  await engine.reset(new WorkerStopped('the local provider was shut down', false));
}

/** A grey image as PNG, for tesseract. */
async function pngOf(image: GreyImage): Promise<Buffer> {
  const { default: sharp } = await import('sharp');
  return sharp(image.data, { raw: { width: image.width, height: image.height, channels: 1 } })
    .png({ compressionLevel: 1 })
    .toBuffer();
}
