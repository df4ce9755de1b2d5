/**
 * shared/media against real fixtures, with the real decoders (sharp, libheif-js from heic-convert, mupdf). No mocks.
 * Decoded outputs are checked by decoding them again with sharp, never by trusting the returned width/height alone.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as mupdf from 'mupdf';
import sharp from 'sharp';
import type { SupportedMime } from '../../shared/file-facts.js';
import { Deadline } from '../../shared/media/deadline.js';
import { runSharp } from '../../shared/media/image.js';
import {
  type ImageTarget,
  type MediaDeadline,
  type PreparedImage,
  pdfTextLayer,
  prepareImage,
  renderPdfPages,
} from '../../shared/media/index.js';
import { type Libheif, libheif, libheifInfo, loadLibheif, openHeif } from '../../shared/media/libheif.js';
import { failureOf } from '../support/failures.js';

// mupdf reports recoverable problems (e.g. "repairing PDF document") on stderr; the garbage inputs below trigger them.
mupdf.setLog(() => {});

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');
const fixture = (name: string): Uint8Array => new Uint8Array(readFileSync(path.join(FIXTURES, name)));

const JPEG_OR_PNG: ImageTarget = { formats: ['image/jpeg', 'image/png'], maxLongSide: 2000, maxBytes: 5_000_000 };

function deadline(ms = 30_000): MediaDeadline {
  return { signal: new AbortController().signal, deadlineMs: Date.now() + ms };
}

/** What the output bytes really are, per sharp. */
async function decoded(
  image: PreparedImage,
): Promise<{ format: string; width: number; height: number; orientation?: number }> {
  const meta = await sharp(image.bytes).metadata();
  return { format: meta.format, width: meta.width, height: meta.height, orientation: meta.orientation };
}

/** Mean absolute grey-level difference (0–255) at 200 x 200: ~0.1–0.3 for the same receipt, ~9.5 for a blank page. */
async function difference(a: Uint8Array, b: Uint8Array): Promise<number> {
  const grey = (bytes: Uint8Array): Promise<Buffer> =>
    sharp(bytes).autoOrient().greyscale().resize(200, 200, { fit: 'fill' }).raw().toBuffer();
  const [x, y] = await Promise.all([grey(a), grey(b)]);
  let sum = 0;
  for (let i = 0; i < x.length; i++) sum += Math.abs((x[i] ?? 0) - (y[i] ?? 0));
  return sum / x.length;
}

