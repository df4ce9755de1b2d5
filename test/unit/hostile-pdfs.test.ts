/**
 * The hostile-PDF corpus (test/support/pdf-bombs.ts) against both readers of a PDF: the API's inspector, which must
 * answer each with a page count or the contract's file error, and the worker's renderer (mupdf), which must answer
 * without crashing. Each reading runs in a process of its own (mupdf is synchronous WASM and cannot be interrupted),
 * killed if it does not answer in time; its time and peak memory are printed. The targets for those figures are the
 * benchmark's (`npm run bench`); here a reading fails only when it does not answer, crashes or balloons.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundledProgram } from '../support/node-bundle.js';
import { type PdfBomb, pdfBombs } from '../support/pdf-bombs.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The child program, bundled in beforeAll (tsx's loader would be most of each reading's process). */
let child: string[] = [];

/** A reading that takes longer than this is stuck: the process is killed and the test fails. */
const ANSWER_WITHIN_MS = { inspect: 20_000, render: 60_000, baseline: 20_000 } as const;
/** Peak memory past which a reading counts as ballooning (the inspector's target is 64 MiB over the baseline). */
const BALLOON_MIB = { inspect: 512, render: 2048, baseline: 512 } as const;

interface Reading {
  ms: number;
  maxRssMiB: number;
  outcome: string;
}

type Mode = keyof typeof ANSWER_WITHIN_MS;

function read(mode: Mode, file: string): Promise<Reading> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [...child, mode, file],
      { cwd: ROOT, timeout: ANSWER_WITHIN_MS[mode], killSignal: 'SIGKILL', maxBuffer: 1 << 20 },
      (error, stdout, stderr) => {
        if (error) {
          const why = error.killed
            ? `did not answer within ${ANSWER_WITHIN_MS[mode]} ms`
            : `failed: ${stderr.slice(-400)}`;
          reject(new Error(`${mode} ${path.basename(file)} ${why}`));
          return;
        }
        resolve(JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as Reading);
      },
    );
  });
}

const bombs = pdfBombs();
const dir = mkdtempSync(path.join(tmpdir(), 'hostile-pdfs-'));
const fileOf = (bomb: PdfBomb): string => path.join(dir, `${bomb.name}.pdf`);
const figures: string[] = [];
let baselineMiB = 0;

beforeAll(async () => {
  child = await bundledProgram('test/support/hostile-pdf-child.ts');
  for (const bomb of bombs) writeFileSync(fileOf(bomb), bomb.build());
  baselineMiB = (await read('baseline', fileOf(bombs[0] as PdfBomb))).maxRssMiB;
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  // The figures, for whoever reads the test output (the targets are checked by `npm run bench`).
  console.log(
    [`hostile PDFs: time and peak memory over a ${baselineMiB.toFixed(0)} MiB process baseline`, ...figures].join('\n'),
  );
});

function expectedOutcome(bomb: PdfBomb): RegExp {
  if ('pages' in bomb.expect) return new RegExp(`^pages ${bomb.expect.pages}$`);
  if ('tooManyPages' in bomb.expect) return /^TOO_MANY_PAGES/;
  return /^CORRUPT_FILE \((implausible|unreadable)\)/;
}

describe('the API inspector answers every hostile PDF with facts or the contract file error', () => {
  test.each(bombs.map((b) => [b.name, b] as const))('%s', async (_, bomb) => {
    const reading = await read('inspect', fileOf(bomb));
    figures.push(
      `  inspect ${bomb.name.padEnd(24)} ${reading.ms.toFixed(0).padStart(6)} ms ` +
        `${(reading.maxRssMiB - baselineMiB).toFixed(0).padStart(5)} MiB  ${reading.outcome.slice(0, 90)}`,
    );
    expect(reading.outcome).toMatch(expectedOutcome(bomb));
    expect(reading.maxRssMiB).toBeLessThan(BALLOON_MIB.inspect);
  });
});

describe('the worker renderer (mupdf) answers every hostile PDF the API would let through, or that it meets anyway', () => {
  test.each(bombs.filter((b) => b.render).map((b) => [b.name, b] as const))('%s', async (_, bomb) => {
    const reading = await read('render', fileOf(bomb));
    figures.push(
      `  render  ${bomb.name.padEnd(24)} ${reading.ms.toFixed(0).padStart(6)} ms ` +
        `${(reading.maxRssMiB - baselineMiB).toFixed(0).padStart(5)} MiB  ${reading.outcome.slice(0, 90)}`,
    );
    // A page count and a rendered first page, or the file's fault: never a crash or a hang.
    expect(reading.outcome).toMatch(/^pages \d+, page 1 rendered \d+x\d+$|^unreadable_file: /);
    expect(reading.maxRssMiB).toBeLessThan(BALLOON_MIB.render);
  });
});
