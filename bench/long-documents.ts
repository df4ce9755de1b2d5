/**
 * Long documents at a real model's speed (issue #16): create → completed on the local stack for 20-page scanned,
 * 40-, 300- and 1,000-page text-layer PDFs, text output, against a fake OpenAI server timed like a real model (500 ms
 * to the first token, then 80 output tokens a second, ~400 output tokens per transcribed page, cut at the request's
 * `max_output_tokens` as the real API does). Also: the same 20 pages in one call (a single-call pipeline, the
 * adapter in process), the worker's peak RSS during the 1,000-page run, and the provider calls repeated after a
 * crash between chunks. The PDFs are generated here, into a temporary folder (never committed).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as mupdf from 'mupdf';
import { createOpenAIProvider } from '../shared/providers/openai/adapter.js';
import type { TaskSpec } from '../shared/task.js';
import { type RunningStack, startStack } from '../test/integration/stack.js';
import { type FakeServer, type RecordedRequest, startFakeServer } from '../test/support/fake-server.js';
import { round } from './stats.js';

/** The timing model of the fake (the issue's). */
export const MODEL_TIMING = { firstTokenMs: 500, tokensPerSecond: 80, tokensPerPage: 400 } as const;

const KEY = 'vk_bench_long_documents_0123456789ab';
const FAKE_OPENAI_KEY = 'sk-bench-long-documents-0123456789';
const TEXT_TASK: TaskSpec = {
  prompt: 'Transcribe the document',
  outputFormat: 'text',
  fields: null,
  schemaId: null,
  schemaLabel: null,
  promptScaffold: null,
};

interface Row {
  metric: string;
  value: string;
  target: string;
  result: 'PASS' | 'MISS' | 'info' | 'ERROR';
}

interface CaseResult {
  id: string;
  pages: number;
  scanned: boolean;
  status: string;
  seconds: number;
  pagesPerSecond: number;
  providerCalls: number;
  error?: unknown;
}

export interface LongDocumentsResult {
  timing: typeof MODEL_TIMING;
  cases: CaseResult[];
  singleCall20: { seconds: number; outcome: string };
  /** Peak resident set of the local stack's process (API + worker) while the 1,000-page run was processed. */
  peakRssMiB: number;
  crash: { pages: number; calls: number; repeated: number; status: string };
}

export const LONG_TARGETS = {
  scanned20Seconds: 8,
  text40Seconds: 12,
  text300Seconds: 60,
  pages1000Seconds: 180,
  pages1000RssMiB: 1024,
  repeatedCalls: 0,
} as const;

// ---------------------------------------------------------------------------------------------------------------
// PDFs
// ---------------------------------------------------------------------------------------------------------------

const PROSE =
  'The parties agree that the services described in this schedule are provided on the terms set out above, ' +
  'that invoices are payable within thirty days, and that either party may end the agreement on notice.';

/** A PDF of `pages` pages: each a page of text ("Page n of N" and prose), or a scanned image with no text layer. */
async function makePdf(pages: number, scanned: boolean): Promise<Uint8Array> {
  const doc = new mupdf.PDFDocument();
  const font = doc.addSimpleFont(new mupdf.Font('Helvetica'));
  const image = scanned
    ? doc.addImage(new mupdf.Image(await readFile(new URL('../test/fixtures/receipt.png', import.meta.url))))
    : undefined;
  for (let n = 1; n <= pages; n++) {
    const text = [`Page ${n} of ${pages}`, PROSE, PROSE]
      .map((line, i) => `BT /F1 11 Tf 50 ${740 - i * 20} Td (${line}) Tj ET`)
      .join('\n');
    const page = image
      ? doc.addPage([0, 0, 384, 400], 0, { XObject: { Im1: image } }, 'q 384 0 0 400 0 0 cm /Im1 Do Q\n')
      : doc.addPage([0, 0, 612, 792], 0, { Font: { F1: font } }, `0 g\n${text}\n`);
    doc.insertPage(-1, page);
  }
  const bytes = doc.saveToBuffer('compress=yes,garbage=yes').asUint8Array().slice();
  doc.destroy();
  return bytes;
}