describe('prepareImage', () => {
  test('a JPEG stored sideways with EXIF orientation 6 comes out upright, with no orientation tag', async () => {
    const stored = await sharp(fixture('receipt.jpg')).metadata();
    expect([stored.width, stored.height, stored.orientation]).toEqual([834, 800, 6]);

    const out = await prepareImage(fixture('receipt.jpg'), 'image/jpeg', JPEG_OR_PNG, deadline());
    expect(out.mime).toBe('image/jpeg');
    expect([out.width, out.height]).toEqual([800, 834]);
    const real = await decoded(out);
    expect(real).toEqual({ format: 'jpeg', width: 800, height: 834, orientation: undefined });
    // Same picture as the upright PNG; the stored (unrotated) pixels are far from it.
    const png = fixture('receipt.png');
    const sideways = await sharp(fixture('receipt.jpg')).jpeg().toBuffer(); // metadata dropped: pixels as stored
    const upright = await difference(out.bytes, png);
    expect(upright).toBeLessThan(2);
    expect(await difference(sideways, png)).toBeGreaterThan(5 * upright);
  });

  test('HEIC becomes JPEG when the target does not take HEIC', async () => {
    const out = await prepareImage(fixture('receipt.heic'), 'image/heic', JPEG_OR_PNG, deadline());
    expect(out.mime).toBe('image/jpeg');
    expect(await decoded(out)).toEqual({ format: 'jpeg', width: 800, height: 834, orientation: undefined });
    expect([out.width, out.height]).toEqual([800, 834]);
    expect(await difference(out.bytes, fixture('receipt.png'))).toBeLessThan(2);
  });

  test('HEIC is sent as it is when the target takes it and it fits', async () => {
    const heic = fixture('receipt.heic');
    const out = await prepareImage(
      heic,
      'image/heic',
      { ...JPEG_OR_PNG, formats: ['image/heic', 'image/jpeg'] },
      deadline(),
    );
    expect(out.mime).toBe('image/heic');
    expect(Buffer.from(out.bytes).equals(Buffer.from(heic))).toBe(true);
    expect([out.width, out.height]).toEqual([800, 834]);
  });

  test('HEIC that the target takes but that is too large is converted and downscaled', async () => {
    const target: ImageTarget = { formats: ['image/heic', 'image/jpeg'], maxLongSide: 417, maxBytes: 5_000_000 };
    const out = await prepareImage(fixture('receipt.heic'), 'image/heic', target, deadline());
    expect(out.mime).toBe('image/jpeg');
    expect(await decoded(out)).toMatchObject({ width: 400, height: 417 });
  });

  test.each<[string, SupportedMime]>([
    ['receipt.png', 'image/png'],
    ['receipt.jpg', 'image/jpeg'],
    ['receipt.heic', 'image/heic'],
  ])('%s is downscaled to the long side, aspect kept, never upscaled', async (name, mime) => {
    const small = await prepareImage(fixture(name), mime, { ...JPEG_OR_PNG, maxLongSide: 400 }, deadline());
    expect(await decoded(small)).toMatchObject({ width: 384, height: 400 });
    expect([small.width, small.height]).toEqual([384, 400]);

    const big = await prepareImage(fixture(name), mime, { ...JPEG_OR_PNG, maxLongSide: 5000 }, deadline());
    expect([big.width, big.height]).toEqual([800, 834]);
  });

  test('a tiny byte budget is met by lowering quality, then shrinking the pixels', async () => {
    const full = await prepareImage(fixture('receipt.png'), 'image/png', JPEG_OR_PNG, deadline());
    const budget = 6_000;
    expect(full.bytes.byteLength).toBeGreaterThan(budget);

    const out = await prepareImage(
      fixture('receipt.png'),
      'image/png',
      { ...JPEG_OR_PNG, maxBytes: budget },
      deadline(),
    );
    expect(out.mime).toBe('image/jpeg');
    expect(out.bytes.byteLength).toBeLessThanOrEqual(budget);
    expect(out.width).toBeLessThan(800);
    expect(await decoded(out)).toMatchObject({ format: 'jpeg', width: out.width, height: out.height });
    // Still the same picture, aspect kept within a pixel.
    expect(Math.abs(out.width / out.height - 800 / 834)).toBeLessThan(0.01);
  });

  test('PNG only when the target takes only PNG, within its byte budget', async () => {
    const target: ImageTarget = { formats: ['image/png'], maxLongSide: 2000, maxBytes: 15_000 };
    const out = await prepareImage(fixture('receipt.jpg'), 'image/jpeg', target, deadline());
    expect(out.mime).toBe('image/png');
    expect(out.bytes.byteLength).toBeLessThanOrEqual(15_000);
    expect((await decoded(out)).format).toBe('png');
    expect(out.height).toBeGreaterThan(out.width); // upright
  });

  test('transparency becomes white in JPEG', async () => {
    const clear = await sharp({
      create: { width: 8, height: 8, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } },
    })
      .png()
      .toBuffer();
    const out = await prepareImage(new Uint8Array(clear), 'image/png', JPEG_OR_PNG, deadline());
    const pixels = await sharp(out.bytes).raw().toBuffer();
    expect(Math.min(...pixels)).toBeGreaterThan(250);
  });

  test('a deadline that has passed, or an aborted signal, is a timeout', async () => {
    const expired = { signal: new AbortController().signal, deadlineMs: Date.now() - 1 };
    expect((await failureOf(prepareImage(fixture('receipt.png'), 'image/png', JPEG_OR_PNG, expired))).kind).toBe(
      'timeout',
    );
    const controller = new AbortController();
    controller.abort();
    const aborted = { signal: controller.signal, deadlineMs: Date.now() + 60_000 };
    expect((await failureOf(prepareImage(fixture('receipt.heic'), 'image/heic', JPEG_OR_PNG, aborted))).kind).toBe(
      'timeout',
    );
  });

  test('a deadline that passes while decoding is a timeout', async () => {
    // 16 MP: decoding, orienting and re-encoding it takes tens of milliseconds at least, past the 5 ms allowed.
    const big = await sharp({ create: { width: 4000, height: 4000, channels: 3, background: '#f0f0f0' } })
      .jpeg({ quality: 50 })
      .toBuffer();
    await prepareImage(fixture('receipt.png'), 'image/png', JPEG_OR_PNG, deadline()); // sharp loaded already
    const target = { ...JPEG_OR_PNG, maxLongSide: 4000 };
    const failure = await failureOf(prepareImage(new Uint8Array(big), 'image/jpeg', target, deadline(5)));
    expect(failure.kind).toBe('timeout');
    expect(failure.message).toMatch(/deadline passed while/);
  });

  test.each<SupportedMime>(['image/png', 'image/jpeg', 'image/heic'])(
    'garbage bytes declared as %s are an unreadable_file failure',
    async (mime) => {
      const garbage = new Uint8Array(4096).map((_, i) => (i * 7919 + 13) % 256);
      expect((await failureOf(prepareImage(garbage, mime, JPEG_OR_PNG, deadline()))).kind).toBe('unreadable_file');
    },
  );

  test.each<[string, SupportedMime]>([
    ['empty.jpg', 'image/jpeg'],
    ['truncated.jpg', 'image/jpeg'],
    ['pixel-bomb.png', 'image/png'],
  ])('%s is an unreadable_file failure', async (name, mime) => {
    expect((await failureOf(prepareImage(fixture(name), mime, JPEG_OR_PNG, deadline()))).kind).toBe('unreadable_file');
  });

  test('damaged.png (headers intact, image data damaged) is an unreadable_file failure', async () => {
    expect((await failureOf(prepareImage(fixture('damaged.png'), 'image/png', JPEG_OR_PNG, deadline()))).kind).toBe(
      'unreadable_file',
    );
  });

  test("a failing pipeline is the file's fault when it reads the client's bytes, the service's when it reads pixels", async () => {
    // The same failure (libvips refusing the input), classified by where the pipeline starts: a damaged upload must
    // not pass for a retryable service error, nor an encoder failure on pixels we decoded for a damaged upload.
    const d = new Deadline(new AbortController().signal, Date.now() + 30_000);
    const broken = () => sharp(Buffer.from('not an image')).png();
    expect((await failureOf(runSharp(broken(), d, 'decoding', 'decoded'))).kind).toBe('unreadable_file');
    expect((await failureOf(runSharp(broken(), d, 'encoding', 'encoded', 'pixels'))).kind).toBe('server');
  });
});

