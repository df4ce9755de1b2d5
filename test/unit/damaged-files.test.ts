/**
 * Damaged files, generated: every fixture mutated many times over (bit flips, cut or repeated ranges, overwritten
 * bytes, extreme 32-bit values, changed ASCII numbers such as a PDF's offsets and counts), with a fixed seed so a
 * failure replays. Creation's inspection reads untrusted bytes with hand-written parsers (JPEG, PNG, HEIC boxes, PDF
 * cross-references and page trees); whatever the bytes, a client must get facts or one of the contract's file
 * errors (never a 500 from a TypeError or RangeError), within the read budget. A mutated file that passes creation
 * reaches the worker's decoders (sharp, libheif, mupdf), which must answer with a result or an `unreadable_file`
 * failure (the run's CORRUPT_FILE), never another error.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { config } from '../../shared/config.js';
import { ApiError, type ErrorCode } from '../../shared/errors.js';
import type { FileFacts } from '../../shared/file-facts.js';
import { inspectUpload } from '../../shared/inspect/index.js';
import { pdfTextLayer, prepareImage, renderPdfPages } from '../../shared/media/index.js';
import { ProviderFailure } from '../../shared/task.js';

const FIXTURES = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');
const MiB = 1024 * 1024;
/** The limits create-run inspects with (the contract's defaults: the tests set none). */
const LIMITS = config.limits;
/** The file errors inspection may answer with (the contract's table). */
const FILE_ERRORS: ErrorCode[] = ['CORRUPT_FILE', 'UNSUPPORTED_FILE_TYPE', 'FILE_TOO_LARGE', 'TOO_MANY_PAGES'];

/** A small deterministic generator (LCG), so that every run mutates the same way. */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
  return (n: number) => Math.floor(next() * n);
}

function mutate(original: Buffer, int: (n: number) => number): Buffer {
  const b = Buffer.from(original);
  const at = int(b.length);
  const span = int(Math.min(4096, b.length - at));
  switch (int(7)) {
    case 0:
      for (let i = 1 + int(20); i > 0; i--) {
        const where = int(b.length);
        b[where] = (b[where] ?? 0) ^ (1 << int(8));
      }
      return b;
    case 1:
      return b.subarray(0, Math.max(1, at));
    case 2:
      return Buffer.concat([b.subarray(0, at), b.subarray(at + span)]);
    case 3:
      return Buffer.concat([b.subarray(0, at + span), b.subarray(at, at + span), b.subarray(at + span)]);
    case 4:
      for (let i = 1 + int(8); i > 0 && b.length >= 4; i--) {
        b.writeUInt32BE([0xffffffff, 0x7fffffff, 0, 1, 0x10000][int(5)] ?? 0, int(b.length - 3));
      }
      return b;
    case 5: {
      // ASCII numbers: a PDF's offsets, lengths, object numbers and page counts.
      const text = b.toString('latin1');
      const numbers = [...text.matchAll(/\d+/g)];
      const hit = numbers[int(numbers.length)];
      if (!hit || hit.index === undefined) return b;
      const value = String([0, 1, 999_999_999, 4_294_967_296, Number(hit[0]) + 1][int(5)]);
      return Buffer.from(text.slice(0, hit.index) + value + text.slice(hit.index + hit[0].length), 'latin1');
    }
    default:
      for (let i = at; i < Math.min(b.length, at + 1 + int(64)); i++) b[i] = int(256);
      return b;
  }
}

/** Inspects `bytes` like create-run does, counting what it reads. */
async function inspect(bytes: Buffer): Promise<{ facts?: FileFacts; error?: unknown; bytesRead: number }> {
  let bytesRead = 0;
  const read = async (start: number, endInclusive: number) => {
    if (start < 0 || endInclusive < start || endInclusive >= bytes.length) {
      throw new Error(`invalid range ${start}-${endInclusive} of ${bytes.length} bytes`);
    }
    bytesRead += endInclusive - start + 1;
    return bytes.subarray(start, endInclusive + 1);
  };
  try {
    return { facts: await inspectUpload(read, bytes.length, LIMITS), bytesRead };
  } catch (error: unknown) {
    return { error, bytesRead };
  }
}

const fixtures = readdirSync(FIXTURES).filter((name) => /\.(png|jpg|heic|pdf)$/.test(name) && name !== 'empty.jpg');
const MUTATIONS_PER_FIXTURE = 150;

test.each(fixtures)('every damaged copy of %s gets facts or a file error from inspection', async (name) => {
  const original = readFileSync(join(FIXTURES, name));
  const int = generator(name.length * 7919 + original.length);
  const unexpected: string[] = [];
  const outcomes = new Set<string>();
  for (let i = 0; i < MUTATIONS_PER_FIXTURE; i++) {
    const bytes = mutate(original, int);
    const { facts, error, bytesRead } = await inspect(bytes);
    if (bytesRead > 3 * bytes.length + 4 * MiB) unexpected.push(`#${i}: read ${bytesRead} bytes of ${bytes.length}`);
    if (facts) {
      outcomes.add('accepted');
      const sane =
        Number.isInteger(facts.pages) &&
        facts.pages >= 1 &&
        facts.pages <= LIMITS.pdfMaxPages &&
        (facts.kind === 'pdf' || ((facts.width ?? 0) > 0 && (facts.height ?? 0) > 0));
      if (!sane) unexpected.push(`#${i}: accepted with facts ${JSON.stringify(facts)}`);
    } else if (error instanceof ApiError && FILE_ERRORS.includes(error.code)) {
      outcomes.add(`${error.code} ${String(error.details?.reason ?? '')}`);
    } else {
      unexpected.push(`#${i}: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
    }
  }
  expect(unexpected).toEqual([]);
  // Copies of a file with a structure are not all answered alike: the parsers behind the first check were reached.
  if (!/^(truncated|zip-named|gif-named)/.test(name)) expect(outcomes.size).toBeGreaterThan(1);
});

const TARGET = { formats: ['image/jpeg', 'image/png'] as const, maxLongSide: 2048, maxBytes: 20 * MiB };
const DECODED = ['receipt.png', 'receipt.jpg', 'receipt.heic', 'text.pdf', 'scanned.pdf'];

test.each(DECODED)(
  'a damaged copy of %s that creation accepts is decoded or fails as unreadable_file',
  async (name) => {
    const original = readFileSync(join(FIXTURES, name));
    const int = generator(name.length * 104729 + original.length);
    const unexpected: string[] = [];
    let accepted = 0;
    for (let i = 0; accepted < 6 && i < 60; i++) {
      const bytes = mutate(original, int);
      const { facts } = await inspect(bytes);
      if (!facts) continue;
      accepted += 1;
      const deadline = { signal: new AbortController().signal, deadlineMs: Date.now() + 30_000 };
      const target = { ...TARGET, formats: [...TARGET.formats] };
      try {
        if (facts.kind === 'pdf') {
          await pdfTextLayer(bytes, deadline);
          await renderPdfPages(bytes, target, deadline, [0]);
        } else {
          await prepareImage(bytes, facts.mime, target, deadline);
        }
      } catch (error: unknown) {
        if (!(error instanceof ProviderFailure && error.kind === 'unreadable_file')) {
          unexpected.push(`#${i}: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
        }
      }
    }
    expect(unexpected).toEqual([]);
    // Damaged copies did reach the decoders (most mutations leave the headers creation reads intact).
    expect(accepted).toBeGreaterThan(0);
  },
);