// ---------------------------------------------------------------------------------------------------------------
// The timed fake
// ---------------------------------------------------------------------------------------------------------------

/** Pages a Responses API request carries: "Page n of N" lines of a text layer, else the pages of an attached PDF. */
function pagesIn(request: RecordedRequest): number {
  const body = JSON.stringify(request.body);
  const marked = new Set([...body.matchAll(/Page (\d+) of \d+/g)].map((m) => m[1]));
  if (marked.size > 0) return marked.size;
  const file = /data:application\/pdf;base64,([A-Za-z0-9+/=]+)/.exec(body);
  if (!file?.[1]) return 1;
  const pdf = Buffer.from(file[1], 'base64').toString('latin1');
  return Math.max(1, [...pdf.matchAll(/\/Type\s*\/Page(?![a-zA-Z])/g)].length);
}

/** The OpenAI Responses API, answering after the time a real model would take to write the answer. */
function timedOpenAI(request: RecordedRequest) {
  const body = request.body as { max_output_tokens?: number } | undefined;
  const pages = pagesIn(request);
  const wanted = MODEL_TIMING.tokensPerPage * pages;
  const cap = body?.max_output_tokens ?? Number.POSITIVE_INFINITY;
  const outputTokens = Math.min(wanted, cap);
  const cut = wanted > cap;
  // The answer's text is short (the result is stored by the service; its size is not what is measured here).
  const text = cut ? '{"text": "Transcribed text cut' : JSON.stringify({ text: `Transcribed ${pages} page(s).` });
  return {
    status: 200,
    delayMs: Math.round(MODEL_TIMING.firstTokenMs + (outputTokens / MODEL_TIMING.tokensPerSecond) * 1000),
    json: {
      id: 'resp_bench',
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      status: cut ? 'incomplete' : 'completed',
      error: null,
      incomplete_details: cut ? { reason: 'max_output_tokens' } : null,
      model: 'gpt-5.4-mini',
      output: [
        {
          id: 'msg_bench',
          type: 'message',
          status: cut ? 'incomplete' : 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', annotations: [], logprobs: [], text }],
        },
      ],
      usage: {
        input_tokens: 700 * pages,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: outputTokens,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 700 * pages + outputTokens,
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Runs on the stack
// ---------------------------------------------------------------------------------------------------------------

function api(stack: RunningStack) {
  return (route: string, init?: RequestInit) =>
    fetch(`${stack.info.baseUrl}${route}`, {
      ...init,
      headers: { 'x-api-key': KEY, 'content-type': 'application/json', ...init?.headers },
    });
}

/** Uploads, creates (timed from here), and polls until final. */
async function runOnStack(
  stack: RunningStack,
  file: string,
  metadata: Record<string, unknown> = {},
): Promise<{ status: string; seconds: number; jobId: string; run: Record<string, unknown> }> {
  const call = api(stack);
  const bytes = await readFile(file);
  const presign = (await (
    await call('/v1/uploads/presign', {
      method: 'POST',
      body: JSON.stringify({ fileName: path.basename(file), contentLength: bytes.length }),
    })
  ).json()) as { uploadId: string; uploadUrl: string };
  const put = await fetch(presign.uploadUrl, { method: 'PUT', body: new Blob([bytes]) });
  if (!put.ok) throw new Error(`upload of ${file} failed: ${put.status}`);
  const started = performance.now();
  const created = await call('/v1/runs', {
    method: 'POST',
    body: JSON.stringify({
      uploadId: presign.uploadId,
      prompt: 'Transcribe the document',
      outputFormat: 'text',
      confirmCost: true,
      metadata,
    }),
  });
  const body = (await created.json()) as { jobId?: string; error?: unknown };
  if (!body.jobId) throw new Error(`create failed: ${created.status} ${JSON.stringify(body.error)}`);
  for (;;) {
    const run = (await (await call(`/v1/runs/${body.jobId}`)).json()) as Record<string, unknown>;
    if (run.status === 'completed' || run.status === 'failed') {
      return {
        status: String(run.status),
        seconds: round((performance.now() - started) / 1000, 1),
        jobId: body.jobId,
        run,
      };
    }
    if (performance.now() - started > 900_000) throw new Error(`run ${body.jobId} not final after 900 s`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The resident set of a process, in MiB (Linux). */
async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

function stackEnv(fake: FakeServer, extra: Record<string, string> = {}): Record<string, string> {
  return {
    VISION_DEV_API_KEYS: `bench-long:${KEY}`,
    VISION_PROVIDERS: 'openai',
    OPENAI_API_KEY: FAKE_OPENAI_KEY,
    OPENAI_BASE_URL: `${fake.url}/v1`,
    LOCAL_RATE_LIMIT_RPS: '1000',
    LOCAL_RATE_LIMIT_BURST: '1000',
    ...extra,
  };
}

export async function measureLongDocuments(options: { log: (line: string) => void }): Promise<LongDocumentsResult> {
  const { log } = options;
  const dir = await mkdtemp(path.join(tmpdir(), 'vision-bench-long-'));
  const fake = await startFakeServer(timedOpenAI);
  try {
    const files = {
      scanned20: path.join(dir, 'scanned-20.pdf'),
      text40: path.join(dir, 'text-40.pdf'),
      text300: path.join(dir, 'text-300.pdf'),
      text1000: path.join(dir, 'text-1000.pdf'),
    };
    const { writeFile } = await import('node:fs/promises');
    await writeFile(files.scanned20, await makePdf(20, true));
    await writeFile(files.text40, await makePdf(40, false));
    await writeFile(files.text300, await makePdf(300, false));
    await writeFile(files.text1000, await makePdf(1000, false));
    log(`  PDFs generated in ${dir}`);

    // The single-call pipeline: the adapter in process, all 20 pages in one request (waited for at the end).
    const singleStarted = performance.now();
    const scannedBytes = await readFile(files.scanned20);
    const single = createOpenAIProvider({ env: { OPENAI_API_KEY: FAKE_OPENAI_KEY, OPENAI_BASE_URL: `${fake.url}/v1` } })
      .invoke(
        {
          bytes: scannedBytes,
          facts: { mime: 'application/pdf', kind: 'pdf', sizeBytes: scannedBytes.byteLength, pages: 20 },
          task: TEXT_TASK,
          step: 'vision',
        },
        { signal: new AbortController().signal, deadlineMs: Date.now() + 600_000 },
      )
      .then(
        () => ({ seconds: round((performance.now() - singleStarted) / 1000, 1), outcome: 'completed' }),
        (error: unknown) => ({
          seconds: round((performance.now() - singleStarted) / 1000, 1),
          outcome: `failed: ${error instanceof Error ? error.message : String(error)}`.slice(0, 200),
        }),
      );

    const cases: CaseResult[] = [];
    let peakRssMiB = 0;
    const stack = await startStack(stackEnv(fake));
    try {
      for (const [id, file, pages, scanned] of [
        ['scanned-20', files.scanned20, 20, true],
        ['text-40', files.text40, 40, false],
        ['text-300', files.text300, 300, false],
        ['text-1000', files.text1000, 1000, false],
      ] as const) {
        const before = fake.requests.length;
        let sampling = id === 'text-1000';
        const sampler = (async () => {
          while (sampling) {
            peakRssMiB = Math.max(peakRssMiB, await rssMiB(stack.info.pid));
            await new Promise((resolve) => setTimeout(resolve, 250));
          }
        })();
        try {
          const outcome = await runOnStack(stack, file);
          cases.push({
            id,
            pages,
            scanned,
            status: outcome.status,
            seconds: outcome.seconds,
            pagesPerSecond: round(pages / outcome.seconds, 1),
            providerCalls: fake.requests.length - before,
            ...(outcome.status === 'failed' ? { error: outcome.run.error } : {}),
          });
          log(`  ${id}: ${outcome.status} in ${outcome.seconds} s (${fake.requests.length - before} provider calls)`);
        } finally {
          sampling = false;
          await sampler;
        }
      }
    } finally {
      await stack.stop();
    }

    // A crash between chunks on a stack with a short visibility timeout (the redelivery resumes from checkpoints).
    const crashStack = await startStack(
      stackEnv(fake, {
        VISION_LOCAL_FAULT_INJECTION: 'true',
        // Longer than the run takes: a shorter one lets a redelivery take over a run still being processed (a local
        // stack's trade-off, README "Limitations"), which is not what is measured here.
        LOCAL_VISIBILITY_TIMEOUT_SECONDS: '60',
        SERVICE_RUN_CONCURRENCY: '8',
      }),
    );
    let crash: LongDocumentsResult['crash'];
    try {
      const before = fake.requests.length;
      const outcome = await runOnStack(crashStack, files.text40, { localFault: 'crash-after-chunk' });
      const calls = fake.requests.slice(before);
      const pagesAsked = calls.flatMap((r) =>
        [...JSON.stringify(r.body).matchAll(/Page (\d+) of 40/g)].map((m) => m[1]),
      );
      crash = {
        pages: 40,
        calls: calls.length,
        repeated: pagesAsked.length - new Set(pagesAsked).size,
        status: outcome.status,
      };
      log(`  crash after a chunk: ${crash.status}, ${crash.calls} calls, ${crash.repeated} repeated`);
    } finally {
      await crashStack.stop();
    }

    const singleCall20 = await single;
    log(`  single-call pipeline, 20 scanned pages: ${singleCall20.outcome} in ${singleCall20.seconds} s`);
    return { timing: MODEL_TIMING, cases, singleCall20, peakRssMiB, crash };
  } finally {
    await fake.close();
    await rm(dir, { recursive: true, force: true });
  }
}

export function longDocumentRows(r: LongDocumentsResult): Row[] {
  const pass = (ok: boolean): Row['result'] => (ok ? 'PASS' : 'MISS');
  const row = (id: string, metric: string, target: number): Row => {
    const c = r.cases.find((x) => x.id === id);
    if (!c) return { metric, value: 'not run', target: `≤ ${target} s`, result: 'ERROR' };
    return {
      metric,
      value: `${c.status} in ${c.seconds} s (${c.pagesPerSecond} pages/s, ${c.providerCalls} calls)`,
      target: `≤ ${target} s`,
      result: pass(c.status === 'completed' && c.seconds <= target),
    };
  };
  return [
    row(
      'scanned-20',
      '20-page scanned PDF, text output, create → completed (timed fake model)',
      LONG_TARGETS.scanned20Seconds,
    ),
    {
      metric: 'the same 20 pages in one call (single-call pipeline, adapter in process)',
      value: `${r.singleCall20.outcome} in ${r.singleCall20.seconds} s`,
      target: '—',
      result: 'info',
    },
    row('text-40', '40-page text-layer PDF, text output', LONG_TARGETS.text40Seconds),
    row('text-300', '300-page text-layer PDF, text output (≥ 5 pages/s)', LONG_TARGETS.text300Seconds),
    row('text-1000', '1,000-page PDF, text output', LONG_TARGETS.pages1000Seconds),
    {
      metric: 'peak RSS of the local stack process (API + worker) during the 1,000-page run',
      value: `${r.peakRssMiB} MiB`,
      target: `≤ ${LONG_TARGETS.pages1000RssMiB} MiB`,
      result: pass(r.peakRssMiB <= LONG_TARGETS.pages1000RssMiB),
    },
    {
      metric: 'provider calls repeated after a worker crash between chunks (40 pages)',
      value: `${r.crash.repeated} of ${r.crash.calls} (${r.crash.status})`,
      target: `${LONG_TARGETS.repeatedCalls}`,
      result: pass(r.crash.status === 'completed' && r.crash.repeated === LONG_TARGETS.repeatedCalls),
    },
  ];
}