describe('libheif (the HEIC decoder)', () => {
  const decode = (bytes: Uint8Array, lib: Libheif) => {
    const file = openHeif(bytes, lib);
    try {
      return file.decode();
    } finally {
      file.dispose();
    }
  };

  test('the SIMD inverse transform is in place for the installed libheif-js', () => {
    // The table slots it goes in are those of libheif-js 1.23.2's build, and each replacement has passed its
    // comparison with libde265's own function on test blocks. After a libheif-js upgrade HEIC still decodes, with
    // libde265's transform (about twice as slow), until the slots are found again (see shared/media/libheif.ts).
    expect(libheifInfo()).toEqual({ version: '1.23.2', idct: 'simd' });
  });

  test("decodes to exactly the bytes of libde265's reference transform, as RGB when the image has no alpha", () => {
    const bytes = fixture('receipt.heic');
    const fast = decode(bytes, libheif());
    const reference = decode(bytes, loadLibheif({ patch: false }));
    expect([fast.width, fast.height, fast.channels]).toEqual([800, 834, 3]);
    expect(fast.data.byteLength).toBe(800 * 834 * 3);
    expect(fast.data.equals(reference.data)).toBe(true);
  });

  test('the pixels are those heic-decode gave (its RGBA without the alpha byte)', async () => {
    const fromConvert = createRequire(createRequire(import.meta.url).resolve('heic-convert'));
    const heicDecode = fromConvert('heic-decode') as (options: {
      buffer: Uint8Array;
    }) => Promise<{ width: number; height: number; data: Uint8ClampedArray }>;
    const bytes = fixture('receipt.heic');
    const rgba = await heicDecode({ buffer: bytes });
    const rgb = decode(bytes, libheif());
    expect([rgba.width, rgba.height]).toEqual([rgb.width, rgb.height]);
    const stripped = Buffer.alloc(rgb.width * rgb.height * 3);
    for (let i = 0, j = 0; i < rgba.data.length; i += 4, j += 3) {
      stripped[j] = rgba.data[i] ?? 0;
      stripped[j + 1] = rgba.data[i + 1] ?? 0;
      stripped[j + 2] = rgba.data[i + 2] ?? 0;
    }
    expect(stripped.equals(rgb.data)).toBe(true);
  });

  test('bytes that are not HEIF, or a HEIF brand over garbage, are refused with a reason', () => {
    expect(() => openHeif(fixture('receipt.png'))).toThrow('not a HEIC');
    const garbage = new Uint8Array(4096).map((_, i) => (i * 7919 + 13) % 256);
    garbage.set([0, 0, 0, 24, ...Buffer.from('ftypheic')], 0);
    expect(() => openHeif(garbage)).toThrow();
  });
});

describe('pdfTextLayer', () => {
  test('text per page, trimmed; a scanned page has none', async () => {
    const pages = await pdfTextLayer(fixture('text.pdf'), deadline());
    expect(pages).toHaveLength(2);
    expect(pages[0]).toContain('Invoice Number: INV-2001');
    expect(pages[0]).toContain('Total Due: 1250.00');
    expect(pages[1]).toContain('Terms and Conditions');
    for (const page of pages) expect(page).toBe(page.trim());

    expect(await pdfTextLayer(fixture('scanned.pdf'), deadline())).toEqual(['']);
  });

  test('expired deadline → timeout; garbage, encrypted and empty PDFs → unreadable_file', async () => {
    const expired = { signal: new AbortController().signal, deadlineMs: Date.now() - 1 };
    expect((await failureOf(pdfTextLayer(fixture('text.pdf'), expired))).kind).toBe('timeout');
    const garbage = new Uint8Array(4096).map((_, i) => (i * 7919 + 13) % 256);
    expect((await failureOf(pdfTextLayer(garbage, deadline()))).kind).toBe('unreadable_file');
    expect((await failureOf(pdfTextLayer(fixture('encrypted.pdf'), deadline()))).kind).toBe('unreadable_file');
    expect((await failureOf(pdfTextLayer(new Uint8Array(0), deadline()))).kind).toBe('unreadable_file');
  });
});

describe('renderPdfPages', () => {
  test('scanned.pdf page 0 renders within the target, and reads like the receipt', async () => {
    const target: ImageTarget = { formats: ['image/jpeg'], maxLongSide: 1000, maxBytes: 200_000 };
    const [page, ...rest] = await renderPdfPages(fixture('scanned.pdf'), target, deadline(), [0]);
    expect(rest).toHaveLength(0);
    if (page === undefined) throw new Error('no page');
    expect(page.mime).toBe('image/jpeg');
    expect(Math.max(page.width, page.height)).toBeLessThanOrEqual(1000);
    expect(Math.max(page.width, page.height)).toBeGreaterThanOrEqual(998);
    expect(page.bytes.byteLength).toBeLessThanOrEqual(200_000);
    expect(await decoded(page)).toMatchObject({ format: 'jpeg', width: page.width, height: page.height });
    expect(await difference(page.bytes, fixture('receipt.png'))).toBeLessThan(2);
  });

  test('resolution is capped at 200 dpi however large the target', async () => {
    // scanned.pdf's page is 384 x 400 pt: 200 dpi is 1067 x 1112 px.
    const [page] = await renderPdfPages(fixture('scanned.pdf'), { ...JPEG_OR_PNG, maxLongSide: 10_000 }, deadline());
    expect(page).toMatchObject({ width: 1067, height: 1112 });
  });

  test('all pages when none are named; PNG for a PNG-only target; within a byte budget', async () => {
    const target: ImageTarget = { formats: ['image/png'], maxLongSide: 800, maxBytes: 60_000 };
    const pages = await renderPdfPages(fixture('text.pdf'), target, deadline());
    expect(pages).toHaveLength(2);
    for (const page of pages) {
      expect(page.mime).toBe('image/png');
      expect((await decoded(page)).format).toBe('png');
      expect(page.bytes.byteLength).toBeLessThanOrEqual(60_000);
      expect(Math.max(page.width, page.height)).toBeLessThanOrEqual(800);
    }
  });

  test('a page index out of range → client; garbage bytes → unreadable_file; an expired deadline → timeout', async () => {
    expect((await failureOf(renderPdfPages(fixture('text.pdf'), JPEG_OR_PNG, deadline(), [2]))).kind).toBe('client');
    const garbage = new Uint8Array(4096).map((_, i) => (i * 7919 + 13) % 256);
    expect((await failureOf(renderPdfPages(garbage, JPEG_OR_PNG, deadline()))).kind).toBe('unreadable_file');
    const expired = { signal: new AbortController().signal, deadlineMs: Date.now() - 1 };
    expect((await failureOf(renderPdfPages(fixture('scanned.pdf'), JPEG_OR_PNG, expired))).kind).toBe('timeout');
  });
});
